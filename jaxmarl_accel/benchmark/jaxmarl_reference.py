"""JaxMARL's own baseline scripts as reference pairs of a suite (``--reference jaxmarl=PATH``).

A pair has a reference where its task names JaxMARL's ``suite:env`` (``Task.jaxmarl``) and
its learner JaxMARL's baseline (``Learner.jaxmarl``), and JaxMARL 0.2.0's
``baselines/run_minimal_baseline_set.py`` has a script for that baseline on that suite
(:data:`SCRIPTS`, the same table as its ``ALGO_REGISTRY``). The checkout at PATH must hold
JaxMARL's ``baselines/`` folder; the environments come from the installed ``jaxmarl``.

A finished reference is a record ``OUT/reference/jaxmarl/<task>/<baseline>/record.json``:
``{"steps": [K], "returns": [S][K], "wins": [S][K] or null, "wall_s"}``, read by
:func:`reference_records` into the same statistics as our pairs, under the learner name
``jaxmarl:<baseline>``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence

import numpy as np

from jaxmarl_accel.benchmark.scores import Record
from jaxmarl_accel.benchmark.suites import Pair, Suite

SCRIPTS: dict[tuple[str, str], str] = {
    ("ippo_ff", "mpe"): "IPPO/ippo_ff_mpe.py",
    ("ippo_rnn", "mpe"): "IPPO/ippo_rnn_mpe.py",
    ("mappo_rnn", "mpe"): "MAPPO/mappo_rnn_mpe.py",
    ("qmix_rnn", "mpe"): "QLearning/qmix_rnn.py",
    ("vdn_rnn", "mpe"): "QLearning/vdn_rnn.py",
    ("vdn_ff", "mpe"): "QLearning/vdn_ff.py",
    ("ippo_rnn", "smax"): "IPPO/ippo_rnn_smax.py",
    ("mappo_rnn", "smax"): "MAPPO/mappo_rnn_smax.py",
    ("qmix_rnn", "smax"): "QLearning/qmix_rnn.py",
    ("vdn_rnn", "smax"): "QLearning/vdn_rnn.py",
    ("ippo_ff", "overcooked"): "IPPO/ippo_ff_overcooked.py",
    ("vdn_cnn", "overcooked"): "QLearning/vdn_cnn_overcooked.py",
    ("ippo_ff", "hanabi"): "IPPO/ippo_ff_hanabi.py",
    ("mappo_ff", "hanabi"): "MAPPO/mappo_ff_hanabi.py",
}
"""(JaxMARL baseline, JaxMARL suite) -> its script under ``baselines/``."""
STAND_INS = {("vdn_ff", "overcooked"): "vdn_cnn"}
"""Where our learner stands for another baseline on one suite (no CNN agent here)."""
FOLDER = os.path.join("reference", "jaxmarl")
RECORD = "record.json"


def check_checkout(path: str) -> None:
    """A one-line ``ValueError`` unless ``path`` holds JaxMARL's ``baselines/`` scripts."""
    missing = [s for s in sorted(set(SCRIPTS.values()))
               if not os.path.isfile(os.path.join(path, "baselines", s))]
    if not os.path.isdir(os.path.join(path, "baselines")) or len(missing) == len(set(
            SCRIPTS.values())):
        raise ValueError(f"{path} is not a JaxMARL checkout (no baselines/IPPO, MAPPO, "
                         "QLearning scripts)")


def baseline_of(pair: Pair) -> tuple[str, str] | None:
    """``(baseline, JaxMARL suite)`` of ``pair``'s reference, or ``None`` where it has none."""
    if pair.task.jaxmarl is None or pair.learner.jaxmarl is None:
        return None
    suite = pair.task.jaxmarl.split(":", 1)[0]
    baseline = STAND_INS.get((pair.learner.jaxmarl, suite), pair.learner.jaxmarl)
    return (baseline, suite) if (baseline, suite) in SCRIPTS else None


def check_reference_pairs(chosen: Sequence[Pair]) -> None:
    """A ``ValueError`` when no chosen pair has a JaxMARL baseline (nothing to reference)."""
    if not any(baseline_of(p) for p in chosen):
        raise ValueError("--reference jaxmarl: none of the chosen pairs has a JaxMARL baseline "
                         "(tasks and learners name theirs with 'jaxmarl:')")


def record_path(out_dir: str, pair: Pair, baseline: str) -> str:
    """Where the reference record of ``pair`` is kept."""
    return os.path.join(out_dir, FOLDER, pair.task.name, baseline, RECORD)


def run_references(checkout: str, suite: Suite, chosen: Sequence[Pair], out_dir: str,
                   budget_scale: float, say: Callable[[str], None]) -> int:
    """Run the reference of every chosen pair that has one and no record yet (each seed
    one after another); returns the exit status."""
    todo = [(p, b) for p in chosen if (b := baseline_of(p)) is not None
            and not os.path.isfile(record_path(out_dir, p, b[0]))]
    if todo:
        raise ValueError("--reference jaxmarl: running JaxMARL's scripts is not available in "
                         f"this version ({len(todo)} reference pair(s) left: "
                         + ", ".join(f"{p.task.name}/{b[0]}" for p, b in todo) + ")")
    return 0


def reference_records(out_dir: str) -> list[Record]:
    """Every reference record under ``OUT/reference/jaxmarl/`` as a :class:`Record`."""
    root = os.path.join(out_dir, FOLDER)
    records = []
    for task in sorted(os.listdir(root)) if os.path.isdir(root) else ():
        for baseline in sorted(os.listdir(os.path.join(root, task))):
            path = os.path.join(root, task, baseline, RECORD)
            if not os.path.isfile(path):
                continue
            with open(path) as handle:
                data = json.load(handle)
            wins = data.get("wins")
            records.append(Record(task, f"jaxmarl:{baseline}", np.asarray(data["steps"], float),
                                  np.asarray(data["returns"], float),
                                  None if wins is None else np.asarray(wins, float),
                                  float(data["wall_s"])))
    return records
