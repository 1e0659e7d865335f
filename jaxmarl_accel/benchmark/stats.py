"""The field's statistics of a suite's scores, computed by ``rliable`` (Agarwal et al. 2021,
"Deep Reinforcement Learning at the Edge of the Statistical Precipice").

Per task and learner, and per learner over its tasks: the interquartile mean (IQM) with its
95% stratified-bootstrap interval, the median, the mean and the optimality gap (each with its
interval); between every two learners, over the tasks both have, the probability that one
improves on the other (with its interval); per learner the performance profile (the share of
runs whose score exceeds each threshold tau) and the sample-efficiency curve (IQM over its
tasks at each share of the budget). Scores are ``[seeds, tasks]`` matrices, one per learner;
a learner whose tasks have different seed counts keeps the fewest.

``rliable`` 1.2.0 builds its bootstraps on ``arch``'s with ``random_state=``, which ``arch``
8 renamed ``seed=`` (and ``arch`` 7 does not import with pandas 3): :func:`bootstraps` gives
rliable its own bootstrap classes over an ``arch`` that takes ``seed=``, unchanged otherwise.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterator
from typing import Any

import numpy as np

from jaxmarl_accel.benchmark.scores import TaskScores

METRICS = ("IQM", "Median", "Mean", "Optimality Gap")
REPS = 2000
TAUS = np.linspace(0.0, 1.0, 41)


@contextlib.contextmanager
def bootstraps() -> Iterator[Any]:
    """``rliable.library`` with stratified bootstraps that work on the installed ``arch``
    (module docstring); the module's own classes are restored after."""
    import arch.bootstrap as arch_bs
    from rliable import library as rly

    if "random_state" in inspect.signature(arch_bs.IIDBootstrap.__init__).parameters:
        yield rly
        return

    def seeded(base: type) -> type:
        class Seeded(base):  # rliable passes random_state=, arch >= 8 takes seed=
            def __init__(self, *args: Any, random_state: Any = None, **kwargs: Any) -> None:
                super().__init__(*args, seed=random_state, **kwargs)
        return Seeded

    saved = rly.StratifiedBootstrap, rly.StratifiedIndependentBootstrap
    rly.StratifiedBootstrap = type("StratifiedBootstrap",
                                   (saved[0], seeded(arch_bs.IIDBootstrap)), {})
    rly.StratifiedIndependentBootstrap = type(
        "StratifiedIndependentBootstrap", (saved[1], seeded(arch_bs.IndependentSamplesBootstrap)),
        {})
    try:
        yield rly
    finally:
        rly.StratifiedBootstrap, rly.StratifiedIndependentBootstrap = saved


def aggregate(scores: np.ndarray) -> np.ndarray:
    """IQM, median, mean and optimality gap (:data:`METRICS`) of ``scores [S, T]``."""
    from rliable import metrics

    return np.array([metrics.aggregate_iqm(scores), metrics.aggregate_median(scores),
                     metrics.aggregate_mean(scores), metrics.aggregate_optimality_gap(scores)])


def score_matrices(scores: dict[str, TaskScores], tasks: list[str] | None = None
                   ) -> dict[str, tuple[list[str], np.ndarray]]:
    """Learner -> (its tasks, its final scores ``[S, T]``), over ``tasks`` (default all)."""
    out: dict[str, tuple[list[str], list[np.ndarray]]] = {}
    for task, task_scores in scores.items():
        if tasks is not None and task not in tasks:
            continue
        for learner, final in task_scores.final.items():
            out.setdefault(learner, ([], []))
            out[learner][0].append(task)
            out[learner][1].append(final)
    return {name: (names, _columns(columns)) for name, (names, columns) in out.items()}


def _columns(columns: list[np.ndarray]) -> np.ndarray:
    seeds = min(len(c) for c in columns)
    return np.stack([np.asarray(c, float)[:seeds] for c in columns], axis=1)


def _estimates(rly: Any, matrices: dict[str, np.ndarray], seed: int, reps: int
               ) -> dict[str, dict]:
    point, interval = rly.get_interval_estimates(matrices, aggregate, reps=reps,
                                                 random_state=np.random.RandomState(seed))
    return {name: {metric: [float(point[name][i]), float(interval[name][0, i]),
                            float(interval[name][1, i])] for i, metric in enumerate(METRICS)}
            for name in matrices}


