"""PQN's Q-network: one feed-forward network shared by all agents, its hidden layers
normalized (Gallici et al. 2024, Sec. 4: LayerNorm, or BatchNorm as JaxMARL's SMAX settings).

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
            x = nn.Dense(width)(x)
            if self.norm == "layer_norm":
                x = nn.LayerNorm()(x)
            elif self.norm == "batch_norm":
                x = nn.BatchNorm(use_running_average=not train)(x)
            x = nn.relu(x)
        return nn.Dense(self.num_actions)(x)


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


__all__ = ["QNetwork", "init_variables", "q_values", "q_values_learning"]
