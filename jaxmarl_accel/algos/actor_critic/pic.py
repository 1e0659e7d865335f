"""The permutation-invariant critic (``critic="pic"``) of agent i's neighbourhood graph.

PIC (Liu, Yeh and Schwing 2019, "PIC: Permutation Invariant Critic for Multi-Agent Deep
Reinforcement Learning", CoRL) replaces MADDPG's critic on the concatenated observations and
actions by a graph network over agent nodes whose features are each agent's observation and
action: graph-convolution layers that apply the same weights to every node and mix the nodes
by an average, then a pooling over the nodes, so the Q value does not change when the agents
are permuted (they ran MADDPG with it on spread with up to 200 agents). Our local form, whose
size does not depend on the number of agents N: agent i's graph is the node set
``{i} ∪ {its k nearest agents}``, node i first, node features ``h^0_j = [o_j, a_j]``; one
layer per width H_l of ``hidden_sizes``::

    h^{l+1}_j = relu(W_self^l h^l_j + b^l + W_agg^l mean_{m in nodes} h^l_m)

and the head reads agent i's own node and the mean-pooled nodes::

    Q_i = w^T [h^L_i, mean_{m in nodes} h^L_m] + c

Node i stays apart from its neighbours (its embedding enters the head alone), the
neighbours only through means: Q_i is invariant to their order.
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp


class PermutationInvariantCritic(nn.Module):
    """Agent i's PIC critic on its neighbourhood graph: ``[..., (1 + k) (obs_dim + A)] ->
    [..., 1]`` (the input is the node features, node i first, flattened; see the module
    docstring for the layers).

    Attributes:
      hidden_sizes: widths of the graph-convolution layers, one layer per width.
      num_nodes: nodes of every graph, ``1 + k``.
    """

    hidden_sizes: Sequence[int]
    num_nodes: int

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        h = x.reshape((*x.shape[:-1], self.num_nodes, -1))  # [..., 1 + k, obs_dim + A]
        for layer, width in enumerate(self.hidden_sizes):
            pooled = jnp.mean(h, axis=-2, keepdims=True)  # [..., 1, H_l]: all nodes' mean
            h = nn.relu(nn.Dense(width, name=f"self_{layer}")(h)
                        + nn.Dense(width, use_bias=False, name=f"agg_{layer}")(pooled))
        own_and_pooled = jnp.concatenate([h[..., 0, :], jnp.mean(h, axis=-2)], axis=-1)
        return nn.Dense(1, name="head")(own_and_pooled)
