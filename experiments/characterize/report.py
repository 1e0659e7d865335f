"""Turn the measurements into the 60K-episode table, the papers' ratios, CSV / JSON / PNG."""

from __future__ import annotations

import argparse
import csv
import json
import os
from typing import Any

from experiments.characterize.phases import PHASES, ROLLOUT_PHASES, UPDATE_PHASES
from experiments.timing import Timing

EXTRAPOLATION_NOTE = (
    "EXTRAPOLATED, not trained: 60K-episode times = (env steps / num_envs) x per-vector-step "
    "time + (env steps / update_every) x per-update time, from the per-phase times measured "
    "here on a filled buffer; learning-start delay, evaluation and logging are not included.")


def phase_counts(args: argparse.Namespace, policy_delay: int) -> dict[str, float]:
    """How many times each phase runs in ``--episodes`` episodes (paper settings by default:
    60K episodes of 25 steps, one update of all agents per 100 env steps)."""
    env_steps = args.episodes * args.episode_length
    vec_steps = env_steps / args.num_envs
    updates = env_steps / args.update_every
    counts = {p: vec_steps for p in ROLLOUT_PHASES}
    counts.update({p: updates for p in UPDATE_PHASES})
    counts["p_loss"] = counts["target_update"] = updates / policy_delay
    return counts


def derive(args: argparse.Namespace, rec: dict[str, Any], policy_delay: int) -> dict[str, Any]:
    """Per-configuration totals, the phase-sum checks and the papers' comparison ratios,
    from the ``--statistic`` (median or min) of each timing."""
    med = lambda t: t.stat(args.statistic)  # noqa: E731
    counts = phase_counts(args, policy_delay)
    ph, whole = rec["phases"], rec["whole"]
    per_60k = {p: counts[p] * med(ph[p]) for p in PHASES}
    total_phases = sum(per_60k.values())
    vec_steps, updates = counts["action_selection"], counts["sampling"]
    upd_sum = sum(med(ph[p]) * counts[p] / updates for p in UPDATE_PHASES)
    roll_sum = sum(med(ph[p]) for p in ROLLOUT_PHASES)
    total_whole = vec_steps * med(whole["rollout_step"]) + updates * med(whole["update_step"])
    out: dict[str, Any] = {
        "counts": counts, "per_60k_s": per_60k, "total_60k_s_phases": total_phases,
        "total_60k_s_whole": total_whole,
        "shares_end_to_end": {p: v / total_phases for p, v in per_60k.items()},
        "check": {
            "rollout_sum_over_whole": roll_sum / med(whole["rollout_step"]),
            "update_sum_over_whole": upd_sum / med(whole["update_step"]),
            "total_sum_over_whole": total_phases / total_whole}}
    upd_total = sum(per_60k[p] for p in UPDATE_PHASES)
    out["shares_update"] = {p: per_60k[p] / upd_total for p in UPDATE_PHASES}
    if "trainer" in rec:
        tr = rec["trainer"]
        iters = tr["env_steps"] / args.num_envs
        predicted = iters * med(whole["rollout_step"]) + tr["updates"] * med(whole["update_step"])
        out["check"]["trainer_chunk_over_predicted"] = med(tr["timing"]) / predicted
    ratios: dict[str, float] = {}
    cmp_ = rec.get("compare") or {}
    if cmp_:
        uni = med(cmp_["uniform"]["sample"])
        base = total_phases - per_60k["sampling"]
        for label in cmp_:
            if label.startswith("neighbor"):
                ratios[f"fig8_sampling_uniform_over_{label}"] = uni / med(cmp_[label]["sample"])
                ratios[f"fig9_end_to_end_uniform_over_{label}"] = (
                    (base + updates * uni) / (base + updates * med(cmp_[label]["sample"])))
        ratios["fig14_sampling_agent_major_over_transition_major"] = (
            med(cmp_["uniform_agent_major"]["sample"]) / uni)
        ratios["vic_sampling_per_over_prioritized_locality"] = (
            med(cmp_["per"]["sample"]) / med(cmp_["prioritized_locality"]["sample"]))
        both = {k: med(cmp_[k]["sample"]) + med(cmp_[k]["priority_update"])
                for k in ("per", "prioritized_locality")}
        ratios["vic_sample_and_priority_per_over_prioritized_locality"] = (
            both["per"] / both["prioritized_locality"])
    if "learner_update_sequential" in whole and "learner_update_parallel" in whole:
        rest = (med(whole["rollout_step"]) + med(ph["sampling"]) + med(ph["priority_update"]))
        ips = {m: 1.0 / (rest + med(whole[f"learner_update_{m}"]))
               for m in ("parallel", "sequential")}
        out["ips"] = ips
        ratios["ips_parallel_over_sequential"] = ips["parallel"] / ips["sequential"]
        ratios["learner_update_sequential_over_parallel"] = (
            med(whole["learner_update_sequential"]) / med(whole["learner_update_parallel"]))
    out["ratios"] = ratios
    out["actor_step"] = actor_step_ratios(args, rec)
    return out


