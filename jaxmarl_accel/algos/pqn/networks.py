"""PQN's Q-networks, one shared by all agents, their hidden layers normalized (Gallici et al.
2024, Sec. 4: LayerNorm, or BatchNorm as JaxMARL's SMAX settings): the feed-forward
:class:`QNetwork` and the recurrent :class:`RNNQNetwork` (LayerNorm or none).

Its variables are flax's ``{"params": ..., "batch_stats": ...}``: BatchNorm layers keep the
running averages of their batch statistics in ``batch_stats`` (empty without BatchNorm).
While learning (``train=True``) a BatchNorm layer normalizes by the minibatch's own
statistics over every axis but the features (all agents of all its joint steps) and folds
them into its running averages (momentum 0.99); while acting it uses the running averages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxmarl_accel.algos.dense import Dense
from jaxmarl_accel.algos.value.networks import agent_inputs
from jaxmarl_accel.types import PyTree


class QNetwork(nn.Module):
    """``[..., in] -> [..., num_actions]`` Q-values: ``(Dense -> norm -> ReLU)`` per hidden
    layer, then a linear output layer.

    Attributes:
      hidden_sizes: widths of the hidden layers.
      num_actions: A, the width of the output layer.
      norm: ``"layer_norm"``, ``"batch_norm"`` or ``"none"`` after each hidden Dense.
      norm_input: BatchNorm of the input first.
    """

    hidden_sizes: Sequence[int]
    num_actions: int
    norm: str = "layer_norm"
    norm_input: bool = False

    @nn.compact
    def __call__(self, x: jax.Array, train: bool = False) -> jax.Array:
        if self.norm_input:
            x = nn.BatchNorm(use_running_average=not train)(x)
        for width in self.hidden_sizes:
            x = Dense(width)(x)
            if self.norm == "layer_norm":
                x = nn.LayerNorm()(x)
            elif self.norm == "batch_norm":
                x = nn.BatchNorm(use_running_average=not train)(x)
            x = nn.relu(x)
        return Dense(self.num_actions)(x)


def init_variables(net: QNetwork, key: jax.Array, obs_dim: int, num_agents: int
                   ) -> tuple[PyTree, PyTree]:
    """``(params, batch_stats)`` of ``net`` for inputs of every agent's observation
    ``[obs_dim]`` and one-hot id ``[num_agents]``; ``batch_stats`` is ``{}`` without
    BatchNorm."""
    variables = net.init(key, jnp.zeros((1, obs_dim + num_agents), jnp.float32))
    return variables["params"], variables.get("batch_stats", {})


def q_values(net: QNetwork, params: PyTree, batch_stats: PyTree, obs: jax.Array
             ) -> jax.Array:
    """Every agent's Q-values while acting (BatchNorm's running averages).

    Args:
      net: the Q-network.
      params, batch_stats: its variables (:func:`init_variables`).
      obs: ``[..., N, obs_dim]`` observations.

    Returns:
      ``[..., N, A]`` float32.
    """
    return net.apply({"params": params, "batch_stats": batch_stats},
                     agent_inputs(obs.astype(jnp.float32), None))


def q_values_learning(net: QNetwork, params: PyTree, batch_stats: PyTree, obs: jax.Array
                      ) -> tuple[jax.Array, Any]:
    """Every agent's Q-values while learning, ``obs [B, N, obs_dim] -> [B, N, A]``, and the
    BatchNorm running averages with this batch's statistics folded in (``batch_stats`` as
    it was without BatchNorm)."""
    q, updates = net.apply({"params": params, "batch_stats": batch_stats},
                           agent_inputs(obs.astype(jnp.float32), None), train=True,
                           mutable=["batch_stats"])
    return q, updates.get("batch_stats", batch_stats)




class RNNQNetwork(nn.Module):
    """The recurrent Q-network (``agent="rnn"``, as JaxMARL's ``pqn_vdn_rnn``): ``Dense ->
    norm -> ReLU`` of width ``hidden_sizes[0]``, a GRU (Cho et al. 2014; flax's
    ``nn.GRUCell``) of that width, ``(Dense -> norm -> ReLU)`` per further hidden layer,
    then the linear output layer. Used one part at a time (:meth:`embed`, :meth:`recur`,
    :meth:`head`) so that a sequence's embeddings and heads run at once around a scan of
    the GRU alone.

    Attributes:
      hidden_sizes: widths of the hidden layers (the GRU's is the first's).
      num_actions: A.
      norm: ``"layer_norm"`` or ``"none"``.
    """

    hidden_sizes: Sequence[int]
    num_actions: int
    norm: str = "layer_norm"

    def setup(self) -> None:
        self.layers = [Dense(width) for width in self.hidden_sizes]
        self.norms = [nn.LayerNorm() for _ in self.hidden_sizes]  # made when used
        self.cell = nn.GRUCell(self.hidden_sizes[0])
        self.out = Dense(self.num_actions)

    def __call__(self, h: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        h, y = self.recur(h, self.embed(x))
        return h, self.head(y)

    def embed(self, x: jax.Array) -> jax.Array:
        """``[..., in] -> [..., H]``: the first layer."""
        return nn.relu(self.normalize(0, self.layers[0](x)))

    def recur(self, h: jax.Array, x: jax.Array) -> tuple[jax.Array, jax.Array]:
        """One GRU step, ``(h [..., H], x [..., H]) -> (h', h')``."""
        return self.cell(h, x)

    def head(self, x: jax.Array) -> jax.Array:
        """``[..., H] -> [..., A]``: the further layers and the Q-values."""
        for i, layer in enumerate(self.layers[1:], start=1):
            x = nn.relu(self.normalize(i, layer(x)))
        return self.out(x)

    def normalize(self, i: int, x: jax.Array) -> jax.Array:
        """Hidden layer ``i``'s normalization of ``x``."""
        return self.norms[i](x) if self.norm == "layer_norm" else x


def init_recurrent(net: RNNQNetwork, key: jax.Array, obs_dim: int, num_agents: int
                   ) -> PyTree:
    """``net``'s parameters for inputs of an observation ``[obs_dim]`` and a one-hot id."""
    return net.init(key, jnp.zeros((1, net.hidden_sizes[0])),
                    jnp.zeros((1, obs_dim + num_agents)))["params"]


def q_step(net: RNNQNetwork, params: PyTree, h: jax.Array, obs: jax.Array
           ) -> tuple[jax.Array, jax.Array]:
    """One step of every agent: ``h [..., N, H]``, ``obs [..., N, obs_dim]`` -> ``(h' [..., N,
    H], Q [..., N, A])``."""
    return net.apply({"params": params}, h, agent_inputs(obs.astype(jnp.float32), None))


def q_unroll(net: RNNQNetwork, params: PyTree, obs: jax.Array, h0: jax.Array,
             first: jax.Array) -> jax.Array:
    """Q-values over sequences: ``obs [T, B, N, obs_dim]`` from the states ``h0 [B, N, H]``,
    the state set to zero before step t where ``first [T, B]`` is 1 (an episode starts
    there): ``[T, B, N, A]``, the values the rollout was collected with for the parameters
    it was collected with (no gradient reaches ``h0``)."""
    variables = {"params": params}
    embedded = net.apply(variables, agent_inputs(obs.astype(jnp.float32), None),
                         method=RNNQNetwork.embed)

    def one_step(h: jax.Array, inputs: tuple[jax.Array, jax.Array]
                 ) -> tuple[jax.Array, jax.Array]:
        y, starts = inputs
        h = jnp.where(starts[:, None, None] > 0, 0.0, h)
        return net.apply(variables, h, y, method=RNNQNetwork.recur)

    _, states = jax.lax.scan(one_step, jax.lax.stop_gradient(h0), (embedded, first))
    return net.apply(variables, states, method=RNNQNetwork.head)


__all__ = ["QNetwork", "RNNQNetwork", "init_recurrent", "init_variables", "q_step",
           "q_unroll", "q_values", "q_values_learning"]
