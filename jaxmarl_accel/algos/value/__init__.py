"""The value-based learners QMIX, VDN and IQL: a shared agent network (recurrent over
episodes, or feed-forward over transitions), a mixer plugged into one skeleton
(:mod:`~.learner`), double-Q TD(lambda) targets (:mod:`~.targets`)."""

from jaxmarl_accel.algos.value.config import ValueConfig
from jaxmarl_accel.algos.value.learner import Carry, LossInfo, Phases, ValueParams, ValueState
from jaxmarl_accel.algos.value.mixers import Mixer

__all__ = ["Carry", "LossInfo", "Mixer", "Phases", "ValueConfig", "ValueParams", "ValueState"]
