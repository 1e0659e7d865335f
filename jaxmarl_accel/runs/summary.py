"""The end of a run, entered once: scores against the random and scripted baselines, the
summary, the marl-eval export, the learning curve, one rendered episode and a sweep's
outputs (:mod:`~.sweep_outputs`, :mod:`~.pbt_run`'s plot)."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from jaxmarl_accel.envs.evaluate import evaluate_policy
from jaxmarl_accel.envs.policies import random_policy, scripted_policy, scripted_team
from jaxmarl_accel.envs.render import render_rollout
from jaxmarl_accel.envs.rollout import rollout
from jaxmarl_accel.runs import baseline_cache, figures, marl_eval, outputs
from jaxmarl_accel.runs.interrupts import interruptible
from jaxmarl_accel.runs.pbt_run import plot_values
from jaxmarl_accel.runs.run_store import RunOptions
from jaxmarl_accel.runs.sweep_outputs import (
    SWEEP_NAME,
    SWEEP_PLOT_NAME,
    best_note,
    sweep_title,
    write_sweep,
)
from jaxmarl_accel.trainer.policy import learner_policy
from jaxmarl_accel.trainer.sharding import (
    DeviceLayout,
    ShardedTrainer,
)
from jaxmarl_accel.trainer.train import Trainer


def baseline_returns(trainer: Trainer, key: jax.Array, episodes: int) -> dict[str, Any]:
    """Mean per-agent returns ``[N]`` of the scenario's random and scripted policies
    (``"random"``, ``"scripted"``), and the standard error of each one's mean return
    over the scored agents (:func:`scored_agents`) and episodes (``"random_se"``,
    ``"scripted_se"``; episodes are independent).

    With scripted prey (``--prey scripted``) the prey are scripted in both baselines too,
    so the trained predators are compared with random and scripted predators against the
    same prey.
    """
    env, params = trainer.env, trainer.env_params
    random_key, scripted_key = jax.random.split(key)
    random_fn = random_policy(env)
    if trainer.config.prey == "scripted":
        random_fn = scripted_team(env, random_fn, "prey")
    results = {
        "random": evaluate_policy(env, params, random_fn, random_key, episodes),
        "scripted": evaluate_policy(env, params, scripted_policy(env), scripted_key,
                                     episodes)}
    out = {name: np.asarray(result.agent_returns) for name, result in results.items()}
    scored = outputs.scored_agents(trainer.config, env.spec)
    for name, result in results.items():
        per_episode = np.asarray(result.episode_returns)[:, scored].mean(axis=1)  # [episodes]
        spread = per_episode.std(ddof=1) if episodes > 1 else math.inf
        out[f"{name}_se"] = float(spread / math.sqrt(episodes))
    for name, result in results.items():  # per-episode counters of the env, e.g. captures
        out.update({f"{name}_{stat}": float(np.mean(v)) for stat, v in result.stats.items()})
    return out


def run_baselines(trainer: Trainer, key_seed: int, episodes: int,
                  log: Callable[..., None]) -> dict[str, Any]:
    """:func:`baseline_returns` of ``trainer``'s env over ``episodes`` episodes from
    ``PRNGKey(key_seed)``, read from the baseline cache when an earlier run of the same env
    stored them (:mod:`jaxmarl_accel.runs.baseline_cache`), else measured and stored;
    ``log`` says which, and what measuring costs and which flag lowers it."""
    folder = baseline_cache.cache_folder()
    key = baseline_cache.baseline_key(trainer.config, key_seed, episodes)
    cached = baseline_cache.load(folder, key)
    if cached is not None:
        log(f"random and scripted baselines ({episodes} episodes each) read from "
            f"{baseline_cache.entry_path(folder, key)}")
        return cached
    steps = episodes * trainer.env.spec.episode_length
    kept = (f"; kept in {folder} for later runs of this env" if folder is not None else "")
    log(f"evaluating the random and scripted baselines ({episodes} episodes each, up to "
        f"{steps:,} env steps each; --baseline-episodes lowers it{kept})...")
    measured = interruptible(baseline_returns, trainer, jax.random.PRNGKey(key_seed), episodes)
    baseline_cache.store(folder, key, measured)
    return measured


def episode_stats_summary(rows: list[dict[str, float]], trainer: Trainer,
                          base: dict[str, Any]) -> dict[str, Any]:
    """The env's per-episode counters (``spec.episode_stats``, e.g. stag hunt captures) in
    the summary: each seed's final greedy evaluation and the random and scripted
    baselines', per episode."""
    out: dict[str, Any] = {}
    for stat in trainer.env.spec.episode_stats:
        out[f"final_eval_{stat}_per_episode_per_seed"] = [
            r[f"eval_{stat}"] for r in rows if r["chunk"] == trainer.num_chunks - 1]
        out[f"random_{stat}_per_episode"] = base[f"random_{stat}"]
        if trainer.env.spec.scripted:
            out[f"scripted_{stat}_per_episode"] = base[f"scripted_{stat}"]
    return out


