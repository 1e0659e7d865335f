"""A suite's run folders as scores per seed: one number a seed and task, comparable over tasks.

Each finished pair (ours: a run folder; a reference: the record :mod:`~.jaxmarl_reference`
writes) becomes a :class:`Record`: every seed's greedy evaluation returns and, where the env
counts battles, win rates, at each evaluation's env steps. A task's score
(:func:`task_scores`) is

* SMAX's **win rate** where the task's records count wins (the ``won`` counter);
* else the **normalized score** ``(R - R_random) / (R_scripted - R_random)`` with the
  random and scripted returns our run measured in the same env (``summary.json``);
* else (no scripted policy) the return **min-max normalized** over the task:
  ``(R - R_random) / (R_best - R_random)``, ``R_best`` the best final return of any seed of
  any learner of the task (marl-eval's normalisation), so 1 is the best seed seen.
"""

from __future__ import annotations

import dataclasses
import json
import os

import numpy as np

from jaxmarl_accel.benchmark.execute import FINISHED, pair_dir, pair_state
from jaxmarl_accel.benchmark.suites import Pair

WIN_RATE, NORMALIZED, MIN_MAX = "win rate", "normalized score", "min-max normalized return"


@dataclasses.dataclass(frozen=True)
class Record:
    """One finished pair (ours or a reference).

    Attributes:
      task, learner: the pair's names (a reference's learner: ``jaxmarl:<baseline>``).
      steps: env steps per seed at each evaluation, ``[K]``.
      returns: greedy evaluation return (mean over the scored agents), ``[S, K]``.
      wins: win rate of the same evaluations, ``[S, K]``, or ``None`` (no battles).
      wall_s: seconds the whole pair took (compile, training, evaluations).
      random_return, scripted_return: the env's baselines measured by our run, or ``None``.
    """

    task: str
    learner: str
    steps: np.ndarray
    returns: np.ndarray
    wins: np.ndarray | None
    wall_s: float
    random_return: float | None = None
    scripted_return: float | None = None


def our_record(out_dir: str, pair: Pair) -> Record:
    """The :class:`Record` of ``pair``'s finished run folder (``metrics.csv``,
    ``summary.json``)."""
    from jaxmarl_accel.runs import outputs

    folder = pair_dir(out_dir, pair)
    rows = outputs.read_rows(folder)
    with open(os.path.join(folder, outputs.SUMMARY_NAME)) as handle:
        summary = json.load(handle)
    seeds = sorted({int(r["seed"]) for r in rows})
    chunks = sorted({int(r["chunk"]) for r in rows})
    by = {(int(r["seed"]), int(r["chunk"])): r for r in rows}
    grid = [[by[s, c] for c in chunks] for s in seeds]
    steps = np.asarray([grid[0][k]["env_steps"] for k in range(len(chunks))], float)
    returns = np.asarray([[r["eval_return"] for r in row] for row in grid], float)
    wins = (np.asarray([[r["eval_won"] for r in row] for row in grid], float)
            if "eval_won" in rows[0] else None)
    wall = sum(summary.get(k, 0.0) for k in ("compile_s", "train_s_all_processes"))
    return Record(pair.task.name, pair.learner.name, steps, returns, wins, float(wall),
                  summary.get("random_return"), summary.get("scripted_return"))


def our_records(out_dir: str, chosen: list[Pair]) -> list[Record]:
    """The records of the chosen pairs that are finished (the others are left out)."""
    return [our_record(out_dir, p) for p in chosen if pair_state(out_dir, p) == FINISHED]


@dataclasses.dataclass(frozen=True)
class TaskScores:
    """One task's scores: its kind (:data:`WIN_RATE`, :data:`NORMALIZED`, :data:`MIN_MAX`)
    and per learner the final score of each seed ``[S]`` and the curve ``[S, K]`` at the
    env steps ``[K]``."""

    kind: str
    final: dict[str, np.ndarray]
    curves: dict[str, tuple[np.ndarray, np.ndarray]]


def task_scores(records: list[Record]) -> TaskScores:
    """Scores of one task's records (module docstring for the three kinds)."""
    if all(r.wins is not None for r in records):
        return TaskScores(WIN_RATE, {r.learner: r.wins[:, -1] for r in records},
                          {r.learner: (r.steps, r.wins) for r in records})
    base = next((r for r in records if r.random_return is not None), None)
    low = base.random_return if base is not None else min(
        float(r.returns[:, 0].min()) for r in records)
    kind, high = MIN_MAX, max(float(r.returns[:, -1].max()) for r in records)
    if base is not None and base.scripted_return is not None and not np.isclose(
            base.scripted_return, low):
        kind, high = NORMALIZED, base.scripted_return
    span = high - low if not np.isclose(high, low) else 1.0
    curves = {r.learner: (r.steps, (r.returns - low) / span) for r in records}
    return TaskScores(kind, {name: curve[1][:, -1] for name, curve in curves.items()}, curves)


def suite_scores(records: list[Record]) -> dict[str, TaskScores]:
    """Task name -> :class:`TaskScores`, tasks in the records' order."""
    tasks: dict[str, list[Record]] = {}
    for record in records:
        tasks.setdefault(record.task, []).append(record)
    return {task: task_scores(group) for task, group in tasks.items()}
