"""Parallel vs sequential learners (paper 001): how one step maps over the N agents.

Paper 001 runs all agents' learners in parallel on an FPGA instead of the reference
implementations' loop over agents. Here the agents' parameters are stacked on a leading
axis and a per-agent step ``fn(agent, *own, *data) -> (agent, out)`` runs either

* ``"parallel"``: for every agent at once, in one ``jax.vmap`` over the agent axis;
* ``"sequential"``: agent by agent, in a ``jax.lax.scan`` whose carry holds the stacked
  agents (the reference implementations' loop).

No agent reads another agent's new parameters within one step, so both compute the same
step (up to the last bit of float rounding).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxmarl_accel.types import PyTree

AgentStep = Callable[..., tuple[PyTree, Any]]


def parallel(fn: AgentStep, agents: PyTree, own: tuple, data: tuple,
             per_agent: bool) -> tuple[PyTree, Any]:
    """``agent, out = fn(agent, *own, *data)`` for all agents in one ``vmap``.

    Args:
      fn: the per-agent step.
      agents: the stacked agents, leaves ``[N, ...]``.
      own: per-agent inputs, leaves ``[N, ...]``.
      data: inputs with leaves ``[N, ...]`` if ``per_agent`` (agent i gets ``data[i]``),
        else shared by all agents.
      per_agent: whether ``data`` has the agent axis.

    Returns:
      the new agents (leaves ``[N, ...]``) and the outs stacked ``[N, ...]``.
    """
    call = lambda agent, own, data: fn(agent, *own, *data)
    return jax.vmap(call, in_axes=(0, 0, 0 if per_agent else None))(agents, own, data)


def sequential(fn: AgentStep, agents: PyTree, own: tuple, data: tuple,
               per_agent: bool) -> tuple[PyTree, Any]:
    """:func:`parallel`'s result, computed agent by agent in a ``lax.scan`` over i = 0..N-1
    whose carry is the stacked agents (agent i's slice replaced after its step)."""
    num_agents = jax.tree.leaves(agents)[0].shape[0]

    def body(stacked: PyTree, i: jax.Array) -> tuple[PyTree, Any]:
        take = lambda tree: jax.tree.map(lambda x: x[i], tree)
        agent, out = fn(take(stacked), *take(own), *(take(data) if per_agent else data))
        return jax.tree.map(lambda s, v: s.at[i].set(v), stacked, agent), out

    return jax.lax.scan(body, agents, jnp.arange(num_agents))


LEARNERS: dict[str, Callable[..., tuple[PyTree, Any]]] = {
    "parallel": parallel,
    "sequential": sequential,
}
"""The ways of mapping a per-agent step over the agents, by ``ActorCriticConfig.learners``."""
