"""AccMER against MAC-PO on the stag hunt, side by side in one process (paper 004, Sec. V).

``python -m experiments.bench accmer --settings p0 p1.5 n16 n32 --json PATH``

For each setting (paper 004's hyperparameters; replay sizes count episodes, as in the
authors' code) three programs are built from the same :class:`TrainConfig` but the sampler:

* ``accmer``: ``--algo accmer``, the reuse sampler (reuse ratio 0.5, decay gamma_W);
* ``macpo``: ``--algo macpo`` with the ``per`` sampler: MAC-PO's weights as priorities on
  the sum tree, the prioritized multi-agent replay that the paper's times are relative to;
* ``macpo_uniform``: ``--algo macpo`` with uniform sampling (the weights in the loss only).

Each side's replay is filled to ``--fill`` of its capacity with copies of E real episodes
collected by the side's own exploration policy (filling it by playing would take
``capacity / E`` rounds; what is timed depends on where the slots lie in memory, not on what
they hold), then three things are timed, compiled, after a warm-up, ``--reps`` times with
the sides interleaved (accmer, macpo, macpo_uniform, accmer, ...) so that all see the same
background load; the fastest repetition is reported (the least disturbed) with the median:

* ``end_to_end``: one chunk of the trainer (``Trainer.run_chunk``: rounds of E exploration
  episodes, add, one update each, until ``--rounds`` rounds' env steps, then a greedy
  evaluation of one episode), seconds per round;
* ``update``: ``--rounds`` update steps (sample, ``algo.update``, priorities) in one
  compiled loop, seconds per update;
* ``sampling``: ``--rounds`` sampling steps (sample the batch, write back priorities read
  from the gathered episodes) in one compiled loop: the sampling phase of paper 004's
  Fig. 4 without the learner, consecutive so that AccMER's reused set stays in cache as it
  would in training.

Hardware counters: paper 004's Table I and Fig. 4 count LLC load misses with ``perf``.
Where the machine exposes no hardware counters (``perf stat -e LLC-load-misses`` reports
"not supported" in containers without a PMU), the record gives what the misses follow
instead: the distinct replay slots (and MiB) read by ``--rounds`` and by ``--window-steps``
consecutive sampling steps, ``<side>_distinct_slots_<steps>_steps``.

Ratios are ``accmer / macpo`` seconds (below 1: AccMER is faster; paper 004 reports 17%,
15.2%, 19.8% and 25.4% less end-to-end time, ratios 0.83, 0.848, 0.802, 0.746). Compile
seconds of each program are recorded apart. When the three replays would not fit in
``--memory-fraction`` of the available memory, the capacity is lowered and the record says
so (``capacity`` against ``paper_capacity``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.algos.registry import buffer_kwargs
from jaxmarl_accel.buffers import estimate_bytes
from jaxmarl_accel.cli.scenario_flags import scenario_kwargs
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.envs import make
from jaxmarl_accel.runs.memory import available_bytes
from jaxmarl_accel.trainer.steps import collect_episodes, example_episode, learn_step
from jaxmarl_accel.trainer.train import make_trainer
from jaxmarl_accel.types import PyTree


@dataclasses.dataclass(frozen=True)
class Setting:
    """One of paper 004's timed settings: agents (= stags), miscapture punishment, batch
    and replay size in episodes, and AccMER's decay gamma_W."""

    agents: int
    punishment: float
    batch: int
    capacity: int
    decay: float
    paper_time_saved: float


SETTINGS = {
    "p0": Setting(8, 0.0, 256, 100_000, 1.0, 0.17),       # Table II, Fig. 4a
    "p1.5": Setting(8, -1.5, 128, 10_000, 0.8, 0.152),    # Table III, Fig. 4b
    "n16": Setting(16, 0.0, 128, 10_000, 0.8, 0.198),     # Sec. V-D, Fig. 6
    "n32": Setting(32, 0.0, 128, 10_000, 0.8, 0.254),
}
SIDES = {"accmer": ("accmer", "reuse"), "macpo": ("macpo", "per"),
         "macpo_uniform": ("macpo", "uniform")}


def env_kwargs_of(setting: Setting) -> tuple[tuple[str, Any], ...]:
    """The stag hunt's keyword arguments of ``setting`` (N agents, N stags, punishment)."""
    return scenario_kwargs("stag_hunt", (("miscapture_punishment", setting.punishment),
                                         ("num_stags", setting.agents)), setting.agents)