def suite_statistics(scores: dict[str, TaskScores], seed: int = 0, reps: int = REPS
                     ) -> dict[str, Any]:
    """Every statistic of the module docstring as plain JSON values.

    Returns:
      ``{"per_task": {task: {"kind", learner: {metric: [point, low, high]}}},
      "overall": {learner: {"tasks": [...], metric: [point, low, high]}},
      "improvement": {"X,Y": [P(X > Y), low, high, tasks]},
      "profiles": {"tau": [...], learner: [[share, low, high] per tau]},
      "curves": {learner: {"fraction": [...], "iqm": [...], "low": [...], "high": [...]}}}``.
    """
    np.random.seed(seed)  # rliable draws its resamples from NumPy's global generator
    with bootstraps() as rly:
        per_task = {task: {"kind": s.kind, **_estimates(
            rly, {n: np.asarray(v, float)[:, None] for n, v in s.final.items()}, seed, reps)}
            for task, s in scores.items()}
        matrices = score_matrices(scores)
        overall = _estimates(rly, {n: m for n, (_, m) in matrices.items()}, seed, reps)
        for name, (tasks, _) in matrices.items():
            overall[name] = {"tasks": tasks, **overall[name]}
        return {"per_task": per_task, "overall": overall,
                "improvement": improvement(rly, scores, matrices, seed, reps),
                "profiles": profiles(rly, matrices, reps),
                "curves": curves(rly, scores, seed, reps)}


def improvement(rly: Any, scores: dict[str, TaskScores],
                matrices: dict[str, tuple[list[str], np.ndarray]], seed: int,
                reps: int = REPS) -> dict[str, list]:
    """``"X,Y"`` -> [P(X > Y), low, high, the tasks both have] for every two learners."""
    from rliable import metrics

    out = {}
    names = list(matrices)
    for x in names:
        for y in names:
            common = [t for t in matrices[x][0] if t in matrices[y][0]]
            if x == y or not common:
                continue
            pair = score_matrices(scores, common)
            data = {f"{x},{y}": (pair[x][1], pair[y][1])}
            point, interval = rly.get_interval_estimates(
                data, metrics.probability_of_improvement, reps=reps,
                random_state=np.random.RandomState(seed))
            key = f"{x},{y}"
            out[key] = [float(point[key]), float(interval[key][0, 0]),
                        float(interval[key][1, 0]), common]
    return out


def profiles(rly: Any, matrices: dict[str, tuple[list[str], np.ndarray]], reps: int = REPS
             ) -> dict[str, Any]:
    """Performance profiles (score distributions over runs and tasks) at :data:`TAUS`."""
    shares, intervals = rly.create_performance_profile(
        {n: m for n, (_, m) in matrices.items()}, TAUS, reps=reps)
    return {"tau": TAUS.tolist(), **{n: np.stack([shares[n], intervals[n][0], intervals[n][1]],
                                                 axis=1).tolist() for n in matrices}}


def curves(rly: Any, scores: dict[str, TaskScores], seed: int, reps: int = REPS,
           points: int = 10) -> dict[str, dict[str, list[float]]]:
    """Sample-efficiency curves: per learner, the IQM over its tasks (with its interval) at
    ``points`` shares of each task's budget (each curve read at the nearest evaluation)."""
    from rliable import metrics

    fraction = np.linspace(1.0 / points, 1.0, points)
    out = {}
    learners = {name for s in scores.values() for name in s.curves}
    for name in sorted(learners):
        columns = []
        for s in scores.values():
            if name in s.curves:
                steps, values = s.curves[name]
                at = [int(np.argmin(np.abs(steps / steps[-1] - f))) for f in fraction]
                columns.append(values[:, at])  # [S, points]
        seeds = min(c.shape[0] for c in columns)
        stacked = np.stack([c[:seeds] for c in columns], axis=1)  # [S, T, points]
        matrices = {str(k): stacked[:, :, k] for k in range(points)}
        point, interval = rly.get_interval_estimates(
            matrices, metrics.aggregate_iqm, reps=reps, random_state=np.random.RandomState(seed))
        out[name] = {"fraction": fraction.tolist(),
                     "iqm": [float(point[str(k)]) for k in range(points)],
                     "low": [float(np.ravel(interval[str(k)])[0]) for k in range(points)],
                     "high": [float(np.ravel(interval[str(k)])[1]) for k in range(points)]}
    return out
