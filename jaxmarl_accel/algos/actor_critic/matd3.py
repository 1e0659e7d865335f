"""MATD3 (Ackermann et al. 2019): the skeleton's plug-ins.

TD3 (Fujimoto et al. 2018) applied to MADDPG's centralized critics: twin critics with the
minimum in the target (clipped double-Q, TD3 eq. 10), target-policy smoothing noise
(TD3 eq. 14-15) and actor plus target updates delayed by ``policy_delay`` updates. The
actor ascends the first critic (TD3 Alg. 1).

Smoothing noise ``clip(N(0, sigma), -c, c)`` is adapted to the action representation:
for continuous actions in ``[0, 1]`` (half TD3's ``[-1, 1]`` range) ``sigma`` and ``c`` are
halved and the noisy action is clipped to ``[0, 1]``; for discrete actions the noise is
added to the target actor's logits before the Gumbel-softmax, so the smoothed action stays
on the probability simplex.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxmarl_accel.algos.actor_critic import losses
from jaxmarl_accel.algos.actor_critic import variant as v
from jaxmarl_accel.algos.actor_critic.config import ActorCriticConfig
from jaxmarl_accel.algos.distributions import ActionDistribution
from jaxmarl_accel.envs.base import EnvSpec


def smoothed_next_action(
    dist: ActionDistribution, out: jax.Array, mask: jax.Array, key: jax.Array, *,
    continuous: bool, std: float, clip: float,
) -> tuple[jax.Array, jax.Array]:
    """Target-policy smoothing: ``a'_j = mu'_j(o'_j) + clip(eps, -c, c)``, ``[B, N, A]``."""
    noise_key, sample_key = jax.random.split(key)
    if continuous:
        action, bonus = dist.sample(out, mask, sample_key)
        eps = jnp.clip(0.5 * std * jax.random.normal(noise_key, action.shape),
                       -0.5 * clip, 0.5 * clip)
        return jnp.clip(action + eps, 0.0, 1.0), bonus
    eps = jnp.clip(std * jax.random.normal(noise_key, out.shape), -clip, clip)
    return dist.sample(out + eps, mask, sample_key)


def variant(spec: EnvSpec, config: ActorCriticConfig) -> v.Variant:
    """MATD3: twin critics, actors and targets moved every ``config.policy_delay`` updates
    (TD3 Alg. 1, :func:`~.variant.actor_schedule`), smoothing noise, first critic for actor."""
    next_action = functools.partial(
        smoothed_next_action,
        # Gumbel-softmax actors are smoothed on their logits, like discrete ones
        continuous=spec.continuous and config.continuous_policy != "gumbel_softmax",
        std=config.target_noise,
        clip=config.target_noise_clip)
    return v.Variant(num_critics=2, actor_schedule=v.actor_schedule(config.policy_delay),
                     continuous_default="sigmoid", next_action=next_action,
                     next_actors=v.target_actors, actor_critics=v.first_critic,
                     alpha=v.no_entropy, temperature=losses.fixed_temperature)