def slot_bytes(spec: Any) -> float:
    """Bytes of one stored episode of the env ``spec`` (one slot of the episode replay)."""
    return estimate_bytes(example_episode(spec), capacity=1000, layout="episode") / 1000


def side_config(setting: Setting, algo: str, sampler: str, capacity: int, rounds: int,
                num_envs: int) -> TrainConfig:
    """The :class:`TrainConfig` of one side: a run of one chunk of ``rounds`` full-length
    rounds (E episodes of T steps)."""
    env_kwargs = env_kwargs_of(setting)
    steps = rounds * num_envs * make("stag_hunt", **dict(env_kwargs))[0].spec.episode_length
    kwargs = (("decay", setting.decay),) if sampler == "reuse" else ()
    return TrainConfig(**{"env": "stag_hunt", "env_kwargs": env_kwargs,
                          "algo": algo, "sampler": sampler, "sampler_kwargs": kwargs,
                          "layout": "episode", "buffer_capacity": capacity,
                          "batch_size": setting.batch, "num_envs": num_envs,
                          "total_env_steps": steps, "eval_every": steps, "eval_episodes": 1})


def fit_capacity(setting: Setting, fraction: float) -> int:
    """The paper's replay size, lowered (to a multiple of 1000) until the three sides'
    replays fit in ``fraction`` of the available memory."""
    spec = make("stag_hunt", **dict(env_kwargs_of(setting)))[0].spec
    budget = fraction * available_bytes()[0]
    fits = int(budget / (len(SIDES) * slot_bytes(spec))) // 1000 * 1000
    return max(min(setting.capacity, fits), setting.batch)


