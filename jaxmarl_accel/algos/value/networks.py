"""The agent network every agent shares, and its inputs.

QMIX (Rashid et al. 2018, Sec. 4 and App. C) runs one network for all agents, told apart
by an agent one-hot in the input: a recurrent agent Dense -> ReLU -> GRU -> Dense whose
input is the agent's observation, its one-hot id and its previous action's one-hot (the
``obs_agent_id`` and ``obs_last_action`` inputs of the reference code), and whose output is
one Q-value per action. The feed-forward agent replaces the GRU by a Dense -> ReLU layer and
sees the observation and the id only (single transitions have no previous action).

Agents are an array axis: the parameters have no agent axis, the inputs ``[..., N, in]``.
"""

from __future__ import annotations

from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxmarl_accel.algos.initializers import orthogonal
from jaxmarl_accel.algos.networks import MLP

PyTree = Any


class RNNAgent(nn.Module):
    """Dense -> ReLU -> GRU -> Dense, in three methods so that the input and output layers
    run over a whole episode at once and only the GRU is scanned over time.

    Attributes:
      hidden: width of the input layer and of the GRU state.
      num_actions: A, one Q-value per action.
    """

    hidden: int
    num_actions: int

    def setup(self) -> None:
        self.encoder = nn.Dense(self.hidden)
        # flax's default recurrent initializer is LAPACK's QR, which deadlocks under the
        # seed vmap on CPU; ours draws the same distribution in plain jnp
        self.cell = nn.GRUCell(self.hidden, recurrent_kernel_init=orthogonal())
        self.head = nn.Dense(self.num_actions)

    def encode(self, x: jax.Array) -> jax.Array:
        """``[..., in] -> [..., hidden]``: ReLU of the input layer."""
        return nn.relu(self.encoder(x))

    def recur(self, h: jax.Array, z: jax.Array) -> jax.Array:
        """One GRU step: state ``h [..., hidden]``, input ``z [..., hidden]`` -> new state."""
        return self.cell(h, z)[0]

    def q_values(self, h: jax.Array) -> jax.Array:
        """``[..., hidden] -> [..., A]`` Q-values of the GRU state."""
        return self.head(h)

    def __call__(self, h: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        """One step: ``(h [..., hidden], x [..., in]) -> (h', q [..., A])``."""
        h = self.recur(h, self.encode(x))
        return h, self.q_values(h)


def make_agent(kind: str, hidden: int, num_actions: int) -> RNNAgent | MLP:
    """The shared agent network: ``"rnn"`` (:class:`RNNAgent`) or ``"mlp"`` (two ReLU
    layers of ``hidden`` units, :class:`~jaxmarl_accel.algos.networks.MLP`)."""
    if kind == "rnn":
        return RNNAgent(hidden, num_actions)
    return MLP((hidden, hidden), num_actions)


def agent_inputs(obs: jax.Array, prev_action: jax.Array | None) -> jax.Array:
    """Every agent's network input: its observation, its one-hot id and (if given) its
    previous action's one-hot.

    Args:
      obs: ``[..., N, obs_dim]`` float32.
      prev_action: ``[..., N, A]`` one-hot of each agent's previous action (zeros at an
        episode's start), or ``None`` (feed-forward agents).

    Returns:
      ``[..., N, obs_dim + N (+ A)]``.
    """
    n = obs.shape[-2]
    ids = jnp.broadcast_to(jnp.eye(n, dtype=obs.dtype), (*obs.shape[:-1], n))
    parts = [obs, ids] if prev_action is None else [obs, ids, prev_action.astype(obs.dtype)]
    return jnp.concatenate(parts, axis=-1)


def init_agent(agent: RNNAgent | MLP, key: jax.Array, in_dim: int) -> PyTree:
    """Parameters of the shared agent network for inputs of width ``in_dim``."""
    x = jnp.zeros((1, in_dim), jnp.float32)
    if isinstance(agent, RNNAgent):
        return agent.init(key, jnp.zeros((1, agent.hidden), jnp.float32), x)
    return agent.init(key, x)


def unroll(agent: RNNAgent, params: PyTree, x: jax.Array) -> jax.Array:
    """The recurrent agent over whole episodes from a zero GRU state.

    Args:
      agent: the module.
      params: its parameters.
      x: ``[B, T + 1, N, in]`` inputs (:func:`agent_inputs`), row 0 an episode's start.

    Returns:
      ``[B, T + 1, N, A]`` Q-values; row t sees rows 0..t only.
    """
    batch, rows, n = x.shape[:3]
    # time-major and flat over (episode, agent) before the scan: each step is one
    # [B * N, hidden] matrix product, which halves the backward pass on CPU
    x = jnp.swapaxes(x, 0, 1).reshape(rows, batch * n, x.shape[-1])
    z = agent.apply(params, x, method=RNNAgent.encode)
    h0 = jnp.zeros((batch * n, z.shape[-1]), z.dtype)

    def step(h: jax.Array, z_t: jax.Array) -> tuple[jax.Array, jax.Array]:
        h = agent.apply(params, h, z_t, method=RNNAgent.recur)
        return h, h

    _, hs = jax.lax.scan(step, h0, z)  # [T + 1, B * N, hidden]
    q = agent.apply(params, hs, method=RNNAgent.q_values)
    return jnp.swapaxes(q.reshape(rows, batch, n, q.shape[-1]), 0, 1)
