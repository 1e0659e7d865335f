"""The host side of a run: compile once, run chunk by chunk, log, checkpoint, summarize.

Seeds (and, with fewer seeds than devices, envs) are sharded over the devices by
:mod:`jaxmarl_accel.trainer.sharding`; one device is the plain single-device program. Under
``jax.distributed`` every process runs this loop on its own devices; only process 0
writes files, and every process writes its own shards of the checkpoints
(:mod:`jaxmarl_accel.runs.checkpoint`).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxmarl_accel.runs import loggers, outputs
from jaxmarl_accel.runs.checkpoint import Checkpoints
from jaxmarl_accel.runs.failures import phase
from jaxmarl_accel.runs.interrupts import check as check_interrupt
from jaxmarl_accel.runs.interrupts import deferred_interrupt, interruptible
from jaxmarl_accel.runs.memory import check_state_fits, compiled_temp_bytes
from jaxmarl_accel.runs.pbt_run import PbtSteps
from jaxmarl_accel.runs.progress import ProgressBar
from jaxmarl_accel.runs.remote import Mirror
from jaxmarl_accel.runs.resume import restore_or_init, resume_steps
from jaxmarl_accel.runs.run_store import (
    REPLAY,
    RunOptions,
    Started,
    check_disk_fits,
    check_folder_free,
    prepare_folder,
    run_record,
    save_checkpoint,
)
from jaxmarl_accel.runs.summary import (
    rounded_steps_note,
    summarize_run,
    untrained_note,
)
from jaxmarl_accel.runs.sweep_outputs import sweep_rows
from jaxmarl_accel.trainer.sharding import (
    DeviceLayout,
    auto_layout,
    make_sharded_trainer,
    plan_layout,
)
from jaxmarl_accel.trainer.sweep import lane_groups, make_sweep_trainer
from jaxmarl_accel.trainer.train import Trainer


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


def run_training(trainer: Trainer, options: RunOptions, mirror: Mirror | None = None) -> int:
    """Run (or resume) a multi-seed training run of ``trainer`` (built once by the caller,
    which checked the learner against the env); returns the process exit code.

    Check the output folder, and for a resumed run choose its checkpoint
    (:func:`resume_steps`: a finished run stops there), compile one chunk, store the config
    (:func:`prepare_folder`), restore or initialize the state (:func:`restore_or_init`),
    train the remaining chunks (:func:`train_chunks`), then write what the run leaves at
    its end, once (:func:`summarize_run`: summary, marl-eval export, curve, rendering, a
    sweep's outputs). Problems the user can fix raise ``ValueError`` (one
    line) before anything is compiled, or, for a run whose compiled chunk's temporaries would
    not fit beside its state, after compiling and before the state is allocated. Anything
    else that fails raises :class:`~jaxmarl_accel.runs.failures.RunFailure` naming the
    phase, its traceback in the run folder. A Ctrl-C stops any phase
    (:mod:`jaxmarl_accel.runs.interrupts`). With a ``mirror`` (a remote run folder;
    ``options.out_dir`` is its stage), the folder is uploaded once prepared, after every
    checkpoint and at the end.
    """
    check_folder_free(options)  # before compiling, as every refusal the user can fix
    config, out_dir = trainer.config, options.out_dir
    with phase("building the training program", out_dir, (ValueError,)):
        trainer, init_lanes = lane_trainer(trainer, options)
        layout = choose_layout(options.lanes, config.num_envs, options.devices,
                               options.env_shards)
        groups = lane_groups(options.sweep, jax.devices()[0].platform, layout.num_devices)
        sharded = make_sharded_trainer(trainer, layout, options.lanes, init_lanes=init_lanes,
                                       lane_groups=groups)
    settings = 1 if options.sweep is None else options.sweep.num_settings
    check_state_fits(sharded.abstract_state, options.lanes, layout.seed_shards, config=config,
                     settings=settings)
    check_disk_fits(sharded.abstract_state, options, config.layout, trainer.total_steps)
    writer = jax.process_index() == 0
    log, warn = _logger(options.quiet or not writer), _logger(not writer)
    manager = Checkpoints(os.path.join(out_dir, outputs.CHECKPOINTS_NAME), streamed=(REPLAY,))
    steps = resume_steps(options, trainer, sharded.abstract_state, manager, warn, log)
    if steps is None:  # a finished run
        return 0
    lanes = f"{settings} settings x " if settings > 1 else ""
    log(f"compiling one chunk for {lanes}{options.seeds} seed(s) on {layout.num_devices} device(s) "
        f"({layout.seed_shards} seed shard(s) x {layout.env_shards} env shard(s))...")
    t0 = time.perf_counter()
    with phase("compiling the training program", out_dir):
        compiled = interruptible(compile_chunk, sharded)
    compile_s = time.perf_counter() - t0
    temp_bytes = compiled_temp_bytes(compiled)
    state_bytes, peak_bytes = check_state_fits(sharded.abstract_state, options.lanes,
                                               layout.seed_shards, temp_bytes, config, settings)
    log(f"compiled in {compile_s:.1f}s; training state {state_bytes / 2**20:.1f} MiB; "
        f"chunk temporaries {temp_bytes / 2**20:.1f} MiB; estimated peak "
        f"{peak_bytes / 2**30:.2f} GiB")
    record = run_record(config, options)  # config.json's, and the metric streams' config
    with deferred_interrupt():  # a config.json written whole, or not at all
        prepare_folder(record, options, writer)  # after every refusal: a refused run writes nothing
    upload = mirror.push if mirror is not None else (lambda: 0)
    upload()
    note = rounded_steps_note(trainer)
    if note is not None:
        log(f"note: {note}")
    if trainer.total_steps < trainer.first_update_step:
        warn(f"warning: {untrained_note(trainer)}")
    with phase("restoring the checkpoint", out_dir, (ValueError,)):
        started = restore_or_init(options, sharded, manager, warn, log, steps)
    t0 = time.perf_counter()
    finished = train_chunks(trainer, options, compiled, manager, started, record, writer, upload)
    if finished is None:
        upload()
        return 1
    timing = {"compile_s": compile_s, "train_s_this_process": time.perf_counter() - t0,
              "train_s_all_processes": sum(outputs.read_chunk_seconds(out_dir).values())}
    with phase("evaluating the baselines and writing the summary", out_dir):
        check_interrupt()
        summarize_run(trainer, options, sharded, finished.state, finished.rows, layout, timing,
                      writer, log)
    if mirror is not None:
        log(f"uploaded {upload()} file(s) to {mirror.url}")
    return 0


def lane_trainer(trainer: Trainer, options: RunOptions
                 ) -> tuple[Trainer, Callable[[jax.Array], Any] | None]:
    """The trainer of the run's lanes and, for a sweep (``options.sweep``), the init of
    its lanes (settings x seeds, :func:`~jaxmarl_accel.trainer.sweep.make_sweep_trainer`
    over ``trainer``); ``trainer`` itself and ``None`` for the seeds' own."""
    if options.sweep is None:
        return trainer, None
    sweep = make_sweep_trainer(trainer.config, options.sweep, options.seeds, base=trainer)
    return sweep.trainer, sweep.init_lanes


