"""The host side of a run: compile once, run chunk by chunk, log, checkpoint, summarize.

Seeds (and, with fewer seeds than devices, envs) are sharded over the devices by
:mod:`jaxmarl_accel.sharding`; one device is the plain single-device program. Under
``jax.distributed`` every process runs this loop on its own devices; only process 0
writes files, and every process writes its own shards of the checkpoints
(:mod:`jaxmarl_accel.cli.checkpoint`).
"""

from __future__ import annotations

import dataclasses
import math
import os
import sys
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel import config as cfg
from jaxmarl_accel.cli import loggers, marl_eval, outputs
from jaxmarl_accel.cli.checkpoint import (
    CheckpointMismatch,
    Checkpoints,
    fills_in_place,
    sync_processes,
)
from jaxmarl_accel.cli.memory import check_state_fits, compiled_temp_bytes
from jaxmarl_accel.cli.progress import ProgressBar
from jaxmarl_accel.envs.evaluate import evaluate_policy
from jaxmarl_accel.envs.policies import (
    heuristic_policy,
    learner_step_policy,
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

STORED_OPTIONS = ("seeds", "seed", "baseline_episodes", "render", "checkpoint_every", "loggers",
                  "checkpoint_replay")
"""The :class:`RunOptions` that change a run's outputs: stored in ``config.json`` with the
training config, and taken from there on ``--resume``."""

STORED_DEFAULTS = {"loggers": ("csv",), "checkpoint_replay": True}
"""The :data:`STORED_OPTIONS` that a ``config.json`` written before them lacks: such a run
resumes with these."""


REPLAY = ".buffer"
"""The name prefix of the replay's arrays among :func:`checkpoint_items`."""


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


def checkpoint_items(state: Any, names: dict[str, Any] | None = None) -> dict[str, Any]:
    """The state's leaves keyed by tree path, without zero-size leaves (nothing to save).

    ``state`` may also be a tree of the same structure with other leaves (the state's
    shardings): then ``names`` (the state's own items) chooses the paths kept."""
    leaves = jax.tree_util.tree_flatten_with_path(state)[0]
    if names is not None:
        return {key: leaf for path, leaf in leaves
                if (key := jax.tree_util.keystr(path)) in names}
    return {jax.tree_util.keystr(path): leaf for path, leaf in leaves if leaf.size}


def save_checkpoint(manager: Checkpoints, chunk: int, state: Any, replay: bool = True) -> None:
    """Save the state after ``chunk`` (without the replay's arrays unless ``replay``)."""
    items = checkpoint_items(state)
    if not replay:
        items = {name: leaf for name, leaf in items.items() if not name.startswith(REPLAY)}
    manager.save(chunk, items, omitted=() if replay else (REPLAY,))


def state_from_items(abstract: Any, items: dict[str, Any]) -> Any:
    """Inverse of :func:`checkpoint_items` given the abstract state."""
    paths, treedef = jax.tree_util.tree_flatten_with_path(abstract)
    leaves = [items[jax.tree_util.keystr(path)] if leaf.size else jnp.zeros(leaf.shape, leaf.dtype)
              for path, leaf in paths]
    return jax.tree_util.tree_unflatten(treedef, leaves)


def scored_agents(config: Any, spec: Any) -> np.ndarray:
    """Bool ``[N]``: the agents a run is scored on, its learners. With scripted prey
    (``config.prey == "heuristic"``) the predators; every agent otherwise."""
    if getattr(config, "prey", "trained") == "heuristic":
        return np.asarray([team == "predator" for team in spec.teams])
    return np.ones(spec.num_agents, bool)


def baseline_returns(trainer: Trainer, key: jax.Array, episodes: int) -> dict[str, Any]:
    """Mean per-agent returns ``[N]`` of the scenario's random and scripted policies
    (``"random"``, ``"heuristic"``), and the standard error of each one's mean return
    over the scored agents (:func:`scored_agents`) and episodes (``"random_se"``,
    ``"heuristic_se"``; episodes are independent).

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
    out = {name: np.asarray(result.agent_returns) for name, result in results.items()}
    scored = scored_agents(trainer.config, env.spec)
    for name, result in results.items():
        per_episode = np.asarray(result.episode_returns)[:, scored].mean(axis=1)  # [episodes]
        spread = per_episode.std(ddof=1) if episodes > 1 else math.inf
        out[f"{name}_se"] = float(spread / math.sqrt(episodes))
    for name, result in results.items():  # per-episode counters of the env, e.g. captures
        out.update({f"{name}_{stat}": float(np.mean(v)) for stat, v in result.stats.items()})
    return out


def episode_stats_summary(rows: list[dict[str, float]], trainer: Trainer,
                          base: dict[str, Any]) -> dict[str, Any]:
    """The env's per-episode counters (``spec.episode_stats``, e.g. stag hunt captures) in
    the summary: each seed's final greedy evaluation and the random and scripted
    baselines', per episode."""
    out: dict[str, Any] = {}
    for stat in trainer.env.spec.episode_stats:
        out[f"final_eval_{stat}_per_episode_per_seed"] = [
            r[f"eval_{stat}"] for r in rows if r["chunk"] == trainer.num_chunks - 1]
        out[f"random_{stat}_per_episode"] = base[f"random_{stat}"]
        if trainer.env.spec.scripted:
            out[f"heuristic_{stat}_per_episode"] = base[f"heuristic_{stat}"]
    return out


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
      resume: continue from the newest checkpoint of ``out_dir`` that restores (if any).
      overwrite: replace the run that ``out_dir`` holds (without it, and without
        ``resume``, a folder that holds a run is refused).
      render: render one evaluation episode of seed 0 to ``episode.gif`` / ``.png``.
      baseline_episodes: episodes of the random and scripted baselines of the score.
      checkpoint_every: save a checkpoint every this many chunks.
      checkpoint_replay: include the replay in checkpoints (False: smaller checkpoints; a
        resumed run starts with an empty replay and refills it before it learns again).
      quiet: no progress output.
      devices: devices to shard the seeds over (a count, or ``"auto"``).
      env_shards: devices each seed's envs are split over (None: chosen automatically).
      loggers: the metric streams (:data:`jaxmarl_accel.cli.loggers.LOGGERS`); ``metrics.csv`` is
        written whatever they are.
    """

    seeds: int
    seed: int
    out_dir: str
    resume: bool = False
    overwrite: bool = False
    render: bool = False
    baseline_episodes: int = 1000
    checkpoint_every: int = 1
    checkpoint_replay: bool = True
    quiet: bool = False
    devices: int | str = 1
    env_shards: int | None = None
    loggers: tuple[str, ...] = ("csv",)


class Started(NamedTuple):
    """A run ready to train: its state, the metric rows so far and the next chunk."""

    state: Any
    rows: list[dict[str, float]]
    start: int


def run_training(config: cfg.TrainConfig, options: RunOptions) -> int:
    """Run (or resume) a multi-seed training run; returns the process exit code.

    Check the output folder and store the config (:func:`prepare_folder`), restore or
    initialize the state (:func:`restore_or_init`), compile one chunk, train the remaining
    chunks (:func:`train_chunks`), then write the summary, curve and rendering
    (:func:`summarize_run`). Problems the user can fix raise ``ValueError`` (one line)
    before anything is compiled, or, for a run whose compiled chunk's temporaries would not
    fit beside its state, after compiling and before the state is allocated.
    """
    trainer = make_trainer(config)
    layout = choose_layout(options.seeds, config.num_envs, options.devices, options.env_shards)
    sharded = make_sharded_trainer(trainer, layout, options.seeds)
    check_state_fits(sharded.abstract_state, options.seeds, layout.seed_shards)
    writer = jax.process_index() == 0
    log = _logger(options.quiet or not writer)
    warn = _logger(not writer)
    log(f"compiling one chunk for {options.seeds} seed(s) on {layout.num_devices} device(s) "
        f"({layout.seed_shards} seed shard(s) x {layout.env_shards} env shard(s))...")
    t0 = time.perf_counter()
    compiled = sharded.run_chunk.lower(sharded.abstract_state, np.int32(0)).compile()
    compile_s = time.perf_counter() - t0
    temp_bytes = compiled_temp_bytes(compiled)
    state_bytes, peak_bytes = check_state_fits(sharded.abstract_state, options.seeds,
                                               layout.seed_shards, temp_bytes)
    log(f"compiled in {compile_s:.1f}s; training state {state_bytes / 2**20:.1f} MiB; "
        f"chunk temporaries {temp_bytes / 2**20:.1f} MiB; estimated peak "
        f"{peak_bytes / 2**30:.2f} GiB")
    prepare_folder(config, options, writer)  # after every refusal: a refused run writes nothing
    if trainer.total_steps < trainer.first_update_step:
        warn(f"warning: {untrained_note(trainer)}")
    manager = Checkpoints(os.path.join(options.out_dir, outputs.CHECKPOINTS_NAME),
                          streamed=(REPLAY,))
    started = restore_or_init(config, options, sharded, manager, warn, log)
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


def untrained_note(trainer: Trainer) -> str:
    """Why a run that ends before its first update has scores of untrained policies."""
    config = trainer.config
    return (f"the run ends at {trainer.total_steps:,} env steps per seed, before the first "
            f"update (after {trainer.first_update_step:,}: --learning-starts "
            f"{config.learning_starts:,}, --batch-size {config.batch_size:,}); the learners "
            "are never trained and the scores are those of their initial policies")


def run_record(config: cfg.TrainConfig, options: RunOptions) -> dict[str, Any]:
    """What ``config.json`` stores: the training config and the :data:`STORED_OPTIONS`."""
    return {"train": cfg.config_to_dict(config),
            **{name: getattr(options, name) for name in STORED_OPTIONS}}


def stored_run(out_dir: str) -> tuple[cfg.TrainConfig, dict[str, Any]]:
    """The training config and the :data:`STORED_OPTIONS` of the run in ``out_dir``;
    ``ValueError`` (one line) when ``config.json`` is missing, unreadable or incomplete."""
    required = [name for name in STORED_OPTIONS if name not in STORED_DEFAULTS]
    record = {**STORED_DEFAULTS, **outputs.read_run_config(out_dir, ("train", *required))}
    try:
        config = cfg.config_from_dict(record["train"])
    except (TypeError, KeyError, AttributeError) as error:
        raise ValueError(f"{os.path.join(out_dir, outputs.CONFIG_NAME)}: the training config "
                         f"cannot be read ({error})") from None
    return config, {name: tuple(record[name]) if isinstance(record[name], list) else record[name]
                    for name in STORED_OPTIONS}


def prepare_folder(config: cfg.TrainConfig, options: RunOptions, writer: bool) -> None:
    """Make sure the run may write to ``options.out_dir`` and store its config there.

    A new run refuses a folder that holds another run unless ``options.overwrite`` (which
    removes that run's files first); a resumed run keeps its stored config. Under
    ``jax.distributed`` every process checks the folder before process 0 writes to it.
    """
    out_dir = options.out_dir
    if writer:
        outputs.ensure_writable_folder(out_dir)
    present = outputs.run_entries(out_dir)
    if not options.resume and present and not options.overwrite:
        raise ValueError(f"--out {out_dir} holds a run already ({', '.join(present)}); continue "
                         f"it with --resume {out_dir}, or replace it with --overwrite")
    sync_processes("output folder checked")
    if writer and not options.resume:
        outputs.clear_run(out_dir)
        outputs.write_run_config(out_dir, run_record(config, options))
    sync_processes("output folder ready")


def restore_or_init(config: cfg.TrainConfig, options: RunOptions, sharded: ShardedTrainer,
                    manager: Checkpoints, warn: Callable[..., None],
                    log: Callable[..., None]) -> Started:
    """The newest restorable checkpoint's state and metric rows when resuming
    (:func:`restore_newest`), else a fresh state."""
    if options.resume:
        started = restore_newest(config, options, sharded, manager, warn)
        if started is not None:
            log(f"resuming {options.out_dir} after chunk {started.start - 1}")
            return started
        log(f"no checkpoint in {options.out_dir}; starting from the beginning")
    return Started(fresh_state(sharded, options.seed), [], 0)


def fresh_state(sharded: ShardedTrainer, seed: int) -> Any:
    """The initial training state of every seed, placed on the devices."""
    return sharded.init(np.asarray(jax.random.PRNGKey(seed)))


def restore_newest(config: cfg.TrainConfig, options: RunOptions, sharded: ShardedTrainer,
                   manager: Checkpoints, warn: Callable[..., None]) -> Started | None:
    """Restore the newest checkpoint that can be read, newest first (None: there is none).

    A checkpoint that cannot be read (truncated data, empty metadata) is skipped with a
    warning naming it and the reason, and removed once an older one restored, so that the
    chunks after it are saved again. A checkpoint that reads but does not fit the stored
    config (another number of chunks, other shapes, too few metric rows) is an error: the
    folder holds something other than the run its ``config.json`` describes.
    """
    folder = os.path.join(options.out_dir, outputs.CHECKPOINTS_NAME)
    abstract = sharded.abstract_state
    target = checkpoint_items(abstract)
    steps = manager.steps()[::-1]
    skipped: list[str] = []
    for step in steps:
        if step >= sharded.trainer.num_chunks:
            raise ValueError(f"{folder} holds a checkpoint after chunk {step}, but the run of "
                             f"its config.json has {sharded.trainer.num_chunks} chunks")
        # a fresh state to overwrite in place; with several processes only for the parts a
        # checkpoint may omit, built once one is known to be missing
        fresh = checkpoint_items(fresh_state(sharded, options.seed)) if fills_in_place() else {}
        try:
            items = manager.restore(step, target, checkpoint_items(sharded.shardings, target),
                                    into=fresh or None)
        except CheckpointMismatch:
            raise
        except (OSError, ValueError) as error:
            reason = f"chunk {step} ({os.path.join(folder, str(step))}): {first_line(error)}"
            warn(f"warning: skipping the checkpoint after {reason}")
            skipped.append(reason)
            del fresh
            continue
        rows = [r for r in outputs.read_rows(options.out_dir) if r["chunk"] <= step]
        if len(rows) != (step + 1) * options.seeds:
            raise ValueError(f"{os.path.join(options.out_dir, outputs.CSV_NAME)} has "
                             f"{len(rows)} rows up to chunk {step}, not "
                             f"{(step + 1) * options.seeds} ({options.seeds} seeds)")
        for newer in (s for s in steps if s > step):
            manager.delete(newer)
        missing = target.keys() - items.keys()
        if missing:  # a checkpoint without the replay: the fresh state's empty one
            warn(f"the checkpoint after chunk {step} holds no replay (--checkpoint-replay "
                 f"false): the resumed run refills it and learns again from "
                 f"{sharded.trainer.first_update_step:,} env steps after the restart on, so it "
                 "does not repeat the uninterrupted run")
            fresh = fresh or checkpoint_items(fresh_state(sharded, options.seed))
            items = {**{name: fresh[name] for name in missing}, **items}
        del fresh
        # placed already: device_put only moves the zero-size leaves state_from_items adds
        state = jax.device_put(state_from_items(abstract, items), sharded.shardings)
        return Started(state, rows, step + 1)
    if skipped:
        raise ValueError(f"no checkpoint in {folder} can be restored: {'; '.join(skipped)}")
    return None


def first_line(error: BaseException) -> str:
    """``Type: first line of the message`` (at most 160 characters)."""
    text = (str(error).strip().splitlines() or [""])[0]
    text = text if len(text) <= 160 else text[:157] + "..."
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def train_chunks(trainer: Trainer, options: RunOptions, compiled: Any, manager: Checkpoints,
                 started: Started, writer: bool) -> Started | None:
    """Run the chunks from ``started.start`` on, writing metrics and checkpoints after each;
    returns the final state and all rows, or None after a non-finite metric (reported on
    stderr, the last good checkpoint kept). A Ctrl-C during a checkpoint's save takes effect
    after it (:func:`jaxmarl_accel.cli.checkpoint.deferred_interrupt`)."""
    config, state, rows = trainer.config, started.state, list(started.rows)
    steps_per_chunk, total = trainer.steps_per_chunk, trainer.total_steps
    scored = scored_agents(config, trainer.env.spec)
    # a chunk learns once the first update falls inside it
    learning_from = trainer.first_update_step - steps_per_chunk
    streams = loggers.open_streams(options.loggers if writer else (), run_record(config, options),
                                   options.out_dir, options.seeds,
                                   started.rows if options.resume else None)
    bar = ProgressBar(total, started.start * steps_per_chunk, options.quiet or not writer)
    try:
        for chunk in range(started.start, trainer.num_chunks):
            state, metrics = compiled(state, np.int32(chunk))
            metrics = jax.device_get(metrics)
            try:
                check_finite(metrics, chunk)
            except NonFiniteError as error:
                bar.close()
                last = manager.latest_step()
                kept = (f"checkpoint after chunk {last} kept" if last is not None
                        else "no checkpoint")
                print(f"error: {error}; stopping ({kept} in {options.out_dir}/checkpoints)",
                      file=sys.stderr)
                return None
            chunk_rows = outputs.metric_rows(chunk, metrics, scored)
            rows.extend(chunk_rows)
            if writer:
                outputs.write_rows(options.out_dir, rows)
                streams.write(chunk_rows)
            if (chunk + 1) % options.checkpoint_every == 0 or chunk + 1 == trainer.num_chunks:
                save_checkpoint(manager, chunk, state, options.checkpoint_replay)
            bar.update(min((chunk + 1) * steps_per_chunk, total), options.seeds,
                       float(np.mean(np.asarray(metrics.eval_return)[:, scored])),
                       learning=chunk * steps_per_chunk >= learning_from)
    finally:
        bar.close()
        streams.close()
    return Started(state, rows, trainer.num_chunks)


def summarize_run(trainer: Trainer, options: RunOptions, sharded: ShardedTrainer, state: Any,
                  rows: list[dict[str, float]], layout: DeviceLayout, timing: dict[str, float],
                  writer: bool, log: Callable[..., None]) -> None:
    """Final scores against the random and scripted baselines: ``summary.json``, the
    marl-eval export (``marl_eval.json``), the learning curve and (with
    ``options.render``) one rendered episode. The summary gives each seed's number of
    updates and, when there were none, a ``warning``."""
    config, spec = trainer.config, trainer.env.spec
    final = np.asarray([[r[f"eval_return_agent{a}"] for a in range(spec.num_agents)]
                        for r in rows if r["chunk"] == trainer.num_chunks - 1])
    scored = scored_agents(config, spec)
    updates = [int(sum(r["updates"] for r in rows if r["seed"] == seed))
               for seed in range(options.seeds)]
    log(f"evaluating the random and scripted baselines ({options.baseline_episodes} "
        "episodes each)...")
    base = baseline_returns(trainer, jax.random.PRNGKey(options.seed + 1),
                            options.baseline_episodes)
    untrained = {"warning": untrained_note(trainer)} if not any(updates) else {}
    scripted = ({"heuristic_return_per_team": team_means(base["heuristic"], spec.teams)}
                if spec.scripted else {})
    summary = outputs.summarize(
        final[:, scored].mean(axis=1), float(base["random"][scored].mean()),
        float(base["heuristic"][scored].mean()) if spec.scripted else None,
        baseline_se=(base["random_se"], base["heuristic_se"], options.baseline_episodes),
        extra={"env": config.env, "algo": config.algo, "sampler": config.sampler,
               "seeds": options.seeds, "env_steps_per_seed": config.total_env_steps,
               "devices": layout.num_devices,
               "layout": {"seed_shards": layout.seed_shards, "env_shards": layout.env_shards},
               **timing,
               "final_eval_return_per_team": [team_means(v, spec.teams) for v in final],
               "random_return_per_team": team_means(base["random"], spec.teams), **scripted,
               "updates_per_seed": updates, **untrained,
               **episode_stats_summary(rows, trainer, base)})
    if "baseline_warning" in summary:
        _logger(not writer)(f"warning: {summary['baseline_warning']}")
    first_algo = jax.device_get(sharded.first_seed(state.algo)) if options.render else None
    if not writer:
        return
    path = outputs.write_summary(options.out_dir, summary)
    marl_eval.write(os.path.join(options.out_dir, outputs.MARL_EVAL_NAME), marl_eval.run_export(
        marl_eval.export_names(config, spec.num_agents), rows, spec.episode_stats))
    outputs.plot_curve(options.out_dir, rows,
                       f"{config.algo} on {config.env} ({options.seeds} seeds)",
                       summary["random_return"], summary.get("heuristic_return"))
    if options.render:
        log(f"rendering {outputs.GIF_NAME}...")
        render_episode(trainer, first_algo, options.out_dir, jax.random.PRNGKey(options.seed + 2))
    if not spec.scripted:
        log(f"median return {summary['median_return']:.3f} (IQR {summary['iqr_return'][0]:.3f} "
            f"to {summary['iqr_return'][1]:.3f}; {outputs.NO_SCRIPTED_NOTE}"
            f"{'; untrained policies' if untrained else ''}); summary in {path}")
        return
    log(f"median normalized score {summary['median_normalized_score']:.3f} "
        f"(IQR {summary['iqr_normalized_score'][0]:.3f} to "
        f"{summary['iqr_normalized_score'][1]:.3f}"
        f"{'; untrained policies' if untrained else ''}); summary in {path}")


def render_episode(trainer: Trainer, algo_state: Any, out_dir: str, key: jax.Array,
                   names: tuple[str, str] = (outputs.GIF_NAME, outputs.PNG_NAME)) -> None:
    """Roll out one deterministic episode with the learners ``algo_state`` of one seed
    (no seed axis) and save it in ``out_dir`` as GIF and PNG (the middle frame) under
    ``names``."""
    from jaxmarl_accel.cli.render import write_gif, write_png
    from jaxmarl_accel.envs.render import render_rollout

    env, params = trainer.env, trainer.env_params
    steps = int(params.episode_length)
    policy = learner_step_policy(env, trainer.algo, trainer.config.prey == "heuristic",
                                 explore=False)

    def policy_fn(key, obs, env_state, params, carry):
        action, _, carry = policy.step(algo_state, carry, key, obs, env_state, params)
        return action, carry

    record = jax.jit(lambda: rollout(env, params, policy_fn, key, steps,
                                     initial_carry=policy.initial_carry))()
    ended = np.asarray(record.terminated | record.truncated)
    shown = int(np.argmax(ended)) + 1 if ended.any() else steps  # the first episode's frames
    states = jax.tree.map(lambda leaf: leaf[:shown], record.states)
    frames = render_rollout(states, params, env.spec)
    write_gif(os.path.join(out_dir, names[0]), frames)
    write_png(os.path.join(out_dir, names[1]), frames[len(frames) // 2])
