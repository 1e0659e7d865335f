"""What a run leaves in its output folder: the names of its files, stored config, metrics
CSV, summary JSON with its scores; and the checks of a folder before a run writes to it
(the pictures: :mod:`~.figures`)."""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
from collections.abc import Sequence
from typing import Any

import numpy as np

CONFIG_NAME = "config.json"
CSV_NAME = "metrics.csv"
SUMMARY_NAME = "summary.json"
CURVE_NAME = "learning_curve.png"
CHECKPOINTS_NAME = "checkpoints"
GIF_NAME = "episode.gif"
PNG_NAME = "episode.png"
MARL_EVAL_NAME = "marl_eval.json"
EVALUATION_NAME = "evaluation.json"
EVALUATION_GIF_NAME = "evaluation.gif"
EVALUATION_PNG_NAME = "evaluation.png"
TENSORBOARD_NAME = "tensorboard"
WANDB_NAME = "wandb"
CHUNK_SECONDS_NAME = "chunk_seconds.json"
RUN_ENTRIES = (CONFIG_NAME, CSV_NAME, SUMMARY_NAME, CURVE_NAME, CHECKPOINTS_NAME, GIF_NAME,
               PNG_NAME, MARL_EVAL_NAME, EVALUATION_NAME, EVALUATION_GIF_NAME,
               EVALUATION_PNG_NAME, TENSORBOARD_NAME, WANDB_NAME, CHUNK_SECONDS_NAME)
"""Everything a run (and ``jaxmarl-accel evaluate`` by default) writes into its folder (what
``--overwrite`` removes)."""


def scored_agents(config: Any, spec: Any) -> np.ndarray:
    """Bool ``[N]``: the agents a run is scored on, its learners. With scripted prey
    (``config.prey == "scripted"``) the predators; every agent otherwise."""
    if getattr(config, "prey", "trained") == "scripted":
        return np.asarray([team == "predator" for team in spec.teams])
    return np.ones(spec.num_agents, bool)


def metric_rows(chunk: int, metrics: Any, scored: np.ndarray | None = None,
                schedule: dict[str, float] | None = None) -> list[dict[str, float]]:
    """One CSV row per seed from host-side ``ChunkMetrics`` with a leading seed axis.

    ``eval_return`` and ``train_return`` are the means over the ``scored`` agents (bool
    ``[N]``, default all; with scripted prey the predators); ``eval_return_agent{i}`` are
    every agent's own. ``schedule``: columns every seed shares, known on the host (the
    exploration rate, :func:`exploration_rates`); they replace
    learner metrics of the same name, which average only the chunk's updates."""
    eval_return = np.asarray(metrics.eval_return)  # [S, N]
    scored = np.ones(eval_return.shape[1], bool) if scored is None else np.asarray(scored)
    rows = []
    for seed in range(eval_return.shape[0]):
        row: dict[str, float] = {
            "seed": seed, "chunk": chunk,
            "env_steps": int(np.asarray(metrics.env_steps)[seed]),
            "eval_return": float(eval_return[seed][scored].mean()),
            "train_return": float(np.asarray(metrics.train_return)[seed][scored].mean()),
            "updates": int(np.asarray(metrics.updates)[seed]),
        }
        for agent, value in enumerate(eval_return[seed]):
            row[f"eval_return_agent{agent}"] = float(value)
        for prefix, stats in (("eval", metrics.eval_stats), ("train", metrics.train_stats)):
            for name, value in sorted(stats.items()):  # per-episode counters, e.g. captures
                row[f"{prefix}_{name}"] = float(np.asarray(value)[seed])
        for name, value in sorted(metrics.learner.items()):
            row[name] = float(np.asarray(value)[seed])
        row.update(schedule or {})
        rows.append(row)
    return rows


def exploration_rates(trainer: Any, chunk: int) -> dict[str, float]:
    """The exploration columns of chunk ``chunk``'s metric rows for learners whose family
    has a schedule on the run's clock (``Family.exploration``: the value learners'
    ``epsilon``; else ``{}``): the rate the chunk's training episodes were collected at,
    averaged over its env steps. The schedule is the same for every seed, so it is known
    whether or not the chunk updated (the learner's own ``epsilon`` metric averages only
    the chunk's updates)."""
    plan = trainer.plan
    exploration = plan.learner.family.exploration
    if exploration is None:
        return {}
    start = chunk * trainer.steps_per_chunk
    end = min(start + trainer.steps_per_chunk, trainer.total_steps)
    clocks = np.arange(start, end, plan.schedule.clock_stride)  # the clock at each action
    return {name: float(np.mean(rates))
            for name, rates in exploration(trainer.config.learner, clocks).items()}


