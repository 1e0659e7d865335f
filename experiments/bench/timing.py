"""Timing compiled programs side by side: each side compiled once (compile time apart), one
warm-up call each, then timed calls interleaved so that both see the same machine state.
Used by the QMIX benches against JaxMARL's ``qmix_rnn`` (:mod:`~.qmix`, :mod:`~.qmix_smax`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax


def compile_program(train: Callable, keys: jax.Array,
                    options: dict[str, Any] | None = None) -> tuple[Any, float, float]:
    """``jax.jit(jax.vmap(train), compiler_options=options)`` compiled for ``keys``, after
    clearing JAX's caches: ``(executable, trace-and-lower seconds, XLA compile seconds)``."""
    jax.clear_caches()
    start = time.perf_counter()
    lowered = jax.jit(jax.vmap(train), compiler_options=options or None).lower(keys)
    lowered_at = time.perf_counter()
    compiled = lowered.compile()
    return compiled, lowered_at - start, time.perf_counter() - lowered_at


def hlo_instructions(compiled: Any) -> int:
    """Instructions of a compiled program's optimized HLO module (every computation's, fused
    ones included): the size of what XLA compiled, which its compile time follows."""
    return sum(" = " in line for line in compiled.as_text().splitlines())


def timed_call(compiled: Any, keys: jax.Array) -> tuple[float, Any]:
    """Seconds of one call of ``compiled(keys)`` up to ``block_until_ready``, and its output."""
    start = time.perf_counter()
    out = jax.block_until_ready(compiled(keys))
    return time.perf_counter() - start, out


class Side:
    """One program of the comparison, compiled for a seed count, with its timed calls."""

    def __init__(self, name: str, train: Callable, keys: jax.Array, steps_per_seed: int,
                 updates_of: Callable[[Any], int],
                 options: dict[str, Any] | None = None) -> None:
        self.name, self.keys, self.steps_per_seed = name, keys, steps_per_seed
        self.options = dict(options or {})
        self.compiled, self.lower_s, self.xla_s = compile_program(train, keys, self.options)
        self.instructions = hlo_instructions(self.compiled)
        self.updates_of, self.samples, self.updates = updates_of, [], -1

    def call(self, record: bool = True) -> None:
        seconds, out = timed_call(self.compiled, self.keys)
        self.updates = self.updates_of(out)
        if record:
            self.samples.append(seconds)

    def summary(self) -> dict[str, Any]:
        steps = self.keys.shape[0] * self.steps_per_seed
        return {f"{self.name}_compiler_options": self.options,
                f"{self.name}_compile_s": self.lower_s + self.xla_s,
                f"{self.name}_lower_s": self.lower_s, f"{self.name}_xla_compile_s": self.xla_s,
                f"{self.name}_hlo_instructions": self.instructions,
                f"{self.name}_env_steps_per_seed": self.steps_per_seed,
                f"{self.name}_updates_per_seed": self.updates,
                f"{self.name}_seconds": list(self.samples),
                f"{self.name}_steps_per_s": steps / min(self.samples),
                f"{self.name}_steps_per_s_median": steps / statistics.median(self.samples)}


def run_sides(sides: list[Side], reps: int) -> None:
    """One warm-up call of every side, then ``reps`` timed calls interleaved."""
    for side in sides:
        side.call(record=False)
    for _ in range(reps):
        for side in sides:
            side.call()


def add_collect_block_argument(parser: argparse.ArgumentParser) -> None:
    """``--collect-block STEPS``: our episode collection's block (0: one scan of T steps)."""
    parser.add_argument("--collect-block", type=int, default=None, metavar="STEPS",
                        help="steps per block of our episode collection's early-stopping "
                             "loop (default: the library's, 8); 0 collects all T steps in "
                             "one scan (the collection before the loop stopped early)")


def apply_collect_block(value: int | None) -> None:
    """Sets :data:`~jaxmarl_accel.trainer.steps.COLLECT_BLOCK_STEPS` (read when a round is
    traced) from ``--collect-block``: ``None`` keeps the library's, 0 means one scan."""
    if value is not None:
        if value < 0:
            raise ValueError(f"--collect-block must be >= 0, got {value}")
        from jaxmarl_accel.trainer import steps

        steps.COLLECT_BLOCK_STEPS = value or None


def write_record(path: str | None, record: dict[str, Any]) -> None:
    """Writes a bench's ``record`` as indented JSON to ``path`` (its folder created), or
    nothing when ``path`` is None."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as handle:
            json.dump(record, handle, indent=2)
