"""Actor and critic MLPs with per-agent parameters stacked on a leading agent axis.

Every agent owns one actor and ``num_critics`` critics (1 for MADDPG, 2 for MATD3 and
MASAC). Parameters are created by ``vmap`` over ``init`` so each leaf has shape
``[N, ...]`` (actors) or ``[N, C, ...]`` (critics); the forward passes ``vmap`` over those
axes, which XLA lowers to batched matmuls (one kernel for all agents).
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxmarl_accel.types import PyTree


class MLP(nn.Module):
    """ReLU MLP: ``[..., in] -> [..., out_size]`` (linear output layer).

    Attributes:
      hidden_sizes: widths of the hidden layers (2 x 64 in the papers).
      out_size: width of the output layer.
    """

    hidden_sizes: Sequence[int]
    out_size: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        for width in self.hidden_sizes:
            x = nn.relu(nn.Dense(width)(x))
        return nn.Dense(self.out_size)(x)


def init_actors(mlp: MLP, key: jax.Array, num_agents: int, obs_dim: int) -> PyTree:
    """Stacked actor parameters, leaves ``[N, ...]``, independently initialised per agent."""
    keys = jax.random.split(key, num_agents)
    return jax.vmap(lambda k: mlp.init(k, jnp.zeros((1, obs_dim))))(keys)


def init_critics(
    mlp: MLP, key: jax.Array, num_agents: int, num_critics: int, in_dim: int
) -> PyTree:
    """Stacked critic parameters, leaves ``[N, C, ...]`` (C critics per agent)."""
    keys = jax.random.split(key, (num_agents, num_critics))
    init_one = lambda k: mlp.init(k, jnp.zeros((1, in_dim)))
    return jax.vmap(jax.vmap(init_one))(keys)


def apply_actors(mlp: MLP, params: PyTree, obs: jax.Array) -> jax.Array:
    """Every agent's actor on its own observation.

    Args:
      mlp: the actor module.
      params: stacked actor parameters, leaves ``[N, ...]``.
      obs: ``[..., N, obs_dim]`` with any leading batch axes.

    Returns:
      ``[..., N, out_size]`` raw (pre-activation) actor outputs.
    """
    lead, (n, obs_dim) = obs.shape[:-2], obs.shape[-2:]
    flat = obs.reshape((-1, n, obs_dim))
    out = jax.vmap(mlp.apply, in_axes=(0, 1), out_axes=1)(params, flat)
    return out.reshape((*lead, n, out.shape[-1]))


def critic_input(obs: jax.Array, action: jax.Array) -> jax.Array:
    """Centralized critic input: all agents' observations and action vectors.

    Args:
      obs: ``[B, N, obs_dim]`` (padded observations included as they are).
      action: ``[B, N, action_dim]``.

    Returns:
      ``[B, N * obs_dim + N * action_dim]``.
    """
    batch = obs.shape[0]
    return jnp.concatenate([obs.reshape((batch, -1)), action.reshape((batch, -1))], axis=-1)


def apply_critics(mlp: MLP, params: PyTree, x: jax.Array) -> jax.Array:
    """One agent's C critics on the centralized input.

    Args:
      mlp: the critic module (``out_size`` 1).
      params: one agent's critic parameters, leaves ``[C, ...]``.
      x: ``[B, in_dim]`` from :func:`critic_input`.

    Returns:
      ``[C, B]`` Q-values.
    """
    return jax.vmap(mlp.apply, in_axes=(0, None))(params, x)[..., 0]


def dense_layers(params: PyTree) -> list[PyTree]:
    """The ``Dense_0 .. Dense_L`` parameter dicts of an :class:`MLP`, input layer first."""
    layers = params["params"]
    return [layers[f"Dense_{k}"] for k in range(len(layers))]


def critics_first_layer(params: PyTree, x: jax.Array) -> jax.Array:
    """Pre-activations of one agent's C critics' first layer, ``x W_c + b_c``, batch-major
    (one ``[B, in] @ [in, C H_1]`` product, also across agents under ``vmap``).

    Args:
      params: one agent's critic parameters, leaves ``[C, ...]``.
      x: ``[B, in_dim]`` from :func:`critic_input`.

    Returns:
      ``[B, C, H_1]``.
    """
    first = dense_layers(params)[0]
    return jnp.einsum("bd,cdh->bch", x, first["kernel"]) + first["bias"]


def critics_after_first_layer(params: PyTree, pre: jax.Array) -> jax.Array:
    """One agent's C critics from their first layer's pre-activations on: ReLU, then the
    remaining layers of :class:`MLP` (``apply_critics`` is this after
    :func:`critics_first_layer`).

    Args:
      params: one agent's critic parameters, leaves ``[C, ...]``.
      pre: ``[B, C, H_1]`` first-layer pre-activations.

    Returns:
      ``[C, B]`` Q-values.
    """
    def one(layers: list[PyTree], h: jax.Array) -> jax.Array:
        for dense in layers:
            h = jnp.dot(nn.relu(h), dense["kernel"]) + dense["bias"]
        return h[..., 0]

    return jax.vmap(one, in_axes=(0, 1))(dense_layers(params)[1:], pre)