def team_means(values: np.ndarray, teams: tuple[str, ...]) -> dict[str, float]:
    """Mean of a per-agent vector ``[N]`` per team label."""
    return {team: float(np.mean([v for v, t in zip(values, teams, strict=True) if t == team]))
            for team in dict.fromkeys(teams)}


BASELINE_AGENT_STEPS = 8_000_000
"""Agent steps (agents x env steps) each baseline policy is evaluated for by default:
1,000 episodes of small scenarios, fewer of large ones (:func:`default_baseline_episodes`)."""

BASELINE_EPISODES = (8, 1000)
"""The fewest and the most episodes of the default baseline evaluation."""


def default_baseline_episodes(num_agents: int, episode_length: int) -> int:
    """Episodes of the random and scripted baselines when ``--baseline-episodes`` is left
    out: :data:`BASELINE_AGENT_STEPS` over agents x episode length, within
    :data:`BASELINE_EPISODES` (1,000 up to 40 agents x 200 steps, 80 for 1,000 x 100)."""
    fewest, most = BASELINE_EPISODES
    return min(most, max(fewest, math.ceil(BASELINE_AGENT_STEPS
                                           / (num_agents * episode_length))))


def rounded_steps_note(trainer: Trainer) -> str | None:
    """``None`` when the run takes the ``--total-env-steps`` it was given, else why it
    takes more: whole rounds of its replay kind (``RoundSpec.describe``: e.g. whole
    episodes, or whole rollouts)."""
    config, plan = trainer.config, trainer.plan
    if trainer.total_steps == config.total_env_steps:
        return None
    return (f"--total-env-steps {config.total_env_steps:,} is rounded up to "
            f"{trainer.total_steps:,} env steps per seed: whole rounds of "
            f"{plan.schedule.steps_per_round:,} steps "
            f"({plan.round.describe(config, plan.schedule)})")


def untrained_note(trainer: Trainer) -> str:
    """Why a run that ends before its first update has scores of untrained policies."""
    config = trainer.config
    return (f"the run ends at {trainer.total_steps:,} env steps per seed, before the first "
            f"update (after {trainer.first_update_step:,}: --learning-starts "
            f"{config.learning_starts:,}, --batch-size {config.batch_size:,}); the learners "
            "are never trained and the scores are those of their initial policies")


def summarize_run(trainer: Trainer, options: RunOptions, sharded: ShardedTrainer, state: Any,
                  rows: list[dict[str, float]], layout: DeviceLayout, timing: dict[str, float],
                  writer: bool, log: Callable[..., None]) -> None:
    """The end of a run, in one place: final scores against the random and scripted
    baselines (:func:`run_summary`), then what the run leaves beside ``metrics.csv``
    (:func:`write_results`: ``summary.json``, ``marl_eval.json``, the learning curve, with
    ``options.render`` one rendered episode, a sweep's ``sweep.json`` and plots). Every
    process evaluates; only the ``writer`` writes."""
    base = run_baselines(trainer, options.seed + 1, options.baseline_episodes, log)
    summary = run_summary(trainer, options, rows, layout, timing, base)
    if "baseline_warning" in summary and writer:
        print(f"warning: {summary['baseline_warning']}", file=sys.stderr)
    first_algo = jax.device_get(sharded.first_seed(state.algo)) if options.render else None
    if writer:
        write_results(trainer, options, rows, summary, first_algo, log)


def run_summary(trainer: Trainer, options: RunOptions, rows: list[dict[str, float]],
                layout: DeviceLayout, timing: dict[str, float], base: dict[str, Any]
                ) -> dict[str, Any]:
    """What ``summary.json`` holds (:func:`~.outputs.summarize` of the final evaluations
    against the baselines ``base``, :func:`run_baselines`): the run's scores, its settings,
    layout and ``timing``, each seed's number of updates and, when there were none, a
    ``warning``."""
    config, spec = trainer.config, trainer.env.spec
    final = np.asarray([[r[f"eval_return_agent{a}"] for a in range(spec.num_agents)]
                        for r in rows if r["chunk"] == trainer.num_chunks - 1])
    updates = [int(sum(r["updates"] for r in rows  # a sweep's settings share the schedule
                       if r["seed"] == seed and r.get("setting", 0) == 0))
               for seed in range(options.seeds)]
    untrained = {"warning": untrained_note(trainer)} if not any(updates) else {}
    scripted = ({"scripted_return_per_team": team_means(base["scripted"], spec.teams)}
                if spec.scripted else {})
    extra = {"env": config.env, "algo": config.algo, "sampler": config.sampler,
             "seeds": options.seeds, "env_steps_per_seed": trainer.total_steps,
             **steps_rounded(trainer),
             "devices": layout.num_devices,
             "layout": {"seed_shards": layout.seed_shards, "env_shards": layout.env_shards},
             **timing,
             "final_eval_return_per_team": [team_means(v, spec.teams) for v in final],
             "random_return_per_team": team_means(base["random"], spec.teams), **scripted,
             "updates_per_seed": updates, **untrained,
             **episode_stats_summary(rows, trainer, base)}
    scored = outputs.scored_agents(config, spec)
    return outputs.summarize(
        final[:, scored].mean(axis=1), float(base["random"][scored].mean()),
        float(base["scripted"][scored].mean()) if spec.scripted else None,
        baseline_se=(base["random_se"], base["scripted_se"], options.baseline_episodes),
        extra=extra)


