"""Compact transition replay: store what observations are computed from, recompute them
when sampling.

The transitions added hold in their ``obs`` and ``next_obs`` fields a compact per-agent
array ``[N, F]`` instead of the observations ``[N, D]``, e.g. an env's packed physical
state (:attr:`~jaxmarl_accel.envs.Env.physical_state`: positions and velocities, 6 numbers
per agent in spread, where a k-nearest observation has 52), and ``observe`` maps one such
array to the observations, e.g. the env's own observation function
(:attr:`~jaxmarl_accel.envs.Env.observe_physical`). The buffer stores the compact arrays
as it would store observations (``next_obs`` stored, or read from the next slot with
:mod:`~jaxmarl_accel.buffers.next_slot`, which then keeps the pre-reset states aside);
``sample`` applies ``observe`` to the sampled ``obs`` and ``next_obs``: batches equal
those of a buffer of the observations ``observe`` gives, bit for bit (tested). They equal
those of a buffer of the env's observations where ``observe`` gives the env's own bit for
bit: always in spread; in tag but for the first observation of an episode (the last bit).

The saving is paid for at every sample: ``observe`` runs on the ``2B`` sampled joint steps
(``2NB`` with per-agent index sharing); a k-nearest observation searches ``[N, N]``
distances per joint step, so ``chunk`` bounds the joint steps observed at once (and their
temporaries: about 10 MB per joint step of 1,000-agent k-nearest spread). Learners that
read only some agents of each joint step can take the compact rows instead and observe
what they read (the neighbourhood critics,
:mod:`jaxmarl_accel.algos.actor_critic.local_critic`, with
``Env.observe_physical_at``); the trainer then gives the replay no ``observe``.
"""

from __future__ import annotations

from typing import Any

import jax

from jaxmarl_accel.buffers.base import SampleBatch
from jaxmarl_accel.buffers.storage import BufferState
from jaxmarl_accel.compact_rows import Observe, observe_rows
from jaxmarl_accel.types import PyTree


def check_observe(observe: Any, chunk: Any, layout: str) -> None:
    """``make_buffer``'s ``observe`` options, checked in Python (one-line ValueErrors)."""
    if observe is None:
        if chunk is not None:
            raise ValueError("observe_chunk: only used with observe")
        return
    if chunk is not None and (not isinstance(chunk, int) or isinstance(chunk, bool)
                              or chunk < 1):
        raise ValueError(f"observe_chunk must be a positive int or None, got {chunk!r}")
    if not callable(observe):
        raise ValueError(f"observe must be a function [N, F] -> [N, D] or None, got {observe!r}")
    if layout == "episode":
        raise ValueError("observe needs one transition per slot; layout 'episode' stores "
                         "whole episodes")


def _check_example(example: PyTree, observe: Observe) -> None:
    if not all(hasattr(example, name) for name in ("obs", "next_obs", "replace")):
        raise ValueError("observe needs a transition dataclass with obs and next_obs fields, "
                         f"got {type(example).__name__}")
    for name in ("obs", "next_obs"):
        compact = getattr(example, name)
        if compact.ndim != 2:
            raise ValueError(f"observe: the example's {name} must be one compact row per "
                             f"agent [N, F], got shape {compact.shape}")
        out = jax.eval_shape(observe, compact)
        if out.ndim != 2 or out.shape[0] != compact.shape[0]:
            raise ValueError(f"observe must map {name} {compact.shape} to [N, D] with "
                             f"N = {compact.shape[0]}, got {out.shape}")


def recompute_obs(buffer: Any, observe: Observe, chunk: int | None = None) -> Any:
    """``buffer`` (a :class:`~jaxmarl_accel.buffers.Buffer` of transitions whose ``obs``
    and ``next_obs`` hold compact rows ``[N, F]``) whose samples hold ``observe`` of them.

    Args:
      buffer: the buffer that stores the compact rows and draws the slots.
      observe: ``compact [N, F] -> observations [N, D]``.
      chunk: joint steps observed at once (None: a whole batch).

    Returns:
      a Buffer with the same state as ``buffer``; ``sample`` returns ``obs`` and
      ``next_obs`` ``[B, N, D]`` (``[N, B, N, D]`` with per-agent index sharing).
    """

    def init(example: PyTree) -> BufferState:
        _check_example(example, observe)
        return buffer.init(example)

    def sample(state: BufferState, key: jax.Array) -> SampleBatch:
        batch = buffer.sample(state, key)
        stored = batch.experience
        # the barrier keeps XLA from fusing the observation into the learner's ops, which
        # could change their rounding: the learner reads the same materialized arrays
        obs, next_obs = jax.lax.optimization_barrier(
            (observe_rows(observe, stored.obs, chunk),
             observe_rows(observe, stored.next_obs, chunk)))
        return batch._replace(experience=stored.replace(obs=obs, next_obs=next_obs))

    return buffer._replace(init=init, sample=sample)
