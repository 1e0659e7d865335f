"""The value family's round breakdown: per-round and per-env-step times, shares, checks,
CSV / JSON / markdown / PNG (see :mod:`experiments.characterize.value`)."""

from __future__ import annotations

import argparse
import csv
import json
import os
from typing import Any

from experiments.characterize.phases import (
    VALUE_INNER_PHASES,
    VALUE_PHASES,
    VALUE_ROUND_PHASES,
    VALUE_STEP_PHASES,
)
from experiments.characterize.report import _plain
from jaxmarl_accel.algos import ValueConfig

ROUND_NOTE = (
    "A round = the collect loop's steps (T, up to the episode length) x (action_selection + "
    "env_step) + one each of the other phases; per env step = round / the env steps the E "
    "episodes took. agent_forward is inside loss_and_grad and not summed. The training time "
    "is EXTRAPOLATED from the per-env-step time, not trained.")


def derive(args: argparse.Namespace, rec: dict[str, Any]) -> dict[str, Any]:
    """Per-round totals, shares and the phase-sum checks of one agent count, from the
    ``--statistic`` (median or min) of each timing."""
    stat = lambda t: t.stat(args.statistic)  # noqa: E731
    ph, whole = rec["phases"], rec["whole"]
    counts = {p: float(rec["round_steps"]) for p in VALUE_STEP_PHASES}
    counts.update({p: 1.0 for p in VALUE_ROUND_PHASES})
    per_round = {p: counts[p] * stat(ph[p]) for p in VALUE_PHASES}
    round_s = sum(per_round.values())
    env_steps = sum(rec["episode_lengths"])
    update_sum = sum(per_round[p] for p in VALUE_ROUND_PHASES if p != "buffer_add")
    total_steps = ValueConfig.REPLAY_DEFAULTS["total_env_steps"]
    return {
        "counts": counts, "per_round_s": per_round, "round_s": round_s,
        "env_steps_per_round": env_steps, "per_env_step_s": round_s / env_steps,
        "shares_round": {p: v / round_s for p, v in per_round.items()},
        "inner": {p: {"share_round": stat(ph[p]) / round_s,
                      "over_loss_and_grad": stat(ph[p]) / stat(ph["loss_and_grad"])}
                  for p in VALUE_INNER_PHASES},
        "check": {"collect_sum_over_whole": sum(per_round[p] for p in VALUE_STEP_PHASES)
                  / stat(whole["collect"]),
                  "update_sum_over_whole": update_sum / stat(whole["update_step"]),
                  "round_sum_over_whole": round_s / stat(whole["round"])},
        "train_hours_extrapolated": {
            "env_steps": total_steps,
            "from_phases": total_steps * round_s / env_steps / 3600,
            "from_whole_round": total_steps * stat(whole["round"]) / env_steps / 3600}}


