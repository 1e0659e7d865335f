"""The metric streams of a run (``--logger``): ``metrics.csv``, TensorBoard, Weights & Biases.

``metrics.csv`` is written by every run whatever the choice (``--resume`` and the other
commands read it); ``csv`` names it. ``tensorboard`` writes one event folder per seed,
``tensorboard/seed_<k>/`` (tag: the metric's ``metrics.csv`` column, step: the seed's env
steps; the stored config as the text ``config``), through tensorboardX. ``wandb`` makes one
W&B run per seed, grouped by the output folder's name, with the stored config; it runs
offline (files in ``wandb/``, uploaded later with ``wandb sync``) unless ``WANDB_MODE`` or
``WANDB_API_KEY`` is set. Both are optional packages: ``pip install -e ".[loggers]"``.

A resumed run continues the streams: TensorBoard hides the events each seed wrote after
its restored chunks (``purge_step``), W&B resumes the same runs and skips the chunks it
logged already (the resumed run computes them again, with the same values).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import secrets
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from jaxmarl_accel.runs.outputs import TENSORBOARD_NAME, WANDB_NAME

Row = dict[str, float]

LOGGERS = ("csv", "tensorboard", "wandb")
PACKAGES = {"tensorboard": "tensorboardX", "wandb": "wandb"}
"""The package each optional stream imports."""

ROW_KEYS = ("seed", "chunk", "env_steps")
"""The ``metrics.csv`` columns that say where a row belongs rather than what was measured."""

WANDB_RUNS = "runs.json"
WANDB_PROJECT = "jaxmarl_accel"
"""The W&B project unless ``WANDB_PROJECT`` names another."""


class Stream(NamedTuple):
    """A metric stream of a run.

    Attributes:
      write: takes the rows of one chunk (one per seed, as in ``metrics.csv``).
      close: flushes and ends the stream.
    """

    write: Callable[[Sequence[Row]], None]
    close: Callable[[], None]


def parse_loggers(text: str) -> tuple[str, ...]:
    """``--logger``: a comma-separated list of :data:`LOGGERS`, in order, without repeats."""
    names = tuple(dict.fromkeys(name.strip() for name in text.split(",")))
    unknown = [name for name in names if name not in LOGGERS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of {', '.join(LOGGERS)}, got {text!r}")
    return names


def check_loggers(names: Sequence[str]) -> None:
    """``ValueError`` (one line, naming ``--logger``) for an unknown stream or one whose
    package is not installed; checked before a run compiles or allocates anything."""
    for name in names:
        if name not in LOGGERS:
            raise ValueError(f"--logger {name} is not one of {', '.join(LOGGERS)}")
        if name in PACKAGES:
            try:
                importlib.import_module(PACKAGES[name])
            except ImportError:
                raise ValueError(f"--logger {name} needs the {PACKAGES[name]} package, which "
                                 f"is not installed; pip install {PACKAGES[name]}") from None


def open_streams(names: Sequence[str], record: dict[str, Any], out_dir: str, lanes: int,
                 seeds: int, resumed: Sequence[Row] | None) -> Stream:
    """One stream writing to each of the streams ``names``, the rows of ``metrics.csv``
    (a sweep's with a ``setting`` column) keyed by lane (:func:`lane_rows`).

    Args:
      names: the streams, of :data:`LOGGERS`.
      record: the run's stored config (what ``config.json`` holds).
      out_dir: the run's output folder.
      lanes: number of lanes (settings x seeds); the streams see the lane index in
        ``0 .. lanes - 1`` as the seed.
      seeds: number of seeds of each setting.
      resumed: the rows restored by a resumed run (empty when it starts from the
        beginning); None for a new run.
    """
    resumed = None if resumed is None else lane_rows(resumed, seeds)
    streams = [OPENERS[name](record, out_dir, lanes, resumed) for name in names]

    def write(rows: Sequence[Row]) -> None:
        for stream in streams:
            stream.write(lane_rows(rows, seeds))

    def close() -> None:
        for stream in streams:
            stream.close()

    return Stream(write, close)


def lane_rows(rows: Sequence[dict[str, float]], seeds: int) -> list[dict[str, float]]:
    """``rows`` keyed by lane for the per-seed streams (TensorBoard ``seed_<lane>``, one W&B
    run per lane): ``seed`` becomes the lane ``setting * seeds + seed``, ``setting`` goes."""
    return [{**{k: v for k, v in row.items() if k != "setting"},
             "seed": int(row.get("setting", 0)) * seeds + int(row["seed"])} for row in rows]


def open_csv(record: dict[str, Any], out_dir: str, seeds: int,
             resumed: Sequence[Row] | None) -> Stream:
    """``metrics.csv``: the host loop writes it for every run, so this stream does nothing."""
    return Stream(lambda rows: None, lambda: None)


def open_tensorboard(record: dict[str, Any], out_dir: str, seeds: int,
                     resumed: Sequence[Row] | None) -> Stream:
    """One tensorboardX writer per seed in ``tensorboard/seed_<k>/``: each metric a scalar
    tag over the seed's env steps, the config as the text ``config`` (markdown code).
    Resumed, each writer starts a new event file (suffix ``.resumed-<step>``, so that it
    never replaces one opened in the same second) whose purge step hides the steps after the
    seed's restored rows."""
    from tensorboardX import SummaryWriter

    writers = []
    for seed in range(seeds):
        done = [row["env_steps"] for row in resumed or () if row["seed"] == seed]
        purge = None if resumed is None else int(max(done, default=-1)) + 1
        writer = SummaryWriter(os.path.join(out_dir, TENSORBOARD_NAME, f"seed_{seed}"),
                               purge_step=purge,
                               filename_suffix="" if purge is None else f".resumed-{purge}")
        if not done:
            text = json.dumps({**record, "seed_index": seed}, indent=2)
            writer.add_text("config", "    " + text.replace("\n", "\n    "), global_step=0)
        writers.append(writer)

    def write(rows: Sequence[Row]) -> None:
        for row in rows:
            for name, value in row.items():
                if name not in ROW_KEYS:
                    writers[int(row["seed"])].add_scalar(name, value,
                                                         global_step=int(row["env_steps"]))
        for writer in writers:
            writer.flush()

    def close() -> None:
        for writer in writers:
            writer.close()

    return Stream(write, close)


def wandb_mode() -> str | None:
    """``"offline"`` unless ``WANDB_MODE`` or ``WANDB_API_KEY`` is set (None: W&B decides)."""
    return None if os.environ.get("WANDB_MODE") or os.environ.get("WANDB_API_KEY") else "offline"


def open_wandb(record: dict[str, Any], out_dir: str, seeds: int,
               resumed: Sequence[Row] | None) -> Stream:
    """One W&B run per seed (``reinit="create_new"``), named ``<folder>-seed<k>`` in the
    group ``<folder>``, its config the stored one plus ``seed_index``, plotted over
    ``env_steps``. ``wandb/runs.json`` keeps the run ids and the chunks logged, so that a
    resumed run logs to the same runs and skips what they hold."""
    import wandb

    folder = os.path.join(out_dir, WANDB_NAME)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, WANDB_RUNS)
    if resumed is not None and os.path.isfile(path):
        with open(path) as handle:
            state = json.load(handle)
    else:
        token = secrets.token_hex(4)
        state = {"ids": [f"{token}-seed{seed}" for seed in range(seeds)], "chunks": 0}
        save_state(path, state)
    group = os.path.basename(os.path.normpath(os.path.abspath(out_dir)))
    runs = []
    for seed in range(seeds):
        run = wandb.init(project=os.environ.get("WANDB_PROJECT", WANDB_PROJECT), group=group,
                         name=f"{group}-seed{seed}", id=state["ids"][seed], resume="allow",
                         config={**record, "seed_index": seed}, dir=out_dir,
                         mode=wandb_mode(), reinit="create_new", job_type="train",
                         settings={"console": "off"})
        run.define_metric("env_steps")
        run.define_metric("*", step_metric="env_steps")
        runs.append(run)

    def write(rows: Sequence[Row]) -> None:
        fresh = [row for row in rows if row["chunk"] >= state["chunks"]]
        for row in fresh:
            runs[int(row["seed"])].log({k: v for k, v in row.items() if k != "seed"})
        if fresh:
            state["chunks"] = int(max(row["chunk"] for row in fresh)) + 1
            save_state(path, state)

    def close() -> None:
        for run in runs:
            run.finish()

    return Stream(write, close)


def save_state(path: str, state: dict[str, Any]) -> None:
    """Write ``wandb/runs.json``: the W&B run ids of the seeds and the chunks logged."""
    with open(path, "w") as handle:
        json.dump(state, handle)


OPENERS: dict[str, Callable[[dict[str, Any], str, int, Sequence[Row] | None], Stream]] = {
    "csv": open_csv, "tensorboard": open_tensorboard, "wandb": open_wandb}
"""The factory of each stream of :data:`LOGGERS`."""
