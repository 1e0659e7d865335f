"""The host side of a run: compile once, run chunk by chunk, log, checkpoint, summarize.

Seeds (and, with fewer seeds than devices, envs) are sharded over the devices by
:mod:`jaxmarl_accel.sharding`; one device is the plain single-device program. Under
``jax.distributed`` every process runs this loop on its own devices; only process 0
writes files (orbax coordinates the checkpoint writes of all processes).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp

from experiments import outputs
from experiments.memory import check_state_fits
from jaxmarl_accel import config as cfg
from jaxmarl_accel.envs.evaluate import evaluate_policy
from jaxmarl_accel.envs.policies import (
    heuristic_policy,
    learner_policy,
    random_policy,
    scripted_team,
)
from jaxmarl_accel.envs.rollout import rollout
from jaxmarl_accel.sharding import (
    DeviceLayout,
    ShardedTrainer,
    auto_layout,
    make_sharded_trainer,
    plan_layout,
)
from jaxmarl_accel.train import Trainer, make_trainer

CONFIG_NAME = "config.json"


class NonFiniteError(RuntimeError):
    """A learner metric or evaluation return stopped being finite."""


def choose_layout(seeds: int, num_envs: int, devices: int | str,
                  env_shards: int | None = None) -> DeviceLayout:
    """The device layout for ``--devices`` (a count, or ``"auto"``: the most devices, of
    ``jax.device_count()``, that the seeds and envs divide evenly over)."""
    available = jax.device_count()
    if devices == "auto":
        if env_shards is None:
            return auto_layout(seeds, num_envs, available)
        return plan_layout(seeds, num_envs, available, env_shards)
    count = int(devices)
    if count > available:
        raise ValueError(f"--devices {count} but only {available} device(s) are available")
    return plan_layout(seeds, num_envs, count, env_shards)


def check_finite(metrics: Any, chunk: int) -> None:
    """Raise :class:`NonFiniteError` naming the seed, the env step and the metric."""
    named = dict(metrics.learner, eval_return=metrics.eval_return)
    for name, value in sorted(named.items()):
        value = np.asarray(value)
        bad = ~np.isfinite(value.reshape(value.shape[0], -1)).all(axis=1)
        if bad.any():
            seed = int(np.argmax(bad))
            step = int(np.asarray(metrics.env_steps)[seed])
            raise NonFiniteError(
                f"non-finite {name} in seed {seed} during chunk {chunk} (env step {step})")


def checkpoint_items(state: Any) -> dict[str, Any]:
    """The state's leaves keyed by tree path, without zero-size leaves (orbax refuses them)."""
    leaves = jax.tree_util.tree_flatten_with_path(state)[0]
    return {jax.tree_util.keystr(path): leaf for path, leaf in leaves if leaf.size}


def state_from_items(abstract: Any, items: dict[str, Any]) -> Any:
    """Inverse of :func:`checkpoint_items` given the abstract state."""
    paths, treedef = jax.tree_util.tree_flatten_with_path(abstract)
    leaves = [items[jax.tree_util.keystr(path)] if leaf.size else jnp.zeros(leaf.shape, leaf.dtype)
              for path, leaf in paths]
    return jax.tree_util.tree_unflatten(treedef, leaves)


