"""The side-by-side table of ``bench qmix_smax`` records gathered over several runs.

A JaxMARL seed on SMAX 2s3z at its settings takes hours on a 2-core CPU, so its seeds are
trained one process at a time (``--seeds 1 --seed S``) and each run writes its own record.
``python -m experiments.bench smax_table RECORD.json ... --json TABLE.json --plot CURVES.png``
joins them: every seed of every record goes to its group, one group per side and learner
(ours: ``--algo`` and ``--ours-set``; theirs: the script, so MAC-PO's reference joins
QMIX's), map and env steps per seed; a seed is its key (``jax.random.split(PRNGKey(seed),
seeds)[index]``, the same key whichever ``--seeds`` made it), and a key twice in a group is
refused. Per group: the greedy win rates (median and interquartile range), the real env
steps per seed, real env steps per second (each seed's real steps over its call's seconds;
median) and compile seconds (median over records), printed as a markdown table and written
with the records' paths to ``--json``. ``--plot`` draws JaxMARL's per-round training win
rate (``ref_curve``, where recorded) and each seed's final greedy win rate against real env
steps. Speeds from records of different days are not a ratio; a second table gives each
record that ran both sides in one process its own ratio (``steps_ratio_median``) with the
load averages it recorded.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

SIDES = {"ours": "ours", "ref": "JaxMARL"}
SMOOTH_ROUNDS = 20  # rounds of JaxMARL's training curve averaged in the plot


def group_key(record: dict[str, Any], side: str) -> tuple[str, ...]:
    """The group of ``side``'s seeds in ``record``: side, learner, settings, map, env steps
    per seed (counted, ours)."""
    if side == "ours":
        learner = record.get("algo", "qmix")
        settings = " ".join(record.get("ours_set", [])) or "JaxMARL's settings"
    else:
        learner = Path(record.get("reference_script", "qmix_rnn.py")).stem
        settings = "its settings"
    return (SIDES[side], learner, settings, record["map"],
            f"{record[f'{side}_env_steps_per_seed']:,}")


def seed_keys(record: dict[str, Any]) -> list[tuple[int, ...]] | None:
    """Each seed's key words in ``record`` (None where the record holds no ``seed``)."""
    if "seed" not in record:
        return None
    import jax

    keys = jax.random.split(jax.random.PRNGKey(record["seed"]), record["seeds"])
    return [tuple(int(word) for word in key) for key in np.asarray(keys)]


