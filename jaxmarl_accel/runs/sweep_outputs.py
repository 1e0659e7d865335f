"""A sweep's outputs in its one run folder: ``metrics.csv`` rows with a ``setting`` column,
``sweep.json`` (each setting's values, median and IQR of its final score over seeds, the
best setting), ``sweep.png`` (a curve per setting; for a grid of two fields, a heatmap of
the final median score) and ``marl_eval.json`` with one algorithm entry per setting, so
marl-eval's tools compare the settings as they compare algorithms."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from jaxmarl_accel.runs import figures, marl_eval, outputs
from jaxmarl_accel.trainer.sweep import Sweep, format_setting, setting_config
from jaxmarl_accel.trainer.train import Trainer

SWEEP_NAME = "sweep.json"
SWEEP_PLOT_NAME = "sweep.png"


def sweep_rows(trainer: Trainer, sweep: Sweep, seeds: int, chunk: int, metrics: Any,
               scored: np.ndarray | None = None) -> list[dict[str, float]]:
    """One ``metrics.csv`` row per lane from host-side ``ChunkMetrics`` with a leading lane
    axis ``[K * S]`` (setting-major): ``setting`` ``k`` and ``seed`` ``s`` (within the
    setting) first, then :func:`~jaxmarl_accel.runs.outputs.metric_rows`' columns, the
    exploration rate at setting ``k``'s own schedule."""
    rows = []
    for k in range(sweep.num_settings):
        own = jax.tree.map(lambda x, k=k: np.asarray(x)[k * seeds:(k + 1) * seeds], metrics)
        alone = trainer._replace(config=setting_config(trainer.config, sweep, k))
        rows += [{"setting": k, **row} for row in outputs.metric_rows(
            chunk, own, scored, outputs.exploration_rates(alone, chunk))]
    return rows


def final_table(rows: Sequence[dict[str, float]], sweep: Sweep, seeds: int,
                column: str) -> np.ndarray:
    """``[K, S]``: the ``column`` of each lane's row at the last evaluation (NaN where a
    lane has no such row)."""
    last = max(int(row["chunk"]) for row in rows)
    table = np.full((sweep.num_settings, seeds), np.nan)
    for row in rows:
        if int(row["chunk"]) == last:
            table[int(row.get("setting", 0)), int(row["seed"])] = row[column]
    return table


def final_scores(rows: Sequence[dict[str, float]], sweep: Sweep, seeds: int,
                 random_return: float, scripted_return: float | None
                 ) -> tuple[str, np.ndarray]:
    """``(score name, [K, S] final scores)``: the normalized score against the baselines
    when defined (``outputs.undefined_score_note``), else the evaluation return."""
    table = final_table(rows, sweep, seeds, "eval_return")
    if scripted_return is None or outputs.undefined_score_note(
            random_return, scripted_return, table.ravel().tolist()) is not None:
        return "eval_return", table
    return "normalized_score", np.vectorize(
        lambda v: outputs.normalized_score(v, random_return, scripted_return))(table)


def median_iqr(table: np.ndarray) -> dict[str, Any]:
    """Over seeds (axis 1 of ``[K, S]``): ``median`` ``[K]`` and ``iqr`` ``[K, 2]``."""
    q25, q50, q75 = np.percentile(table, [25, 50, 75], axis=1)
    return {"median": q50.tolist(), "iqr": np.stack([q25, q75], 1).tolist()}


def best_lane(table: np.ndarray, rows: Sequence[dict[str, float]], seeds: int
              ) -> dict[str, Any]:
    """The lane with the highest final score of ``table`` ``[K, S]`` (ties: the first in
    lane order), with the values it holds at the end (its last row's ``hp_<field>``
    columns, population-based training's): ``lane`` (``setting * seeds + seed``),
    ``setting`` (where it started), ``seed``, ``score`` and ``values``."""
    lane = int(np.nanargmax(table.ravel()))
    setting, seed = divmod(lane, seeds)
    last = max(int(row["chunk"]) for row in rows)
    (row,) = [r for r in rows if int(r["chunk"]) == last and int(r.get("setting", 0)) == setting
              and int(r["seed"]) == seed]
    values = {name[len("hp_"):]: float(v) for name, v in row.items() if name.startswith("hp_")}
    return {"lane": lane, "setting": setting, "seed": seed,
            "score": float(table.ravel()[lane]), "values": values}