def actor_step_ratios(args: argparse.Namespace, rec: dict[str, Any]) -> dict[str, float]:
    """Per actor step form: its actor step over the target-Q phase, and every other form's
    actor step, ``algo.update`` time and update temporaries over the first form's."""
    med = lambda t: t.stat(args.statistic)  # noqa: E731
    forms = rec.get("actor_step") or {}
    out = {f"p_loss_over_target_q_{form}": med(m["p_loss"]) / med(rec["phases"]["target_q"])
           for form, m in forms.items()}
    first = args.actor_steps[0]
    for form in args.actor_steps[1:]:
        a, b = forms[form], forms[first]
        out[f"p_loss_{form}_over_{first}"] = med(a["p_loss"]) / med(b["p_loss"])
        out[f"update_{form}_over_{first}"] = med(a["update"]) / med(b["update"])
        out[f"update_temp_bytes_{form}_over_{first}"] = (
            a["update_memory"]["temp_bytes"] / b["update_memory"]["temp_bytes"])
    return out


def _plain(obj: Any) -> Any:
    if isinstance(obj, Timing):
        return obj.summary()
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    return obj


def write_outputs(args: argparse.Namespace, settings: dict[str, Any],
                  records: list[dict[str, Any]], derived: list[dict[str, Any]]) -> list[str]:
    """Write characterize.json, phases.csv, whole_steps.csv, ratios.csv, table_60k.{csv,md}
    and the PNGs into ``args.out``; returns the paths written."""
    os.makedirs(args.out, exist_ok=True)
    path = lambda name: os.path.join(args.out, name)  # noqa: E731
    with open(path("characterize.json"), "w") as fh:
        json.dump({"settings": settings, "note": EXTRAPOLATION_NOTE,
                   "configs": [dict(_plain(r), derived=d) for r, d in zip(records, derived,
                                                                         strict=True)]},
                  fh, indent=2)
    with open(path("phases.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["agents", "num_agents", "phase", "median_ms", "q25_ms", "q75_ms", "min_ms",
                    "max_ms", "reps", "compile_s", "runs_per_60k", "seconds_60k",
                    "share_end_to_end"])
        for r, d in zip(records, derived, strict=True):
            for p in PHASES:
                s = r["phases"][p].summary()
                w.writerow([r["agents"], r["num_agents"], p, *(f"{s[k]:.4f}" for k in (
                    "median_ms", "q25_ms", "q75_ms", "min_ms", "max_ms")), s["reps"],
                    f"{s['compile_s']:.2f}", f"{d['counts'][p]:.0f}",
                    f"{d['per_60k_s'][p]:.1f}", f"{d['shares_end_to_end'][p]:.4f}"])
    with open(path("whole_steps.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["agents", "what", "median_ms", "q25_ms", "q75_ms", "reps", "compile_s"])
        for r in records:
            items = dict(r["whole"])
            if "trainer" in r:
                items["trainer_chunk"] = r["trainer"]["timing"]
            for name, t in items.items():
                s = t.summary()
                w.writerow([r["agents"], name, f"{s['median_ms']:.4f}", f"{s['q25_ms']:.4f}",
                            f"{s['q75_ms']:.4f}", s["reps"], f"{s['compile_s']:.2f}"])
    with open(path("ratios.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["agents", "ratio", "value"])
        for r, d in zip(records, derived, strict=True):
            for name, v in {**d["check"], **d["ratios"], **d["actor_step"]}.items():
                w.writerow([r["agents"], name, f"{v:.4f}"])
    table = table_60k(args, records, derived)
    with open(path("table_60k.md"), "w") as fh:
        fh.write(table + "\n")
    written = [path(n) for n in ("characterize.json", "phases.csv", "whole_steps.csv",
                                 "ratios.csv", "table_60k.md")]
    written += plot(args, records, derived)
    return written


def table_60k(args: argparse.Namespace, records: list[dict[str, Any]],
              derived: list[dict[str, Any]]) -> str:
    """Markdown table like paper 000 Table I, with the extrapolation stated."""
    lines = [f"60K-episode training time, {args.env} {args.algo}, sampler {args.sampler}, "
             f"layout {args.layout}, {args.num_envs} envs, 1 update / {args.update_every} "
             f"env steps, {args.episode_length}-step episodes ({args.episodes} episodes).",
             EXTRAPOLATION_NOTE, "",
             "| agents | learners N | obs | from phases (s) | from whole steps (s) | hours |",
             "|---:|---:|---:|---:|---:|---:|"]
    for r, d in zip(records, derived, strict=True):
        lines.append(f"| {r['agents']} | {r['num_agents']} | {r['obs_dim']} | "
                     f"{d['total_60k_s_phases']:,.0f} | {d['total_60k_s_whole']:,.0f} | "
                     f"{d['total_60k_s_whole'] / 3600:.2f} |")
    return "\n".join(lines)


def plot(args: argparse.Namespace, records: list[dict[str, Any]],
         derived: list[dict[str, Any]]) -> list[str]:
    """Stacked phase shares per agent count (paper 000 Fig. 2 and 3) and the ratios."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [str(r["agents"]) for r in records]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    colors = plt.get_cmap("tab10").colors
    for ax, key, phases, title in (
            (axes[0], "shares_end_to_end", PHASES, "End-to-end (cf. paper 000 Fig. 2)"),
            (axes[1], "shares_update", UPDATE_PHASES, "Within the update (cf. Fig. 3)")):
        bottom = [0.0] * len(records)
        for i, p in enumerate(phases):
            vals = [100 * d[key][p] for d in derived]
            ax.bar(labels, vals, bottom=bottom, label=p, color=colors[PHASES.index(p)])
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
            del i
        ax.set_xlabel("agents" + (" (predators)" if args.env == "simple_tag" else ""))
        ax.set_ylabel("% of time")
        ax.set_title(title)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, fontsize=8, loc="lower center", ncol=len(PHASES))
    fig.suptitle(f"{args.env} {args.algo}, {args.sampler}, {args.layout}: phase shares of "
                 "the 60K-episode time (extrapolated from measured phases)", fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    out = [os.path.join(args.out, "phases.png")]
    fig.savefig(out[0], dpi=110)
    plt.close(fig)
    names = sorted({k for d in derived for k in d["ratios"]})
    if names:
        fig, ax = plt.subplots(figsize=(12, 4.5))
        width = 0.8 / len(names)
        for j, name in enumerate(names):
            xs = [i + j * width for i in range(len(records))]
            ax.bar(xs, [d["ratios"].get(name, float("nan")) for d in derived], width,
                   label=name, color=plt.get_cmap("tab20").colors[j % 20])
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(records))], labels)
        ax.set_xlabel("agents")
        ax.set_ylabel("ratio (> 1: the second named is faster)")
        ax.set_yscale("log")
        ax.legend(fontsize=7, ncol=2)
        ax.set_title("The papers' comparisons as ratios (same process, same state)")
        fig.tight_layout()
        out.append(os.path.join(args.out, "ratios.png"))
        fig.savefig(out[-1], dpi=110)
        plt.close(fig)
    return out
