"""What distinguishes MADDPG, MATD3 and MASAC: a :class:`Variant` of plugged-in functions.

The skeleton (:mod:`jaxmarl_accel.algos.actor_critic.learner`) calls these; each algorithm's module
(:mod:`~.maddpg`, :mod:`~.matd3`, :mod:`~.masac`) chooses among them. Shapes: B batch,
N agents, A action-vector width, C critics of one agent.

When the actors and targets move is a plugged-in :class:`ActorSchedule` too: TD3's delayed
policy updates (Fujimoto et al. 2018, Alg. 1: "if t mod d then" update the actor and the
targets) are :func:`actor_schedule` of ``d``, every other variant's is ``actor_schedule(1)``,
so the skeleton holds no branch of its own for them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import jax
import jax.numpy as jnp

from jaxmarl_accel.algos.distributions import ActionDistribution
from jaxmarl_accel.types import PyTree

Operand = TypeVar("Operand")
Out = TypeVar("Out")


class ActorSchedule(NamedTuple):
    """On which updates the actors and the targets move (TD3 Alg. 1's policy delay ``d``).

    Attributes:
      period: they move on one update in every ``period`` (1: on every update).
      due: ``step [] int32 -> [] bool``: whether the update that follows ``step`` updates
        moves them.
      gate: ``(due [] bool, run, skip, operand) -> run(operand)`` where ``due``, else
        ``skip(operand)`` (``run`` and ``skip`` return pytrees of one structure).
      keep: ``(due [] bool, new, old) -> new`` where ``due``, else ``old`` (pytrees of one
        structure, leaves of any shapes).
    """

    period: int
    due: Callable[[jax.Array], jax.Array]
    gate: Callable[[jax.Array, Callable[[Operand], Out], Callable[[Operand], Out], Operand],
                   Out]
    keep: Callable[[jax.Array, PyTree, PyTree], PyTree]


class Variant(NamedTuple):
    """What distinguishes one algorithm from another: numbers and plugged-in functions.

    Attributes:
      num_critics: critics per agent (twin critics: 2).
      actor_schedule: on which updates the actors and targets move (:func:`actor_schedule`);
        its ``period`` is the variant's :attr:`policy_delay`.
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
    actor_schedule: ActorSchedule
    continuous_default: str
    next_action: Callable[..., tuple[jax.Array, jax.Array]]
    next_actors: Callable[[Any], PyTree]
    actor_critics: Callable[[PyTree], PyTree]
    alpha: Callable[[jax.Array], jax.Array]
    temperature: Callable[..., tuple[jax.Array, PyTree]]

    @property
    def policy_delay(self) -> int:
        """Actors and targets are updated once every this many updates."""
        return self.actor_schedule.period


def due_every(step: jax.Array, period: int) -> jax.Array:
    """Whether update ``step + 1`` is one of every ``period``-th: ``[]`` bool from ``step``
    ``[]`` int32, the updates done before it (TD3 Alg. 1: ``t mod d = 0``)."""
    return (step + 1) % period == 0


def run_always(due: jax.Array, run: Callable[[Operand], Out], skip: Callable[[Operand], Out],
               operand: Operand) -> Out:
    """``run(operand)`` whatever ``due`` (``[]`` bool) says: the gate of every update."""
    del due, skip
    return run(operand)


def run_when_due(due: jax.Array, run: Callable[[Operand], Out], skip: Callable[[Operand], Out],
                 operand: Operand) -> Out:
    """``run(operand)`` where ``due`` (``[]`` bool), else ``skip(operand)``; only one of them
    runs (``lax.cond``), so delayed updates skip the actor step's work."""
    return jax.lax.cond(due, run, skip, operand)


def take_new(due: jax.Array, new: PyTree, old: PyTree) -> PyTree:
    """``new`` whatever ``due`` (``[]`` bool) says: targets move on every update."""
    del due, old
    return new


def keep_unless_due(due: jax.Array, new: PyTree, old: PyTree) -> PyTree:
    """Leafwise ``new`` where ``due`` (``[]`` bool), else ``old`` (leaves of any shapes, alike
    in ``new`` and ``old``): targets held back on delayed updates."""
    return jax.tree.map(lambda a, b: jnp.where(due, a, b), new, old)


def actor_schedule(period: int) -> ActorSchedule:
    """Actors and targets moved on one update in every ``period`` (TD3 Alg. 1, ``d``).

    ``period == 1`` (MADDPG, MASAC, MATD3 without delay) gates nothing: the actor step runs
    and the targets move on every update with no ``cond`` or select traced.
    """
    if not isinstance(period, int) or period < 1:
        raise ValueError(f"period must be an int >= 1, got {period!r}")
    due = functools.partial(due_every, period=period)
    if period == 1:
        return ActorSchedule(period=1, due=due, gate=run_always, keep=take_new)
    return ActorSchedule(period=period, due=due, gate=run_when_due, keep=keep_unless_due)


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
