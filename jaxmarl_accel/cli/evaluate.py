"""Evaluate a saved run: restore a checkpoint and score the greedy policy of every seed.

    jaxmarl-accel evaluate runs/matd3 --episodes 1000 --render

RUN_DIR is a folder written by ``jaxmarl-accel run``. Its newest checkpoint (or
``--checkpoint``) is restored with the settings of its ``config.json``; the greedy policy of
every seed plays ``--episodes`` episodes (the same start states for every seed), and the
random and scripted policies are measured as the run's summary measures them (the same
episodes and key), so the normalized score NS = (R - R_random) / (R_scripted - R_random)
is the one of ``summary.json``. Outputs: ``--out`` (default RUN_DIR/evaluation.json:
the checkpoint and its env steps, each seed's mean return and NS with their median and
interquartile range, each episode's return, the run's own evaluation of that checkpoint
from ``metrics.csv``, the baselines, the env's episode counters such as the stag hunt's
captures, and for envs of several teams ``cross_play``: each team's learners against random
and against scripted agents in the other teams), ``--marl-eval`` (default
RUN_DIR/marl_eval.json: the run's curve from ``metrics.csv`` in marl-eval's format, with this
evaluation's episodes as its ``absolute_metrics``) and, with ``--render``, seed 0's greedy
episode as a GIF and PNG beside ``--out`` (``evaluation.gif``, ``evaluation.png``). Nothing
else in RUN_DIR changes. Of a sweep (``run --sweep``) it evaluates the seeds of one setting,
``--setting K`` (default: the best of ``sweep.json``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Any

from jaxmarl_accel.cli import flags
from jaxmarl_accel.runs import outputs

EPISODES = 100
"""Default episodes per seed."""

PROG = "jaxmarl-accel evaluate"
"""The command's name in usage lines (``python -m experiments.evaluate`` in a checkout)."""


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The ``evaluate`` command's argument parser (``prog``: its name in usage lines)."""
    parser = flags.Parser(prog=prog,
                               description=flags.plain_description(__doc__ or ""))
    from jaxmarl_accel.runs.remote import STAGE_DEFAULT

    parser.add_argument("run_dir", metavar="RUN_DIR",
                        help="folder of a run written by jaxmarl-accel run, or its URL "
                             "(downloaded first; what the evaluation writes into the folder is "
                             "uploaded after)")
    parser.add_argument("--stage", metavar="DIR", default=None,
                        help=f"with a URL: the run's local copy (default: {STAGE_DEFAULT})")
    parser.add_argument("--checkpoint", metavar="STEP", type=flags.parse_int, default=None,
                        help="the checkpoint to restore: a folder name under RUN_DIR/checkpoints, "
                             "the evaluation period (chunk, from 0) after which it was saved "
                             "(default: the newest)")
    parser.add_argument("--setting", metavar="K", type=flags.parse_int, default=None,
                        help="a sweep's setting to evaluate, its index in sweep.json's settings "
                             "(the metrics.csv column) (default: the best)")
    parser.add_argument("--episodes", type=flags.parse_int, default=EPISODES,
                        help=f"greedy episodes per seed (default: {EPISODES})")
    parser.add_argument("--render", action="store_true",
                        help="render one greedy episode of seed 0 to a GIF and PNG beside --out "
                             "(named after it: evaluation.gif, evaluation.png)")
    parser.add_argument("--out", metavar="PATH", default=None,
                        help="the evaluation's JSON file (default: RUN_DIR/evaluation.json)")
    parser.add_argument("--marl-eval", metavar="PATH", default=None,
                        help="the marl-eval export, its absolute_metrics this evaluation's "
                             "episodes (default: RUN_DIR/marl_eval.json; 'none' writes none)")
    flags.add_compile_cache_flag(parser)
    return parser


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    """Run the command line; returns the exit status (2: usage error, or a folder or
    checkpoint that cannot be evaluated)."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error(f"--episodes must be >= 1, got {args.episodes}")
    if args.checkpoint is not None and args.checkpoint < 0:
        parser.error(f"--checkpoint must be >= 0, got {args.checkpoint}")
    try:
        if args.compile_cache:  # before anything is compiled
            flags.use_compile_cache(args.compile_cache)
        mirror = remote_run(args.run_dir, args.stage)
        run_dir = mirror.stage if mirror is not None else args.run_dir
        out = args.out or os.path.join(run_dir, outputs.EVALUATION_NAME)
        marl_eval_path = (None if args.marl_eval == "none" else
                          args.marl_eval or os.path.join(run_dir, outputs.MARL_EVAL_NAME))
        evaluate_run(run_dir, args.checkpoint, args.episodes, out, marl_eval_path,
                     args.render, args.setting)
        if mirror is not None:
            _log(f"uploaded {mirror.push()} file(s) to {mirror.url}")
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def remote_run(run_dir: str, stage: str | None) -> Any:
    """The :class:`~jaxmarl_accel.runs.remote.Mirror` of a run folder given as a URL, its
    files downloaded into the stage (None for a local folder); ``ValueError`` (one line)
    for ``--stage`` without a URL, an unknown scheme or a URL that holds no run."""
    from jaxmarl_accel.runs.remote import is_remote, pulled_run

    if not is_remote(run_dir):
        if stage is not None:
            raise ValueError("--stage is for a RUN_DIR given as a URL only")
        return None
    return pulled_run(run_dir, stage, run_dir, _log)


def _log(*parts: Any) -> None:
    print(*parts, file=sys.stderr, flush=True)


def evaluate_run(run_dir: str, checkpoint: int | None, episodes: int, out: str,
                 marl_eval_path: str | None = None, render: bool = False,
                 setting: int | None = None) -> dict[str, Any]:
    """Restore the run in ``run_dir`` (its ``checkpoint``, or the newest), evaluate every
    seed's greedy policy over ``episodes`` episodes against the run's baselines, and
    write the result to ``out`` (JSON), the marl-eval export to ``marl_eval_path`` (None:
    none) and, with ``render``, seed 0's episode beside ``out``. Returns the result;
    ``ValueError`` (one line) for a folder that holds no run, no checkpoint, or a
    checkpoint that is missing or does not restore."""
    import jax
    import numpy as np

    from jaxmarl_accel.runs import marl_eval, summary
    from jaxmarl_accel.runs.restore import load_run, restore_checkpoint, sweep_setting

    config, stored = load_run(run_dir)
    trainer, sharded, state, step = restore_checkpoint(run_dir, config, stored["seeds"],
                                                       checkpoint, stored.get("sweep"))
    trainer, state, rows, chosen = sweep_setting(run_dir, stored, trainer, state, setting, _log)
    spec, seeds = trainer.env.spec, stored["seeds"]
    env_steps = [int(v) for v in np.asarray(jax.device_get(state.env_steps))]
    _log(f"restored the checkpoint after chunk {step} of {run_dir} ({env_steps[0]:,} env steps "
         f"per seed); evaluating {episodes} greedy episode(s) for each of {seeds} seed(s)...")
    returns, stats = evaluate_seeds(trainer, state.algo, jax.random.PRNGKey(stored["seed"] + 3),
                                    episodes)
    base = summary.run_baselines(trainer, stored["seed"] + 1, stored["baseline_episodes"], _log)
    own = {int(r["seed"]): r for r in rows if int(r["chunk"]) == step}
    scored = outputs.scored_agents(config, spec)  # the learners (predators if prey scripted)
    per_seed = returns[..., scored].mean(axis=(1, 2))  # [S]: over episodes and scored agents
    scripted_return = float(base["scripted"][scored].mean()) if spec.scripted else None
    scripted = ({"scripted_return_per_team": summary.team_means(base["scripted"], spec.teams)}
                if spec.scripted else {})
    result = outputs.summarize(
        per_seed, float(base["random"][scored].mean()), scripted_return,
        baseline_se=(base["random_se"], base["scripted_se"], stored["baseline_episodes"]),
        extra={"env": config.env, "algo": config.algo, "sampler": config.sampler,
               "run_dir": run_dir, "checkpoint": step, "env_steps_per_seed": env_steps,
               "episodes": episodes, "seeds": seeds,
               "mean_return": float(per_seed.mean()),
               "episode_return_per_seed": returns[..., scored].mean(axis=2).tolist(),  # [S][E]
               "return_per_team_per_seed": [summary.team_means(v, spec.teams)
                                            for v in returns.mean(axis=1)],
               "random_return_per_team": summary.team_means(base["random"], spec.teams),
               **scripted,
               "run_eval_return_per_seed": [own[s]["eval_return"] if s in own else None
                                            for s in range(seeds)],
               "run_eval_episodes": config.eval_episodes, **chosen})
    if "baseline_warning" in result:
        _log(f"warning: {result['baseline_warning']}")
    if "median_normalized_score" in result:
        result["mean_normalized_score"] = outputs.normalized_score(
            result["mean_return"], result["random_return"], result["scripted_return"])
    for name in spec.episode_stats:
        result[f"{name}_per_episode_per_seed"] = stats[name].mean(axis=1).tolist()
        result[f"random_{name}_per_episode"] = base[f"random_{name}"]
        if spec.scripted:
            result[f"scripted_{name}_per_episode"] = base[f"scripted_{name}"]
    result.update(cross_play(trainer, state.algo, jax.random.PRNGKey(stored["seed"] + 4),
                             episodes))
    write_json(out, result, "--out")
    if marl_eval_path is not None:
        absolute = {seed: {"return": returns[seed].mean(axis=1).tolist(),
                           **{name: stats[name][seed].tolist() for name in spec.episode_stats}}
                    for seed in range(seeds)}
        names = marl_eval.export_names(config, spec.num_agents, trainer.plan.learner)
        write_json(marl_eval_path, marl_eval.run_export(names, rows, spec.episode_stats, absolute),
                   "--marl-eval")
    if render:
        stem = os.path.splitext(os.path.basename(out))[0]
        _log(f"rendering {stem}.gif...")
        summary.render_episode(trainer, jax.device_get(sharded.first_seed(state.algo)),
                                 os.path.dirname(out) or ".",
                                 jax.random.PRNGKey(stored["seed"] + 2),
                                 (f"{stem}.gif", f"{stem}.png"))
    _log(f"checkpoint {step}: mean return {result['mean_return']:.3f} over {seeds} seed(s) x "
         f"{episodes} episode(s), {_score_text(result)}; written to {out}")
    return result


def _score_text(result: dict[str, Any]) -> str:
    """The evaluation's score for the log line: NS with its baselines, or the baselines'
    returns and why no normalized score is defined (no scripted policy, or one whose return
    ties the random policy's)."""
    if "normalized_score_note" in result:
        scripted = (f", scripted {result['scripted_return']:.3f}"
                    if "scripted_return" in result else "")
        return (f"random {result['random_return']:.3f}{scripted}; "
                f"{result['normalized_score_note']}")
    return (f"median normalized score {result['median_normalized_score']:.3f} (random "
            f"{result['random_return']:.3f}, scripted {result['scripted_return']:.3f})")


def evaluate_seeds(trainer: Any, algo_states: Any, key: Any, episodes: int) -> tuple[Any, Any]:
    """Greedy episodes of every seed's learners, as the run's own evaluation plays them
    (``trainer.evaluate``, one episode per key); every seed plays the same start states.

    Args:
      trainer: the run's ``Trainer``.
      algo_states: the learners' states, each leaf with a leading seed axis ``[S, ...]``.
      key: PRNG key of the episodes.
      episodes: episodes per seed ``E``.

    Returns:
      ``(returns, stats)``: host arrays, ``returns[S, E, N]`` each agent's episode return,
      ``stats`` env counter name -> ``[S, E]`` its sum over each episode.
    """
    import jax

    from jaxmarl_accel.trainer.train import make_trainer

    single = make_trainer(dataclasses.replace(trainer.config, eval_episodes=1))
    per_episode = jax.vmap(single.evaluate, in_axes=(None, 0))  # -> [E, N], {name: [E]}
    per_seed = jax.jit(jax.vmap(per_episode, in_axes=(0, None)))  # -> [S, E, N], {name: [S, E]}
    returns, stats = jax.device_get(per_seed(algo_states, jax.random.split(key, episodes)))
    return returns, stats


def cross_play(trainer: Any, algo_states: Any, key: Any, episodes: int) -> dict[str, Any]:
    """Each team's greedy learners against random and against scripted agents in the other
    teams' rows, for envs of several teams whose learners play every team (not with scripted
    prey); ``{}`` otherwise. E.g. on Tag: trained taggers against random runners tag more
    than random taggers do when the taggers learned to chase, and trained runners against
    random taggers are tagged less when the runners learned to flee.

    Args:
      trainer: the run's ``Trainer``.
      algo_states: the learners' states, each leaf ``[S, ...]`` (seeds first).
      key: PRNG key of the episodes (every seed and matchup plays the same start states).
      episodes: episodes per seed and matchup ``E``.

    Returns:
      ``{"cross_play": {"<team>_vs_<opponent>": {"team_return_per_seed": [S] the team's mean
      return per agent and episode, "<stat>_per_episode_per_seed": [S] for each env
      counter}}}``.
    """
    import jax
    import numpy as np

    from jaxmarl_accel.envs.evaluate import evaluate_policy
    from jaxmarl_accel.envs.policies import against_opponents, team_rows
    from jaxmarl_accel.trainer.policy import learner_policy

    env, params, spec = trainer.env, trainer.env_params, trainer.env.spec
    teams = tuple(dict.fromkeys(spec.teams))
    if len(teams) < 2 or trainer.config.prey == "scripted":
        return {}
    greedy = learner_policy(env, trainer.algo, False, explore=False)
    matchups = {}
    for team in teams:
        rows = np.asarray(team_rows(env, team))
        for opponent in ("random", "scripted") if spec.scripted else ("random",):
            mixed = against_opponents(env, greedy, team, opponent)

            def one_seed(algo_state, key, mixed=mixed):
                return evaluate_policy(env, params, mixed, key, episodes, algo_state=algo_state,
                                       carry=trainer.algo.initial_carry())

            result = jax.device_get(jax.jit(jax.vmap(one_seed, in_axes=(0, None)))(
                algo_states, key))
            matchups[f"{team}_vs_{opponent}"] = {
                "team_return_per_seed": np.asarray(result.episode_returns)[..., rows].mean(
                    axis=(1, 2)).tolist(),
                **{f"{name}_per_episode_per_seed": np.asarray(v).mean(axis=1).tolist()
                   for name, v in result.stats.items()}}
    return {"cross_play": matchups}


def write_json(path: str, record: dict[str, Any], flag: str) -> None:
    """Write ``record`` to ``path`` (its folder created if needed); ``ValueError`` (one line,
    naming ``flag``) when it cannot be written."""
    import json

    folder = os.path.dirname(path)
    try:
        if folder:
            os.makedirs(folder, exist_ok=True)
        with open(path, "w") as handle:
            json.dump(record, handle, indent=2)
    except OSError as error:
        raise ValueError(f"{flag} {path} cannot be written: {error.strerror}") from None

