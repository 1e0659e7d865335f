"""Population-based training against the grid it started from, at the same env steps.

    python -m experiments.pbt_compare runs/grid runs/pbt --json docs/results/sweeps/x.json

Both folders are ``jaxmarl-accel run --sweep ...`` runs of the same grid and seeds, the second
with ``--pbt``. Each lane's final score comes from its folder's ``sweep.json`` (the normalized
score where the baselines define it). The grid's score of a setting is the median over its
seeds; a PBT population has no fixed settings (its lanes copy and perturb one another), so it
is scored as a whole: the median of every lane, of its best quarter, and its best lane. The
question (docs/sweeps.md): does the population's median reach the best grid cell's median?
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np


def read(folder: str) -> dict[str, Any]:
    """``sweep.json`` of a run folder; a one-line error when there is none."""
    path = Path(folder) / "sweep.json"
    if not path.is_file():
        raise SystemExit(f"pbt_compare: {path} does not exist (not a finished --sweep run)")
    return json.loads(path.read_text())


def population(final: list[list[float]]) -> dict[str, float]:
    """Median of all lanes, median of the best quarter, best lane, of a ``[K, S]`` table."""
    lanes = np.sort(np.asarray(final, dtype=float).ravel())[::-1]
    quarter = max(1, len(lanes) // 4)
    return {"lanes": int(len(lanes)), "median": float(np.median(lanes)),
            "best_quarter_median": float(np.median(lanes[:quarter])),
            "best_lane": float(lanes[0])}


def compare(grid: dict[str, Any], pbt: dict[str, Any]) -> dict[str, Any]:
    """The record: the grid's cells (median and IQR per setting), its best cell, both runs
    scored as populations, and whether PBT's median reaches the best cell's median."""
    if grid["score"] != pbt["score"]:
        raise SystemExit(f"pbt_compare: the runs score differently ({grid['score']} and "
                         f"{pbt['score']})")
    best = int(grid["best"])
    cells = [{"setting": s, "median": m, "iqr": q}
             for s, m, q in zip(grid["settings"], grid["median"], grid["iqr"], strict=True)]
    ours = population(pbt["final"])
    return {"score": grid["score"], "grid_cells": cells,
            "grid_best": {"setting": grid["settings"][best], "median": grid["median"][best],
                          "iqr": grid["iqr"][best]},
            "grid_population": population(grid["final"]), "pbt_population": ours,
            "pbt_median_reaches_best_cell": ours["median"] >= grid["median"][best]}


def main(argv: list[str] | None = None) -> None:
    """Read both folders, print the record and write it with ``--json``."""
    parser = argparse.ArgumentParser(prog="python -m experiments.pbt_compare",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("grid", help="the run folder of the grid (run --sweep ...)")
    parser.add_argument("pbt", help="the run folder of the same sweep with --pbt")
    parser.add_argument("--json", default=None, help="write the record here")
    args = parser.parse_args(argv)
    record = {"command": "python -m experiments.pbt_compare " + " ".join(sys.argv[1:]),
              **compare(read(args.grid), read(args.pbt))}
    text = json.dumps(record, indent=2)
    print(text)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(text + "\n")


if __name__ == "__main__":
    main()