def write_results(trainer: Trainer, options: RunOptions, rows: list[dict[str, float]],
                  summary: dict[str, Any], first_algo: Any, log: Callable[..., None]) -> None:
    """Write the marl-eval export (a sweep's: one entry per setting), the learning curve,
    the episode of ``first_algo`` (seed 0's learners, with ``options.render``), a sweep's
    outputs and, last, ``summary`` into ``options.out_dir`` (a folder with ``summary.json``
    holds a finished run: a benchmark never runs it again); the final score and where the
    summary is go to ``log``."""
    config, spec, out_dir = trainer.config, trainer.env.spec, options.out_dir
    path = os.path.join(out_dir, outputs.SUMMARY_NAME)  # written last: its file marks a run done
    names = marl_eval.export_names(config, spec.num_agents, trainer.plan.learner)
    if options.sweep is None:
        marl_eval.write(os.path.join(out_dir, outputs.MARL_EVAL_NAME),
                        marl_eval.run_export(names, rows, spec.episode_stats))
    figures.plot_curve(out_dir, rows, figures.curve_title(config.algo, config.env, options.seeds),
                       summary["random_return"], summary.get("scripted_return"))
    if options.render:
        log(f"rendering {outputs.GIF_NAME}...")
        render_episode(trainer, first_algo, out_dir, jax.random.PRNGKey(options.seed + 2))
    log(f"{score_note(summary)}; summary in {path}")
    if options.sweep is not None:
        title = sweep_title(config.algo, config.env, options.seeds)
        best = write_sweep(out_dir, rows, options.sweep, options.seeds, summary, title, names,
                           spec.episode_stats, population=bool(options.pbt_every))
        log(f"{best_note(best)}; {SWEEP_NAME}, {SWEEP_PLOT_NAME}")
        if options.pbt_every:
            lane = best["best_lane"]
            plot_values(out_dir, rows, (lane["setting"], lane["seed"]))
    outputs.write_summary(out_dir, summary)


def score_note(summary: dict[str, Any]) -> str:
    """The run's final score in a few words: the median normalized score with its IQR, or
    the median return where no normalized score is defined (no scripted policy, or one that
    ties the random one); untrained policies said so."""
    untrained = "; untrained policies" if "warning" in summary else ""
    if "normalized_score_note" in summary:
        return (f"median return {summary['median_return']:.3f} (IQR "
                f"{summary['iqr_return'][0]:.3f} to {summary['iqr_return'][1]:.3f}; "
                f"{summary['normalized_score_note']}{untrained})")
    return (f"median normalized score {summary['median_normalized_score']:.3f} "
            f"(IQR {summary['iqr_normalized_score'][0]:.3f} to "
            f"{summary['iqr_normalized_score'][1]:.3f}{untrained})")


def steps_rounded(trainer: Trainer) -> dict[str, Any]:
    """The summary's record of a run that took more env steps than it was given: the
    steps requested and why they were rounded up (:func:`rounded_steps_note`)."""
    note = rounded_steps_note(trainer)
    if note is None:
        return {}
    return {"env_steps_requested": trainer.config.total_env_steps, "env_steps_note": note}


def render_episode(trainer: Trainer, algo_state: Any, out_dir: str, key: jax.Array,
                   names: tuple[str, str] = (outputs.GIF_NAME, outputs.PNG_NAME)) -> None:
    """Roll out one deterministic episode with the learners ``algo_state`` of one seed
    (no seed axis) and save it in ``out_dir`` as GIF and PNG (the middle frame) under
    ``names``."""
    env, params = trainer.env, trainer.env_params
    steps = int(params.episode_length)
    greedy = learner_policy(env, trainer.algo, trainer.config.prey == "scripted",
                            explore=False)
    record = jax.jit(lambda: rollout(env, params, greedy, key, steps, algo_state=algo_state,
                                     carry=trainer.algo.initial_carry()))()
    ended = np.asarray(record.terminated | record.truncated)
    shown = int(np.argmax(ended)) + 1 if ended.any() else steps  # the first episode's frames
    states = jax.tree.map(lambda leaf: leaf[:shown], record.states)
    frames = render_rollout(env, states, params)
    figures.write_gif(os.path.join(out_dir, names[0]), frames)
    figures.write_png(os.path.join(out_dir, names[1]), frames[len(frames) // 2])
