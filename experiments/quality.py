"""Learning-quality suite: the runs behind the README's learning table.

    python -m experiments.quality --out results/quality            # run every suite entry
    python -m experiments.quality --out results/quality --only maddpg matd3
    python -m experiments.quality --out results/quality --table    # only rebuild the table

Each entry is one ``experiments.run`` invocation (paper settings, 1.5M env steps per
seed, 8 seeds) in its own subprocess; an entry whose ``summary.json`` exists is skipped,
so an interrupted suite continues where it stopped. The table (``table.md`` and
``table.json``) lists the median normalized score with its interquartile range per entry,
and for predator-prey the touches per episode (predator return / 10, since every
predator-prey contact pays each predator 10).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from typing import Any

SPREAD = ["--env", "simple_spread", "--agents", "3"]
SUITE: dict[str, list[str]] = {
    "maddpg": [*SPREAD, "--algo", "maddpg"],
    "matd3": [*SPREAD, "--algo", "matd3"],
    "masac": [*SPREAD, "--algo", "masac"],
    "maddpg-neighbor": [*SPREAD, "--algo", "maddpg", "--sampler", "neighbor"],
    "maddpg-per": [*SPREAD, "--algo", "maddpg", "--sampler", "per"],
    "maddpg-prioritized-locality": [*SPREAD, "--algo", "maddpg", "--sampler",
                                    "prioritized_locality"],
    "tag-3v1": ["--env", "simple_tag", "--agents", "3", "--algo", "maddpg", "--prey",
                "heuristic"],
    "speaker-listener": ["--env", "simple_speaker_listener", "--algo", "maddpg"],
}
TOUCH_REWARD = 10.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="results/quality",
                        help="folder that holds one sub-folder per entry (default: "
                             "results/quality)")
    parser.add_argument("--only", nargs="+", choices=sorted(SUITE), default=None,
                        help="run only these entries (default: all)")
    parser.add_argument("--seeds", type=int, default=8, help="seeds per entry (default: 8)")
    parser.add_argument("--total-env-steps", type=int, default=1_500_000,
                        help="env steps per seed (default: 1500000 = 60K episodes of 25)")
    parser.add_argument("--table", action="store_true",
                        help="do not train; rebuild the table from the summaries present")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[],
                        help="further experiments.run flags for every entry (put last)")


def entry_row(name: str, summary: dict[str, Any]) -> dict[str, Any]:
    row = {"entry": name, "env": summary["env"], "algo": summary["algo"],
           "sampler": summary["sampler"], "seeds": summary["seeds"],
           "env_steps_per_seed": summary["env_steps_per_seed"],
           "median_ns": summary["median_normalized_score"],
           "iqr_ns": summary["iqr_normalized_score"],
           "median_return": summary["median_return"],
           "random_return": summary["random_return"],
           "heuristic_return": summary["heuristic_return"]}
    if summary["env"] == "simple_tag":
        touches = sorted(t["predator"] / TOUCH_REWARD for t in summary[
            "final_eval_return_per_team"])
        row["median_touches"] = touches[len(touches) // 2]
        row["random_touches"] = summary["random_return_per_team"]["predator"] / TOUCH_REWARD
    return row


def build_table(out_dir: str) -> list[dict[str, Any]]:
    rows = []
    for name in SUITE:
        path = os.path.join(out_dir, name, "summary.json")
        if os.path.exists(path):
            with open(path) as handle:
                rows.append(entry_row(name, json.load(handle)))
    lines = ["| entry | env | algo | sampler | seeds | env steps/seed | median NS | NS IQR | "
             "median return | random | scripted |", "|" + "---|" * 11]
    for r in rows:
        lines.append(
            f"| {r['entry']} | {r['env']} | {r['algo']} | {r['sampler']} | {r['seeds']} | "
            f"{r['env_steps_per_seed']:,} | {r['median_ns']:.3f} | {r['iqr_ns'][0]:.3f} to "
            f"{r['iqr_ns'][1]:.3f} | {r['median_return']:.2f} | {r['random_return']:.2f} | "
            f"{r['heuristic_return']:.2f} |")
    for r in rows:
        if "median_touches" in r:
            lines.append(f"\n{r['entry']}: median touches per episode {r['median_touches']:.2f} "
                         f"vs {r['random_touches']:.2f} for random predators against the same "
                         "prey.")
    with open(os.path.join(out_dir, "table.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    with open(os.path.join(out_dir, "table.json"), "w") as handle:
        json.dump(rows, handle, indent=2)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.quality", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if not args.table:
        for name in args.only or SUITE:
            entry_dir = os.path.join(args.out, name)
            if os.path.exists(os.path.join(entry_dir, "summary.json")):
                print(f"{name}: done already", file=sys.stderr)
                continue
            resume = os.path.exists(os.path.join(entry_dir, "config.json"))
            command = [sys.executable, "-m", "experiments.run", "--quiet"]
            command += ["--resume", entry_dir] if resume else [
                *SUITE[name], "--seeds", str(args.seeds), "--total-env-steps",
                str(args.total_env_steps), "--out", entry_dir, *args.extra]
            print(f"{name}: {' '.join(command[1:])}", file=sys.stderr, flush=True)
            if subprocess.call(command) != 0:
                print(f"{name}: failed", file=sys.stderr)
    for row in build_table(args.out):
        print(f"{row['entry']:<30} median NS {row['median_ns']:.3f} "
              f"(IQR {row['iqr_ns'][0]:.3f} to {row['iqr_ns'][1]:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
