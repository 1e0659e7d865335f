"""A suite's results as files: ``statistics.json``, ``marl_eval.json``, ``table.md`` and the
figures (``aggregates.png``, ``improvement.png``, ``profiles.png``, ``sample_efficiency.png``).

``table.md`` has tasks down and learners across: each cell the IQM of the task's score over
seeds with its 95% stratified-bootstrap interval; then each learner's IQM, median, mean and
optimality gap over its tasks, and each pair's wall time (compile, training and
evaluations; a reference's: its seeds one after another). ``--markdown`` of the command
prints the same table, so a page's rows can be regenerated from a suite's folder.
``marl_eval.json`` holds every pair's evaluations in marl-eval's format
(:mod:`jaxmarl_accel.runs.marl_eval`), the suite as its env: ``{suite: {task: {learner:
{"seed_<i>": {"step_<k>": {"step_count", "return", "score"[, "win_rate"]}, "absolute_metrics":
...}}}}}``.
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from jaxmarl_accel.benchmark.scores import Record, TaskScores
from jaxmarl_accel.benchmark.stats import METRICS
from jaxmarl_accel.runs import marl_eval

STATISTICS, MARL_EVAL, TABLE = "statistics.json", "marl_eval.json", "table.md"
FIGURES = ("aggregates.png", "improvement.png", "profiles.png", "sample_efficiency.png")


def marl_eval_export(suite: str, records: list[Record], scores: dict[str, TaskScores]
                     ) -> dict[str, Any]:
    """The marl-eval dictionary of every record (module docstring)."""
    out: dict[str, Any] = {}
    for record in records:
        curve = scores[record.task].curves[record.learner][1]
        runs = {}
        for seed in range(record.returns.shape[0]):
            steps = {}
            for k, count in enumerate(record.steps):
                step = {marl_eval.STEP_COUNT: int(count),
                        marl_eval.RETURN: [float(record.returns[seed, k])],
                        "score": [float(curve[seed, k])]}
                if record.wins is not None:
                    step["win_rate"] = [float(record.wins[seed, k])]
                steps[f"step_{k}"] = step
            final = dict(steps[f"step_{len(record.steps) - 1}"])
            final.pop(marl_eval.STEP_COUNT)
            runs[f"seed_{seed}"] = {**steps, marl_eval.ABSOLUTE: final}
        out.setdefault(suite.lower(), {}).setdefault(record.task.lower(), {})[
            record.learner.lower()] = runs
    return out


def _cell(values: list[float] | None) -> str:
    if values is None:
        return "-"
    point, low, high = values
    return f"{point:.3f} [{low:.3f}, {high:.3f}]"


def markdown(statistics: dict[str, Any], records: list[Record]) -> str:
    """The markdown tables of ``table.md`` (module docstring)."""
    per_task, overall = statistics["per_task"], statistics["overall"]
    learners = list(overall)
    lines = ["| task | score | " + " | ".join(learners) + " |",
             "|---|---|" + "---|" * len(learners)]
    for task, cells in per_task.items():
        lines.append(f"| {task} | {cells['kind']} | " + " | ".join(
            _cell(cells[n]["IQM"] if n in cells else None) for n in learners) + " |")
    lines += ["", "| over tasks | " + " | ".join(learners) + " |",
              "|---|" + "---|" * len(learners),
              "| tasks | " + " | ".join(str(len(overall[n]["tasks"])) for n in learners) + " |"]
    for metric in METRICS:
        lines.append(f"| {metric} | " + " | ".join(_cell(overall[n][metric]) for n in learners)
                     + " |")
    wall = {(r.task, r.learner): r.wall_s for r in records}
    lines += ["", "| wall time (s) | " + " | ".join(learners) + " |",
              "|---|" + "---|" * len(learners)]
    for task in per_task:
        lines.append(f"| {task} | " + " | ".join(
            f"{wall[task, n]:.1f}" if (task, n) in wall else "-" for n in learners) + " |")
    return "\n".join(lines) + "\n"


def write_figures(out_dir: str, statistics: dict[str, Any]) -> list[str]:
    """The four PNGs of the module docstring, drawn by ``rliable.plot_utils``; their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from rliable import plot_utils

    overall = statistics["overall"]
    names = list(overall)
    paths = [os.path.join(out_dir, name) for name in FIGURES]
    point = {n: np.array([overall[n][m][0] for m in METRICS]) for n in names}
    interval = {n: np.array([[overall[n][m][1] for m in METRICS],
                             [overall[n][m][2] for m in METRICS]]) for n in names}
    fig, _ = plot_utils.plot_interval_estimates(point, interval, METRICS, algorithms=names,
                                                xlabel="score")
    fig.savefig(paths[0], bbox_inches="tight")
    pairs = statistics["improvement"]
    if pairs:
        ax = plot_utils.plot_probability_of_improvement(
            {k: v[0] for k, v in pairs.items()},
            {k: np.array([[v[1]], [v[2]]]) for k, v in pairs.items()})
        ax.figure.savefig(paths[1], bbox_inches="tight")
    profiles = statistics["profiles"]
    fig, ax = plt.subplots(figsize=(7, 5))
    plot_utils.plot_performance_profiles(
        {n: np.array(profiles[n])[:, 0] for n in names}, np.array(profiles["tau"]),
        performance_profile_cis={n: np.array(profiles[n])[:, 1:].T for n in names},
        xlabel=r"score $(\tau)$", ax=ax, legend=True)
    fig.savefig(paths[2], bbox_inches="tight")
    curves = statistics["curves"]
    fig, ax = plt.subplots(figsize=(7, 5))
    fraction = np.array(next(iter(curves.values()))["fraction"])
    plot_utils.plot_sample_efficiency_curve(
        fraction, {n: np.array(c["iqm"]) for n, c in curves.items()},
        {n: np.array([c["low"], c["high"]]) for n, c in curves.items()},
        algorithms=list(curves), xlabel="share of the env steps", ylabel="IQM score", ax=ax,
        legend=True)
    fig.savefig(paths[3], bbox_inches="tight")
    plt.close("all")
    return [p for p in paths if os.path.exists(p)]


def write_report(out_dir: str, suite: str, records: list[Record],
                 scores: dict[str, TaskScores], statistics: dict[str, Any]) -> list[str]:
    """Write every file of the module docstring into ``out_dir``; their paths."""
    paths = [os.path.join(out_dir, name) for name in (STATISTICS, MARL_EVAL, TABLE)]
    with open(paths[0], "w") as handle:
        json.dump(statistics, handle, indent=1)
    marl_eval.write(paths[1], marl_eval_export(suite, records, scores))
    with open(paths[2], "w") as handle:
        handle.write(markdown(statistics, records))
    return paths + write_figures(out_dir, statistics)
