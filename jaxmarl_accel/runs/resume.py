"""Resuming a run, decided before anything is compiled: the checkpoint it starts from (the
newest whose files are whole), whether it is finished already, and how a larger budget
extends it.

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

from jaxmarl_accel.runs import outputs
from jaxmarl_accel.runs.checkpoint import CheckpointMismatch, Checkpoints


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
    skipped: list[str] = []
    for position, step in enumerate(steps):
        check_within_run(manager.folder, step, num_chunks)
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


def first_line(error: BaseException) -> str:
    """``Type: first line of the message`` (at most 240 characters; a longer one loses its
    middle, so that a long path keeps what is said of it at the end)."""
    text = (str(error).strip().splitlines() or [""])[0]
    text = text if len(text) <= 240 else f"{text[:100]}...{text[-137:]}"
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