def load(paths: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """Each path with its record; ``ValueError`` for a file that is not a ``bench
    qmix_smax`` record."""
    records = []
    for path in paths:
        record = json.loads(Path(path).read_text())
        if "map" not in record or "ours_win_rate_per_seed" not in record:
            raise ValueError(f"{path}: not a bench qmix_smax record")
        records.append((path, record))
    return records


def collect(records: list[tuple[str, dict[str, Any]]]) -> dict[tuple[str, ...], dict[str, Any]]:
    """Every record's seeds by :func:`group_key`; ``ValueError`` for a key twice in a
    group."""
    groups: dict[tuple[str, ...], dict[str, Any]] = {}
    for path, record in records:
        keys = seed_keys(record)
        for side in SIDES:
            if f"{side}_win_rate_per_seed" not in record:
                continue
            group = groups.setdefault(group_key(record, side), {
                "seeds": [], "win": [], "real_steps": [], "real_steps_per_s": [],
                "compile_s": [], "records": [], "curves": []})
            wins = record[f"{side}_win_rate_per_seed"]
            real = record.get(f"{side}_real_env_steps_per_seed",
                              [record[f"{side}_env_steps_per_seed"]] * len(wins))
            seconds = record[f"{side}_seconds"]
            per_call = len(wins) // len(seconds)  # one call per seed, or one for all
            for index, win in enumerate(wins):
                seed = keys[index] if keys else (path, index)
                if keys and seed in group["seeds"]:
                    raise ValueError(f"{path}: seed {record['seed']} index {index} is already "
                                     f"in the group {' / '.join(group_key(record, side))}")
                group["seeds"].append(seed)
                group["win"].append(float(win))
                group["real_steps"].append(float(real[index]))
                group["real_steps_per_s"].append(float(real[index])
                                                 / seconds[index // per_call])
            group["compile_s"].append(float(record[f"{side}_compile_s"]))
            group["records"].append(str(path))
            group["curves"].extend(record.get(f"{side}_curve", []))
    return groups


def summary(groups: dict[tuple[str, ...], dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per group: its key's fields, seeds, win-rate median and IQR, real env steps
    (lowest, highest), median real env steps/s, median compile seconds, records."""
    rows = []
    for key, group in groups.items():
        q25, q50, q75 = np.percentile(group["win"], [25, 50, 75])
        rows.append({"side": key[0], "learner": key[1], "settings": key[2], "map": key[3],
                     "env_steps_per_seed": key[4], "seeds": len(group["win"]),
                     "win_rate_per_seed": group["win"], "win_rate_median": float(q50),
                     "win_rate_iqr": [float(q25), float(q75)],
                     "real_env_steps": [min(group["real_steps"]), max(group["real_steps"])],
                     "real_steps_per_s_median": float(np.median(group["real_steps_per_s"])),
                     "compile_s_median": float(np.median(group["compile_s"])),
                     "records": group["records"]})
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The rows as a markdown table."""
    lines = ["| side | learner | settings | map | env steps per seed | seeds | greedy win rate "
             "per seed | median (IQR) | real env steps | real env steps/s | compile s |",
             "|" + "---|" * 11]
    for row in rows:
        low, high = row["win_rate_iqr"]
        lines.append(
            f"| {row['side']} | {row['learner']} | {row['settings']} | {row['map']} | "
            f"{row['env_steps_per_seed']} | {row['seeds']} | "
            f"{', '.join(f'{w:.3f}' for w in row['win_rate_per_seed'])} | "
            f"**{row['win_rate_median']:.3f}** ({low:.3f}-{high:.3f}) | "
            f"{row['real_env_steps'][0]:,.0f}-{row['real_env_steps'][1]:,.0f} | "
            f"{row['real_steps_per_s_median']:,.0f} | {row['compile_s_median']:.1f} |")
    return "\n".join(lines)


def same_run(records: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per record that ran both sides in one process: its seed, our learner, both
    sides' median real env steps/s, their ratio (ours over JaxMARL's) and the load averages
    (1 minute) at its start and end."""
    rows = []
    for path, record in records:
        if "steps_ratio_median" not in record:
            continue
        rows.append({"record": Path(path).name, "seed": record.get("seed"),
                     "learner": " / ".join(group_key(record, "ours")[1:3]),
                     "ours_real_steps_per_s": record["ours_real_steps_per_s_median"],
                     "ref_real_steps_per_s": record["ref_steps_per_s_median"],
                     "ratio": record["steps_ratio_median"],
                     "load_start": record.get("load_average_start", [None])[0],
                     "load_end": record.get("load_average_end", [None])[0]})
    return rows


def same_run_markdown(rows: list[dict[str, Any]]) -> str:
    """:func:`same_run`'s rows as a markdown table."""
    lines = ["| record (both sides, one process) | seed | ours | ours real env steps/s | "
             "JaxMARL real env steps/s | ratio | load start, end |", "|" + "---|" * 7]
    for row in rows:
        load = ", ".join("-" if x is None else f"{x:.2f}"
                         for x in (row["load_start"], row["load_end"]))
        lines.append(f"| {row['record']} | {row['seed']} | {row['learner']} | "
                     f"{row['ours_real_steps_per_s']:,.0f} | {row['ref_real_steps_per_s']:,.0f}"
                     f" | **{row['ratio']:.2f}x** | {load} |")
    return "\n".join(lines)


def plot(groups: dict[tuple[str, ...], dict[str, Any]], path: str) -> None:
    """JaxMARL's training win rate (lines: the mean of the last :data:`SMOOTH_ROUNDS`
    rounds) and every seed's final greedy win rate (markers), against real env steps, one
    colour per group."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(8, 5))
    for colour, (key, group) in enumerate(groups.items()):
        style = {"color": f"C{colour}"}
        for curve in group["curves"]:
            steps, won = np.asarray(curve["env_step"]), np.asarray(curve["returned_won_episode"])
            width = min(SMOOTH_ROUNDS, len(won))
            axis.plot(steps[width - 1:], np.convolve(won, np.ones(width) / width, "valid"),
                      lw=1.0, alpha=0.7, **style)
        settings = key[2] if len(key[2]) < 40 else f"{key[2][:37]}..."
        axis.scatter(group["real_steps"], group["win"], marker="o", s=30,
                     label=f"{key[0]} {key[1]} ({settings}), {len(group['win'])} seeds",
                     **style)
    axis.set(xlabel="real env steps per seed", ylabel="win rate", xlim=(0, None),
             ylim=(-0.02, 1.02), title="markers: final greedy test; lines: JaxMARL's "
             f"training battles (mean of {SMOOTH_ROUNDS} rounds)")
    axis.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(figure)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The table's flags."""
    parser.add_argument("records", nargs="+", help="bench qmix_smax JSON records")
    parser.add_argument("--json", default=None, help="write the table to this JSON file")
    parser.add_argument("--plot", default=None, help="draw the win rates to this image")


def main(args: argparse.Namespace) -> None:
    records = load(args.records)
    groups = collect(records)
    rows = summary(groups)
    runs = same_run(records)
    text = markdown(rows) + ("\n\n" + same_run_markdown(runs) if runs else "")
    print(text, flush=True)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"rows": rows, "same_run": runs,
                                               "markdown": text}, indent=2))
    if args.plot:
        plot(groups, args.plot)
