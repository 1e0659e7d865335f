"""Learners on one protocol (:mod:`~.base`): MADDPG, MATD3 and MASAC on one actor-critic
skeleton (:class:`ActorCriticConfig`), QMIX, VDN and IQL on one value skeleton
(:mod:`~.value`, :class:`ValueConfig`), all agents stacked on an axis; A2C and PPO with one
network per team (:mod:`~.on_policy`, :class:`OnPolicyConfig`). ``ALGOS`` lists the
registered names; ``family_of`` and ``config_type`` say which config a name takes."""

from jaxmarl_accel.algos import _jax_compat  # noqa: F401  (before any distrax import)
from jaxmarl_accel.algos.actor_critic.config import ActorCriticConfig
from jaxmarl_accel.algos.actor_critic.state import ActorCriticState, ActorInfo, CriticInfo, Phases
from jaxmarl_accel.algos.base import Algo, Needs
from jaxmarl_accel.algos.on_policy import OnPolicyConfig
from jaxmarl_accel.algos.registry import ALGOS, config_type, family_of, make_algo
from jaxmarl_accel.algos.value import ValueConfig, ValueState

__all__ = ["ALGOS", "ActorCriticConfig", "ActorCriticState", "ActorInfo", "Algo", "CriticInfo",
           "Needs",
           "OnPolicyConfig", "Phases", "ValueConfig", "ValueState", "config_type",
           "family_of", "make_algo"]