class ProgressBar:
    """A one-line progress bar on stderr with env steps per second and time left."""

    def __init__(self, total_steps: int, start_steps: int, quiet: bool) -> None:
        self.total, self.start, self.quiet = total_steps, start_steps, quiet
        self.t0 = time.perf_counter()

    def update(self, steps: int, seeds: int, eval_return: float) -> None:
        if self.quiet:
            return
        elapsed = max(time.perf_counter() - self.t0, 1e-9)
        rate = (steps - self.start) / elapsed
        left = (self.total - steps) / rate if rate > 0 else math.inf
        width, done = 30, steps / self.total
        bar = "#" * int(width * done) + "." * (width - int(width * done))
        print(f"\r[{bar}] {100 * done:5.1f}% {steps:,}/{self.total:,} steps/seed | "
              f"{rate * seeds:,.0f} env steps/s ({rate:,.0f} per seed) | eval {eval_return:.2f}"
              f" | left {_duration(left)}   ", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if not self.quiet:
            print(file=sys.stderr)


def _duration(seconds: float) -> str:
    if not math.isfinite(seconds):
        return "?"
    minutes, sec = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{sec:02d}s"


def baseline_returns(trainer: Trainer, key: jax.Array, episodes: int) -> dict[str, Any]:
    """Mean per-agent returns ``[N]`` of the scenario's random and scripted policies.

    With scripted prey (``--prey heuristic``) the prey are scripted in both baselines too,
    so the trained predators are compared with random and scripted predators against the
    same prey.
    """
    env, params = trainer.env, trainer.env_params
    random_key, heuristic_key = jax.random.split(key)
    random_fn = random_policy(env)
    if trainer.config.prey == "heuristic":
        random_fn = scripted_team(env, random_fn, "prey")
    results = {
        "random": evaluate_policy(env, params, random_fn, random_key, episodes),
        "heuristic": evaluate_policy(env, params, heuristic_policy(env), heuristic_key,
                                     episodes)}
    return {name: np.asarray(result.agent_returns) for name, result in results.items()}


def team_means(values: np.ndarray, teams: tuple[str, ...]) -> dict[str, float]:
    """Mean of a per-agent vector ``[N]`` per team label."""
    return {team: float(np.mean([v for v, t in zip(values, teams, strict=True) if t == team]))
            for team in dict.fromkeys(teams)}


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """How a run is executed and recorded (what the trained numbers do not depend on).

    Attributes:
      seeds: seeds trained at once (vmapped).
      seed: base PRNG seed; seed i uses ``split(PRNGKey(seed))[i]``.
      out_dir: output folder.
      resume: continue from the newest checkpoint in ``out_dir`` (if any).
      render: render one evaluation episode of seed 0 to ``episode.gif`` / ``.png``.
      baseline_episodes: episodes of the random and scripted baselines of the score.
      checkpoint_every: save a checkpoint every this many chunks.
      quiet: no progress output.
      devices: devices to shard the seeds over (a count, or ``"auto"``).
      env_shards: devices each seed's envs are split over (None: chosen automatically).
    """

    seeds: int
    seed: int
    out_dir: str
    resume: bool = False
    render: bool = False
    baseline_episodes: int = 1000
    checkpoint_every: int = 1
    quiet: bool = False
    devices: int | str = 1
    env_shards: int | None = None


class Started(NamedTuple):
    """A run ready to train: its state, the metric rows so far and the next chunk."""

    state: Any
    rows: list[dict[str, float]]
    start: int


def run_training(config: cfg.TrainConfig, options: RunOptions) -> int:
    """Run (or resume) a multi-seed training run; returns the process exit code.

    Compile one chunk, restore or initialize the state (:func:`restore_or_init`), train
    the remaining chunks (:func:`train_chunks`), then write the summary, curve and
    rendering (:func:`summarize_run`).
    """
    trainer = make_trainer(config)
    layout = choose_layout(options.seeds, config.num_envs, options.devices, options.env_shards)
    sharded = make_sharded_trainer(trainer, layout, options.seeds)
    state_bytes = check_state_fits(sharded.abstract_state, options.seeds, layout.seed_shards)
    writer = jax.process_index() == 0
    if writer:
        os.makedirs(options.out_dir, exist_ok=True)
    manager = ocp.CheckpointManager(
        os.path.abspath(os.path.join(options.out_dir, "checkpoints")),
        options=ocp.CheckpointManagerOptions(max_to_keep=2))
    t0 = time.perf_counter()
    compiled = sharded.run_chunk.lower(sharded.abstract_state, np.int32(0)).compile()
    compile_s = time.perf_counter() - t0
    log = _logger(options.quiet or not writer)
    log(f"compiled one chunk for {options.seeds} seed(s) on {layout.num_devices} device(s) "
        f"({layout.seed_shards} seed shard(s) x {layout.env_shards} env shard(s)) in "
        f"{compile_s:.1f}s; training state {state_bytes / 2**20:.1f} MiB")
    started = restore_or_init(config, options, sharded, manager, writer, log)
    t0 = time.perf_counter()
    finished = train_chunks(trainer, options, compiled, manager, started, writer)
    if finished is None:
        return 1
    timing = {"compile_s": compile_s, "train_s_this_process": time.perf_counter() - t0}
    summarize_run(trainer, options, sharded, finished.state, finished.rows, layout, timing,
                  writer, log)
    return 0


def _logger(quiet: bool) -> Callable[..., None]:
    return (lambda *a: None) if quiet else (lambda *a: print(*a, file=sys.stderr))


def restore_or_init(config: cfg.TrainConfig, options: RunOptions, sharded: ShardedTrainer,
                    manager: ocp.CheckpointManager, writer: bool,
                    log: Callable[..., None]) -> Started:
    """The newest checkpoint's state and metric rows when resuming, else a fresh state
    (and ``config.json`` written)."""
    last = manager.latest_step() if options.resume else None
    if last is not None:
        abstract = sharded.abstract_state
        items = manager.restore(last, args=ocp.args.StandardRestore(checkpoint_items(abstract)))
        state = jax.device_put(state_from_items(abstract, items), sharded.shardings)
        rows = [r for r in outputs.read_rows(options.out_dir) if r["chunk"] <= last]
        log(f"resuming {options.out_dir} after chunk {last}")
        return Started(state, rows, last + 1)
    if options.resume:
        log(f"no checkpoint in {options.out_dir}; starting from the beginning")
    if writer:
        with open(os.path.join(options.out_dir, CONFIG_NAME), "w") as handle:
            json.dump({"train": cfg.config_to_dict(config), "seeds": options.seeds,
                       "seed": options.seed}, handle, indent=2)
    return Started(sharded.init(np.asarray(jax.random.PRNGKey(options.seed))), [], 0)


def train_chunks(trainer: Trainer, options: RunOptions, compiled: Any,
                 manager: ocp.CheckpointManager, started: Started, writer: bool) -> Started | None:
    """Run the chunks from ``started.start`` on, writing metrics and checkpoints after each;
    returns the final state and all rows, or None after a non-finite metric (reported on
    stderr, the last good checkpoint kept)."""
    config, state, rows = trainer.config, started.state, list(started.rows)
    steps_per_chunk = config.eval_every
    bar = ProgressBar(config.total_env_steps, started.start * steps_per_chunk,
                      options.quiet or not writer)
    for chunk in range(started.start, trainer.num_chunks):
        state, metrics = compiled(state, np.int32(chunk))
        metrics = jax.device_get(metrics)
        try:
            check_finite(metrics, chunk)
        except NonFiniteError as error:
            bar.close()
            last = manager.latest_step()
            kept = f"checkpoint after chunk {last} kept" if last is not None else "no checkpoint"
            print(f"error: {error}; stopping ({kept} in {options.out_dir}/checkpoints)",
                  file=sys.stderr)
            manager.close()
            return None
        rows.extend(outputs.metric_rows(chunk, metrics))
        if writer:
            outputs.write_rows(options.out_dir, rows)
        if (chunk + 1) % options.checkpoint_every == 0 or chunk + 1 == trainer.num_chunks:
            manager.save(chunk, args=ocp.args.StandardSave(checkpoint_items(state)))
        bar.update((chunk + 1) * steps_per_chunk, options.seeds,
                   float(np.mean(metrics.eval_return)))
    manager.wait_until_finished()
    manager.close()
    bar.close()
    return Started(state, rows, trainer.num_chunks)


def summarize_run(trainer: Trainer, options: RunOptions, sharded: ShardedTrainer, state: Any,
                  rows: list[dict[str, float]], layout: DeviceLayout, timing: dict[str, float],
                  writer: bool, log: Callable[..., None]) -> None:
    """Final scores against the random and scripted baselines: ``summary.json``, the
    learning curve and (with ``options.render``) one rendered episode."""
    config, spec = trainer.config, trainer.env.spec
    final = np.asarray([[r[f"eval_return_agent{a}"] for a in range(spec.num_agents)]
                        for r in rows if r["chunk"] == trainer.num_chunks - 1])
    base = baseline_returns(trainer, jax.random.PRNGKey(options.seed + 1),
                            options.baseline_episodes)
    summary = outputs.summarize(
        final.mean(axis=1), float(base["random"].mean()), float(base["heuristic"].mean()),
        extra={"env": config.env, "algo": config.algo, "sampler": config.sampler,
               "seeds": options.seeds, "env_steps_per_seed": config.total_env_steps,
               "devices": layout.num_devices,
               "layout": {"seed_shards": layout.seed_shards, "env_shards": layout.env_shards},
               **timing,
               "final_eval_return_per_team": [team_means(v, spec.teams) for v in final],
               "random_return_per_team": team_means(base["random"], spec.teams),
               "heuristic_return_per_team": team_means(base["heuristic"], spec.teams)})
    first_algo = jax.device_get(sharded.first_seed(state.algo)) if options.render else None
    if not writer:
        return
    path = outputs.write_summary(options.out_dir, summary)
    outputs.plot_curve(options.out_dir, rows,
                       f"{config.algo} on {config.env} ({options.seeds} seeds)",
                       summary["random_return"], summary["heuristic_return"])
    if options.render:
        render_episode(trainer, first_algo, options.out_dir, jax.random.PRNGKey(options.seed + 2))
    log(f"median normalized score {summary['median_normalized_score']:.3f} "
        f"(IQR {summary['iqr_normalized_score'][0]:.3f} to "
        f"{summary['iqr_normalized_score'][1]:.3f}); summary in {path}")


def render_episode(trainer: Trainer, algo_state: Any, out_dir: str, key: jax.Array) -> None:
    """Roll out one deterministic episode with the learners ``algo_state`` of one seed
    (no seed axis) and save GIF and PNG."""
    from experiments.render_demo import write_gif, write_png
    from jaxmarl_accel.envs.render import render_rollout

    env, params = trainer.env, trainer.env_params
    policy = learner_policy(env, trainer.algo, trainer.config.prey == "heuristic", explore=False)

    def policy_fn(key, obs, env_state, params):
        return policy(algo_state, key, obs, env_state, params)[0]

    steps = int(params.episode_length)
    states = jax.jit(lambda: rollout(env, params, policy_fn, key, steps))().states
    frames = render_rollout(states, params, env.spec)
    write_gif(os.path.join(out_dir, "episode.gif"), frames)
    write_png(os.path.join(out_dir, "episode.png"), frames[len(frames) // 2])
