"""A run's pictures: the learning curve (``learning_curve.png``: median evaluation return
over seeds with its interquartile band) and an episode's frames as a GIF and a PNG."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from jaxmarl_accel.runs.outputs import CURVE_NAME


class CurvePoint(NamedTuple):
    """One evaluation of a run over its seeds: env steps on the run's clock, the median and
    quartiles of ``key`` over the seeds' rows at it, and the number of rows."""

    env_steps: float
    median: float
    low: float
    high: float
    count: int


def curve_points(rows: Sequence[dict[str, float]], key: str = "eval_return"
                 ) -> list[CurvePoint]:
    """The metric rows (every seed, every evaluation) as one :class:`CurvePoint` per
    evaluation, in order of env steps."""
    points = []
    for steps in sorted({row["env_steps"] for row in rows}):
        values = [row[key] for row in rows if row["env_steps"] == steps]
        low, high = np.percentile(values, [25, 75])
        points.append(CurvePoint(steps, float(np.median(values)), float(low), float(high),
                                 len(values)))
    return points


MARKED_POINTS = 20
"""Curves of at most this many evaluations mark each one (a single point draws no line)."""


def curve_title(algo: str, env: str, seeds: int) -> str:
    """The learning curve's title: ``"qmix on stag_hunt (1 seed)"``."""
    return f"{algo} on {env} ({seeds} seed{'' if seeds == 1 else 's'})"


def curve_figure(rows: Sequence[dict[str, float]], title: str, random_return: float,
                 scripted_return: float | None) -> Any:
    """The learning curve as a matplotlib figure: median evaluation return over seeds with
    an interquartile band, each evaluation marked when there are few
    (:data:`MARKED_POINTS`), and the random and scripted policies' returns (the scripted
    when there is one)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps, median, low, high = zip(*((p.env_steps, p.median, p.low, p.high)
                                     for p in curve_points(rows)), strict=True)
    marker = "o" if len(steps) <= MARKED_POINTS else None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(steps, median, color="tab:blue", marker=marker, label="median over seeds")
    if len(steps) > 1:
        ax.fill_between(steps, low, high, color="tab:blue", alpha=0.25,
                        label="interquartile range")
    else:  # one evaluation: its interquartile range as an error bar
        ax.errorbar(steps, median, yerr=[[median[0] - low[0]], [high[0] - median[0]]],
                    color="tab:blue", capsize=4, label="interquartile range")
    ax.axhline(random_return, color="tab:red", ls="--", label="random policy")
    if scripted_return is not None:
        ax.axhline(scripted_return, color="tab:green", ls="--", label="scripted policy")
    ax.set_xlabel("environment steps per seed")
    ax.set_ylabel("evaluation return per agent per episode")
    ax.set_title(title)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def plot_curve(out_dir: str, rows: Sequence[dict[str, float]], title: str,
               random_return: float, scripted_return: float | None) -> str:
    """Write the learning curve (:func:`curve_figure`) to ``learning_curve.png`` in
    ``out_dir``; returns the file's path."""
    import matplotlib.pyplot as plt

    fig = curve_figure(rows, title, random_return, scripted_return)
    path = os.path.join(out_dir, CURVE_NAME)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_gif(path: str, frames: np.ndarray, fps: float = 8.0) -> None:
    """Writes ``[T, H, W, 3]`` uint8 frames as a looping GIF showing ``fps`` frames per
    second (imageio's GIF writer takes the frame delay in milliseconds; the GIF stores
    hundredths of a second)."""
    import imageio.v2 as imageio

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    imageio.mimsave(path, list(frames), duration=1000.0 / fps, loop=0)


def write_png(path: str, frame: np.ndarray) -> None:
    """Writes one ``[H, W, 3]`` uint8 frame as a PNG."""
    import imageio.v2 as imageio

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    imageio.imwrite(path, frame)
