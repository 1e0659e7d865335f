"""Learners on one protocol (:mod:`~.base`); today MADDPG, MATD3 and MASAC on one
actor-critic skeleton, all agents stacked on an axis. ``ALGOS`` lists the registered names."""

from jaxmarl_accel.algos.actor_critic import ActorInfo, AlgoState, CriticInfo, Phases
from jaxmarl_accel.algos.base import Algo, Needs
from jaxmarl_accel.algos.config import AlgoConfig
from jaxmarl_accel.algos.registry import ALGOS, make_algo

__all__ = ["ALGOS", "ActorInfo", "Algo", "AlgoConfig", "AlgoState", "CriticInfo", "Needs", "Phases",
           "make_algo"]
