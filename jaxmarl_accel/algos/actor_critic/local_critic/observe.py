"""What the local-critic learner observes: training :class:`Samples` of (joint step, agent)
pairs with each agent's k nearest neighbours ranked at ``obs`` and ``next_obs``, from
observations or, with ``observe_at``, from packed physical states. Shapes: B joint steps,
N agents, Gb groups of a block, P samples of one group, k neighbours, A action width."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.algos.actor_critic.local_critic.critics import nearest_agents, positions
from jaxmarl_accel.algos.actor_critic.local_critic.groups import (
    Block,
    Skeleton,
    apply_all,
    apply_at,
)
from jaxmarl_accel.algos.actor_critic.state import (
    ActorCriticState,
)
from jaxmarl_accel.compact_rows import observe_chunk, observe_rows
from jaxmarl_accel.types import Transition


class Samples(NamedTuple):
    """One block's training samples: P (joint step, agent) pairs for each of its Gb groups,
    every leaf ``[Gb, P, ...]``.

    Attributes:
      rows, agents: int ``[Gb, P]``, the joint step (batch row) and the agent.
      obs, action: the agent's ``[.., obs_dim]`` and ``[.., A]``; reward, done: ``[..]``.
      neighbour_action: its k nearest agents' replayed actions ``[.., k, A]``.
      next_action, next_bonus: its next action ``[.., A]`` and entropy bonus ``[..]``.
      next_obs: ``[.., obs_dim]``; next_neighbour_action: its k nearest agents' next actions
        (at ``next_obs``) ``[.., k, A]``; weight: the row's importance weight ``[..]``.
      neighbour_obs, next_neighbour_obs: the k nearest agents' observations ``[.., k,
        obs_dim]`` at ``obs`` and at ``next_obs`` (``critic="pic"``; ``None`` otherwise).
    """

    rows: jax.Array
    agents: jax.Array
    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    done: jax.Array
    neighbour_action: jax.Array
    next_obs: jax.Array
    next_action: jax.Array
    next_bonus: jax.Array
    next_neighbour_action: jax.Array
    weight: jax.Array
    neighbour_obs: jax.Array | None = None
    next_neighbour_obs: jax.Array | None = None


def _pairs(sk: Skeleton, block: Block, batch_size: int, key: jax.Array
           ) -> tuple[jax.Array, jax.Array]:
    """``rows, agents`` ``[Gb, P]`` of one block: every agent of every row (P = B M), or one
    agent per row drawn uniformly from its group (P = B, ``shared_batch="pairs"``)."""
    gb, m = block.agents.shape
    if sk.config.shared_batch == "pairs" and m > 1:
        pick = jax.random.randint(key, (gb, batch_size), 0, m)
        return (jnp.broadcast_to(jnp.arange(batch_size), (gb, batch_size)),
                jnp.asarray(block.agents)[jnp.arange(gb)[:, None], pick])
    rows = np.repeat(np.arange(batch_size), m)
    agents = np.tile(block.agents, (1, batch_size))
    return jnp.asarray(np.broadcast_to(rows, agents.shape)), jnp.asarray(agents)


def _neighbours(sk: Skeleton, pos: jax.Array, rows: jax.Array, agents: jax.Array,
                every: jax.Array | None) -> jax.Array:
    """The k nearest agents ``[Gb, P, k]`` of each sample, from every agent's position
    ``pos [B, N, 2]`` (``every``: all agents' neighbours ``[B, N, k]`` when already
    computed)."""
    if every is not None:
        return every[rows, agents]
    one = lambda row, agent: nearest_agents(pos[row], agent[None], sk.config.critic_k)[0]
    return jax.vmap(jax.vmap(one))(rows, agents)


def _joint_positions(sk: Skeleton, joint: jax.Array) -> jax.Array:
    """Every agent's position ``[B, N, 2]`` from a batch's ``obs`` or ``next_obs``:
    observations, or packed physical states when the learner observes them itself."""
    if sk.observe_at is None:
        return positions(sk.spec, joint)
    start, stop = sk.spec.physical_position_columns
    return joint[..., start:stop]


def _look(sk: Skeleton, joint: jax.Array, rows: jax.Array, who: jax.Array) -> jax.Array:
    """Observations ``[Gb, P, m, obs_dim]`` of agents ``who [Gb, P, m]`` in joint steps
    ``rows [Gb, P]`` of ``joint`` ``[B, N, ...]``: read from observations, or observed from
    packed physical states (``sk.observe_at``, only those rows)."""
    if sk.observe_at is None:
        return joint[rows[..., None], who]
    flat_rows, flat_who = rows.reshape(-1), who.reshape(-1, who.shape[-1])
    out = jax.vmap(lambda r, w: sk.observe_at(joint[r], w))(flat_rows, flat_who)
    return out.reshape(*who.shape, out.shape[-1])


def _observe_all(sk: Skeleton, batch: Transition) -> Transition:
    """``batch`` with every agent's observations in place of packed physical states
    (:func:`~jaxmarl_accel.compact_rows.observe_chunk` joint steps at a time)."""
    n = sk.spec.num_agents
    every = lambda physical: sk.observe_at(physical, jnp.arange(n))
    chunk = observe_chunk(n)
    return batch.replace(obs=observe_rows(every, batch.obs, chunk),
                         next_obs=observe_rows(every, batch.next_obs, chunk))


def samples(sk: Skeleton, state: ActorCriticState, batch: Transition, weights: jax.Array,
            key: jax.Array) -> list[Samples]:
    """The :class:`Samples` of every block, with next actions from the variant's next actors
    (one key for the whole batch) and, for ``critic="pic"``, the neighbours' observations."""
    bsz, n = batch.reward.shape
    pair_key, next_key = jax.random.split(key)
    pairs = [_pairs(sk, block, bsz, k) for block, k in
             zip(sk.groups.blocks, jax.random.split(pair_key, len(sk.groups.blocks)),
                 strict=True)]
    total = sum(rows.size for rows, _ in pairs)
    every_agent = total >= bsz * n  # cheaper to find all agents' neighbours at once
    if every_agent and sk.observe_at is not None:  # every row is read: observe them all
        return samples(sk._replace(observe_at=None), state, _observe_all(sk, batch), weights,
                       key)
    params, k = sk.variant.next_actors(state), sk.config.critic_k
    with_obs = sk.config.critic == "pic"
    pos_now, pos_next = _joint_positions(sk, batch.obs), _joint_positions(sk, batch.next_obs)
    if every_agent:
        near = jax.vmap(lambda pos: nearest_agents(pos, None, k))
        now, nxt = near(pos_now), near(pos_next)
        next_all, bonus_all = sk.variant.next_action(
            sk.dist, apply_all(sk, params, batch.next_obs), sk.mask, next_key)
    else:
        now = nxt = None
    out = []
    for (rows, agents), block_key in zip(pairs, jax.random.split(next_key, len(pairs)),
                                         strict=True):
        nb = _neighbours(sk, pos_now, rows, agents, now)
        nb_next = _neighbours(sk, pos_next, rows, agents, nxt)
        if every_agent:
            next_action, next_bonus = next_all[rows, agents], bonus_all[rows, agents]
            next_nb_action = next_all[rows[..., None], nb_next]
            next_nb_obs = batch.next_obs[rows[..., None], nb_next] if with_obs else None
            own_next_obs = batch.next_obs[rows, agents]
        else:  # only the samples' agents and their neighbours act
            who = jnp.concatenate([agents[..., None], nb_next], axis=-1)  # [Gb, P, 1 + k]
            obs = _look(sk, batch.next_obs, rows, who)
            acts, bonus = sk.variant.next_action(
                sk.dist, apply_at(sk, params, obs, who), sk.mask[who], block_key)
            next_action, next_bonus = acts[..., 0, :], bonus[..., 0]
            next_nb_action = acts[..., 1:, :]
            next_nb_obs = obs[..., 1:, :] if with_obs else None
            own_next_obs = obs[..., 0, :]
        seen = jnp.concatenate([agents[..., None], nb], axis=-1) if with_obs else agents[..., None]
        now_obs = _look(sk, batch.obs, rows, seen)  # [Gb, P, 1 (+ k), obs_dim]
        out.append(Samples(
            rows=rows, agents=agents, obs=now_obs[..., 0, :],
            action=batch.action[rows, agents], reward=batch.reward[rows, agents],
            done=batch.done[rows, agents], neighbour_action=batch.action[rows[..., None], nb],
            next_obs=own_next_obs, next_action=next_action,
            next_bonus=next_bonus, next_neighbour_action=next_nb_action,
            weight=weights[rows],
            neighbour_obs=now_obs[..., 1:, :] if with_obs else None,
            next_neighbour_obs=next_nb_obs))
    return out