def write_rows(out_dir: str, rows: Sequence[dict[str, float]]) -> None:
    """Rewrite the metrics CSV with ``rows`` (all chunks so far, every seed)."""
    if not rows:
        return
    path = os.path.join(out_dir, CSV_NAME)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)


def read_rows(out_dir: str) -> list[dict[str, float]]:
    """Read the metrics CSV back (used when resuming): integers as ints, the rest as floats,
    so that rewriting the rows reproduces the file."""
    path = os.path.join(out_dir, CSV_NAME)
    if not os.path.exists(path):
        return []
    with open(path, newline="") as handle:
        return [{k: _number(v) for k, v in row.items()} for row in csv.DictReader(handle)]


def read_chunk_seconds(out_dir: str) -> dict[int, float]:
    """The wall-clock seconds each chunk of the run in ``out_dir`` took, by chunk index
    (:func:`write_chunk_seconds`); empty when the file is missing or unreadable (a run
    written before it existed)."""
    try:
        with open(os.path.join(out_dir, CHUNK_SECONDS_NAME)) as handle:
            return {int(chunk): float(seconds) for chunk, seconds in json.load(handle).items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def write_chunk_seconds(out_dir: str, seconds: dict[int, float]) -> None:
    """Store the seconds each chunk took (training, metrics and checkpoint), so that the
    summary can give the wall time of a run that was resumed in later processes."""
    with open(os.path.join(out_dir, CHUNK_SECONDS_NAME), "w") as handle:
        json.dump({str(chunk): round(value, 3) for chunk, value in sorted(seconds.items())},
                  handle, indent=1)


def _number(text: str) -> float:
    """A CSV cell as written by :func:`write_rows`: ``str(int)`` or ``repr(float)``."""
    try:
        return int(text)
    except ValueError:
        return float(text)


def run_entries(out_dir: str) -> list[str]:
    """The entries of :data:`RUN_ENTRIES` present in ``out_dir`` (none: it holds no run)."""
    return [name for name in RUN_ENTRIES if os.path.lexists(os.path.join(out_dir, name))]


def clear_run(out_dir: str) -> None:
    """Remove what a run wrote into ``out_dir`` (:data:`RUN_ENTRIES`); other files stay."""
    for name in run_entries(out_dir):
        path = os.path.join(out_dir, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.remove(path)


def refuse_a_file(out_dir: str) -> None:
    """``ValueError`` (one line) when ``out_dir`` exists and is not a folder."""
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise ValueError(f"--out {out_dir} is a file, not a folder")


def ensure_writable_folder(out_dir: str) -> None:
    """Create ``out_dir`` if needed; ``ValueError`` (one line) when it is a file or cannot be
    written."""
    refuse_a_file(out_dir)
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as error:
        raise ValueError(f"--out {out_dir} cannot be created: {error.strerror}") from None
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise ValueError(f"--out {out_dir} is not writable")


def write_run_config(out_dir: str, record: dict[str, Any]) -> None:
    """Write the run's stored configuration (``config.json``)."""
    with open(os.path.join(out_dir, CONFIG_NAME), "w") as handle:
        json.dump(record, handle, indent=2)


def read_run_config(out_dir: str, required: Sequence[str]) -> dict[str, Any]:
    """The stored configuration of the run in ``out_dir``; ``ValueError`` (one line) when
    it is missing, not JSON, or lacks any of the ``required`` keys."""
    path = os.path.join(out_dir, CONFIG_NAME)
    if not os.path.isfile(path):
        raise ValueError(f"{out_dir} holds no run to resume (no {CONFIG_NAME})")
    try:
        with open(path) as handle:
            record = json.load(handle)
    except (OSError, ValueError) as error:
        raise ValueError(f"{path} cannot be read: {error}") from None
    missing = [key for key in required if not isinstance(record, dict) or key not in record]
    if missing:
        raise ValueError(f"{path} lacks {', '.join(missing)} (written by an older version, or "
                         "edited); add them or start a new run")
    return record


def normalized_score(value: float, random_return: float, scripted_return: float) -> float:
    """NS = (R - R_random) / (R_scripted - R_random); 0 is random, 1 is the scripted policy."""
    span = scripted_return - random_return
    return (value - random_return) / span if abs(span) > 1e-9 else math.nan


def baselines_apart(random_return: float, scripted_return: float, random_se: float,
                    scripted_se: float, episodes: int) -> str | None:
    """``None`` when the scripted policy's mean return differs from the random policy's by
    more than two standard errors of the difference, else a one-line note saying that the
    normalized score (whose unit is that difference) is not meaningful."""
    se = math.hypot(random_se, scripted_se)
    if abs(scripted_return - random_return) > 2.0 * se:
        return None
    return (f"the scripted policy's return {scripted_return:.3f} (+- {scripted_se:.3f}) is "
            f"within two standard errors of the random policy's {random_return:.3f} (+- "
            f"{random_se:.3f}) over {episodes} episode(s) each: normalized scores are not "
            "meaningful here; compare returns, or use more --baseline-episodes")


NO_SCRIPTED_NOTE = ("the env has no scripted policy, so no normalized score is defined; "
                    "compare returns (and the random policy's)")

SCORE_SPAN_FLOOR = 0.01
"""The normalized score is undefined when the scripted and random returns differ by at most
this share of the largest return in play (absolute, baselines and seeds): its unit, that
difference, would then turn any return into a huge score."""


def undefined_score_note(random_return: float, scripted_return: float,
                         returns: Sequence[float]) -> str | None:
    """``None`` when the normalized score is defined, else a one-line note: the scripted
    and random returns differ by at most :data:`SCORE_SPAN_FLOOR` of the largest absolute
    return among them and ``returns`` (each seed's)."""
    span = abs(scripted_return - random_return)
    scale = max(abs(random_return), abs(scripted_return), *(abs(v) for v in returns))
    if span > SCORE_SPAN_FLOOR * scale:
        return None
    return (f"the scripted policy's return {scripted_return:.4g} and the random policy's "
            f"{random_return:.4g} differ by {span:.3g}, at most {SCORE_SPAN_FLOOR:.0%} of "
            f"the returns' size ({scale:.4g}): the normalized score (R - random) / (scripted "
            "- random) is undefined here; compare returns")


def summarize(final_returns: Sequence[float], random_return: float,
              scripted_return: float | None, extra: dict[str, Any] | None = None,
              baseline_se: tuple[float, float, int] | None = None) -> dict[str, Any]:
    """Summary of the final evaluation over seeds: per-seed values, median, IQR, NS.

    ``scripted_return``: the scripted policy's, or ``None`` when the env has none
    (``spec.scripted`` False). Without one, or when the two baselines nearly coincide
    (:func:`undefined_score_note`), the summary has no normalized score and
    ``normalized_score_note`` says why. ``baseline_se``: the standard errors of the random
    and scripted returns and the episodes behind each; with it the summary holds them, and a
    ``baseline_warning`` when the two baselines are not told apart (:func:`baselines_apart`)."""
    values = np.asarray(final_returns, dtype=np.float64)
    q25, q50, q75 = np.percentile(values, [25, 50, 75])
    summary: dict[str, Any] = {
        "final_eval_return_per_seed": values.tolist(), "median_return": float(q50),
        "iqr_return": [float(q25), float(q75)], "random_return": random_return}
    if scripted_return is None:
        note = NO_SCRIPTED_NOTE
    else:
        summary["scripted_return"] = scripted_return
        note = undefined_score_note(random_return, scripted_return, values.tolist())
    if note is None:
        scores = [normalized_score(v, random_return, scripted_return) for v in values]
        s25, s50, s75 = np.percentile(scores, [25, 50, 75])
        summary.update(normalized_score_per_seed=scores, median_normalized_score=float(s50),
                       iqr_normalized_score=[float(s25), float(s75)])
    else:
        summary["normalized_score_note"] = note
    if baseline_se is not None:
        random_se, scripted_se, episodes = baseline_se
        summary["random_return_se"] = random_se
        if scripted_return is not None:
            summary["scripted_return_se"] = scripted_se
        summary["baseline_episodes"] = episodes
        warning = None if note is not None else baselines_apart(
            random_return, scripted_return, random_se, scripted_se, episodes)
        if warning is not None:
            summary["baseline_warning"] = warning
    summary.update(extra or {})
    return summary


def write_summary(out_dir: str, summary: dict[str, Any]) -> str:
    """Write ``summary`` as ``summary.json`` in ``out_dir``; returns the file's path."""
    path = os.path.join(out_dir, SUMMARY_NAME)
    with open(path, "w") as handle:
        json.dump(summary, handle, indent=2)
    return path