def write_outputs(args: argparse.Namespace, settings: dict[str, Any],
                  records: list[dict[str, Any]], derived: list[dict[str, Any]]) -> list[str]:
    """Write characterize.json, phases.csv, whole_steps.csv, ratios.csv, table_round.md and
    phases.png into ``args.out``; returns the paths written."""
    os.makedirs(args.out, exist_ok=True)
    path = lambda name: os.path.join(args.out, name)  # noqa: E731
    pairs = list(zip(records, derived, strict=True))
    with open(path("characterize.json"), "w") as fh:
        json.dump({"settings": settings, "note": ROUND_NOTE,
                   "configs": [dict(_plain(r), derived=d) for r, d in pairs]}, fh, indent=2)
    with open(path("phases.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["agents", "num_agents", "phase", "median_ms", "q25_ms", "q75_ms", "min_ms",
                    "max_ms", "reps", "compile_s", "runs_per_round", "ms_per_round",
                    "share_round"])
        for r, d in pairs:
            for p in VALUE_PHASES + VALUE_INNER_PHASES:
                s = r["phases"][p].summary()
                counted = p in d["counts"]
                w.writerow([r["agents"], r["num_agents"], p, *(f"{s[k]:.4f}" for k in (
                    "median_ms", "q25_ms", "q75_ms", "min_ms", "max_ms")), s["reps"],
                    f"{s['compile_s']:.2f}", f"{d['counts'][p]:.0f}" if counted else "inside",
                    f"{1e3 * d['per_round_s'][p]:.4f}" if counted else "",
                    f"{d['shares_round'][p]:.4f}" if counted
                    else f"{d['inner'][p]['share_round']:.4f}"])
    with open(path("whole_steps.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["agents", "what", "median_ms", "q25_ms", "q75_ms", "min_ms", "reps",
                    "compile_s"])
        for r in records:
            for name, t in r["whole"].items():
                s = t.summary()
                w.writerow([r["agents"], name, *(f"{s[k]:.4f}" for k in (
                    "median_ms", "q25_ms", "q75_ms", "min_ms")), s["reps"],
                    f"{s['compile_s']:.2f}"])
    with open(path("ratios.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["agents", "ratio", "value"])
        for r, d in pairs:
            for name, v in d["check"].items():
                w.writerow([r["agents"], name, f"{v:.4f}"])
    with open(path("table_round.md"), "w") as fh:
        fh.write(table(args, records, derived) + "\n")
    return [path(n) for n in ("characterize.json", "phases.csv", "whole_steps.csv",
                              "ratios.csv", "table_round.md")] + plot(args, records, derived)


def _ms(seconds: float) -> str:
    ms = 1e3 * seconds
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.3g}"


def table(args: argparse.Namespace, records: list[dict[str, Any]],
          derived: list[dict[str, Any]]) -> str:
    """Markdown table: per phase its median [min] time per call in ms and its share of the
    round (from the ``--statistic``); then the round, per-env-step and whole-step figures."""
    stat = lambda t: t.stat(args.statistic)  # noqa: E731
    pairs = list(zip(records, derived, strict=True))
    head = " | ".join(f"N={r['num_agents']}" for r in records)
    lines = [f"{args.env} {args.algo}, {args.num_envs} envs, batch {args.batch_size} "
             f"episodes, sampler {args.sampler}; per call: median [min] ms (share of the round); "
             f"shares, totals and whole steps from the {args.statistic}.", ROUND_NOTE, "",
             f"| phase | runs per round | {head} |", "|---|---|" + "---:|" * len(records)]
    for p in VALUE_PHASES + VALUE_INNER_PHASES:
        runs = ("T" if p in VALUE_STEP_PHASES else "1" if p in VALUE_ROUND_PHASES
                else "(inside loss_and_grad)")
        cells = []
        for r, d in pairs:
            t = r["phases"][p]
            share = d["shares_round"][p] if p in d["shares_round"] else d["inner"][p]["share_round"]
            cells.append(f"{_ms(t.median)} [{_ms(min(t.samples))}] ({100 * share:.0f}%)")
        lines.append(f"| {p} | {runs} | " + " | ".join(cells) + " |")
    rows = [("T (collect loop steps)", lambda r, d: str(r["round_steps"])),
            ("round from phases (ms)", lambda r, d: _ms(d["round_s"])),
            ("whole round, measured (ms)", lambda r, d: _ms(stat(r["whole"]["round"]))),
            ("whole collect of E episodes, measured (ms)",
             lambda r, d: _ms(stat(r["whole"]["collect"]))),
            ("per env step from phases (us)", lambda r, d: f"{1e6 * d['per_env_step_s']:.0f}"),
            ("whole update step, measured (ms)",
             lambda r, d: _ms(stat(r["whole"]["update_step"]))),
            ("T x (action_selection + env_step) / whole collect",
             lambda r, d: f"{d['check']['collect_sum_over_whole']:.2f}"),
            ("update phases / whole update step",
             lambda r, d: f"{d['check']['update_sum_over_whole']:.2f}"),
            ("round phases / whole round",
             lambda r, d: f"{d['check']['round_sum_over_whole']:.2f}"),
            (f"{ValueConfig.REPLAY_DEFAULTS['total_env_steps']:,} env steps, extrapolated (h)",
             lambda r, d: f"{d['train_hours_extrapolated']['from_whole_round']:.1f}")]
    for name, cell in rows:
        lines.append(f"| {name} | | " + " | ".join(cell(r, d) for r, d in pairs) + " |")
    return "\n".join(lines)


def plot(args: argparse.Namespace, records: list[dict[str, Any]],
         derived: list[dict[str, Any]]) -> list[str]:
    """Stacked phase shares of the round per agent count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [str(r["num_agents"]) for r in records]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    colors = plt.get_cmap("tab10").colors
    bottom = [0.0] * len(records)
    for i, p in enumerate(VALUE_PHASES):
        vals = [100 * d["shares_round"][p] for d in derived]
        ax.bar(labels, vals, bottom=bottom, label=p, color=colors[i % len(colors)])
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_xlabel("agents N")
    ax.set_ylabel("% of the round")
    ax.set_title(f"{args.env} {args.algo}: phase shares of one episode round "
                 f"({args.num_envs} envs, batch {args.batch_size})", fontsize=10)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    out = os.path.join(args.out, "phases.png")
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return [out]
