"""On-policy learners (A2C, PPO) with one policy-value network per team (paper 003's
trainer): :mod:`~.config` (hyperparameters), :mod:`~.networks` (the teams' networks and
action distributions), :mod:`~.losses` (GAE, the A2C and clipped PPO losses),
:mod:`~.learner` (the :class:`~jaxmarl_accel.algos.base.Algo`, learning from the rollout
round's :class:`~jaxmarl_accel.types.Rollout`)."""

from jaxmarl_accel.algos.on_policy.config import OnPolicyConfig
from jaxmarl_accel.algos.on_policy.learner import OnPolicyState, build

__all__ = ["OnPolicyConfig", "OnPolicyState", "build"]