def best_note(summary: dict[str, Any]) -> str:
    """One line naming a finished sweep's best: the best final lane of a population (with
    the values it holds at the end), else the best setting by median over seeds."""
    score = summary["score"].replace("_", " ")
    lane = summary.get("best_lane")
    if lane is not None:
        return (f"best lane {lane['lane']} (started as setting {lane['setting']}, seed "
                f"{lane['seed']}; at the end {format_setting(lane['values'])}): {score} "
                f"{lane['score']:.3f}")
    return (f"best setting {summary['best']} ({format_setting(summary['best_setting'])}): "
            f"median {score} {summary['median'][summary['best']]:.3f}")


def sweep_summary(rows: Sequence[dict[str, float]], sweep: Sweep, seeds: int,
                  random_return: float, scripted_return: float | None,
                  stats: Sequence[str] = (), population: bool = False) -> dict[str, Any]:
    """What ``sweep.json`` holds: ``settings`` (one ``{field: value}`` per setting, in the
    order of the ``setting`` column), the score used, each setting's ``final`` scores over
    seeds with their ``median`` and ``iqr``, and the ``best`` setting (highest median);
    ``stats``: for each of the env's episode counters named (``spec.episode_stats``, e.g.
    SMAX's ``won``, Tag's ``tags``) its final greedy evaluation per episode, ``final``
    ``[K, S]`` with its ``median`` and ``iqr`` per setting. With ``population`` (a run of
    population-based training, whose lanes change values as they go) the settings are where
    the lanes started, and ``best_lane`` (:func:`best_lane`) is the best lane at the end
    with the values it holds then."""
    score, table = final_scores(rows, sweep, seeds, random_return, scripted_return)
    spread = median_iqr(table)
    best = int(np.nanargmax(spread["median"]))
    counters = {}
    for stat in stats:
        if rows and f"eval_{stat}" in rows[0]:
            own = final_table(rows, sweep, seeds, f"eval_{stat}")
            counters[stat] = {"final": own.tolist(), **median_iqr(own)}
    return {"names": list(sweep.names), "settings": sweep.settings(), "seeds": seeds,
            "score": score, **spread, "final": table.tolist(), "best": best,
            "best_setting": sweep.setting(best), "random_return": random_return,
            "scripted_return": scripted_return, "stats": counters,
            **({"best_lane": best_lane(table, rows, seeds)} if population else {})}


def read_sweep(out_dir: str) -> dict[str, Any] | None:
    """The ``sweep.json`` of the run in ``out_dir`` (None: not a finished sweep)."""
    path = os.path.join(out_dir, SWEEP_NAME)
    if not os.path.isfile(path):
        return None
    with open(path) as handle:
        return json.load(handle)


def sweep_title(algo: str, env: str, seeds: int) -> str:
    """The title of ``sweep.png``."""
    return f"{algo} on {env} ({seeds} seed{'s' if seeds > 1 else ''} each)"


