"""MADDPG (Lowe et al. 2017): the skeleton's plug-ins.

Decentralized actors, one centralized critic per agent; the critic target uses the target
actors' (Gumbel-softmax relaxed, for discrete actions) actions at ``next_obs`` (paper 001,
eq. 2) and the actor ascends its critic through its relaxed action (eq. 1).
"""

from __future__ import annotations

from jaxmarl_accel.algos.actor_critic import losses
from jaxmarl_accel.algos.actor_critic import variant as v
from jaxmarl_accel.algos.actor_critic.config import ActorCriticConfig
from jaxmarl_accel.envs.base import EnvSpec


def variant(spec: EnvSpec, config: ActorCriticConfig) -> v.Variant:
    """MADDPG: 1 critic, no delay, deterministic continuous actors, no entropy."""
    del spec, config
    return v.Variant(num_critics=1, actor_schedule=v.actor_schedule(1),
                     continuous_default="sigmoid", next_action=v.sampled_next_action,
                     next_actors=v.target_actors, actor_critics=v.first_critic,
                     alpha=v.no_entropy, temperature=losses.fixed_temperature)
