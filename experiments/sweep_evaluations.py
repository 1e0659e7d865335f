"""A sweep's settings compared by ``jaxmarl-accel evaluate``: median and IQR over seeds of
every per-seed figure of each setting's evaluation.

    for k in 0 1 2; do
      jaxmarl-accel evaluate runs/sweep --setting $k --out runs/sweep/evaluation_setting$k.json
    done
    python -m experiments.sweep_evaluations runs/sweep --json runs/sweep/evaluations.json

``evaluate --setting K`` scores one setting's seeds with its own learner and writes each
seed's figures (``..._per_seed`` lists: return, normalized score, the env's counters such
as Tag's tags per episode, and for a game of teams each team's cross play against random
and scripted opponents). This reads ``sweep.json`` for the settings and every
``evaluation_setting<K>.json`` beside it, and gives each figure's median and IQR over seeds
per setting, so the settings compare on what the run's own score leaves out (in Tag, a
competitive game, the mean return of both teams).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

EVALUATION = re.compile(r"evaluation_setting(\d+)\.json$")


def per_seed_figures(record: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, list]]:
    """``(name, values [S])`` for every list of numbers under a key ending in ``_per_seed``
    in ``record``, nested dicts' keys joined with ``/``."""
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from per_seed_figures(value, f"{name}/")
        elif (key.endswith("_per_seed") and isinstance(value, list) and value
              and all(isinstance(v, (int, float)) for v in value)):
            yield name, value


def summarize(folder: str) -> dict[str, Any]:
    """The record: ``settings`` (from ``sweep.json``), ``evaluated`` (the settings with an
    evaluation, in order) and, per figure, ``per_seed`` ``[E, S]`` with ``median`` ``[E]``
    and ``iqr`` ``[E, 2]`` over seeds."""
    root = Path(folder)
    if not (root / "sweep.json").is_file():
        raise SystemExit(f"sweep_evaluations: {root / 'sweep.json'} does not exist (not a "
                         "finished --sweep run)")
    sweep = json.loads((root / "sweep.json").read_text())
    found = sorted((int(m.group(1)), path) for path in root.iterdir()
                   if (m := EVALUATION.search(path.name)))
    if not found:
        raise SystemExit(f"sweep_evaluations: no evaluation_setting<K>.json in {root} (write "
                         "them with jaxmarl-accel evaluate --setting K --out ...)")
    if found[-1][0] >= len(sweep["settings"]):
        raise SystemExit(f"sweep_evaluations: {found[-1][1].name} names setting "
                         f"{found[-1][0]}, but the sweep has {len(sweep['settings'])}")
    figures: dict[str, list[list[float]]] = {}
    for position, (_, path) in enumerate(found):
        for name, values in per_seed_figures(json.loads(path.read_text())):
            figures.setdefault(name, [[] for _ in found])[position] = values
    out: dict[str, Any] = {}
    for name, table in figures.items():
        if any(not row for row in table):
            continue  # a figure some evaluation lacks is not compared
        q25, q50, q75 = (np.array([np.percentile(row, q) for row in table])
                         for q in (25, 50, 75))
        out[name] = {"per_seed": table, "median": q50.tolist(),
                     "iqr": np.stack([q25, q75], 1).tolist()}
    return {"settings": sweep["settings"], "evaluated": [k for k, _ in found],
            "figures": out}


def main(argv: list[str] | None = None) -> None:
    """Summarize a folder, print each figure's medians per setting, write ``--json``."""
    parser = argparse.ArgumentParser(prog="python -m experiments.sweep_evaluations",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="a finished `jaxmarl-accel run --sweep` folder holding "
                                       "evaluation_setting<K>.json files")
    parser.add_argument("--json", help="write the record to this path")
    args = parser.parse_args(argv)
    record = summarize(args.folder)
    labels = [", ".join(f"{k}={v:g}" for k, v in record["settings"][s].items())
              for s in record["evaluated"]]
    print("median over seeds | " + " | ".join(labels))
    for name, figure in record["figures"].items():
        print(f"{name} | " + " | ".join(f"{m:.3f}" for m in figure["median"]))
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    sys.exit(main())
