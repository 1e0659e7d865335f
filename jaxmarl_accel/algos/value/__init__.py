"""The value-based learners: QMIX, VDN and IQL, and with weighted QMIX's unrestricted
``Q*`` OW-QMIX, CW-QMIX, MAC-PO and AccMER. A shared agent network (recurrent over
episodes, or feed-forward over transitions) and a mixer plugged into one skeleton
(:mod:`~.learner`), acting (:mod:`~.acting`), double-Q TD(lambda) targets
(:mod:`~.targets`); ``Q*`` and its targets (:mod:`~.central`) with the weightings of QMIX's
loss (:mod:`~.wqmix`, :mod:`~.macpo`)."""

from jaxmarl_accel.algos.value.acting import Carry
from jaxmarl_accel.algos.value.config import ValueConfig
from jaxmarl_accel.algos.value.learner import LossInfo, Phases, ValueParams, ValueState
from jaxmarl_accel.algos.value.mixers import Mixer

__all__ = ["Carry", "LossInfo", "Mixer", "Phases", "ValueConfig", "ValueParams", "ValueState"]
