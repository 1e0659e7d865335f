"""The agent network every agent shares, and its inputs.

QMIX (Rashid et al. 2018, Sec. 4 and App. C) runs one network for all agents, told apart
by an agent one-hot in the input: a recurrent agent Dense -> ReLU -> GRU -> Dense whose
input is the agent's observation, its one-hot id and its previous action's one-hot (the
``obs_agent_id`` and ``obs_last_action`` inputs of the reference code), and whose output is
one Q-value per action. The feed-forward agent replaces the GRU by a Dense -> ReLU layer and
sees the observation and the id only (single transitions have no previous action).

Two options of the recurrent agent follow the AccMER authors' stag-hunt runs (paper 004's
code, whose configs are those of pymarl2's fork): without the one-hot id (their stag-hunt
env configs set ``obs_agent_id: False``; :attr:`RNNAgent.ids`), and with the Q-values
clamped (their ``rnn`` agent, which their MAC-PO/WQMIX configs use, clamps each agent's
Q-values to ``[-5, 2]``; :attr:`RNNAgent.q_min`, :attr:`RNNAgent.q_max`).

Agents are an array axis: the parameters have no agent axis, the inputs ``[..., N, in]``.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxmarl_accel.algos.initializers import orthogonal
from jaxmarl_accel.algos.networks import MLP
from jaxmarl_accel.algos.value import batches, gru
from jaxmarl_accel.types import Episode, PyTree


class RNNAgent(nn.Module):
    """Dense -> ReLU -> GRU -> Dense, in three methods so that the input and output layers
    run over a whole episode at once and only the GRU is scanned over time.

    Attributes:
      hidden: width of the input layer and of the GRU state.
      num_actions: A, one Q-value per action.
      ids: whether the input holds the agent's one-hot id (:func:`agent_inputs`).
      q_min, q_max: bounds the Q-values are clamped to (None: unbounded); outside them a
        Q-value has no gradient, as ``torch.clamp``'s in the authors' agent.
    """

    hidden: int
    num_actions: int
    ids: bool = True
    q_min: float | None = None
    q_max: float | None = None

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
        """``[..., hidden] -> [..., A]`` Q-values of the GRU state, clamped to ``[q_min,
        q_max]`` where set."""
        q = self.head(h)
        if self.q_min is None and self.q_max is None:
            return q
        return jnp.clip(q, self.q_min, self.q_max)

    def __call__(self, h: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        """One step: ``(h [..., hidden], x [..., in]) -> (h', q [..., A])``."""
        h = self.recur(h, self.encode(x))
        return h, self.q_values(h)


def make_agent(kind: str, hidden: int, num_actions: int, ids: bool = True,
               q_min: float | None = None, q_max: float | None = None) -> RNNAgent | MLP:
    """The shared agent network: ``"rnn"`` (:class:`RNNAgent`, with or without the id
    input, Q-values clamped to ``[q_min, q_max]`` where set) or ``"mlp"`` (two ReLU layers
    of ``hidden`` units, :class:`~jaxmarl_accel.algos.networks.MLP`, which always sees the id
    and is never clamped)."""
    if kind == "rnn":
        return RNNAgent(hidden, num_actions, ids, q_min, q_max)
    if not ids or q_min is not None or q_max is not None:
        raise ValueError("an 'mlp' agent always sees its id and is not clamped")
    return MLP((hidden, hidden), num_actions)


def sees_ids(agent: RNNAgent | MLP) -> bool:
    """Whether ``agent``'s input holds the one-hot agent id (the feed-forward agent's always
    does)."""
    return not isinstance(agent, RNNAgent) or agent.ids


def input_width(agent: RNNAgent | MLP, obs_dim: int, num_agents: int, num_actions: int) -> int:
    """Width of ``agent``'s input (:func:`agent_inputs`): the observation, the id if it sees
    it and, for the recurrent agent, the previous action."""
    recurrent = isinstance(agent, RNNAgent)
    return obs_dim + (num_agents if sees_ids(agent) else 0) + (num_actions if recurrent else 0)


def agent_inputs(obs: jax.Array, prev_action: jax.Array | None, ids: bool = True) -> jax.Array:
    """Every agent's network input: its observation, its one-hot id (if ``ids``) and (if
    given) its previous action's one-hot.

    Args:
      obs: ``[..., N, obs_dim]`` float32.
      prev_action: ``[..., N, A]`` one-hot of each agent's previous action (zeros at an
        episode's start), or ``None`` (feed-forward agents).
      ids: whether to add the ``[N]`` one-hot id.

    Returns:
      ``[..., N, obs_dim (+ N) (+ A)]``.
    """
    n = obs.shape[-2]
    parts = [obs]
    if ids:
        parts.append(jnp.broadcast_to(jnp.eye(n, dtype=obs.dtype), (*obs.shape[:-1], n)))
    if prev_action is not None:
        parts.append(prev_action.astype(obs.dtype))
    return jnp.concatenate(parts, axis=-1)


def init_agent(agent: RNNAgent | MLP, key: jax.Array, in_dim: int) -> PyTree:
    """Parameters of the shared agent network for inputs of width ``in_dim``."""
    x = jnp.zeros((1, in_dim), jnp.float32)
    if isinstance(agent, RNNAgent):
        return agent.init(key, jnp.zeros((1, agent.hidden), jnp.float32), x)
    return agent.init(key, x)


SAVED_GATES_BYTES = 32 * 2**20
"""Largest batch per 64 hidden units (in bytes of what the update keeps: inputs, encodings,
gates and states, :func:`saved_gates_bytes`) that :func:`unroll` runs through
:mod:`~.gru`'s hand-written backward pass (:func:`uses_saved_gates`); larger ones take the
rematerialized scan, whose memory is one GRU state per step."""


def saved_gates_bytes(rows: int, sequences: int, in_dim: int, hidden: int) -> int:
    """Bytes kept across the update by :mod:`~.gru`'s path for ``rows`` steps of
    ``sequences`` (episodes x agents): the inputs and, per step, the encoding, the three
    input projections, the four gates and the state (float32)."""
    return 4 * rows * sequences * (in_dim + 9 * hidden)


def uses_saved_gates(rows: int, sequences: int, in_dim: int, hidden: int) -> bool:
    """Whether :func:`unroll` takes :mod:`~.gru`'s saved-gates path for ``rows`` steps of
    ``sequences`` (episodes x agents): when :func:`saved_gates_bytes` is at most
    :data:`SAVED_GATES_BYTES` per 64 hidden units.

    The limit grows with the width because the saved-gates path gains by running the input
    and output layers as one matmul over all steps and by not recomputing the ``[H, 3H]``
    recurrent products, work that grows as ``H^2`` per row while the bytes it keeps grow as
    ``H``. Agent forward and backward on the 2-core CPU, saved gates against rematerialized
    (``python -m experiments.bench gru_paths``, ``docs/results/gru_paths/``): hidden 512, 32
    SMAX 3m episodes of 41 rows 0.41 s against 0.59 s, of 102 rows 1.08 s against 1.43 s, at
    128 episodes level (5.3 s); hidden 64, 32 stag-hunt episodes (201 rows, 8 agents) 0.34 s
    against 0.26 s, so those stay rematerialized; hidden 256 at 41 rows 0.16 s against
    0.20 s.
    """
    limit = SAVED_GATES_BYTES * max(1, hidden // 64)
    return saved_gates_bytes(rows, sequences, in_dim, hidden) <= limit


def unroll(agent: RNNAgent, params: PyTree, obs: jax.Array,
           prev_action: jax.Array | None) -> jax.Array:
    """The recurrent agent over whole episodes from a zero GRU state.

    Args:
      agent: the module.
      params: its parameters.
      obs: ``[B, T + 1, N, obs_dim]`` observations (any dtype; cast to float32 a step at a
        time), row 0 an episode's start.
      prev_action: ``[B, T + 1, N, A]`` one-hot previous actions, or ``None`` (inputs
        without them), as :func:`agent_inputs` takes them.

    Returns:
      ``[B, T + 1, N, A]`` Q-values; row t sees rows 0..t only.

    Two paths with the same forward values:

    * small batches or wide GRUs (:func:`uses_saved_gates`, e.g. 32 MPE episodes, or 32 SMAX
      episodes at hidden 512): the input and output layers run over all steps at once and
      only the GRU recurrence is scanned, with :mod:`~.gru`'s backward pass (faster: the weights'
      gradients are one matmul each, nothing is recomputed);
    * larger ones: each scanned step builds its own inputs (:func:`agent_inputs`), encodes
      them, steps the GRU and reads its Q-values, and is rematerialized
      (``jax.checkpoint``): the backward pass recomputes a step from its input state. What
      is kept across the episode is the GRU state of every step, ``[T + 1, B * N,
      hidden]``, instead of the encoded inputs, the GRU's gates and the hidden states
      besides (about 8 arrays of that size for a batch of 128 stag-hunt episodes, 52 MiB
      each), for about one more forward pass of the agent network.
    """
    batch, rows, n = obs.shape[:3]
    in_dim = (obs.shape[-1] + (n if agent.ids else 0)
              + (0 if prev_action is None else prev_action.shape[-1]))
    if uses_saved_gates(rows, batch * n, in_dim, agent.hidden):
        x = agent_inputs(obs.astype(jnp.float32), prev_action, agent.ids)  # [B, T + 1, N, in]
        x = jnp.swapaxes(x, 0, 1).reshape(rows, batch * n, in_dim)
        hs = gru.unroll_cell(params["params"]["cell"],
                             agent.apply(params, x, method=RNNAgent.encode))
        q = agent.apply(params, hs, method=RNNAgent.q_values)  # [T + 1, B * N, A]
        return jnp.swapaxes(q.reshape(rows, batch, n, q.shape[-1]), 0, 1)
    # time-major before the scan, in the stored dtype (uint8 for binary observations)
    parts = (obs,) if prev_action is None else (obs, prev_action)
    parts = tuple(jnp.swapaxes(part, 0, 1) for part in parts)
    h0 = jnp.zeros((batch * n, agent.hidden), jnp.float32)

    @jax.checkpoint
    def step(h: jax.Array, part: tuple[jax.Array, ...]) -> tuple[jax.Array, jax.Array]:
        prev = part[1] if len(part) > 1 else None
        x = agent_inputs(part[0].astype(jnp.float32), prev, agent.ids).reshape(batch * n, -1)
        h = agent.apply(params, h, agent.apply(params, x, method=RNNAgent.encode),
                        method=RNNAgent.recur)
        return h, agent.apply(params, h, method=RNNAgent.q_values)

    _, q = jax.lax.scan(step, h0, parts)  # [T + 1, B * N, A]
    return jnp.swapaxes(q.reshape(rows, batch, n, q.shape[-1]), 0, 1)


def episode_q(agent: RNNAgent | MLP, params: PyTree, batch: Episode) -> jax.Array:
    """An agent network's Q-values over episodes ``[B, T + 1, N, A]`` (leaves of ``batch``
    ``[B, T + 1, ...]``): the recurrent agent sees observation, id (if it takes it) and
    previous action, scanned over time from a zero state (:func:`unroll`); the feed-forward
    agent sees observation and id at each row."""
    if not isinstance(agent, RNNAgent):
        return agent.apply(params, agent_inputs(batch.obs.astype(jnp.float32), None))
    return unroll(agent, params, batch.obs, batches.previous_actions(batch, agent.num_actions))
