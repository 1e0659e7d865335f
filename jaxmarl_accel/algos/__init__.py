"""Learners on one protocol (:mod:`~.base`), each one registered record
(:class:`~.registry.AlgoSpec`, :mod:`~.registry`): MADDPG, MATD3 and MASAC on one
actor-critic skeleton (:class:`ActorCriticConfig`), QMIX, VDN, IQL, OW-/CW-QMIX, MAC-PO and
AccMER on one value skeleton (:mod:`~.value`, :class:`ValueConfig`), all agents stacked on an
axis; A2C, PPO and MAPPO with one network (MAPPO: actor and critic) per team, feed-forward
or recurrent (:mod:`~.on_policy`, :class:`OnPolicyConfig`);
PQN and PQN-VDN (:mod:`~.pqn`, :class:`~.pqn.PQNConfig`).
Each family registers its learners in its own package (``<family>/specs.py``, imported
below); ``ALGOS`` lists the package's own, :func:`registered_algos` every registered one."""

from jaxmarl_accel.algos import _jax_compat  # noqa: F401  (before any distrax import)
from jaxmarl_accel.algos.actor_critic.config import ActorCriticConfig
from jaxmarl_accel.algos.actor_critic.state import ActorCriticState, ActorInfo, CriticInfo, Phases
from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.algos.on_policy import OnPolicyConfig
from jaxmarl_accel.algos.registry import (
    AlgoSpec,
    BuildContext,
    Family,
    algo_spec,
    config_type,
    family_of,
    make_algo,
    register_algo,
    registered_algos,
)
from jaxmarl_accel.algos.value import ValueConfig, ValueState

# isort: split
# each family registers its learners in its own package; this order is ALGOS's
from jaxmarl_accel.algos.actor_critic import specs as _actor_critic  # noqa: F401, E402

# isort: split
from jaxmarl_accel.algos.value import specs as _value  # noqa: F401, E402

# isort: split
from jaxmarl_accel.algos.on_policy import specs as _on_policy  # noqa: F401, E402

# isort: split
from jaxmarl_accel.algos.pqn import specs as _pqn  # noqa: F401, E402

ALGOS: tuple[str, ...] = registered_algos()
"""The package's own learners, in the order their families register them."""

__all__ = ["ALGOS", "ActorCriticConfig", "ActorCriticState", "ActorInfo", "AlgoSpec", "Algo",
           "BuildContext", "CriticInfo", "Family", "OnPolicyConfig", "Phases",
           "ValueConfig", "ValueState", "algo_spec", "config_type", "family_of", "make_algo",
           "register_algo", "registered_algos"]
