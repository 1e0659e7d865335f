"""One value-learner update taken apart op by op: where its milliseconds go.

``python -m experiments.bench update_profile --json PATH`` builds the update of bench
``qmix``'s run (recurrent QMIX on MPE spread with 3 agents at JaxMARL's ``qmix_rnn``
settings: batches of 32 episodes of 26 rows, GRU 64, mixer 32 / 128;
:func:`experiments.bench.qmix.our_config`), jits ``algo.update`` with the library's
compiler options, and calls it on one batch of random episodes:

* ``--reps`` timed calls (after one warm-up) give the fastest and the median milliseconds;
* ``--profile-updates`` more calls run under ``jax.profiler`` (a Perfetto trace), whose
  events are matched to the compiled module's instructions by name. An instruction not
  enclosed by another one on the same thread is *top level* (the XLA CPU runtime runs
  independent top-level thunks on its intra-op threads at once); a ``while`` instruction's
  enclosed events are its loop body's. The record gives, per update, the wall time, the busy
  time summed over threads (busy / wall is how many cores the update keeps busy), each
  top-level instruction's and each loop body's milliseconds and calls with the instruction's
  shape and JAX op name, and three shares: the loops (the GRU recurrences: the online and
  target forward scans, the backward scan; a loop body's op that ran on another thread
  than its loop, as a wide GRU's matmuls do, is top level and classed by its op name), the
  mixer's ops (``QMixNet`` in the op name) and the rest (the agent's dense layers over all
  rows, weight gradients, Adam).

``--algo`` picks another value learner (``vdn``, ``iql``) on the same settings.
``--smax MAP`` profiles instead the update of bench ``qmix_smax``'s run on SMAX's ``MAP``
at JaxMARL's SMAX settings (GRU 512, batches of 32 episodes of 101 steps, the mixer reading
the env's global state); ``--set KEY=VALUE`` then changes a field of that run as that
bench's ``--ours-set`` does (e.g. ``train_rows=64``). ``--gru-path`` forces one of the
recurrent agent's two unrolls (:func:`jaxmarl_accel.algos.value.networks.unroll`) for the
whole update, the target network's forward pass included, where bench ``gru_paths`` times
the agent's forward and backward alone; ``XLA_FLAGS`` is recorded. The batch's values are
random (normal observations, states and rewards, uniform actions, every action available,
every row but the last filled): the update's arithmetic does not depend on them. Run it on a
quiet machine; ``taskset -c 0`` before the command gives the same figures on one core.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import glob
import gzip
import json
import os
import re
import tempfile
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from experiments.bench import qmix_smax, smax_sides
from experiments.bench.gru_paths import GRU_PATHS, gru_path
from experiments.bench.qmix import Settings, our_config
from experiments.bench.timing import write_record
from jaxmarl_accel.envs import make
from jaxmarl_accel.trainer.compiling import compiler_options
from jaxmarl_accel.trainer.train import make_trainer
from jaxmarl_accel.types import Episode

ROUNDS = 128
"""Rounds of bench ``qmix``'s run (they set epsilon's and the target's schedules only)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The subcommand's flags."""
    parser.add_argument("--algo", default="qmix", choices=("qmix", "vdn", "iql"),
                        help="value learner (default: qmix)")
    parser.add_argument("--reps", type=int, default=50,
                        help="timed calls after one warm-up (default: 50)")
    parser.add_argument("--profile-updates", type=int, default=20,
                        help="calls run under the profiler (default: 20)")
    parser.add_argument("--top", type=int, default=25,
                        help="top-level instructions and loop-body ops kept in the record, "
                             "slowest first (default: 25)")
    parser.add_argument("--smax", default=None, metavar="MAP",
                        help="profile bench qmix_smax's update on this SMAX map (e.g. 2s3z) "
                             "at JaxMARL's SMAX settings instead of bench qmix's on spread")
    parser.add_argument("--set", dest="assignments", action="append", default=[],
                        metavar="KEY=VALUE",
                        help="with --smax: a ValueConfig or TrainConfig field of that run "
                             "(repeatable), as bench qmix_smax's --ours-set")
    parser.add_argument("--gru-path", default="auto", choices=tuple(GRU_PATHS),
                        help="the recurrent agent's unroll: the library's pick (auto), or "
                             "the saved-gates or rematerialized path forced (default: auto)")
    parser.add_argument("--json", default=None, help="write the record to this JSON file")


def random_episodes(spec: Any, batch: int, key: jax.Array) -> Episode:
    """``batch`` random episodes of ``spec``'s shapes: leaves ``[B, T + 1, ...]``, T the
    episode length, every step but the last filled, a normal global state of
    ``spec.state_dim`` columns (none on MPE spread: the mixer reads the concatenated
    observations)."""
    rows, n, a = spec.episode_length + 1, spec.num_agents, spec.num_actions
    k_obs, k_act, k_rew, k_state = jax.random.split(key, 4)
    return Episode(obs=jax.random.normal(k_obs, (batch, rows, n, spec.obs_dim)),
                   state=jax.random.normal(k_state, (batch, rows, spec.state_dim)),
                   avail=jnp.ones((batch, rows, n, a), bool),
                   action=jax.random.randint(k_act, (batch, rows, n), 0, a),
                   reward=jax.random.normal(k_rew, (batch, rows)),
                   terminated=jnp.zeros((batch, rows)),
                   filled=jnp.ones((batch, rows)).at[:, -1].set(0.0))


def instructions(hlo_text: str) -> dict[str, tuple[str, str]]:
    """Instruction name -> (result shape, JAX op name) of a compiled module's text."""
    pattern = r"^\s*(?:ROOT )?%([\w.\-]+) = (\S+) (?:.*?op_name=\"([^\"]+)\")?"
    return {m.group(1): (m.group(2), m.group(3) or "")
            for m in re.finditer(pattern, hlo_text, re.M)}


