"""Resuming a run: decided before anything is compiled, the checkpoint it starts from (the
newest whose files are whole), whether it is finished already, and how a larger budget
extends it; once compiled, its state restored from that checkpoint (or a fresh one).

A resumed run takes every setting from its ``config.json``; only its budget may grow
(``--total-env-steps``). No schedule of a run depends on its budget: exploration anneals
over its own env steps (``epsilon_anneal_steps``), learning rates are constant, target
networks and population-based training (every ``pbt_every`` chunks) count their own steps.
An extended run therefore goes on from the state it stopped in exactly as a run started
with the larger budget would have gone on from there, with two exceptions: PBT makes no step
after a run's last chunk, so a finished PBT run whose last chunk fell on a step lacks that
step (the note says so); and a run whose last chunk was shorter than the others (its budget
not a multiple of ``eval_every``) ended between two evaluations of the longer run and cannot
be extended.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxmarl_accel.runs import outputs
from jaxmarl_accel.runs.checkpoint import CheckpointMismatch, Checkpoints, fills_in_place
from jaxmarl_accel.runs.run_store import (
    ADDED_LATER,
    RunOptions,
    Started,
    checkpoint_items,
    fill_added_later,
    state_from_items,
)
from jaxmarl_accel.trainer.sharding import ShardedTrainer


def resume_steps(options: RunOptions, trainer: Any, abstract_state: Any, manager: Checkpoints,
                 warn: Callable[..., None], log: Callable[..., None]) -> list[int] | None:
    """The checkpoints a resumed run restores from, newest first, chosen by reading their
    files before anything is compiled (:func:`usable_checkpoints` against the items of
    ``abstract_state``; ``[]`` for a new run); None for a finished run, which says so and
    does nothing more. An extended run (``options.extends``) says how it goes on."""
    if not options.resume:
        return []
    steps = usable_checkpoints(manager, checkpoint_items(abstract_state), trainer.num_chunks,
                               ADDED_LATER, warn)
    if options.extends:
        log("note: " + extension_note(options.out_dir, steps, options.extends, trainer,
                                      options.pbt_every))
        return steps
    note = finished_note(options.out_dir, steps, trainer.num_chunks, trainer.total_steps)
    if note is not None:
        warn(note)
        return None
    return steps


def usable_checkpoints(manager: Checkpoints, target: dict[str, Any], num_chunks: int,
                       optional: tuple[str, ...], warn: Callable[..., None]) -> list[int]:
    """The steps of ``manager``'s checkpoints to restore from, newest first, starting at the
    newest whose files are whole (:meth:`~.checkpoint.Checkpoints.check` against ``target``,
    name -> abstract array, with the name prefixes ``optional`` allowed to be missing): the
    newer ones are skipped with a warning naming each and why. Reads files only, so a damaged
    checkpoint is reported before anything is compiled.

    ``[]`` when there is no checkpoint; ``ValueError`` (one line) when none is whole, or
    when one is after chunk ``num_chunks - 1`` (the folder holds another run);
    :class:`~.checkpoint.CheckpointMismatch` for a checkpoint of another config."""
    steps = manager.steps()[::-1]
    if steps:  # the newest: the older ones lie within the run when it does
        check_within_run(manager.folder, steps[0], num_chunks)
    skipped: list[str] = []
    for position, step in enumerate(steps):
        try:
            manager.check(step, target, optional)
        except CheckpointMismatch:
            raise
        except (OSError, ValueError) as error:
            skipped.append(skip(step, manager.path(step), error, warn))
            continue
        return steps[position:]
    none_restores(manager.folder, skipped)
    return []


def check_within_run(folder: str, step: int, num_chunks: int) -> None:
    """``ValueError`` (one line) when the checkpoint after chunk ``step`` in ``folder`` lies
    past the ``num_chunks`` chunks of the run's config (the folder holds another run)."""
    if step >= num_chunks:
        raise ValueError(f"{folder} holds a checkpoint after chunk {step}, but the run of its "
                         f"config.json has {num_chunks} chunks")


def skip(step: int, path: str, error: BaseException, warn: Callable[..., None]) -> str:
    """Why the checkpoint after chunk ``step`` (at ``path``) is skipped, warned of with
    ``warn`` and returned for :func:`none_restores`."""
    reason = f"chunk {step} ({path}): {first_line(error)}"
    warn(f"warning: skipping the checkpoint after {reason}")
    return reason


def none_restores(folder: str, skipped: list[str]) -> None:
    """``ValueError`` (one line, every reason) when checkpoints in ``folder`` were skipped
    (:func:`skip`) and none restored."""
    if skipped:
        raise ValueError(f"no checkpoint in {folder} can be restored: {'; '.join(skipped)}")


def finished_note(out_dir: str, steps: list[int], num_chunks: int, total_steps: int
                  ) -> str | None:
    """What a resume of a finished run says instead of training (None: it is not finished):
    its newest usable checkpoint (``steps[0]``) is after its last chunk and its summary is
    written."""
    if not steps or steps[0] != num_chunks - 1 or not os.path.isfile(
            os.path.join(out_dir, outputs.SUMMARY_NAME)):
        return None
    return (f"{out_dir} is finished ({total_steps:,} env steps per seed; "
            f"{outputs.SUMMARY_NAME} holds its results); nothing to do: to train it further, "
            f"give --total-env-steps larger than {total_steps:,} beside --resume")


