"""Learning-quality suite: the runs behind the README's learning table.

    python -m experiments.quality --out results/quality            # run every suite entry
    python -m experiments.quality --out results/quality --only maddpg matd3
    python -m experiments.quality --out results/quality --table    # only rebuild the table

Each entry is one ``experiments.run`` invocation (paper settings: 1.5M env steps per seed
for the MPE entries, 1.05M for the stag hunt entries of paper 004 (QMIX, VDN, IQL with 8
agents and stags, with and without the -1.5 miscapture punishment; QMIX with 16 and 32;
MAC-PO and AccMER likewise, AccMER's decay gamma_W 1.0 at punishment 0 with 8 agents and
0.8 otherwise, as in the paper; and paper 004's own settings, ``--preset paper004-p1.5``
for Fig. 3b with weighted QMIX beside them and ``paper004-p0`` for Fig. 3a);
8 seeds; every evaluation over ``EVAL_EPISODES`` deterministic episodes per seed)
in its own subprocess; an entry whose ``summary.json`` exists is skipped,
so an interrupted suite continues where it stopped. The table (``table.md`` and
``table.json``; ``curves.md`` holds each entry's curve, evaluation by evaluation, from its
``metrics.csv``, so an entry still running shows how far it got, and each entry's own
``curve.md`` the same seed by seed) lists the median
normalized score with its interquartile range per entry,
for the stag hunt the return against the most possible and the captures per episode,
for predator-prey the touches per episode (predator return / 10, since every
predator-prey contact pays each predator 10), and for speaker-listener the share of seeds
that learned to communicate: whose final return beats the best scripted team that does not
communicate (:func:`~jaxmarl_accel.envs.mpe.simple_speaker_listener.silent_policy`, a listener
steering to the landmarks' centroid, evaluated over ``SILENT_EPISODES`` episodes).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import Any

from jaxmarl_accel.algos.value.presets import PAPER004

SPREAD = ["--env", "simple_spread", "--agents", "3"]
SUITE: dict[str, list[str]] = {
    "maddpg": [*SPREAD, "--algo", "maddpg"],
    "matd3": [*SPREAD, "--algo", "matd3"],
    "masac": [*SPREAD, "--algo", "masac"],
    # the same task as JaxMARL's own env (its 26-step episodes, its dynamics and rewards)
    "matd3-jaxmarl-spread": ["--env", "jaxmarl:MPE_simple_spread_v3", "--algo", "matd3"],
    "maddpg-neighbor": [*SPREAD, "--algo", "maddpg", "--sampler", "neighbor"],
    "maddpg-per": [*SPREAD, "--algo", "maddpg", "--sampler", "per"],
    "maddpg-prioritized-locality": [*SPREAD, "--algo", "maddpg", "--sampler",
                                    "prioritized_locality"],
    "tag-3v1": ["--env", "simple_tag", "--agents", "3", "--algo", "maddpg", "--prey",
                "scripted"],
    "speaker-listener": ["--env", "simple_speaker_listener", "--algo", "maddpg"],
    # on-policy learners (paper 003's trainer), one network per team
    "ppo": [*SPREAD, "--algo", "ppo"],
    "a2c": [*SPREAD, "--algo", "a2c"],
    # paper 003's Tag tasks with WarpDrive's A2C settings: the gridworld config (fc 32 32,
    # gradient norm 3) and Fig. 10's continuous Tag of 2 taggers and 10 runners (fc 256 256)
    "a2c-tag-gridworld": ["--env", "tag_gridworld", "--algo", "a2c", "--hidden-sizes", "32",
                          "32", "--grad-clip", "3"],
    "a2c-tag-continuous": ["--env", "tag_continuous", "--env-kwargs",
                           "num_taggers=2,num_runners=10", "--algo", "a2c", "--hidden-sizes",
                           "256", "256", "--team-lr", "tagger=0.001,runner=0.005"],
    "ppo-tag-continuous": ["--env", "tag_continuous", "--env-kwargs",
                           "num_taggers=2,num_runners=10", "--algo", "ppo", "--team-lr",
                           "tagger=0.001,runner=0.005"],
}
for _algo in ("qmix", "vdn", "owqmix", "cwqmix", "macpo", "accmer"):  # paper 004, Fig. 3
    SUITE[f"{_algo}-fig3b"] = ["--algo", _algo, "--preset", "paper004-p1.5"]
    if _algo in ("qmix", "macpo", "accmer"):
        SUITE[f"{_algo}-fig3a"] = ["--algo", _algo, "--preset", "paper004-p0"]
# MAC-PO with eq. 2's raw weights as priorities and in the loss: the variant that began to
# learn the -1.5 task at pymarl2's replay (one seed of two at 500K env steps)
SUITE["macpo-fig3b-raw-both"] = [*SUITE["macpo-fig3b"], "--macpo-weighting", "both",
                                 "--macpo-normalization", "none"]
# AccMER with the same raw weights (its "auto" weighting is already both): its ranking and
# reuse (Alg. 1) on top of the MAC-PO variant above
SUITE["accmer-fig3b-raw"] = [*SUITE["accmer-fig3b"], "--macpo-normalization", "none"]
# MAC-PO as the AccMER authors' learner (max_q_learner) computes it: eq. 2's raw weights
# multiply each step's squared error of QMIX's loss, episodes drawn uniformly
SUITE["macpo-fig3b-authors"] = [*SUITE["macpo-fig3b"], "--sampler", "uniform",
                                "--macpo-weighting", "loss", "--macpo-normalization", "none"]
# ... and with the authors' agent network as well: their stag-hunt configs give the agents
# no one-hot id (obs_agent_id: False) and their rnn agent clamps its Q-values to [-5, 2]
AUTHORS_NO_ID = ["--agent-ids", "false"]
AUTHORS_CLAMP = ["--agent-q-min", "-5", "--agent-q-max", "2"]
AUTHORS_AGENT = [*AUTHORS_NO_ID, *AUTHORS_CLAMP]
SUITE["macpo-fig3b-authors-agent"] = [*SUITE["macpo-fig3b-authors"], *AUTHORS_AGENT]
# the weighted QMIXes the authors compare against run on the same agent network there
for _algo in ("owqmix", "cwqmix"):
    SUITE[f"{_algo}-fig3b-authors-agent"] = [*SUITE[f"{_algo}-fig3b"], *AUTHORS_AGENT]
# AccMER (raw weights ranking its reuse) on that network
SUITE["accmer-fig3b-authors-agent"] = [*SUITE["accmer-fig3b-raw"], *AUTHORS_AGENT]
# the two differences of the authors' network apart: which one changes MAC-PO at -1.5
SUITE["macpo-fig3b-authors-noid"] = [*SUITE["macpo-fig3b-authors"], *AUTHORS_NO_ID]
SUITE["macpo-fig3b-authors-clamp"] = [*SUITE["macpo-fig3b-authors"], *AUTHORS_CLAMP]
# AccMER (raw weights ranking its reuse) without the id alone, the input that turned MAC-PO
# from 0 of 4 to 2 of 4 hunting on base seed 1
SUITE["accmer-fig3b-authors-noid"] = [*SUITE["accmer-fig3b-raw"], *AUTHORS_NO_ID]
# ... and on the authors' network with S-'s weights left to decay while reused (the
# sampler's reused_weights="decay"), so that gamma_W works against reusing the same items;
# the preset's decay and window are restated since --sampler-kwargs replaces them
_P15 = PAPER004["paper004-p1.5"]
SUITE["accmer-fig3b-authors-decay"] = [
    *SUITE["accmer-fig3b-authors-agent"], "--sampler-kwargs",
    f"decay={_P15.decay},reuse_window={_P15.replay // _P15.batch_size},reused_weights=decay"]
# ... and with the window of the filled entries, so that the first S- (the run's first 64
# episodes, near-random play) is not half of every batch for the first 78 updates
SUITE["accmer-fig3b-authors-decay-filled"] = [
    *SUITE["accmer-fig3b-authors-agent"], "--sampler-kwargs",
    f"decay={_P15.decay},window_basis=filled,reused_weights=decay"]
# ... and with the reuse of the authors' code (run.py's ReplayBuffer, used there by every
# learner): the top half of a table of batch-mean weights written every learner log
# interval, 10,000 env steps = every 7th update of 8 envs x 200 steps, into a rolling block
SUITE["accmer-fig3b-authors-block"] = [
    *SUITE["accmer-fig3b-authors-agent"], "--sampler", "reuse_block", "--sampler-kwargs",
    f"decay={_P15.decay},write_every=7"]
# the same two at punishment 0 (Fig. 3a): whether raw weights keep the easy task learned
SUITE["macpo-fig3a-raw-both"] = [*SUITE["macpo-fig3a"], "--macpo-weighting", "both",
                                 "--macpo-normalization", "none"]
SUITE["accmer-fig3a-raw"] = [*SUITE["accmer-fig3a"], "--macpo-normalization", "none"]
# exploration, not the paper's setting: at -1.5 the default runs stop capturing once epsilon
# reaches 0.05 at 100K env steps (training captures per episode 0.59 -> 0.004), so these
# anneal it over 1M env steps instead, MAC-PO's default beside QMIX's
for _algo in ("qmix", "macpo"):
    SUITE[f"{_algo}-fig3b-eps1m"] = [*SUITE[f"{_algo}-fig3b"], "--epsilon-anneal-steps",
                                     "1000000"]
for _algo in ("qmix", "vdn", "iql", "macpo", "accmer"):  # paper 004: N agents, N stags
    for _agents in (8, 16, 32):
        for _suffix, _punish in (("", "0.0"), ("-punish", "-1.5")):
            if _agents == 8 or (_algo in ("qmix", "macpo", "accmer") and not _suffix):
                # AccMER's decay gamma_W: 1.0 at punishment 0 with 8 agents, else 0.8 (paper)
                _decay = "1.0" if _agents == 8 and not _suffix else "0.8"
                SUITE[f"{_algo}-stag{_agents}{_suffix}"] = [
                    "--env", "stag_hunt", "--agents", str(_agents), "--algo", _algo,
                    "--env-kwargs", f"num_stags={_agents},miscapture_punishment={_punish}",
                    *(["--sampler-kwargs", f"decay={_decay}"] if _algo == "accmer" else [])]
STAG_REWARD = 10.0
TOUCH_REWARD = 10.0
EVAL_EPISODES = 256  # deterministic episodes per evaluation and seed (32 is the run default)
SILENT_EPISODES = 2048


def silent_return(env_kwargs: dict[str, Any]) -> float:
    """Mean episode return of the non-communicating scripted speaker-listener team."""
    import jax

    from jaxmarl_accel.envs import make
    from jaxmarl_accel.envs.evaluate import evaluate_policy
    from jaxmarl_accel.envs.mpe.simple_speaker_listener import silent_policy

    env, params = make("simple_speaker_listener", **env_kwargs)
    result = evaluate_policy(env, params, silent_policy(env), jax.random.PRNGKey(0),
                             SILENT_EPISODES)
    return float(result.agent_returns.mean())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="results/quality",
                        help="folder that holds one sub-folder per entry (default: "
                             "results/quality)")
    parser.add_argument("--only", nargs="+", choices=sorted(SUITE), default=None,
                        help="run only these entries (default: all)")
    parser.add_argument("--seeds", type=int, default=8, help="seeds per entry (default: 8)")
    parser.add_argument("--total-env-steps", type=int, default=None,
                        help="env steps per seed (default: each learner's run default: "
                             "1500000 = 60K MPE episodes of 25 for actor-critic and "
                             "on-policy learners, 1050000 for qmix / vdn / iql)")
    parser.add_argument("--table", action="store_true",
                        help="do not train; rebuild the table from the summaries present "
                             "(and curves.md from every metrics.csv present)")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[],
                        help="further experiments.run flags for every entry (put last)")


def with_scripted_keys(summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` with the ``heuristic_*`` keys of summaries written before the scripted
    baselines were called so renamed as ``scripted_*``."""
    return {key.replace("heuristic_", "scripted_", 1) if key.startswith("heuristic_") else key:
            value for key, value in summary.items()}


