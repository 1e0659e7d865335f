"""Neighbour finding and the critic kinds of the local-critic learners (knearest,
meanfield, pic): what agent i's critic reads, its width, and the network that reads it.
Shapes: N agents, M queried agents, k neighbours, A action width."""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxmarl_accel.algos import networks
from jaxmarl_accel.algos.actor_critic import pic
from jaxmarl_accel.algos.actor_critic.config import ActorCriticConfig
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.envs.mpe import core

ObserveAt = Any
"""A function ``(physical [N, F], agents [M] int) -> observations [M, obs_dim]``: the
observations of ``agents`` computed from a joint step's physical state (``N`` agents, ``F``
features each), for replays that store physical states instead of observations."""


def nearest_agents(pos: jax.Array, agents: jax.Array | None, k: int) -> jax.Array:
    """The ``k`` nearest other agents of some agents of one joint step, nearest first.

    Distances are computed as the MPE scenarios compute them for their k-nearest
    observations (:func:`~jaxmarl_accel.envs.mpe.core.pairwise_delta`), so the ranking is theirs.

    Args:
      pos: ``[N, 2]`` every agent's position in one joint step.
      agents: ``[M]`` int, the agents whose neighbours are wanted, or ``None`` for all N.
      k: static number of neighbours, ``k <= N - 1``.

    Returns:
      ``[M, k]`` (or ``[N, k]``) int32 agent indices.
    """
    num = pos.shape[0]
    if agents is None:
        _, dist = core.pairwise_delta(pos, pos)
        dist = jnp.where(jnp.eye(num, dtype=bool), jnp.inf, dist)
    else:
        _, dist = core.pairwise_delta(pos[agents], pos)
        dist = jnp.where(agents[:, None] == jnp.arange(num)[None, :], jnp.inf, dist)
    return core.nearest_index(dist, k).astype(jnp.int32)


def positions(spec: EnvSpec, obs: jax.Array) -> jax.Array:
    """Every agent's absolute position ``[..., N, 2]`` from observations ``[..., N, obs_dim]``
    (the columns ``spec.position_columns``)."""
    start, stop = spec.position_columns
    return obs[..., start:stop]


def critic_features(kind: str, obs: jax.Array, action: jax.Array,
                    neighbour_actions: jax.Array,
                    neighbour_obs: jax.Array | None = None) -> jax.Array:
    """Agent i's critic input: ``[..., obs_dim + A + k A]`` (``"knearest"``: its observation,
    its action and its k neighbours' actions, nearest first), ``[..., obs_dim + 2 A]``
    (``"meanfield"``: the neighbours' mean action) or ``[..., (1 + k) (obs_dim + A)]``
    (``"pic"``: the node features ``[o_j, a_j]`` of i and its neighbours, i first), from
    ``obs [..., obs_dim]``, ``action [..., A]``, ``neighbour_actions [..., k, A]`` and, for
    ``"pic"`` only, ``neighbour_obs [..., k, obs_dim]``."""
    if kind == "pic":
        nodes = jnp.concatenate([
            jnp.concatenate([obs[..., None, :], neighbour_obs], axis=-2),
            jnp.concatenate([action[..., None, :], neighbour_actions], axis=-2)], axis=-1)
        return nodes.reshape((*nodes.shape[:-2], -1))
    if kind == "meanfield":
        others = jnp.mean(neighbour_actions, axis=-2)
    else:
        others = neighbour_actions.reshape((*neighbour_actions.shape[:-2], -1))
    return jnp.concatenate([obs, action, others], axis=-1)


def critic_width(kind: str, obs_dim: int, action_dim: int, k: int) -> int:
    """Width of :func:`critic_features`' output: independent of the number of agents."""
    if kind == "pic":
        return (1 + k) * (obs_dim + action_dim)
    return obs_dim + action_dim + (action_dim if kind == "meanfield" else k * action_dim)


def make_critic(config: ActorCriticConfig) -> nn.Module:
    """One critic of ``config.critic``: ``[..., critic_width] -> [..., 1]``, an MLP of
    ``hidden_sizes`` (knearest, meanfield) or PIC's graph network with one graph-convolution
    layer per width of ``hidden_sizes`` over ``1 + critic_k`` nodes (pic)."""
    if config.critic == "pic":
        return pic.PermutationInvariantCritic(config.hidden_sizes, 1 + config.critic_k)
    return networks.MLP(config.hidden_sizes, 1)
