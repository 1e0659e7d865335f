"""MADDPG, MATD3 and MASAC on one actor-critic skeleton, all agents stacked on an axis."""

from jaxmarl_accel.algos.config import AlgoConfig
from jaxmarl_accel.algos.core import Algo, AlgoState
from jaxmarl_accel.algos.registry import make_algo

__all__ = ["Algo", "AlgoConfig", "AlgoState", "make_algo"]
