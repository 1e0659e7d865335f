"""A run's evaluations in the JSON format that marl-eval (``pip install id-marl-eval``) reads.

    {env: {task: {algo: {"seed_0": {"step_0": {"step_count": 200, "return": [-41.2], ...},
                                    ...,
                                    "absolute_metrics": {"return": [...], ...}},
                         "seed_1": {...}}}}}

One file holds one run: ``env`` is the suite (``mpe`` for the ``simple_*`` scenarios, else
the scenario), ``task`` the scenario with its agent count and the other ``--env-kwargs``
(``stag_hunt_8ag_miscapture_punishment=-1.5_num_stags=8``), ``algo`` the learner with its
sampler when that is not the learner's default and any ``--sampler-kwargs``
(``maddpg-per``). Runs of several learners merge into one file key by key (rename an
``algo`` to tell variants with other hyperparameters apart). ``step_<chunk>`` holds each
evaluation of ``metrics.csv``: ``step_count`` (env steps per seed), ``return`` (the mean
per-agent episode return of the greedy policy, one value: the mean over the run's
``--eval-episodes``) and the env's episode counters (stag hunt ``captures``).
``absolute_metrics`` holds the same metrics of the final policy: the last evaluation of
``metrics.csv`` as ``jaxmarl-accel run`` writes it, or the value of every episode of an
``jaxmarl-accel evaluate`` run (marl-eval asks for 10 times the episodes of one evaluation).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

ABSOLUTE = "absolute_metrics"
STEP_COUNT = "step_count"
RETURN = "return"


def export_names(config: Any, num_agents: int, learner: Any) -> tuple[str, str, str]:
    """``(env, task, algo)`` of a run of ``config`` (a ``TrainConfig``) with ``num_agents``
    agents and the learner's record ``learner`` (an ``AlgoSpec``: its default sampler is
    not named), lower case as marl-eval compares them."""
    from jaxmarl_accel.algos.registry import DEFAULT_SAMPLER
    from jaxmarl_accel.envs import agent_count_kwarg

    env = "mpe" if config.env.startswith("simple_") else config.env
    count = agent_count_kwarg(config.env)
    task = "_".join([config.env, f"{num_agents}ag",
                     *(f"{k}={v}" for k, v in sorted(config.env_kwargs) if k != count)])
    algo = config.algo
    if config.sampler != (DEFAULT_SAMPLER if learner.sampler is None else learner.sampler):
        algo += f"-{config.sampler}"
    algo += "".join(f"-{k}={v}" for k, v in sorted(config.sampler_kwargs))
    return env.lower(), task.lower(), algo.lower()


def row_metrics(row: Mapping[str, float], stats: Sequence[str]) -> dict[str, list[float]]:
    """The metrics of one ``metrics.csv`` row (one seed's evaluation after one chunk), each
    a one-element list: ``return`` and every counter of ``stats`` (``eval_<name>``) the row
    has (a run recorded before its env counted a statistic has no column for it)."""
    return {RETURN: [float(row["eval_return"])],
            **{name: [float(row[f"eval_{name}"])] for name in stats if f"eval_{name}" in row}}


def run_export(names: tuple[str, str, str], rows: Sequence[Mapping[str, float]],
               stats: Sequence[str],
               absolute: Mapping[int, Mapping[str, Sequence[float]]] | None = None
               ) -> dict[str, Any]:
    """The marl-eval dictionary of one run.

    Args:
      names: ``(env, task, algo)`` (:func:`export_names`).
      rows: the rows of ``metrics.csv``: one per seed and chunk.
      stats: the env's episode counters (``spec.episode_stats``) to export beside ``return``.
      absolute: seed -> metric -> values (``[E]``, one per episode) of the absolute
        metrics; None: each seed's last row of ``rows``.

    Returns:
      ``{env: {task: {algo: {"seed_<i>": {"step_<chunk>": ..., "absolute_metrics": ...}}}}}``.
    """
    env, task, algo = names
    seeds = sorted({int(row["seed"]) for row in rows} | set(absolute or {}))
    runs: dict[str, Any] = {}
    for seed in seeds:
        own = sorted((row for row in rows if int(row["seed"]) == seed),
                     key=lambda row: int(row["chunk"]))
        run: dict[str, Any] = {
            f"step_{int(row['chunk'])}": {STEP_COUNT: int(row["env_steps"]),
                                          **row_metrics(row, stats)} for row in own}
        if absolute is not None:
            run[ABSOLUTE] = {name: [float(v) for v in values]
                             for name, values in absolute[seed].items()}
        elif own:
            run[ABSOLUTE] = row_metrics(own[-1], stats)
        runs[f"seed_{seed}"] = run
    return {env: {task: {algo: runs}}}


def write(path: str, data: Mapping[str, Any]) -> str:
    """Write the marl-eval dictionary ``data`` to ``path`` as JSON; returns ``path``."""
    with open(path, "w") as handle:
        json.dump(data, handle, indent=2)
    return path


def validate(data: Any) -> None:
    """Check ``data`` against marl-eval's documented format; ``ValueError`` (one line, naming
    the key path) at the first departure.

    Four levels of non-empty dictionaries (env, task, algo, run) with string keys, unique
    once lower-cased, and no comma in an algorithm's name; every run holds the same
    ``step_*`` keys and an ``absolute_metrics``; a step holds an integer ``step_count``
    (increasing from step to step) and lists of finite numbers; every step and every
    ``absolute_metrics`` of the file have the same metric names.
    """
    metric_names: set[str] | None = None
    step_keys: list[str] | None = None
    for path, runs in _level(data, [], 3):
        if "," in path[2]:
            raise ValueError(f"{'/'.join(path)}: marl-eval refuses a comma in an algorithm name")
        for run_name, run in _keys(runs, path):
            where = [*path, run_name]
            steps = [key for key in run if key != ABSOLUTE]
            if ABSOLUTE not in run:
                raise ValueError(f"{'/'.join(where)}: no {ABSOLUTE}")
            if step_keys is None:
                step_keys = steps
            if steps != step_keys:
                raise ValueError(f"{'/'.join(where)}: steps {steps} differ from the first run's "
                                 f"{step_keys}")
            previous = -1
            for step in [*steps, ABSOLUTE]:
                metrics = _dict(run[step], [*where, step])
                if step != ABSOLUTE:
                    count = metrics.get(STEP_COUNT)
                    if not isinstance(count, int) or isinstance(count, bool) or count <= previous:
                        raise ValueError(f"{'/'.join([*where, step])}: {STEP_COUNT} must be an "
                                         f"integer above the previous step's, got {count!r}")
                    previous = count
                names = {key for key in metrics if key != STEP_COUNT}
                metric_names = names if metric_names is None else metric_names
                if names != metric_names or not names:
                    raise ValueError(f"{'/'.join([*where, step])}: metrics {sorted(names)} "
                                     f"differ from {sorted(metric_names)}")
                for name in names:
                    _numbers(metrics[name], [*where, step, name])


def _level(data: Any, path: list[str], depth: int) -> list[tuple[list[str], Any]]:
    """The ``(key path, value)`` pairs ``depth`` dictionary levels below ``data``."""
    if depth == 0:
        return [(path, _dict(data, path))]
    found = []
    for key, value in _keys(data, path):
        found += _level(value, [*path, key], depth - 1)
    return found


def _dict(value: Any, path: list[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping) or not value:
        raise ValueError(f"{'/'.join(path) or 'the top level'}: expected a non-empty "
                         f"dictionary, got {type(value).__name__}")
    return value


def _keys(value: Any, path: list[str]) -> list[tuple[str, Any]]:
    items = list(_dict(value, path).items())
    lowered = [str(key).lower() for key, _ in items]
    for key, _ in items:
        if not isinstance(key, str):
            raise ValueError(f"{'/'.join(path)}: key {key!r} is not a string")
    if len(set(lowered)) != len(lowered):
        raise ValueError(f"{'/'.join(path) or 'the top level'}: keys {sorted(lowered)} collide "
                         "once lower-cased")
    return items


def _numbers(values: Any, path: list[str]) -> None:
    if not isinstance(values, list) or not values or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in values):
        raise ValueError(f"{'/'.join(path)}: expected a non-empty list of finite numbers")
