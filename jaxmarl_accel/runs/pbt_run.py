"""``run --sweep ... --pbt``: population-based training of a sweep's lanes between chunks
(:mod:`jaxmarl_accel.trainer.pbt`), with ``pbt.json`` (the lineage: at each step, which lane
copied which, their scores and values) and ``pbt.png`` (each lane's values over env steps).
Every lane's ``metrics.csv`` rows carry the values it trained the chunk with
(``hp_<field>``)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

import jax
import numpy as np

from jaxmarl_accel.trainer.pbt import Exploit, exploit_explore, make_apply

PBT_NAME = "pbt.json"
PBT_PLOT_NAME = "pbt.png"
HYPER_PREFIX = "hp_"


def read_lineage(out_dir: str) -> list[dict[str, Any]]:
    """The lineage ``pbt.json`` holds so far (empty without one)."""
    path = os.path.join(out_dir, PBT_NAME)
    if not os.path.isfile(path):
        return []
    with open(path) as handle:
        return list(json.load(handle)["lineage"])


class PbtSteps:
    """The host loop's population-based training: after every ``every`` chunks (none after
    the last), the worst lanes copy the best, from the first chunk that learned throughout
    on (a chunk that starts at or after ``first_update_step`` on the run's clock: before
    it, the lanes' scores are those of untrained learners) and only when the lanes' scores
    differ (a population that ties has no best to copy). Steps that are skipped are not
    made up later. ``initial_carry``: one lane's carry at its envs' episode starts (leaves
    ``[E, ...]``; ``()`` without one), which a lane that copies another's learners takes
    (:func:`~jaxmarl_accel.trainer.pbt.make_apply`)."""

    def __init__(self, config: Any, seed: int, every: int, num_chunks: int, out_dir: str,
                 writer: bool, first_update_step: int = 0, steps_per_chunk: int = 1,
                 initial_carry: Any = ()) -> None:
        self.config, self.seed, self.every, self.num_chunks = config, seed, every, num_chunks
        self.out_dir, self.writer = out_dir, writer
        self.first_update_step, self.steps_per_chunk = first_update_step, steps_per_chunk
        self.apply = make_apply(initial_carry=initial_carry)

    def steps_after(self, chunk: int, scores: Sequence[float]) -> bool:
        """Whether a step follows ``chunk`` whose lanes scored ``scores``: a step's chunk,
        not the last, that learned throughout, with scores that differ."""
        if (chunk + 1) % self.every or chunk + 1 >= self.num_chunks:
            return False
        if chunk * self.steps_per_chunk < self.first_update_step:
            return False
        finite = np.asarray(scores, np.float64)[np.isfinite(scores)]
        return finite.size > 0 and bool(np.ptp(finite) > 0)

    def after_chunk(self, chunk: int, state: Any, rows: Sequence[dict[str, Any]]) -> Any:
        """Mark ``rows`` (the chunk's, one per lane in lane order) with the values each lane
        trained the chunk with; on a step's chunk, exploit and explore and record it in
        ``pbt.json``. Returns the state to continue from."""
        hyper = {name: np.asarray(v) for name, v in jax.device_get(state.hyper).items()}
        for lane, row in enumerate(rows):
            row.update({f"{HYPER_PREFIX}{name}": as_float32(v[lane])
                        for name, v in hyper.items()})
        scores = [float(row["eval_return"]) for row in rows]
        if not self.steps_after(chunk, scores):
            return state
        exploit = exploit_explore(self.config, scores, hyper,
                                  np.random.default_rng([self.seed, chunk]))
        state = self.apply(state, np.asarray(exploit.parents, np.int32), exploit.hyper)
        if self.writer:
            entry = lineage_entry(chunk, exploit, hyper, scores)
            kept = [e for e in read_lineage(self.out_dir) if e["chunk"] < chunk]
            self.write(kept + [entry])
        return state

    def write(self, lineage: list[dict[str, Any]]) -> None:
        """Write ``pbt.json``."""
        with open(os.path.join(self.out_dir, PBT_NAME), "w") as handle:
            json.dump({"every_chunks": self.every, "lineage": lineage}, handle, indent=2)


def lineage_entry(chunk: int, exploit: Exploit, before: Mapping[str, Sequence[float]],
                  scores: Sequence[float]) -> dict[str, Any]:
    """One step of ``pbt.json``'s lineage: after which chunk, and for each replaced lane
    its parent, its score and its values before and after."""
    return {"chunk": chunk, "replaced": [
        {"lane": lane, "parent": int(exploit.parents[lane]), "score": float(scores[lane]),
         "parent_score": float(scores[exploit.parents[lane]]),
         "before": {n: as_float32(before[n][lane]) for n in before},
         "after": {n: as_float32(exploit.hyper[n][lane]) for n in exploit.hyper}}
        for lane in exploit.replaced]}


def as_float32(value: float) -> float:
    """``value`` as the program holds it (float32), written with the digits that say so."""
    return float(f"{float(np.float32(value)):.7g}")


def plot_values(out_dir: str, rows: Sequence[dict[str, Any]], best: tuple[int, int] | None = None
                ) -> str | None:
    """``pbt.png``: each lane's values (one panel per field, log scale) over env steps, a
    line per lane labelled by its starting setting and seed (``best``, ``(setting, seed)``,
    drawn thick); None when the rows carry none."""
    names = sorted(k[len(HYPER_PREFIX):] for k in rows[0] if k.startswith(HYPER_PREFIX))
    if not names:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4), squeeze=False)
    lanes = sorted({(int(r.get("setting", 0)), int(r["seed"])) for r in rows})
    for ax, name in zip(axes[0], names, strict=True):
        for lane in lanes:
            own = sorted((r for r in rows if (int(r.get("setting", 0)), int(r["seed"])) == lane),
                         key=lambda r: r["env_steps"])
            values = [r[HYPER_PREFIX + name] for r in own]  # held during each chunk
            ax.step([0] + [r["env_steps"] for r in own], values[:1] + values, where="pre",
                    lw=2.5 if lane == best else 1, alpha=1.0 if lane == best else 0.7,
                    label=f"setting {lane[0]}, seed {lane[1]}" + (" (best)" if lane == best
                                                                  else ""))
        ax.set_yscale("log")
        ax.legend(fontsize=6, ncol=max(1, len(lanes) // 12), loc="best")
        ax.set_xlabel("environment steps per seed")
        ax.set_title(f"{name} of each member")
    fig.tight_layout()
    path = os.path.join(out_dir, PBT_PLOT_NAME)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


__all__ = ["HYPER_PREFIX", "PBT_NAME", "PBT_PLOT_NAME", "PbtSteps", "as_float32",
           "lineage_entry", "plot_values", "read_lineage"]
