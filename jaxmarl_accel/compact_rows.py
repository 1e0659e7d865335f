"""Observations computed from compact rows, many joint steps at a time.

A compact row is what an observation is computed from, one ``[F]`` row per agent, e.g. an
env's packed physical state (:attr:`~jaxmarl_accel.envs.Env.physical_state`); an
:data:`Observe` maps one joint step's rows ``[N, F]`` to its observations ``[N, D]``. The
compact replay (:mod:`jaxmarl_accel.buffers.recompute`) observes every sampled joint step,
and the neighbourhood critics (:mod:`jaxmarl_accel.algos.actor_critic.local_critic`) the
rows they read; both take :func:`observe_rows` and its memory bound :func:`observe_chunk`
from here, a module of neither layer.
"""

from __future__ import annotations

from collections.abc import Callable

import jax

Observe = Callable[[jax.Array], jax.Array]
"""``compact [N, F] -> observations [N, D]``, pure and jittable."""

OBSERVE_ENTRIES = 2**24
"""Agent pairs (joint steps x N^2) observed at once when every agent of many joint steps is
observed: the k-nearest observations build ``[N, N]`` distance arrays, so at N = 1,000 16
joint steps are observed at a time (0.2 GB of temporaries) instead of a batch of 256 at once
(5 GB); up to 128 agents a batch of 1,024 is observed at once."""


def observe_chunk(num_agents: int) -> int:
    """Joint steps of ``num_agents`` agents observed at once (:data:`OBSERVE_ENTRIES`)."""
    return max(1, OBSERVE_ENTRIES // num_agents**2)


def observe_rows(observe: Observe, compact: jax.Array, chunk: int | None = None) -> jax.Array:
    """``observe`` of every joint step of ``compact`` ``[*I, N, F]`` (any leading index axes
    I, e.g. ``[B]`` or ``[N, B]``): ``[*I, N, D]``, ``chunk`` joint steps at a time (all at
    once when None)."""
    flat = compact.reshape(-1, *compact.shape[-2:])
    if chunk is None or chunk >= flat.shape[0]:
        out = jax.vmap(observe)(flat)
    else:  # a scan over chunks, each vmapped (the remainder too)
        out = jax.lax.map(observe, flat, batch_size=chunk)
    return out.reshape(*compact.shape[:-2], *out.shape[1:])
