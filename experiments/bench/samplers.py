"""Replay samplers and layouts against flashbax: ms per batch and GB/s.

``python -m experiments.bench samplers --json PATH`` times every sampler x layout x N x
capacity (batch 1024, predator-prey observation widths), flashbax's flat, item and
prioritised buffers at the same sizes, and this machine's memory-copy bandwidth, in one
process. Times are medians (``ms``) and minima (``ms_min``) per call over repeated
timings after compilation (``block_until_ready``), each timing a compiled loop of calls as
inside the training scan (see :func:`time_calls`); ``call_ms`` (and ``ref_call_ms``) is
the median of single jitted calls from Python, dispatch included. Compile time is
reported separately.
Neighbor sampling uses paper 000's Fig. 8 setting by default: 16 neighbors x 64
references. Configurations whose storage exceeds ``--max-gb`` are skipped and listed.

Predator-prey widths follow paper 000 (section III): P predators, G = P/3 prey,
L = max(2, P/3) landmarks; a predator sees its velocity and position (4), the landmarks
(2L), every other agent's position (2(P+G-1)) and the prey velocities (2G): 16 at P=3,
98 at P=24, as the paper reports. N below is P, the agents whose transitions are stored.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import flashbax as fbx
import jax
import jax.numpy as jnp
import numpy as np

from experiments.timing import Timing, time_calls
from jaxmarl_accel.buffers import LAYOUTS, SAMPLERS, BufferState, estimate_bytes, make_buffer
from jaxmarl_accel.runs.memory import ensure_fits
from jaxmarl_accel.types import Transition

ACTION_DIM = 5


def obs_dim(num_predators: int) -> int:
    """Predator observation width of predator-prey with ``num_predators`` predators."""
    prey = max(1, num_predators // 3)
    landmarks = max(2, num_predators // 3)
    return 4 + 2 * landmarks + 2 * (num_predators + prey - 1) + 2 * prey


def example(num_agents: int) -> Transition:
    dim = obs_dim(num_agents)
    return Transition(
        obs=jnp.zeros((num_agents, dim)), action=jnp.zeros((num_agents, ACTION_DIM)),
        reward=jnp.zeros((num_agents,)), next_obs=jnp.zeros((num_agents, dim)),
        done=jnp.zeros((num_agents,)),
    )


def random_storage(num_agents: int, capacity: int, layout: str, key: jax.Array) -> Transition:
    """Random transitions in storage layout, leaves ``[C, N, ...]`` or ``[N, C, ...]``."""

    def leaf(item: jax.Array, leaf_key: jax.Array) -> jax.Array:
        shape = jax.eval_shape(lambda: LAYOUTS[layout].alloc(item, capacity)).shape
        return jax.random.normal(leaf_key, shape, jnp.float32)

    ex = example(num_agents)
    keys = jax.random.split(key, len(jax.tree.leaves(ex)))
    return jax.tree.unflatten(
        jax.tree.structure(ex), [leaf(x, k) for x, k in zip(jax.tree.leaves(ex), keys,
                                                             strict=True)])


def out_bytes(fn: Callable, state: Any) -> int:
    shapes = jax.eval_shape(fn, state, jax.random.key(0))
    return sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(shapes))


def copy_bandwidth(num_bytes: int, repeats: int) -> tuple[float, float]:
    """GB/s (bytes copied / s) of a jitted JAX array copy and of numpy ``copyto``."""
    x = jnp.ones((num_bytes // 4,), jnp.float32)
    ms = time_calls(lambda a, k: a + 1.0, x, repeats, 2.0).ms
    src, dst = np.ones(num_bytes // 4, np.float32), np.empty(num_bytes // 4, np.float32)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(dst, src)
        samples.append(time.perf_counter() - start)
    return num_bytes / (ms * 1e-3) / 1e9, num_bytes / statistics.median(samples) / 1e9


def contiguous_copy_ms(experience: Transition, batch: int, layout: str, repeats: int,
                       budget: float) -> tuple[float, float]:
    """(median, min) ms of copying ``batch`` *contiguous* stored transitions (all leaves).

    The same bytes as a uniform batch, read sequentially and written to a fresh output of
    the same size, in the same framework: the ideal a gather of scattered rows can reach.
    """
    axis = LAYOUTS[layout].slot_axis
    fn = lambda e, k: jax.tree.map(  # noqa: E731
        lambda x: jax.lax.slice_in_dim(x, 0, batch, axis=axis), e)
    timing = time_calls(fn, experience, repeats, budget)
    return timing.ms, timing.ms_min


def our_state(sampler: str, config: dict, experience: Transition, capacity: int) -> BufferState:
    """A full, wrapped buffer around ``experience`` with random priorities."""
    buffer = make_buffer(sampler, **config)
    tiny = buffer.init({"x": jnp.zeros((1,), jnp.float32)})  # sampler state only
    state = tiny.replace(experience=experience, write_pos=jnp.int32(capacity // 3),
                         size=jnp.int32(capacity))
    errors = jax.random.exponential(jax.random.key(1), (capacity, 1))  # priority samplers
    return jax.jit(buffer.update_priorities)(state, jnp.arange(capacity), errors)


def flashbax_rows(num_agents: int, capacity: int, batch: int, repeats: int,
                  budget: float) -> dict[str, Timing]:
    """Timings of flashbax's flat, item and prioritised buffers' ``sample``."""
    rows, envs = {}, 100
    ex = example(num_agents)
    builders = {
        "flat": lambda: fbx.make_flat_buffer(capacity, batch, batch, add_sequences=True,
                                             add_batch_size=envs),
        "item": lambda: fbx.make_item_buffer(capacity, batch, batch, add_sequences=True,
                                             add_batches=True),
        "prioritised": lambda: fbx.make_prioritised_flat_buffer(
            capacity, batch, batch, add_sequences=True, add_batch_size=envs, device="cpu"),
    }
    for name, build in builders.items():
        buffer = build()

        def fill(state, key, buffer=buffer, name=name):
            leaves, tree = jax.tree.flatten(state.experience)
            keys = jax.random.split(key, len(leaves))
            noise = [jax.random.normal(k, x.shape, x.dtype) for x, k in
                     zip(leaves, keys, strict=True)]
            state = state.replace(experience=jax.tree.unflatten(tree, noise),
                                  is_full=jnp.array(True))
            if name == "prioritised":
                items = capacity  # one item per (env, time) position
                state = state.replace(running_index=jnp.array(capacity // envs, jnp.int32))
                prios = jax.random.uniform(key, (items,), minval=0.1, maxval=2.0)
                state = buffer.set_priorities(state, jnp.arange(items), prios)
            return state

        state = jax.jit(fill, donate_argnums=0)(buffer.init(ex), jax.random.key(2))
        rows[name] = time_calls(buffer.sample, state, repeats, budget)
        del state
        gc.collect()
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", required=True, help="where to write the list of records")
    parser.add_argument("--agents", type=int, nargs="+", default=[3, 6, 12, 24],
                        help="agent counts N (predators; observation widths of predator-prey "
                             "at that N) (default: 3 6 12 24)")
    parser.add_argument("--capacities", type=float, nargs="+", default=[1e5, 1e6],
                        help="buffer capacities in transitions (default: 1e5 1e6)")
    parser.add_argument("--batch", type=int, default=1024,
                        help="transitions per sampled batch (default: 1024)")
    parser.add_argument("--neighbors", type=int, default=16,
                        help="transitions per neighbor window (default 16: paper 000 Fig. 8, "
                             "16 neighbors x 64 references at batch 1024)")
    parser.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=SAMPLERS,
                        help="samplers to time (default: all)")
    parser.add_argument("--max-gb", type=float, default=3.0,
                        help="skip configs whose stored transitions exceed this many GB")
    parser.add_argument("--repeats", type=int, default=20,
                        help="timings per configuration, each a compiled loop of calls "
                             "(default: 20)")
    parser.add_argument("--budget-s", type=float, default=1.5,
                        help="stop repeating a timing after this many seconds")
    parser.add_argument("--no-flashbax", action="store_true",
                        help="do not time flashbax's buffers (ref_ms is then null)")


def record(sampler: str, layout: str | None, sharing: str | None, num_agents: int,
           capacity: int, batch: int, ms: float, num_bytes: int, ref_ms: float | None,
           **extra: Any) -> dict:
    return dict(sampler=sampler, layout=layout, index_sharing=sharing, num_agents=num_agents,
                capacity=capacity, batch=batch, ms=round(ms, 4),
                gb_per_s=round(num_bytes / (ms * 1e-3) / 1e9, 3), ref_ms=ref_ms, **extra)


def main(args: argparse.Namespace) -> None:
    records, skipped = [], []
    jax_gbs, numpy_gbs = copy_bandwidth(256 * 2**20, args.repeats)
    copy_gbs = max(jax_gbs, numpy_gbs)
    print(f"memory copy of 256 MiB: jax {jax_gbs:.2f} GB/s, numpy copyto {numpy_gbs:.2f} GB/s")
    for name, gbs in (("memcpy_jax", jax_gbs), ("memcpy_numpy", numpy_gbs)):
        records.append(record(name, None, None, 0, 0, 0, 256 * 2**20 / gbs / 1e6,
                              256 * 2**20, None))
    for capacity in (int(c) for c in args.capacities):
        for num_agents in args.agents:
            need = estimate_bytes(example(num_agents), capacity=capacity)
            try:
                if need > args.max_gb * 1e9:
                    raise ValueError(f"{need / 1e9:.1f} GB > --max-gb {args.max_gb}")
                ensure_fits(2 * need, "the storage and a flashbax copy", "skipped")
            except ValueError as why:
                skipped.append((num_agents, capacity, need))
                print(f"skip N={num_agents} C={capacity}: {why}")
                continue
            refs = {} if args.no_flashbax else flashbax_rows(
                num_agents, capacity, args.batch, args.repeats, args.budget_s)
            for name, timing in refs.items():
                print(f"N={num_agents:2d} C={capacity:.0e} flashbax {name:11s} "
                      f"{timing.ms:9.3f} ms (single call {timing.call_ms:.3f} ms) "
                      f"compile {timing.compile_s:.1f}s")
            for layout in LAYOUTS:
                experience = random_storage(num_agents, capacity, layout, jax.random.key(3))
                runs = [(s, "shared", {}) for s in args.samplers]
                runs.insert(1, ("uniform", "per_agent", {}))
                if "neighbor" in args.samplers:
                    runs.append(("neighbor", "shared", {"window": "centred"}))
                for sampler, sharing, extra in runs:
                    if sampler not in args.samplers:
                        continue
                    kwargs = dict(extra)
                    if sampler == "neighbor":
                        kwargs["neighbors"] = args.neighbors
                    config = dict(capacity=capacity, batch_size=args.batch, layout=layout,
                                  index_sharing=sharing, **kwargs)
                    state = our_state(sampler, config, experience, capacity)
                    sample = make_buffer(sampler, **config).sample
                    timing = time_calls(sample, state, args.repeats, args.budget_s)
                    compile_s, ms = timing.compile_s, timing.ms
                    ref = {"uniform": "flat", "per": "prioritised"}.get(sampler)
                    ref_t = refs[ref] if ref in refs and sharing == "shared" else None
                    ref_ms = round(ref_t.ms, 4) if ref_t else None
                    rec = record(sampler, layout, sharing, num_agents, capacity, args.batch,
                                 ms, out_bytes(sample, state), ref_ms,
                                 compile_s=round(compile_s, 3),
                                 ms_min=round(timing.ms_min, 4),
                                 call_ms=round(timing.call_ms, 4),
                                 ref_ms_min=round(ref_t.ms_min, 4) if ref_t else None,
                                 ref_call_ms=round(ref_t.call_ms, 4) if ref_t else None,
                                 obs_dim=obs_dim(num_agents),
                                 **kwargs)
                    if sampler == "uniform" and sharing == "shared" and "item" in refs:
                        rec["ref_item_ms"] = round(refs["item"].ms, 4)
                    if sampler == "uniform" and sharing == "shared":
                        copy_ms, copy_min = contiguous_copy_ms(
                            experience, args.batch, layout, args.repeats, args.budget_s)
                        rec["contiguous_copy_ms"] = round(copy_ms, 4)
                        rec["contiguous_copy_ms_min"] = round(copy_min, 4)
                    records.append(rec)
                    print(f"N={num_agents:2d} C={capacity:.0e} {layout:16s} {sampler:20s} "
                          f"{sharing:9s} {kwargs.get('window', ''):8s} {ms:9.3f} ms "
                          f"{rec['gb_per_s']:7.2f} GB/s  ref {ref_ms}  compile {compile_s:.1f}s")
                    del state
                del experience
                gc.collect()
    with open(args.json, "w") as out:
        json.dump(records, out, indent=1)
    summarize(records, copy_gbs, skipped)


def summarize(records: list[dict], copy_gbs: float, skipped: list) -> None:
    """Print the sampler goals (ratios against uniform and flashbax) as measured."""

    def find(**match: Any) -> dict | None:
        hits = [r for r in records if all(r.get(k) == v for k, v in match.items())]
        return hits[0] if hits else None

    print("\ngoals (ratios of medians, [ratios of minima]):")
    for rec in records:
        if rec["sampler"] == "uniform" and rec["index_sharing"] == "shared" and rec["ref_ms"]:
            best_gbs = rec["gb_per_s"] * rec["ms"] / rec["ms_min"]
            print(f"  uniform {rec['layout']} N={rec['num_agents']} C={rec['capacity']:.0e}: "
                  f"flashbax flat / ours = {rec['ref_ms'] / rec['ms']:.2f} "
                  f"[min {rec['ref_ms_min'] / rec['ms_min']:.2f}; single calls "
                  f"{rec['ref_call_ms'] / rec['call_ms']:.2f}] (goal 5 at N=24); "
                  f"{rec['gb_per_s'] / copy_gbs:.2f} [min {best_gbs / copy_gbs:.2f}] of copy "
                  "bandwidth (goal 0.5)")
            if rec.get("contiguous_copy_ms"):
                print(f"    the same bytes copied contiguously in JAX: "
                      f"{rec['contiguous_copy_ms']:.3f} ms; gather reaches "
                      f"{rec['contiguous_copy_ms'] / rec['ms']:.2f} "
                      f"[min {rec['contiguous_copy_ms_min'] / rec['ms_min']:.2f}] of it")
    for rec in records:
        if rec["sampler"] != "uniform" or rec["layout"] != "agent_major" \
                or rec["index_sharing"] != "per_agent":
            continue
        key = dict(num_agents=rec["num_agents"], capacity=rec["capacity"], sampler="uniform",
                   layout="transition_major")
        tm_pa = find(**key, index_sharing="per_agent")
        tm_sh = find(**key, index_sharing="shared")
        print(f"  N={rec['num_agents']} C={rec['capacity']:.0e}: agent_major per_agent / "
              f"transition_major per_agent = {rec['ms'] / tm_pa['ms']:.2f} "
              f"[min {rec['ms_min'] / tm_pa['ms_min']:.2f}], / transition_major shared = "
              f"{rec['ms'] / tm_sh['ms']:.2f} [min {rec['ms_min'] / tm_sh['ms_min']:.2f}] "
              "(goal 2 at N=24)")
    for rec in records:
        if rec["sampler"] == "uniform" and rec["index_sharing"] == "shared":
            key = dict(num_agents=rec["num_agents"], capacity=rec["capacity"],
                       layout=rec["layout"])
            parts = []
            for name in ("neighbor", "per", "prioritized_locality", "reuse"):
                other = find(sampler=name, index_sharing="shared", **key)
                if other and other.get("window", "forward") == "forward":
                    parts.append(f"{name} {other['ms'] / rec['ms']:.2f}x "
                                 f"[min {other['ms_min'] / rec['ms_min']:.2f}x]")
            print(f"  cost vs uniform, {rec['layout']} N={rec['num_agents']} "
                  f"C={rec['capacity']:.0e}: " + ", ".join(parts)
                  + " (goals: neighbor <= 1/1.5 at C=1e6; per, locality <= 3)")
    for num_agents, capacity, need in skipped:
        print(f"  skipped N={num_agents} C={capacity:.0e}: needs {need / 1e9:.1f} GB")
