"""The team networks of MAPPO and of the recurrent on-policy learners (``agent="rnn"``), beside
:mod:`~.networks`' feed-forward policy-value network of A2C and PPO.

:class:`TeamNet` is one network of a team: ReLU layers of ``hidden_sizes``, with, when
``recurrent``, a GRU (Cho et al. 2014; flax's ``nn.GRUCell``) of width ``hidden_sizes[0]``
after the first layer, then a policy head and/or a value head. A2C and PPO with
``agent="rnn"`` have one such network per team with both heads on one torso (JaxMARL's
``ActorCriticRNN`` shape); MAPPO (Yu et al. 2022) has two per team: an actor (policy head)
on the agent's own observation and a critic (value head) on the global state.

MAPPO's critic input (:func:`critic_input`) is, for each agent, the global state ``s``
(the env's ``state_of``; the concatenated observations of all agents where the env has
none) with the agent's one-hot id appended, ``[s, onehot(i)]`` (the "agent-specific global
state" of Yu et al. 2022, Sec. 4.3 and App. C, as JaxMARL's ``MPEWorldStateWrapper``): one
critic per team, parameters shared by its agents, values per agent.

Recurrence: the carry is a dict of ``[..., N, H]`` GRU states in agent order, ``"net"`` (the
actor's, or the shared torso's) and, for MAPPO, ``"critic"``. Acting (:func:`step`) runs the
GRU one step from the carry; the rollout round resets the carry to zeros where an episode
ended. Learning (:func:`unroll`) runs it over a rollout's ``T`` steps from the carry the
rollout started with, setting the state to zero before every step whose observation starts
an episode, so that the recomputed outputs are those the rollout was collected with
(truncated backpropagation through the rollout: no gradient reaches the carry it started
from). Initialization: orthogonal as :mod:`~.networks` (the project's LAPACK-free
:func:`~..initializers.orthogonal`, also for the GRU's recurrent kernels).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.algos.dense import Dense
from jaxmarl_accel.algos.initializers import orthogonal
from jaxmarl_accel.types import PyTree


class TeamNet(nn.Module):
    """``(x [..., in], h [..., H] or None) -> (policy output [..., out_size] or None, value
    [...] or None)``, one step (module docstring).

    Attributes:
      hidden_sizes: widths of the ReLU layers (the GRU's is the first's).
      out_size: logits or Gaussian means per agent; 0: no policy head (a critic).
      value: whether it has a value head.
      recurrent: a GRU after the first layer.
    """

    hidden_sizes: Sequence[int]
    out_size: int
    value: bool
    recurrent: bool

    def setup(self) -> None:
        self.layers = [Dense(width, kernel_init=orthogonal(math.sqrt(2.0)))
                       for width in self.hidden_sizes]
        if self.recurrent:
            self.cell = nn.GRUCell(self.hidden_sizes[0], recurrent_kernel_init=orthogonal())
        if self.out_size:
            self.policy_head = Dense(self.out_size, kernel_init=orthogonal(0.01))
        if self.value:
            self.value_head = Dense(1, kernel_init=orthogonal(1.0))

    def __call__(self, x: jax.Array, h: jax.Array | None = None
                 ) -> tuple[jax.Array | None, jax.Array | None]:
        x = self.embed(x)
        if self.recurrent:
            _, x = self.recur(h, x)
        return self.heads(x)

    def embed(self, x: jax.Array) -> jax.Array:
        """The first ReLU layer, ``[..., in] -> [..., hidden_sizes[0]]``."""
        return nn.relu(self.layers[0](x))

    def recur(self, h: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        """One GRU step, ``(h [..., H], x [..., H]) -> (h', h')``."""
        return self.cell(h, x)

    def heads(self, x: jax.Array) -> tuple[jax.Array | None, jax.Array | None]:
        """The remaining layers and the heads on ``x [..., hidden_sizes[0]]``."""
        for layer in self.layers[1:]:
            x = nn.relu(layer(x))
        out = self.policy_head(x) if self.out_size else None
        value = self.value_head(x)[..., 0] if self.value else None
        return out, value


def init(net: TeamNet, key: jax.Array, in_dim: int) -> PyTree:
    """``net``'s parameters for inputs of width ``in_dim``."""
    h = jnp.zeros((1, net.hidden_sizes[0])) if net.recurrent else None
    return net.init(key, jnp.zeros((1, in_dim)), h)


def step(net: TeamNet, params: PyTree, x: jax.Array, h: jax.Array | None
         ) -> tuple[jax.Array | None, jax.Array | None, jax.Array | None]:
    """One step on ``x [..., in]`` from state ``h [..., H]`` (``None`` when not recurrent):
    ``(out, value, h')``."""
    y = net.apply(params, x, method=TeamNet.embed)
    if net.recurrent:
        h, y = net.apply(params, h, y, method=TeamNet.recur)
    out, value = net.apply(params, y, method=TeamNet.heads)
    return out, value, h


def unroll(net: TeamNet, params: PyTree, x: jax.Array, h0: jax.Array, first: jax.Array
           ) -> tuple[jax.Array | None, jax.Array | None]:
    """``net`` over a sequence (module docstring): ``x [T, B, N_k, in]`` from the states
    ``h0 [B, N_k, H]``, the state set to zero before step t where ``first [T, B]`` is 1;
    returns ``(out [T, B, N_k, out_size], value [T, B, N_k])`` (``None`` for a missing
    head)."""
    embedded = net.apply(params, x, method=TeamNet.embed)  # every step at once

    def one_step(h: jax.Array, inputs: tuple[jax.Array, jax.Array]
                 ) -> tuple[jax.Array, jax.Array]:
        y, starts = inputs
        h = jnp.where(starts[:, None, None] > 0, 0.0, h)
        return net.apply(params, h, y, method=TeamNet.recur)

    _, states = jax.lax.scan(one_step, h0, (embedded, first))
    return net.apply(params, states, method=TeamNet.heads)


def critic_input(world: jax.Array, rows: np.ndarray, num_agents: int) -> jax.Array:
    """MAPPO's critic input of the agents ``rows`` (module docstring): the global state
    ``world [..., S]`` with each agent's one-hot id appended, ``[..., N_k, S + N]``."""
    ids = jnp.asarray(np.eye(num_agents, dtype=np.float32)[rows])  # [N_k, N]
    lead = world.shape[:-1]
    return jnp.concatenate(
        [jnp.broadcast_to(world[..., None, :], (*lead, len(rows), world.shape[-1])),
         jnp.broadcast_to(ids, (*lead, *ids.shape))], axis=-1)


__all__ = ["TeamNet", "critic_input", "init", "step", "unroll"]