def entry_row(name: str, summary: dict[str, Any],
              env_kwargs: dict[str, Any] | None = None) -> dict[str, Any]:
    """One table row from an entry's ``summary.json`` (``env_kwargs``: the run's scenario
    arguments, needed to rebuild the speaker-listener silent baseline)."""
    env_kwargs = env_kwargs or {}
    summary = with_scripted_keys(summary)
    row = {"entry": name, "env": summary["env"], "algo": summary["algo"],
           "sampler": summary["sampler"], "seeds": summary["seeds"],
           "env_steps_per_seed": summary["env_steps_per_seed"],
           "median_ns": summary["median_normalized_score"],
           "iqr_ns": summary["iqr_normalized_score"],
           "median_return": summary["median_return"],
           "random_return": summary["random_return"],
           "scripted_return": summary["scripted_return"]}
    if summary["env"] == "simple_tag":
        row["median_touches"] = statistics.median(
            t["predator"] / TOUCH_REWARD for t in summary["final_eval_return_per_team"])
        row["random_touches"] = summary["random_return_per_team"]["predator"] / TOUCH_REWARD
    if summary["env"] == "stag_hunt":
        num_agents = env_kwargs.get("num_agents", 8)
        most = STAG_REWARD * min(env_kwargs.get("num_stags", 8), num_agents // 2)
        row["max_return"] = most  # a capture freezes >= 2 agents: at most N / 2 captures
        # of an even seed count: the middle two's mean, as the median return
        row["median_captures"] = statistics.median(
            summary["final_eval_captures_per_episode_per_seed"])
        row["random_captures"] = summary["random_captures_per_episode"]
        row["scripted_captures"] = summary["scripted_captures_per_episode"]
    if summary["env"] == "simple_speaker_listener":
        threshold = silent_return(env_kwargs)
        finals = summary["final_eval_return_per_seed"]
        row["silent_return"] = threshold
        row["communicating_seeds"] = sum(r > threshold for r in finals)
    return row


def curve_lines(name: str, rows: list[dict[str, float]]) -> list[str]:
    """A markdown table of one entry's learning curve from the rows of its ``metrics.csv``:
    per evaluation (env steps on the run's clock), the median greedy return over seeds with
    its interquartile range, and the median captures per episode where the env counts them;
    no lines when the entry has no metrics."""
    from jaxmarl_accel.runs import figures

    if not rows:
        return []
    captures = (figures.curve_points(rows, "eval_captures") if "eval_captures" in rows[0]
                else None)
    lines = [f"\n### {name}\n", "| env steps | median return (IQR) | seeds |"
             + (" median captures |" if captures else ""),
             "|---|---|---|" + ("---|" if captures else "")]
    for i, p in enumerate(figures.curve_points(rows)):
        line = (f"| {int(p.env_steps):,} | {p.median:.2f} ({p.low:.2f} to {p.high:.2f}) | "
                f"{p.count} |")
        if captures:
            line += f" {captures[i].median:.2f} |"
        lines.append(line)
    return lines


SEED_COLUMNS = (("train_captures", "training captures per episode", ".3f"),
                ("train_return", "training return", ".1f"), ("eval_return", "greedy return", ".2f"),
                ("eval_captures", "greedy captures", ".2f"))
"""The per-seed columns of an entry's ``curve.md``: metric, heading, format."""


def seed_curve_lines(rows: list[dict[str, float]]) -> list[str]:
    """A markdown table of the rows of one entry's ``metrics.csv`` seed by seed: per
    evaluation (env steps per seed), epsilon where the learner anneals one, and each of
    :data:`SEED_COLUMNS` the metrics hold, one value per seed in seed order; no lines
    when the entry has no metrics."""
    if not rows:
        return []
    columns = [c for c in SEED_COLUMNS if c[0] in rows[0]]
    epsilon = "epsilon" in rows[0]
    by_steps: dict[int, dict[int, dict[str, float]]] = {}
    for row in rows:
        by_steps.setdefault(int(row["env_steps"]), {})[int(row["seed"])] = row
    heads = ["env steps per seed", *(["epsilon"] if epsilon else []), *(c[1] for c in columns)]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for steps, seeds in sorted(by_steps.items()):
        ordered = [seeds[seed] for seed in sorted(seeds)]
        cells = [f"{steps:,}", *([f"{float(ordered[0]['epsilon']):.3f}"] if epsilon else []),
                 *(", ".join(format(float(r[key]), fmt) for r in ordered)
                   for key, _, fmt in columns)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def build_table(out_dir: str) -> list[dict[str, Any]]:
    rows = []
    for name in SUITE:
        path = os.path.join(out_dir, name, "summary.json")
        if os.path.exists(path):
            with open(path) as handle:
                summary = json.load(handle)
            config_path = os.path.join(out_dir, name, "config.json")
            env_kwargs = {}
            if os.path.exists(config_path):
                with open(config_path) as handle:
                    env_kwargs = json.load(handle)["train"].get("env_kwargs", {})
            rows.append(entry_row(name, summary, env_kwargs))
    lines = ["| entry | env | algo | sampler | seeds | env steps/seed | median NS | NS IQR | "
             "median return | random | scripted |", "|" + "---|" * 11]
    for r in rows:
        lines.append(
            f"| {r['entry']} | {r['env']} | {r['algo']} | {r['sampler']} | {r['seeds']} | "
            f"{r['env_steps_per_seed']:,} | {r['median_ns']:.3f} | {r['iqr_ns'][0]:.3f} to "
            f"{r['iqr_ns'][1]:.3f} | {r['median_return']:.2f} | {r['random_return']:.2f} | "
            f"{r['scripted_return']:.2f} |")
    for r in rows:
        if "median_touches" in r:
            lines.append(f"\n{r['entry']}: median touches per episode {r['median_touches']:.2f} "
                         f"vs {r['random_touches']:.2f} for random predators against the same "
                         "prey.")
        if "max_return" in r:
            lines.append(f"\n{r['entry']}: median return {r['median_return']:.1f} of "
                         f"{r['max_return']:.0f} possible; captures per episode "
                         f"{r['median_captures']:.2f} (random {r['random_captures']:.2f}, "
                         f"scripted {r['scripted_captures']:.2f}).")
        if "communicating_seeds" in r:
            lines.append(f"\n{r['entry']}: {r['communicating_seeds']} of {r['seeds']} seeds "
                         "learned to communicate (final return above "
                         f"{r['silent_return']:.2f}, the best scripted team that does not "
                         "communicate).")
    with open(os.path.join(out_dir, "table.md"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    curves = ["# Learning curves (greedy evaluations, median over seeds)"]
    from jaxmarl_accel.runs import outputs

    for name in SUITE:
        metrics = outputs.read_rows(os.path.join(out_dir, name))
        curves += curve_lines(name, metrics)
        seed_lines = seed_curve_lines(metrics)
        if seed_lines:
            with open(os.path.join(out_dir, name, "curve.md"), "w") as handle:
                handle.write("\n".join(seed_lines) + "\n")
    with open(os.path.join(out_dir, "curves.md"), "w") as handle:
        handle.write("\n".join(curves) + "\n")
    with open(os.path.join(out_dir, "table.json"), "w") as handle:
        json.dump(rows, handle, indent=2)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.quality", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    failed = []
    if not args.table:
        for name in args.only or SUITE:
            entry_dir = os.path.join(args.out, name)
            if os.path.exists(os.path.join(entry_dir, "summary.json")):
                print(f"{name}: done already", file=sys.stderr)
                continue
            resume = os.path.exists(os.path.join(entry_dir, "config.json"))
            command = [sys.executable, "-m", "experiments.run", "--quiet"]
            command += ["--resume", entry_dir] if resume else [
                *SUITE[name], "--seeds", str(args.seeds),
                *([] if args.total_env_steps is None else
                  ["--total-env-steps", str(args.total_env_steps)]),
                "--eval-episodes", str(EVAL_EPISODES),
                "--out", entry_dir, *args.extra]
            print(f"{name}: {' '.join(command[1:])}", file=sys.stderr, flush=True)
            if subprocess.call(command) != 0:
                print(f"{name}: failed", file=sys.stderr)
                failed.append(name)
    for row in build_table(args.out):
        print(f"{row['entry']:<30} median NS {row['median_ns']:.3f} "
              f"(IQR {row['iqr_ns'][0]:.3f} to {row['iqr_ns'][1]:.3f})")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
