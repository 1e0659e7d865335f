"""What distinguishes MADDPG, MATD3 and MASAC: a :class:`Variant` of plugged-in functions.

The skeleton (:mod:`jaxmarl_accel.algos.actor_critic.learner`) calls these; each algorithm's module
(:mod:`~.maddpg`, :mod:`~.matd3`, :mod:`~.masac`) chooses among them. Shapes: B batch,
N agents, A action-vector width, C critics of one agent.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmarl_accel.algos.distributions import ActionDistribution

PyTree = Any


class Variant(NamedTuple):
    """What distinguishes one algorithm from another: numbers and plugged-in functions.

    Attributes:
      num_critics: critics per agent (twin critics: 2).
      policy_delay: actors and targets are updated once every this many updates.
      continuous_default: the continuous action head with ``continuous_policy="auto"``
        (``"sigmoid"``: deterministic actors; ``"gaussian"``: squashed Gaussian).
      next_action: ``(dist, out [B, N, out], mask [N, A], key) -> (a' [B, N, A],
        bonus [B, N])``, the target policy applied to actor outputs at ``next_obs``.
      next_actors: ``ActorCriticState -> actor parameters`` giving the next actions.
      actor_critics: one agent's critics (leaves ``[C, ...]``) -> those its actor ascends
        (the minimum is taken over them).
      alpha: ``log_alpha [N] -> [N]`` entropy coefficient of the targets and the actor loss
        (zeros: no entropy term).
      temperature: ``(alpha_tx, log_alpha, alpha_opt, entropy, target_entropy) ->
        (log_alpha, alpha_opt)``, applied after each actor step.
    """

    num_critics: int
    policy_delay: int
    continuous_default: str
    next_action: Callable[..., tuple[jax.Array, jax.Array]]
    next_actors: Callable[[Any], PyTree]
    actor_critics: Callable[[PyTree], PyTree]
    alpha: Callable[[jax.Array], jax.Array]
    temperature: Callable[..., tuple[jax.Array, PyTree]]


def sampled_next_action(dist: ActionDistribution, out: jax.Array, mask: jax.Array,
                        key: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``a'_j`` sampled from the policy at its outputs (as the original MADDPG code), and
    every agent's entropy bonus: ``[B, N, A]``, ``[B, N]``."""
    return dist.sample(out, mask, key)


def target_actors(state: Any) -> PyTree:
    """Next actions from the target actors (MADDPG, MATD3)."""
    return state.target_actor


def online_actors(state: Any) -> PyTree:
    """Next actions from the current actors (SAC has no target actor)."""
    return state.actor


def first_critic(critic: PyTree) -> PyTree:
    """The actor ascends the first critic only (MADDPG; TD3 Alg. 1), leaves ``[1, ...]``."""
    return jax.tree.map(lambda x: x[:1], critic)


def all_critics(critic: PyTree) -> PyTree:
    """The actor ascends the minimum of all critics (SAC's clipped double-Q)."""
    return critic


def no_entropy(log_alpha: jax.Array) -> jax.Array:
    """No entropy term: coefficient 0, ``[N]``."""
    return jnp.zeros_like(log_alpha)


def entropy_coefficient(log_alpha: jax.Array) -> jax.Array:
    """The entropy term's coefficient ``alpha = exp(log alpha)``, ``[N]`` (MASAC)."""
    return jnp.exp(log_alpha)