def filled_state(trainer: Any, key: jax.Array, fill: float) -> PyTree:
    """The trainer's initial state with its replay holding ``fill * capacity`` copies of E
    real exploration episodes (slot i holds episode ``i mod E``), written by one ``add``."""
    state = trainer.init(key)
    algo = trainer.algo
    batch = collect_episodes(trainer.env, trainer.env_params, algo, state.algo,
                             jax.random.fold_in(key, 1), trainer.config.num_envs, explore=True)
    count = max(int(fill * trainer.config.buffer_capacity), trainer.config.batch_size)
    repeats = -(-count // trainer.config.num_envs)
    tiled = jax.tree.map(lambda x: jnp.concatenate([x] * repeats)[:count], batch.episodes)
    return state.replace(buffer=jax.jit(trainer.buffer.add)(state.buffer, tiled))


def programs(trainer: Any, rounds: int) -> dict[str, Any]:
    """The three timed functions of one side, each ``(state, key) -> output``."""
    algo, buffer = trainer.algo, trainer.buffer

    def end_to_end(state: PyTree, key: jax.Array) -> PyTree:
        return trainer.run_chunk(state.replace(key=key), jnp.int32(0))[0].algo

    def update(state: PyTree, key: jax.Array) -> PyTree:
        def body(i: jax.Array, carry: tuple[PyTree, PyTree]) -> tuple[PyTree, PyTree]:
            k1, k2 = jax.random.split(jax.random.fold_in(key, i))
            learned = learn_step(algo, buffer, carry[0], carry[1], k1, k2)
            return learned.algo, learned.buffer
        return jax.lax.fori_loop(0, rounds, body, (state.algo, state.buffer))[0]

    def sampling(state: PyTree, key: jax.Array) -> PyTree:
        # the priorities read every gathered leaf and are also summed into the output, so
        # the gather is live for samplers that ignore priorities (uniform)
        def body(i: jax.Array, carry: tuple[PyTree, jax.Array]) -> tuple[PyTree, jax.Array]:
            buf, total = carry
            batch = buffer.sample(buf, jax.random.fold_in(key, i))
            read = jax.tree.map(lambda x: jnp.mean(x.astype(jnp.float32),
                                                   axis=tuple(range(1, x.ndim))),
                                batch.experience)
            priority = jnp.abs(sum(jax.tree.leaves(read))) + 0.1 * batch.weights + 1e-3
            return (buffer.update_priorities(buf, batch.indices, priority),
                    total + jnp.sum(priority))
        buf, total = jax.lax.fori_loop(0, rounds, body, (state.buffer, jnp.zeros(())))
        return buf.sampler, total

    return {"end_to_end": end_to_end, "update": update, "sampling": sampling}


def distinct_slots(trainer: Any, state: PyTree, rounds: int, key: jax.Array) -> int:
    """Distinct replay slots read by ``rounds`` consecutive sampling steps (priorities
    written back as in training): the working set of the sampling phase, what the data
    movement (and the cache misses the paper counts) grows with."""
    buffer = trainer.buffer

    def body(buf: PyTree, i: jax.Array) -> tuple[PyTree, jax.Array]:
        batch = buffer.sample(buf, jax.random.fold_in(key, i))
        priority = 1.0 + jnp.abs(jnp.sum(batch.experience.reward, axis=1))
        return buffer.update_priorities(buf, batch.indices, priority), batch.indices

    _, indices = jax.jit(lambda b: jax.lax.scan(body, b, jnp.arange(rounds)))(state.buffer)
    return int(np.unique(np.asarray(indices)).size)


def rerank_seconds(capacity: int, batch: int, seeds: int, reps: int) -> float:
    """Median seconds per seed of one re-rank of the reuse sampler's table (``top_k`` of
    ``round(0.5 b)`` of C weights, :func:`~jaxmarl_accel.buffers.reuse.top_slots`), vmapped
    over ``seeds`` tables as in a seed-vmapped run. Under the seed ``vmap`` the sampler's
    ``lax.cond`` on each seed's window end becomes a ``select`` that computes this on every
    update, not once per window: this is what that costs per update."""
    from jaxmarl_accel.buffers.reuse import top_slots

    tables = jax.random.uniform(jax.random.key(0), (seeds, capacity))
    sizes = jnp.full((seeds,), capacity, jnp.int32)
    rank = jax.jit(jax.vmap(lambda t, n: top_slots(t, n, int(round(0.5 * batch)))))
    jax.block_until_ready(rank(tables, sizes))
    times = []
    for rep in range(max(reps, 5)):
        tables = tables + rep
        start = time.perf_counter()
        jax.block_until_ready(rank(tables, sizes))
        times.append(time.perf_counter() - start)
    return statistics.median(times) / seeds


def bench_setting(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The record of one setting: every side's compile and timed seconds, and the ratios."""
    setting = SETTINGS[name]
    capacity = (fit_capacity(setting, args.memory_fraction) if args.capacity is None
                else args.capacity)
    record: dict[str, Any] = {"setting": name, **dataclasses.asdict(setting),
                              "paper_capacity": setting.capacity, "capacity": capacity,
                              "rounds": args.rounds, "fill": args.fill,
                              "num_envs": args.num_envs, "reps": args.reps}
    compiled: dict[tuple[str, str], Any] = {}
    states: dict[str, PyTree] = {}
    for side, (algo, sampler) in SIDES.items():
        config = side_config(setting, algo, sampler, capacity, args.rounds, args.num_envs)
        record[f"{side}_sampler_kwargs"] = buffer_kwargs(config)
        trainer = make_trainer(config)
        states[side] = filled_state(trainer, jax.random.key(args.seed), args.fill)
        per_slot = slot_bytes(trainer.env.spec)
        for steps in (args.rounds, args.window_steps):
            slots = distinct_slots(trainer, states[side], steps, jax.random.key(args.seed))
            record[f"{side}_distinct_slots_{steps}_steps"] = slots
            record[f"{side}_distinct_mib_{steps}_steps"] = slots * per_slot / 2**20
        for phase, fn in programs(trainer, args.rounds).items():
            if phase not in args.phases:
                continue
            start = time.perf_counter()
            compiled[side, phase] = jax.jit(fn).lower(states[side], jax.random.key(0)).compile()
            record[f"{side}_{phase}_compile_s"] = time.perf_counter() - start
            jax.block_until_ready(compiled[side, phase](states[side], jax.random.key(0)))
        print(f"{name}: {side} built", flush=True)
    for phase in args.phases:
        samples: dict[str, list[float]] = {side: [] for side in SIDES}
        for rep in range(args.reps):
            for side in SIDES:
                start = time.perf_counter()
                jax.block_until_ready(compiled[side, phase](states[side], jax.random.key(rep)))
                samples[side].append((time.perf_counter() - start) / args.rounds)
        for side, seconds in samples.items():
            record[f"{side}_{phase}_s"] = seconds
            record[f"{side}_{phase}_best_s"] = min(seconds)
            record[f"{side}_{phase}_median_s"] = statistics.median(seconds)
        for base in ("macpo", "macpo_uniform"):
            record[f"{phase}_ratio_vs_{base}"] = (min(samples["accmer"]) / min(samples[base]))
            record[f"{phase}_ratio_vs_{base}_median"] = (statistics.median(samples["accmer"])
                                                         / statistics.median(samples[base]))
        print(f"{name} {phase}: accmer/macpo {record[f'{phase}_ratio_vs_macpo']:.3f} "
              f"accmer/macpo_uniform {record[f'{phase}_ratio_vs_macpo_uniform']:.3f} "
              f"(paper: {1 - setting.paper_time_saved:.3f} end to end)", flush=True)
    record["rerank_seeds"] = args.rerank_seeds
    record["rerank_per_seed_s"] = rerank_seconds(capacity, setting.batch, args.rerank_seeds,
                                                 args.reps)
    if "update" in args.phases:
        record["rerank_share_of_accmer_update"] = (record["rerank_per_seed_s"]
                                                   / record["accmer_update_median_s"])
        print(f"{name}: a re-rank costs {record['rerank_per_seed_s'] * 1e6:.0f} us per seed "
              f"({args.rerank_seeds} vmapped), "
              f"{record['rerank_share_of_accmer_update']:.2%} of AccMER's update", flush=True)
    return record


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The benchmark's flags."""
    parser.add_argument("--settings", nargs="+", choices=tuple(SETTINGS), default=["p0", "p1.5"],
                        help="paper 004's timed settings: p0 (8 agents, punishment 0, batch "
                             "256, replay 100000), p1.5 (8 agents, -1.5, batch 128, replay "
                             "10000, decay 0.8), n16 / n32 (16 / 32 agents, punishment 0, "
                             "batch 128, replay 10000, decay 0.8) (default: p0 p1.5)")
    parser.add_argument("--phases", nargs="+", choices=("end_to_end", "update", "sampling"),
                        default=["end_to_end", "update", "sampling"],
                        help="what to time (default: all three)")
    parser.add_argument("--rounds", type=int, default=4,
                        help="rounds (updates, sampling steps) per timed call (default: 4)")
    parser.add_argument("--window-steps", type=int, default=40,
                        help="sampling steps over which the distinct slots read are counted "
                             "(default: 40)")
    parser.add_argument("--reps", type=int, default=5,
                        help="timed calls per side and phase, interleaved (default: 5)")
    parser.add_argument("--num-envs", type=int, default=8,
                        help="envs per round, E (default: 8, paper 004's runner)")
    parser.add_argument("--fill", type=float, default=1.0,
                        help="fraction of the replay filled before timing (default: 1.0)")
    parser.add_argument("--capacity", type=int, default=None,
                        help="replay episodes for every setting (default: the paper's, lowered "
                             "to fit --memory-fraction of the available memory)")
    parser.add_argument("--memory-fraction", type=float, default=0.5,
                        help="share of the available memory the three replays may take "
                             "(default: 0.5)")
    parser.add_argument("--rerank-seeds", type=int, default=8,
                        help="seed-vmapped tables the re-rank cost is measured over "
                             "(default: 8)")
    parser.add_argument("--seed", type=int, default=0, help="PRNG seed (default: 0)")
    parser.add_argument("--json", default=None, help="write the records to this JSON file")


def main(args: argparse.Namespace) -> None:
    """Time every setting and write the records."""
    for name, value in (("--rounds", args.rounds), ("--reps", args.reps),
                        ("--window-steps", args.window_steps),
                        ("--num-envs", args.num_envs)):
        if value < 1:
            raise SystemExit(f"error: {name} must be >= 1, got {value}")
    if not 0.0 < args.fill <= 1.0:
        raise SystemExit(f"error: --fill must be in (0, 1], got {args.fill}")
    if not 0.0 < args.memory_fraction <= 1.0:
        raise SystemExit(f"error: --memory-fraction must be in (0, 1], got "
                         f"{args.memory_fraction}")
    result = {"device": str(jax.devices()[0]), "backend": jax.default_backend(),
              "jax": jax.__version__, "records": []}
    for name in args.settings:
        result["records"].append(bench_setting(name, args))
        if args.json:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=1, default=_plain)


def _plain(value: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray | np.generic) else str(value)