def nest(events: list[dict]) -> list[tuple[dict, dict | None]]:
    """Each event with the innermost event that encloses it on its thread (or None)."""
    out = []
    by_thread: dict[Any, list[dict]] = collections.defaultdict(list)
    for event in events:
        by_thread[event["tid"]].append(event)
    for thread in by_thread.values():
        thread.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[dict] = []
        for event in thread:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] < event["ts"] + event["dur"]:
                stack.pop()
            out.append((event, stack[-1] if stack else None))
            stack.append(event)
    return out


def profile(fn: Any, args: tuple, calls: int, names: dict[str, tuple[str, str]]) -> dict:
    """Run ``fn(*args)`` ``calls`` times under the profiler; per-call figures (docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        jax.profiler.start_trace(folder, create_perfetto_trace=True)
        start = time.perf_counter()
        for _ in range(calls):
            jax.block_until_ready(fn(*args))
        wall = (time.perf_counter() - start) / calls
        jax.profiler.stop_trace()
        (path,) = glob.glob(os.path.join(folder, "**", "*.trace.json.gz"), recursive=True)
        with gzip.open(path) as handle:
            trace = json.load(handle)
    events = [e for e in trace["traceEvents"] if e.get("ph") == "X" and e["name"] in names]
    top: collections.Counter = collections.Counter()
    top_calls: collections.Counter = collections.Counter()
    bodies: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    body_calls: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for event, parent in nest(events):
        if parent is None:
            top[event["name"]] += event["dur"]
            top_calls[event["name"]] += 1
        elif parent["name"].startswith("while"):
            bodies[parent["name"]][event["name"]] += event["dur"]
            body_calls[parent["name"]][event["name"]] += 1
    ms = lambda us: round(us / calls / 1e3, 4)
    row = lambda name, us, n: {"instruction": name, "ms": ms(us), "calls": n / calls,
                               "shape": names[name][0], "op_name": names[name][1]}
    shares = {"loops": 0.0, "mixer": 0.0, "rest": 0.0}
    for name, us in top.items():
        kind = ("loops" if name.startswith("while") or "/while/body/" in names[name][1]
                else "mixer" if "QMixNet" in names[name][1] else "rest")
        shares[kind] += us
    busy = sum(top.values())
    return {"wall_ms": round(wall * 1e3, 4), "busy_ms": ms(busy),
            "cores_busy": round(busy / 1e3 / calls / (wall * 1e3), 3),
            "busy_ms_by_kind": {k: ms(v) for k, v in shares.items()},
            "top_level": [row(n, us, top_calls[n]) for n, us in top.most_common()],
            "loop_bodies": {loop: [row(n, us, body_calls[loop][n])
                                   for n, us in body.most_common()]
                            for loop, body in bodies.items()}}


def profiled_config(args: argparse.Namespace) -> Any:
    """The run whose update is profiled: bench ``qmix``'s on spread, or with ``--smax`` bench
    ``qmix_smax``'s on that map at JaxMARL's SMAX settings with ``--set`` applied; the
    learner ``--algo``."""
    if args.smax is None:
        return dataclasses.replace(our_config(Settings(), ROUNDS), algo=args.algo)
    kwargs = qmix_smax.env_kwargs({"ENV_KWARGS": qmix_smax.DEFAULT_ENV_KWARGS}, args.smax)
    rows = make(f"jaxmarl:{smax_sides.ENV_ID}", **dict(kwargs))[0].spec.episode_length
    settings = smax_sides.Settings()
    config = qmix_smax.our_config(settings, kwargs, ROUNDS * settings.num_envs * rows, rows,
                                  args.algo)
    return qmix_smax.with_overrides(config, args.assignments)


def main(args: argparse.Namespace) -> None:
    """Time and profile one update; print the split and record it."""
    for flag in ("reps", "profile_updates", "top"):
        if getattr(args, flag) < 1:
            raise ValueError(f"--{flag.replace('_', '-')} must be >= 1, got "
                             f"{getattr(args, flag)}")
    if args.assignments and args.smax is None:
        raise ValueError("--set changes bench qmix_smax's run: it needs --smax MAP")
    config = profiled_config(args)
    trainer = make_trainer(config)
    algo = trainer.algo
    key = jax.random.key(0)
    state = algo.init(key)
    batch = random_episodes(trainer.env.spec, config.batch_size, jax.random.key(1))
    weights = jnp.ones((config.batch_size,), jnp.float32)
    update = jax.jit(algo.update, compiler_options=compiler_options())
    call_args = (state, batch, weights, key)
    start = time.perf_counter()
    with gru_path(args.gru_path):
        compiled = update.lower(*call_args).compile()
    compile_s = time.perf_counter() - start
    record: dict[str, Any] = {"backend": jax.default_backend(), "jax": jax.__version__,
                              "cpu_count": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
                              "load_average_start": os.getloadavg(), "algo": args.algo,
                              "smax": args.smax, "set": args.assignments,
                              "gru_path": args.gru_path,
                              "xla_flags": os.environ.get("XLA_FLAGS", ""),
                              "batch_episodes": config.batch_size,
                              "rows": trainer.env.spec.episode_length + 1,
                              "agents": trainer.env.spec.num_agents,
                              "train_rows": config.learner.train_rows,
                              "hidden": config.learner.hidden, "compile_s": round(compile_s, 2)}
    jax.block_until_ready(compiled(*call_args))
    times = []
    for _ in range(args.reps):
        begin = time.perf_counter()
        jax.block_until_ready(compiled(*call_args))
        times.append(time.perf_counter() - begin)
    record["update_ms_min"] = round(1e3 * min(times), 3)
    record["update_ms_median"] = round(1e3 * float(np.median(times)), 3)
    split = profile(compiled, call_args, args.profile_updates, instructions(compiled.as_text()))
    split["top_level"] = split["top_level"][:args.top]
    split["loop_bodies"] = {k: v[:args.top] for k, v in split["loop_bodies"].items()}
    record["profile"] = split
    record["load_average_end"] = os.getloadavg()
    kinds = ", ".join(f"{k} {v:.2f}" for k, v in split["busy_ms_by_kind"].items())
    print(f"{args.algo} update: {record['update_ms_min']:.2f} ms fastest, "
          f"{record['update_ms_median']:.2f} ms median; profiled {split['wall_ms']:.2f} ms wall, "
          f"{split['busy_ms']:.2f} ms busy on {split['cores_busy']:.2f} cores ({kinds})",
          flush=True)
    for row in split["top_level"][:10]:
        print(f"  {row['ms']:7.3f} ms  {row['instruction']:<28} {row['op_name'][-60:]}")
    write_record(args.json, record)