def write_sweep(out_dir: str, rows: Sequence[dict[str, float]], sweep: Sweep, seeds: int,
                run: dict[str, Any], title: str, names: tuple[str, str, str],
                stats: Sequence[str] = (), population: bool = False) -> dict[str, Any]:
    """Write ``sweep.json``, ``sweep.png`` (titled ``title``) and the per-setting
    ``marl_eval.json`` (``names``: the run's ``(env, task, algo)``,
    :func:`~.marl_eval.export_names`; ``stats``: the env's episode counters) after the
    run's summary ``run`` (whose baseline returns score the settings); returns the
    summary."""
    summary = sweep_summary(rows, sweep, seeds, run["random_return"],
                            run.get("scripted_return"), stats, population)
    with open(os.path.join(out_dir, SWEEP_NAME), "w") as handle:
        json.dump(summary, handle, indent=2)
    plot_sweep(os.path.join(out_dir, SWEEP_PLOT_NAME), rows, sweep, summary, title, population)
    env, task, algo = names
    runs = {}
    for k in range(sweep.num_settings):
        own = [row for row in rows if int(row["setting"]) == k]
        name = f"{algo} {format_setting(sweep.setting(k)).replace(', ', ' ')}"
        runs[name] = marl_eval.run_export((env, task, name), own, stats)[env][task][name]
    marl_eval.write(os.path.join(out_dir, outputs.MARL_EVAL_NAME), {env: {task: runs}})
    return summary


def grid_shape(sweep: Sweep) -> tuple[list[float], list[float]] | None:
    """The two axes' values when ``sweep`` is a full grid of two fields, else None."""
    if len(sweep.names) != 2:
        return None
    rows = sorted({v[0] for v in sweep.values})
    cols = sorted({v[1] for v in sweep.values})
    if len(rows) * len(cols) != sweep.num_settings:
        return None
    return rows, cols


def plot_sweep(path: str, rows: Sequence[dict[str, float]], sweep: Sweep,
               summary: dict[str, Any], title: str, population: bool = False) -> str:
    """``sweep.png``: the median evaluation return over seeds per setting against env
    steps, and beside it, for a two-field grid, the heatmap of the final median score. For
    a ``population`` the curves and cells are the lanes grouped by the setting they started
    from, and say so."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    axes_values = grid_shape(sweep)
    fig, axes = plt.subplots(1, 2 if axes_values else 1,
                             figsize=(13 if axes_values else 7.5, 4.8), squeeze=False)
    curve = axes[0][0]
    colors = plt.get_cmap("viridis")(np.linspace(0, 0.9, sweep.num_settings))
    for k in range(sweep.num_settings):
        points = figures.curve_points([r for r in rows if int(r["setting"]) == k])
        curve.plot([p.env_steps for p in points], [p.median for p in points],
                   color=colors[k], lw=2.5 if k == summary["best"] else 1.2,
                   label=("started as " if population else "") + format_setting(sweep.setting(k)))
    curve.set_xlabel("environment steps per seed")
    curve.set_ylabel("evaluation return (median over seeds)")
    curve.set_title(title)
    if sweep.num_settings <= 12:
        curve.legend(fontsize=7, loc="lower right")
    if axes_values:
        heat = axes[0][1]
        row_values, col_values = axes_values
        grid = np.full((len(row_values), len(col_values)), math.nan)
        for k, (a, b) in enumerate(sweep.values):
            grid[row_values.index(a), col_values.index(b)] = summary["median"][k]
        image = heat.imshow(grid, cmap="viridis", origin="lower", aspect="auto")
        heat.set_xticks(range(len(col_values)), [f"{v:g}" for v in col_values])
        heat.set_yticks(range(len(row_values)), [f"{v:g}" for v in row_values])
        heat.set_xlabel(sweep.names[1])
        heat.set_ylabel(sweep.names[0])
        middle = np.nanmean(grid)
        for (i, j), value in np.ndenumerate(grid):
            heat.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8,
                      color="k" if value > middle else "w")
        heat.set_title(f"final median {summary['score'].replace('_', ' ')}"
                       + (" by starting setting" if population else ""))
        fig.colorbar(image, ax=heat)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


__all__ = ["SWEEP_NAME", "SWEEP_PLOT_NAME", "best_lane", "best_note", "final_scores",
           "final_table", "grid_shape", "median_iqr", "plot_sweep", "read_sweep",
           "sweep_rows", "sweep_summary", "sweep_title", "write_sweep"]