def kept_note(manager: Checkpoints) -> str:
    """Which checkpoint a stopped run leaves to resume from, and where."""
    last = manager.latest_step()
    kept = f"checkpoint after chunk {last} kept" if last is not None else "no checkpoint"
    return f"{kept} in {manager.folder}"


def unsaved_message(manager: Checkpoints, chunk: int, error: OSError) -> str:
    """One line for a checkpoint that could not be written: the chunk, the cause, what is
    kept; the incomplete files are removed (they would only hold the disk)."""
    manager.discard_partial(chunk)
    return (f"the checkpoint after chunk {chunk} could not be written ({error.strerror or error}"
            f"); stopping ({kept_note(manager)}; --resume continues from it)")


def compile_chunk(sharded: Any) -> Any:
    """The compiled chunk program of ``sharded`` (traced, lowered and compiled: the long
    wait that :func:`interruptible` makes stoppable)."""
    return sharded.run_chunk.lower(sharded.abstract_state, np.int32(0)).compile()


def run_one_chunk(compiled: Any, state: Any, chunk: int) -> tuple[Any, Any]:
    """Chunk ``chunk`` of ``compiled`` from ``state``: the new state and the chunk's metrics,
    fetched to the host (the wait that :func:`interruptible` makes stoppable)."""
    state, metrics = compiled(state, np.int32(chunk))
    return state, jax.device_get(metrics)


