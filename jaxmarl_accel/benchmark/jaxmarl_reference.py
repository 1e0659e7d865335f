"""JaxMARL's own baseline scripts as reference pairs of a suite (``--reference jaxmarl=PATH``).

A pair has a reference where its task names JaxMARL's ``suite:env`` (``Task.jaxmarl``) and
its learner JaxMARL's baseline (``Learner.jaxmarl``), and JaxMARL 0.2.0's
``baselines/run_minimal_baseline_set.py`` has a script for that baseline on that suite
(:data:`~.jaxmarl_scripts.SCRIPTS`, the same table as its ``ALGO_REGISTRY``). The checkout
at PATH must hold JaxMARL's ``baselines/`` folder; the environments come from the installed
``jaxmarl``.

A finished reference is a record ``OUT/reference/jaxmarl/<task>/<baseline>/record.json``:
``{"steps": [K], "returns": [S][K], "wins": [S][K] or null, "wall_s"}``, read by
:func:`reference_records` into the same statistics as our pairs, under the learner name
``jaxmarl:<baseline>``. A JaxMARL seed is one compiled call (on a 2-core CPU, hours for a
SMAX map), so each seed is kept as it finishes (``seed<S>.json`` beside the record) and the
same command again runs only the seeds that are missing; while a seed runs, a line every 5%
of it says how far it is (:class:`~.jaxmarl_scripts.Collector`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from jaxmarl_accel.benchmark.jaxmarl_scripts import SCRIPTS
from jaxmarl_accel.benchmark.scores import Record
from jaxmarl_accel.benchmark.suites import Pair, Suite, scaled_steps

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


def check_reference_pairs(chosen: Sequence[Pair], checkout: str) -> None:
    """A ``ValueError`` when no chosen pair has a JaxMARL baseline (nothing to reference), or
    the checkout lacks the script of one."""
    for pair in chosen:
        found = baseline_of(pair)
        if found and not os.path.isfile(os.path.join(checkout, "baselines", SCRIPTS[found])):
            raise ValueError(f"--reference jaxmarl: {checkout} has no baselines/"
                             f"{SCRIPTS[found]} (pair {pair.name})")
    if not any(baseline_of(p) for p in chosen):
        raise ValueError("--reference jaxmarl: none of the chosen pairs has a JaxMARL baseline "
                         "(tasks and learners name theirs with 'jaxmarl:')")


def record_path(out_dir: str, pair: Pair, baseline: str) -> str:
    """Where the reference record of ``pair`` is kept."""
    return os.path.join(out_dir, FOLDER, pair.task.name, baseline, RECORD)


def run_references(checkout: str, suite: Suite, chosen: Sequence[Pair], out_dir: str,
                   budget_scale: float, say: Callable[[str], None]) -> int:
    """Run the reference of every chosen pair that has one and no record yet, at the pair's
    env steps, its seeds one after another (:func:`~.jaxmarl_scripts.run_seeds`); each
    finished seed is written at once, so an interrupted call loses only the seed it was in.
    Returns 0; a script that fails raises a one-line ``ValueError`` naming the pair."""
    todo = [(p, b) for p in chosen if (b := baseline_of(p)) is not None
            and not os.path.isfile(record_path(out_dir, p, b[0]))]
    for index, (pair, (baseline, family)) in enumerate(todo):
        say(f"benchmark: reference {index}/{len(todo)} done; running jaxmarl:{baseline} on "
            f"{pair.task.name} ({suite.seeds} seed(s) one after another)")
        path = record_path(out_dir, pair, baseline)
        try:
            record = reference_record(checkout, pair, baseline, family, suite, budget_scale,
                                      os.path.dirname(path), say)
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            raise ValueError(f"reference jaxmarl:{baseline} on {pair.task.name}: "
                             f"{str(error).splitlines()[0] if str(error) else type(error).__name__}"
                             ) from None
        _write(path, record)
    return 0


def _write(path: str, record: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as handle:
        json.dump(record, handle)
    os.replace(path + ".tmp", path)


def seed_path(folder: str, seed: int) -> str:
    """Where one finished seed of a reference is kept until its record is written."""
    return os.path.join(folder, f"seed{seed}.json")


def reference_record(checkout: str, pair: Pair, baseline: str, family: str, suite: Suite,
                     budget_scale: float, folder: str,
                     say: Callable[[str], None] = lambda line: None) -> dict:
    """The record (module docstring) of JaxMARL's ``baseline`` script on ``pair``'s task;
    seeds kept in ``folder`` by an earlier call are read, the others run and kept there."""
    from jaxmarl_accel.benchmark import jaxmarl_scripts as scripts

    script = Path(checkout) / "baselines" / SCRIPTS[baseline, family]
    seeds = [suite.seed + i for i in range(suite.seeds)]
    done = {}
    for seed in seeds:
        if os.path.isfile(seed_path(folder, seed)):
            with open(seed_path(folder, seed)) as handle:
                done[seed] = json.load(handle)
    missing = [seed for seed in seeds if seed not in done]
    if missing:
        env = pair.task.jaxmarl.split(":", 1)[1]
        steps = scaled_steps(pair.task, budget_scale)
        config = scripts.script_config(script, baseline, family, env, steps,
                                       pair.task.evaluations)
        collector = scripts.Collector(steps, name=f"jaxmarl:{baseline}", say=say)
        module, _ = scripts.load_script(script, collector)
        train, agents = scripts.make_script_train(module, config)
        per_update = int(config.get("NUM_ENVS", 1)) * int(config.get("NUM_STEPS", 1))
        for seed, logged, elapsed in scripts.run_seeds(train, missing, collector):
            steps_at, values, wins = scripts.curve(logged, per_update, agents,
                                                   family == "mpe", pair.task.evaluations)
            done[seed] = {"seed": seed, "steps": steps_at, "returns": values, "wins": wins,
                          "wall_s": elapsed}
            _write(seed_path(folder, seed), done[seed])
    wins = [done[s]["wins"] for s in seeds]
    return {"script": str(script), "seeds": seeds, "steps": done[seeds[0]]["steps"],
            "returns": [done[s]["returns"] for s in seeds],
            "wins": None if any(w is None for w in wins) else wins,
            "wall_s": sum(done[s]["wall_s"] for s in seeds)}


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