def extension_note(out_dir: str, steps: list[int], before: int, trainer: Any,
                   pbt_every: int) -> str:
    """What an extended run says at its start (``before``: the budget on the run's clock it
    was started with, ``trainer`` the run's with the larger one); ``ValueError`` (one line)
    when its newest usable checkpoint ends a shorter last chunk (see the module docstring)."""
    start = steps[0] + 1 if steps else 0
    if start * trainer.steps_per_chunk > before:
        raise ValueError(f"{out_dir} ended with a chunk shorter than the others ({before:,} "
                         f"env steps per seed is not a multiple of --eval-every "
                         f"{trainer.steps_per_chunk:,}), so it cannot be extended: train a new "
                         f"run with the larger --total-env-steps instead")
    pbt = f"; PBT goes on every {pbt_every} chunk(s)" if pbt_every else ""
    if pbt_every and start and start % pbt_every == 0 and start * trainer.steps_per_chunk == before:
        pbt += (f", but its step after chunk {start - 1}, none as the run's last, is not made "
                "up (there the run parts from one started with the larger budget)")
    return (f"extending {out_dir} from {before:,} to {trainer.total_steps:,} env steps per seed "
            f"(chunks {start} to {trainer.num_chunks - 1}): no schedule depends on the budget "
            f"(exploration anneals over its own env steps, learning rates are constant), so the "
            f"run goes on as one started with the larger budget would have{pbt}")


def restore_or_init(options: RunOptions, sharded: ShardedTrainer,
                    manager: Checkpoints, warn: Callable[..., None],
                    log: Callable[..., None], steps: list[int] | None = None) -> Started:
    """The newest restorable checkpoint's state and metric rows when resuming
    (:func:`restore_newest` of ``steps``), else a fresh state."""
    if options.resume:
        started = restore_newest(options, sharded, manager, warn, steps)
        if started is not None:
            log(f"resuming {options.out_dir} after chunk {started.start - 1}")
            return started
        log(f"no checkpoint in {options.out_dir}; starting from the beginning")
    return Started(fresh_state(sharded, options.seed), [], 0)


def fresh_state(sharded: ShardedTrainer, seed: int) -> Any:
    """The initial training state of every seed, placed on the devices."""
    return sharded.init(np.asarray(jax.random.PRNGKey(seed)))


def restore_newest(options: RunOptions, sharded: ShardedTrainer,
                   manager: Checkpoints, warn: Callable[..., None],
                   steps: list[int] | None = None) -> Started | None:
    """Restore the newest checkpoint that can be read, newest first (None: there is none),
    of ``steps`` (default: every checkpoint; a resumed run passes those that
    :func:`~jaxmarl_accel.runs.resume.usable_checkpoints` chose before compiling).

    A checkpoint that cannot be read (truncated data, empty metadata) is skipped with a
    warning naming it and the reason, and removed once an older one restored, so that the
    chunks after it are saved again. A checkpoint that reads but does not fit the stored
    config (another number of chunks, other shapes, too few metric rows) is an error: the
    folder holds something other than the run its ``config.json`` describes.
    """
    folder = os.path.join(options.out_dir, outputs.CHECKPOINTS_NAME)
    steps = manager.steps()[::-1] if steps is None else steps
    if steps:  # the newest: the older ones lie within the run when it does
        check_within_run(folder, steps[0], sharded.trainer.num_chunks)
    abstract = sharded.abstract_state
    target = checkpoint_items(abstract)
    skipped: list[str] = []
    for step in steps:
        # a fresh state to overwrite in place; with several processes only for the parts a
        # checkpoint may omit, built once one is known to be missing
        fresh = checkpoint_items(fresh_state(sharded, options.seed)) if fills_in_place() else {}
        try:
            items = manager.restore(step, target, checkpoint_items(sharded.shardings, target),
                                    into=fresh or None, optional=ADDED_LATER)
        except CheckpointMismatch:
            raise
        except (OSError, ValueError) as error:
            skipped.append(skip(step, os.path.join(folder, str(step)), error, warn))
            del fresh
            continue
        rows = [r for r in outputs.read_rows(options.out_dir) if r["chunk"] <= step]
        if len(rows) != (step + 1) * options.lanes:
            raise ValueError(f"{os.path.join(options.out_dir, outputs.CSV_NAME)} has "
                             f"{len(rows)} rows up to chunk {step}, not "
                             f"{(step + 1) * options.lanes} ({options.lanes} seeds)")
        for newer in (s for s in manager.steps() if s > step):
            manager.delete(newer)
        items = fill_added_later(target, items)
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
    none_restores(folder, skipped)
    return None
def first_line(error: BaseException) -> str:
    """``Type: first line of the message`` (at most 240 characters; a longer one loses its
    middle, so that a long path keeps what is said of it at the end)."""
    text = (str(error).strip().splitlines() or [""])[0]
    text = text if len(text) <= 240 else f"{text[:100]}...{text[-137:]}"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