def _logger(quiet: bool) -> Callable[..., None]:
    return (lambda *a: None) if quiet else (lambda *a: print(*a, file=sys.stderr))


def train_chunks(trainer: Trainer, options: RunOptions, compiled: Any, manager: Checkpoints,
                 started: Started, record: dict[str, Any], writer: bool,
                 saved: Callable[[], Any] = lambda: None) -> Started | None:
    """Run the chunks from ``started.start`` on, writing metrics (and the metric streams,
    given the stored config ``record``) and checkpoints after each (and calling ``saved()``
    after each checkpoint: the upload of a remote run); returns
    the final state and all rows, or None after a non-finite metric (reported on stderr,
    the last good checkpoint kept). A Ctrl-C during a checkpoint's save takes effect after
    it, and the metric files are written whole
    (:func:`jaxmarl_accel.runs.interrupts.deferred_interrupt`)."""
    config, state, rows = trainer.config, started.state, list(started.rows)
    steps_per_chunk, total = trainer.steps_per_chunk, trainer.total_steps
    scored = outputs.scored_agents(config, trainer.env.spec)
    # a chunk learns once the first update falls inside it
    learning_from = trainer.first_update_step - steps_per_chunk
    streams = loggers.open_streams(options.loggers if writer else (), record,
                                   options.out_dir, options.lanes, options.seeds,
                                   started.rows if options.resume else None)
    bar = ProgressBar(total, started.start * steps_per_chunk, options.quiet or not writer)
    # the seconds of the chunks the restored state holds (those after it are run again)
    seconds = {chunk: value for chunk, value in outputs.read_chunk_seconds(
        options.out_dir).items() if chunk < started.start} if options.resume else {}
    pbt = PbtSteps(config, options.seed, options.pbt_every, trainer.num_chunks, options.out_dir,
                   writer, trainer.first_update_step, steps_per_chunk, trainer.initial_carry
                   ) if options.pbt_every else None
    try:
        for chunk in range(started.start, trainer.num_chunks):
            check_interrupt()
            begun = time.perf_counter()
            with phase(f"training chunk {chunk}", options.out_dir):
                state, metrics = interruptible(run_one_chunk, compiled, state, chunk)
            try:
                check_finite(metrics, chunk)
            except NonFiniteError as error:
                bar.close()
                print(f"error: {error}; stopping ({kept_note(manager)})", file=sys.stderr)
                return None
            # the metric files and the checkpoint written whole before a Ctrl-C stops the run
            with deferred_interrupt(), phase(f"writing the outputs of chunk {chunk}",
                                             options.out_dir):
                chunk_rows = outputs.metric_rows(chunk, metrics, scored,
                                                 outputs.exploration_rates(trainer, chunk)
                                                 ) if options.sweep is None else sweep_rows(
                    trainer, options.sweep, options.seeds, chunk, metrics, scored)
                if pbt is not None:  # the worst lanes copy the best before the checkpoint
                    state = pbt.after_chunk(chunk, state, chunk_rows)
                rows.extend(chunk_rows)
                if writer:
                    outputs.write_rows(options.out_dir, rows)
                    streams.write(chunk_rows)
                if (chunk + 1) % options.checkpoint_every == 0 or chunk + 1 == trainer.num_chunks:
                    try:
                        save_checkpoint(manager, chunk, state, options.checkpoint_replay,
                                        config.layout)
                    except OSError as error:  # e.g. the disk filled up since the run started
                        bar.close()
                        print(f"error: {unsaved_message(manager, chunk, error)}", file=sys.stderr)
                        return None
                    saved()
                seconds[chunk] = time.perf_counter() - begun
                if writer:
                    outputs.write_chunk_seconds(options.out_dir, seconds)
            bar.update(min((chunk + 1) * steps_per_chunk, total), options.lanes,
                       float(np.mean(np.asarray(metrics.eval_return)[:, scored])),
                       learning=chunk * steps_per_chunk >= learning_from)
    finally:
        bar.close()
        streams.close()
    return Started(state, rows, trainer.num_chunks)
