"""The ``run`` command's sweep flags: ``--sweep NAME=V1,V2,...`` (a grid axis),
``--sweep NAME=log:LOW:HIGH`` or ``lin:LOW:HIGH`` (a range) and ``--sweep-samples K``.

Grid axes multiply; ranges draw ``K`` settings at random (log-uniform or uniform, from the
run's ``--seed``), which multiply with the grid. Every setting is a lane group of the one
compiled program (:mod:`jaxmarl_accel.trainer.sweep`)::

    jaxmarl-accel run --algo matd3 --sweep actor_lr=0.01,0.001 --sweep tau=0.01,0.005 --seeds 4
    jaxmarl-accel run --algo matd3 --sweep actor_lr=log:1e-4:1e-2 --sweep-samples 8
"""

from __future__ import annotations

import argparse
import math
from typing import Any, NamedTuple

RANGE_KINDS = ("log", "lin")


class SweepArg(NamedTuple):
    """One ``--sweep`` flag.

    Attributes:
      name: the learner config's field.
      values: a grid axis's values (empty for a range).
      kind: ``"grid"``, or a range's ``"log"`` / ``"lin"``.
      low, high: a range's bounds.
    """

    name: str
    values: tuple[float, ...] = ()
    kind: str = "grid"
    low: float = 0.0
    high: float = 0.0


def _number(name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--sweep {name}: {text.strip()!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"--sweep {name}: {text.strip()!r} is not finite")
    return value


def parse_sweep(text: str) -> SweepArg:
    """``NAME=V1,V2,...``, ``NAME=log:LOW:HIGH`` or ``NAME=lin:LOW:HIGH`` (an argparse
    ``type``: a malformed flag is a one-line usage error)."""
    name, sep, rest = text.partition("=")
    name = name.strip().replace("-", "_")
    if not sep or not name:
        raise argparse.ArgumentTypeError(
            f"--sweep takes NAME=V1,V2,... or NAME=log:LOW:HIGH, got {text!r}")
    kind, colon, bounds = rest.partition(":")
    if colon and kind.strip() in RANGE_KINDS:
        parts = bounds.split(":")
        if len(parts) != 2:
            raise argparse.ArgumentTypeError(
                f"--sweep {name}: a range is {kind}:LOW:HIGH, got {rest!r}")
        low, high = (_number(name, part) for part in parts)
        if low > high or (kind == "log" and low <= 0):
            raise argparse.ArgumentTypeError(
                f"--sweep {name}: {kind}:{parts[0]}:{parts[1]} needs "
                f"{'0 < ' if kind == 'log' else ''}LOW <= HIGH")
        return SweepArg(name=name, kind=kind.strip(), low=low, high=high)
    items = [item for item in rest.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"--sweep {name}: no values (give NAME=V1,V2,...)")
    return SweepArg(name=name, values=tuple(_number(name, item) for item in items))


def add_sweep_flags(group: Any) -> None:
    """``--sweep`` (repeatable) and ``--sweep-samples`` in the parser's ``group``."""
    group.add_argument(
        "--sweep", type=parse_sweep, action="append", default=None,
        metavar="NAME=V1,V2,...|NAME=log:LOW:HIGH",
        help="sweep a learner hyperparameter in the same compiled program, settings x "
             "--seeds as one vmapped axis: a list of values (several --sweep flags make "
             "their grid product) or a range (log: log-uniform, lin: uniform) drawn "
             "--sweep-samples times; only fields that change no array shape can be swept "
             "(rates, tau, gamma, exploration, coefficients; docs/sweeps.md) (default: none)")
    group.add_argument(
        "--sweep-samples", type=int, default=None, metavar="K",
        help="settings drawn at random from the --sweep ranges (with --seed) (default: none)")
    group.add_argument(
        "--pbt", action="store_true",
        help="population-based training of the sweep's settings x seeds: after every "
             "--pbt-every evaluation periods the worst quarter of them (by evaluation return) "
             "copy the learners of one of the best quarter and its values, each times 0.8 or "
             "1.25; the lineage in pbt.json, the values over time in pbt.png")
    group.add_argument(
        "--pbt-every", type=int, default=None, metavar="CHUNKS",
        help="evaluation periods between two population-based training steps (default: 1)")


def sweep_from_args(config: Any, entries: list[SweepArg] | None, samples: int | None,
                    seed: int = 0) -> Any:
    """The :class:`~jaxmarl_accel.trainer.sweep.Sweep` of the flags for run ``config``
    (``None`` without ``--sweep``); a one-line ValueError for flags that do not make one.
    The library is imported here, not with the parser: a multi-host run initializes
    ``jax.distributed`` before anything touches a JAX backend."""
    from jaxmarl_accel.trainer.sweep import Sweep, check_sweep, combine, grid, sample_ranges

    if not entries:
        if samples is not None:
            raise ValueError("--sweep-samples draws settings from --sweep ranges "
                             "(NAME=log:LOW:HIGH or NAME=lin:LOW:HIGH); none is given")
        return None
    names = [entry.name for entry in entries]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"--sweep names {', '.join(twice)} more than once")
    axes = {e.name: e.values for e in entries if e.kind == "grid"}
    ranges = {e.name: (e.kind, e.low, e.high) for e in entries if e.kind != "grid"}
    if ranges and samples is None:
        raise ValueError(f"--sweep {next(iter(ranges))}={next(iter(ranges.values()))[0]}:... "
                         "is a range: give --sweep-samples K, the settings to draw")
    if samples is not None and not ranges:
        raise ValueError("--sweep-samples draws settings from --sweep ranges "
                         "(NAME=log:LOW:HIGH or NAME=lin:LOW:HIGH); the --sweep flags given "
                         "are lists")
    if samples is not None and samples < 1:
        raise ValueError(f"--sweep-samples must be >= 1, got {samples}")
    sweep = combine(grid(axes) if axes else Sweep((), ((),)),
                    sample_ranges(ranges, samples, seed) if ranges else Sweep((), ((),)))
    check_sweep(config, sweep)
    return sweep


def pbt_from_args(pbt: bool, every: int | None, sweep: Any) -> int:
    """``RunOptions.pbt_every`` of ``--pbt`` and ``--pbt-every`` (0: no population-based
    training); a one-line ValueError for flags that do not make one."""
    if not pbt:
        if every is not None:
            raise ValueError("--pbt-every applies to --pbt")
        return 0
    if sweep is None:
        raise ValueError("--pbt trains a population of --sweep settings x --seeds; give "
                         "--sweep")
    every = 1 if every is None else every
    if every < 1:
        raise ValueError(f"--pbt-every must be >= 1, got {every}")
    return every


__all__ = ["RANGE_KINDS", "SweepArg", "add_sweep_flags", "parse_sweep", "pbt_from_args",
           "sweep_from_args"]
