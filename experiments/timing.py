"""Timing of compiled steps for the benchmarks and the characterization.

:func:`time_loop` times a step as it runs inside a training scan (many iterations per
compiled call, carry donated); :class:`Timing` holds the compile time and the per-iteration
seconds of each timed call. Report compile time apart from run time, and compare ratios
measured side by side in one run rather than absolute times across runs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmarl_accel.types import PyTree


class Timing(NamedTuple):
    """Seconds of one timed function: compile time, the per-iteration time of each timed call
    (a call runs the function ``inner`` times in a compiled loop, so dispatch is amortized)
    and, from :func:`time_calls`, the seconds of single jitted calls."""

    compile_s: float
    samples: tuple[float, ...]
    inner: int = 1
    single_calls: tuple[float, ...] = ()

    @property
    def ms(self) -> float:
        """Median milliseconds per iteration."""
        return 1e3 * self.median

    @property
    def ms_min(self) -> float:
        """Fastest milliseconds per iteration."""
        return 1e3 * min(self.samples)

    @property
    def call_ms(self) -> float:
        """Median milliseconds of a single jitted call from Python (dispatch included)."""
        return 1e3 * statistics.median(self.single_calls)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    def stat(self, name: str) -> float:
        """``"median"`` or ``"min"`` seconds per iteration (min: the least disturbed call,
        the better estimate on a machine shared with other work)."""
        return min(self.samples) if name == "min" else self.median

    def summary(self) -> dict[str, float]:
        """Median, min, max and inter-quartile range in milliseconds per iteration."""
        ms = sorted(1e3 * s for s in self.samples)
        q = statistics.quantiles(ms, n=4, method="inclusive") if len(ms) > 1 else [ms[0]] * 3
        return {"median_ms": statistics.median(ms), "min_ms": ms[0], "max_ms": ms[-1],
                "q25_ms": q[0], "q75_ms": q[2], "reps": len(ms), "inner": self.inner,
                "compile_s": self.compile_s}


def perturb(tree: PyTree, value: jax.Array) -> PyTree:
    """``tree + 1e-12 * value``: makes the next loop iteration depend on this one's output so
    that XLA cannot hoist loop-invariant work out of a timing loop (a few tiny adds)."""
    return jax.tree.map(lambda x: x + 1e-12 * value.astype(x.dtype), tree)


def time_loop(body: Callable, carry: PyTree, consts: tuple, *, seed: int, reps: int,
              budget_s: float, target_s: float = 0.05, max_inner: int = 200,
              copy: bool = True) -> tuple[Timing, PyTree]:
    """Time ``carry = body(carry, consts, key)`` as it runs inside the training scan.

    One compiled ``fori_loop`` runs ``inner`` iterations per call (key ``fold_in(key, i)``),
    with the carry donated (updated in place). A first call with one iteration warms up and
    sizes ``inner`` so that a call lasts about ``target_s``; then ``reps`` calls are timed
    (at least two, fewer than ``reps`` once ``budget_s`` is spent). The carry is copied
    first unless ``copy`` is False (then the caller's carry is consumed).

    Returns:
      ``(Timing, final carry)``.
    """
    def run(carry, consts, key, inner):
        step = lambda i, c: body(c, consts, jax.random.fold_in(key, i))  # noqa: E731
        return jax.lax.fori_loop(0, inner, step, carry)

    if copy:
        carry = jax.tree.map(jnp.copy, carry)
    key = jax.random.key(seed)
    start = time.perf_counter()
    compiled = jax.jit(run, donate_argnums=0).lower(carry, consts, key, 1).compile()
    compile_s = time.perf_counter() - start
    first = float("inf")
    for _ in range(2):  # the faster of two single iterations sizes the loop
        start = time.perf_counter()
        carry = jax.block_until_ready(compiled(carry, consts, key, 1))
        first = min(first, time.perf_counter() - start)
    inner = int(min(max_inner, max(1, round(target_s / max(first, 1e-6)))))
    samples: list[float] = []
    for rep in range(reps):
        start = time.perf_counter()
        carry = jax.block_until_ready(compiled(carry, consts, jax.random.fold_in(key, rep),
                                               inner))
        samples.append((time.perf_counter() - start) / inner)
        if len(samples) >= 2 and sum(samples) * inner > budget_s:
            break
    return Timing(compile_s, tuple(samples), inner), carry


def time_calls(
    fn: Callable, state: Any, repeats: int, budget_s: float, loop_s: float = 0.02
) -> Timing:
    """Time ``fn(state, key)`` inside a compiled loop and as single calls.

    Each loop timing runs ``fn`` ``k`` times in one compiled ``fori_loop`` (every iteration
    with its own key, its output carried so that none is dead code), the way a sampler
    runs inside the training scan, so the per-call dispatch of a lone jitted function is
    amortized; ``k`` is sized from a first call to take about ``loop_s`` seconds. The
    single calls are how a Python loop calling ``jit(fn)`` sees it. Compile seconds are
    those of ``fn`` alone.
    """
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(state, jax.random.key(0)).compile()
    compile_s = time.perf_counter() - start

    def loop(state: Any, key: jax.Array, count: jax.Array) -> Any:
        body = lambda i, prev: fn(state, jax.random.fold_in(key, i))  # noqa: E731
        return jax.lax.fori_loop(0, count, body, fn(state, key))

    looped = jax.jit(loop).lower(state, jax.random.key(0), jnp.int32(1)).compile()
    jax.block_until_ready(compiled(state, jax.random.key(0)))  # warm-up
    start = time.perf_counter()
    jax.block_until_ready(looped(state, jax.random.key(0), jnp.int32(1)))
    first = time.perf_counter() - start
    calls = int(min(max(loop_s / max(first / 2, 1e-6), 2), 1000))
    samples, singles, spent = [], [], 0.0
    for i in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(looped(state, jax.random.key(i + 1), jnp.int32(calls - 1)))
        elapsed = time.perf_counter() - start
        samples.append(elapsed / calls)
        start = time.perf_counter()
        jax.block_until_ready(compiled(state, jax.random.key(i + 1)))
        singles.append(time.perf_counter() - start)
        spent += elapsed + singles[-1]
        if spent > budget_s and len(samples) >= 3:
            break
    return Timing(compile_s, tuple(samples), calls, tuple(singles))


def time_chunks(fn: Any, state: PyTree, chunks: int) -> tuple[PyTree, Any, float, float]:
    """Compile a jitted ``fn(state, chunk_index) -> (state, out)`` (e.g. a trainer's
    ``run_chunk``, state donated), run chunk 0 as a warm-up, then time chunks ``1 ..
    chunks`` back to back: ``(state, last out, compile seconds, seconds per chunk)``."""
    t0 = time.perf_counter()
    compiled = fn.lower(state, jnp.int32(0)).compile()
    compile_s = time.perf_counter() - t0
    state, out = compiled(state, jnp.int32(0))
    jax.block_until_ready((state, out))
    t0 = time.perf_counter()
    for chunk in range(1, chunks + 1):
        state, out = compiled(state, jnp.int32(chunk))
    jax.block_until_ready((state, out))
    return state, out, compile_s, (time.perf_counter() - t0) / chunks
