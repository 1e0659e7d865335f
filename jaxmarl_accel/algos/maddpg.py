"""MADDPG (Lowe et al. 2017): the skeleton's plug-ins.

Decentralized actors, one centralized critic per agent; the critic target uses the target
actors' (Gumbel-softmax relaxed, for discrete actions) actions at ``next_obs`` (paper 001,
eq. 2) and the actor ascends its critic through its relaxed action (eq. 1).
"""

from __future__ import annotations

import jax

from jaxmarl_accel.algos.config import AlgoConfig
from jaxmarl_accel.algos.core import Variant
from jaxmarl_accel.algos.policies import Policy
from jaxmarl_accel.envs.base import EnvSpec


def next_action(policy: Policy, out: jax.Array, mask: jax.Array, key: jax.Array):
    """Target actions ``a'_j = mu'_j(o'_j)`` (sampled like the original code): ``[B, N, A]``."""
    return policy.sample(out, mask, key)


def variant(spec: EnvSpec, config: AlgoConfig) -> Variant:
    """MADDPG: 1 critic, no delay, deterministic continuous actors, no entropy."""
    del spec, config
    return Variant(num_critics=1, policy_delay=1, stochastic=False, entropy=False,
                   target_from_online=False, next_action=next_action,
                   actor_critics=1)
