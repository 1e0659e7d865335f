"""What the value learners read from a replayed batch: team rewards, episodes, mixer input.

Both forms learn from :class:`~jaxmarl_accel.types.Episode` batches (leaves
``[B, T + 1, ...]``). A feed-forward learner's transitions (leaves ``[B, N, ...]``) become
episodes of one step (``T = 1``): row 0 the transition, row 1 its successor observation,
so that TD(lambda) over them is the one-step target.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import Episode, Transition


def team_reward(spec: EnvSpec, reward: jax.Array) -> jax.Array:
    """The team reward of per-agent rewards ``[..., N]`` -> ``[...]``: agent 0's reward when
    the env broadcasts one shared reward (``spec.shared_reward``), else the sum."""
    return reward[..., 0] if spec.shared_reward else jnp.sum(reward, axis=-1)


def transition_episode(spec: EnvSpec, batch: Transition) -> Episode:
    """Transitions as one-step episodes.

    Args:
      spec: the env spec (``action_mask`` gives the available actions).
      batch: leaves ``[B, N, ...]``; ``action`` the one-hot ``[B, N, A]``, ``reward`` and
        ``done`` ``[B, N]``.

    Returns:
      :class:`Episode` with leaves ``[B, 2, ...]``: ``obs`` rows (obs, next_obs), ``action``
      the argmax of the one-hot, the team reward, ``terminated`` if any agent's ``done``,
      ``filled`` (1, 0), ``avail`` the static action mask and an empty ``state [B, 2, 0]``
      (the mixer sees the concatenated observations).
    """
    if batch.reward.ndim != 2:
        raise ValueError("value learners take one batch for all agents (leaves [B, N, ...]); "
                         f"got reward of shape {batch.reward.shape}")
    bsz, n = batch.reward.shape
    chex.assert_shape([batch.obs, batch.next_obs], (bsz, n, spec.obs_dim))
    chex.assert_shape(batch.action, (bsz, n, spec.num_actions))
    chex.assert_shape(batch.done, (bsz, n))
    two = lambda first, second: jnp.stack([first, second], axis=1)
    zeros = jnp.zeros((bsz,), jnp.float32)
    action = jnp.argmax(batch.action, axis=-1).astype(jnp.int32)
    return Episode(
        obs=two(batch.obs, batch.next_obs).astype(jnp.float32),
        state=jnp.zeros((bsz, 2, 0), jnp.float32),
        avail=jnp.broadcast_to(spec.action_mask, (bsz, 2, n, spec.num_actions)),
        action=two(action, jnp.zeros_like(action)),
        reward=two(team_reward(spec, batch.reward).astype(jnp.float32), zeros),
        terminated=two(jnp.max(batch.done, axis=-1).astype(jnp.float32), zeros),
        filled=two(jnp.ones((bsz,), jnp.float32), zeros),
    )


def check_episode(spec: EnvSpec, batch: Episode, state_dim: int) -> None:
    """Trace-time shape checks of an episode batch (leaves ``[B, T + 1, ...]``); the global
    state is checked only when the mixer reads it (``state_dim > 0``)."""
    bsz, rows = batch.filled.shape
    n, a = spec.num_agents, spec.num_actions
    chex.assert_shape(batch.obs, (bsz, rows, n, spec.obs_dim))
    chex.assert_shape(batch.avail, (bsz, rows, n, a))
    chex.assert_shape(batch.action, (bsz, rows, n))
    chex.assert_shape([batch.reward, batch.terminated], (bsz, rows))
    if state_dim:
        chex.assert_shape(batch.state, (bsz, rows, state_dim))


def first_rows(batch: Episode, rows: int) -> Episode:
    """Episodes ``[B, T + 1, ...]`` cut to their first ``rows`` = K steps: leaves
    ``[B, K + 1, ...]`` with row K marked unfilled, so that an episode still running there
    bootstraps from row K as a truncated one (:func:`~.targets.td_lambda_targets`). ``rows``
    0 or at least ``T`` returns ``batch`` itself (static: nothing changes)."""
    if not 0 < rows < batch.filled.shape[1] - 1:
        return batch
    cut = jax.tree.map(lambda x: x[:, :rows + 1], batch)
    return cut.replace(filled=cut.filled.at[:, rows].set(0))


def cut_fraction(batch: Episode, rows: int) -> jax.Array:
    """The fraction ``[]`` of the episodes ``[B, T + 1, ...]`` that :func:`first_rows` cuts
    (still running at step ``rows``)."""
    return jnp.mean((batch.filled[:, rows] > 0).astype(jnp.float32))


def mixer_input(batch: Episode, state_dim: int) -> jax.Array:
    """The mixer's view of the global state ``[B, T + 1, S']``: ``batch.state`` as float32
    when the env has one (``state_dim > 0``), else every agent's observation concatenated
    (``S' = N * obs_dim``)."""
    if state_dim:
        return batch.state.astype(jnp.float32)
    bsz, rows = batch.filled.shape
    return batch.obs.astype(jnp.float32).reshape((bsz, rows, -1))


def previous_actions(batch: Episode, num_actions: int) -> jax.Array:
    """Each row's previous action as a one-hot ``[B, T + 1, N, A]``: the action of row
    ``t - 1`` if that step was filled, zeros at row 0 (an episode's start) and after the
    episode's end."""
    taken = jax.nn.one_hot(batch.action, num_actions, dtype=jnp.float32)
    taken = taken * batch.filled[..., None, None]
    return jnp.concatenate([jnp.zeros_like(taken[:, :1]), taken[:, :-1]], axis=1)
