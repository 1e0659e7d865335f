"""On-policy learners (A2C, PPO, MAPPO) with one policy-value network (MAPPO: actor and
critic) per team (paper 003's trainer), feed-forward or recurrent: :mod:`~.config`
(hyperparameters), :mod:`~.networks` (the teams' feed-forward networks and action
distributions), :mod:`~.models` (MAPPO's critic of the global state, the GRU networks),
:mod:`~.losses` (GAE, the A2C and clipped PPO losses), :mod:`~.skeleton` (state and static
parts), :mod:`~.acting` (sampling and the policy), :mod:`~.learner` (the
:class:`~jaxmarl_accel.algos.base.Algo`, learning from the rollout round's
:class:`~jaxmarl_accel.types.Rollout`)."""

from jaxmarl_accel.algos.on_policy.config import OnPolicyConfig
from jaxmarl_accel.algos.on_policy.learner import OnPolicyState, build

__all__ = ["OnPolicyConfig", "OnPolicyState", "build"]
