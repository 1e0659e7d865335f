"""Our QMIX (or VDN, or MAC-PO: ``--algo``) on JaxMARL's SMAX (``jaxmarl:HeuristicEnemySMAX``,
3m by default) against JaxMARL's own ``baselines/QLearning/qmix_rnn.py`` (VDN:
``vdn_rnn.py``) at its SMAX settings, side by side.

``python -m experiments.bench qmix_smax --jaxmarl-src PATH --env-steps 2e6 --seeds 4
--json docs/results/qmix_smax_3m.json`` trains each seed on both sides for the same number of
env steps and records, per seed and side: the greedy win rate at the end, env steps per
second of the compiled program (learning and the final greedy test included), and compile
time (tracing and lowering, then XLA, after ``jax.clear_caches()``; ours with the library's
XLA options, :func:`jaxmarl_accel.trainer.compiling.compiler_options`, theirs with XLA's
defaults); then the median and interquartile range of the win rates over seeds.

* ours: ``make_trainer(config).train`` with ``algo="qmix"`` (``--algo``) on
  ``jaxmarl:HeuristicEnemySMAX`` (episode rounds: ``num_envs`` whole episodes, then
  ``episode_updates`` updates, 1 unless ``--ours-set``, each on a batch of episodes); its
  greedy win rate: the ``won`` counter of the final evaluation's deterministic episodes.
* theirs: ``make_train(config, env)`` of ``PATH/baselines/QLearning/qmix_rnn.py``
  (:data:`~.smax_sides.BASELINES`: ``vdn_rnn.py`` for VDN; JaxMARL has no MAC-PO,
  so MAC-PO runs beside its QMIX, the learner MAC-PO reweights) with its ``config/config.yaml`` and
  ``config/alg/ql_rnn_smax.yaml`` (the map set by ``--map``), run on the installed
  ``jaxmarl``, loaded as the benchmark command's reference pairs load it, its ``wandb`` a
  :class:`jaxmarl_accel.benchmark.jaxmarl_scripts.Collector` (a line every 5% of a seed; its
  learning curve as ``ref_curve``). Its greedy test (``TEST_NUM_ENVS`` envs for
  ``TEST_NUM_STEPS`` steps) runs before training and after the last update only
  (``TEST_INTERVAL`` 1.0); its win rate is ``returned_won_episode`` of that last test: the
  mean, over every battle that ended within the test's steps (an env's second battle
  included, so short battles weigh more), of whether it was won.

Every seed is one compiled program called once, on both sides (JaxMARL's program vmapped
over seeds hangs on jaxlib's CPU backend, see :mod:`experiments.bench.qmix`);
``--ours-vmapped`` also times ours over all seeds at once; ``--vmap-seeds`` (GPUs) compiles
each side once for all seeds, env steps per second then per program.

Settings matched (ours from theirs): :class:`~.smax_sides.Settings` (``ql_rnn_smax.yaml``),
double-Q one-step targets, epsilon over the first 10% of the env steps, the env's keywords; ours
unrolls all 101 rows unless ``--ours-set train_rows=K`` (``ValueConfig.train_rows``).

Env steps. Both sides run the same number of *counted* env steps: theirs steps every env
128 times a round across episode ends (all real); ours counts ``T`` = 101 rows an episode
(rows after its end masked): a battle of ``L`` steps counts 101 but takes ``L``. Our real
steps (mean ``episode_length`` times episodes) are ``ours_real_env_steps_per_seed``;
``steps_ratio_median`` is our *real* env steps per second over theirs (the counted one
``counted_steps_ratio_median``); ``--ref-env-steps`` sets theirs apart (e.g. 1e6 beside
ours at 6e6 counted: about equal real env steps on 3m).

Differences that remain: theirs updates ``NUM_EPOCHS`` = 8 times per round of 128 steps
per env, ours ``--ours-set episode_updates=K`` times per round of whole episodes (1 by
default; ``--breakdown``: :mod:`~.smax_rounds`); RAdam against Adam; theirs feeds the
agent id, ours also the previous action; theirs tests 128 steps of 512 envs, ours 512
whole episodes.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import os
from pathlib import Path
from typing import Any

import jax
import numpy as np

from experiments.bench.qmix import our_updates, reference_updates
from experiments.bench.smax_rounds import breakdown
from experiments.bench.smax_sides import (
    BASELINES,
    ENV_ID,
    Settings,
    load_reference,
    our_win_rates,
    reference_config,
    reference_script,
    reference_win_rates,
    run_side,
    settings_from,
)
from experiments.bench.timing import (
    add_collect_block_argument,
    apply_collect_block,
    compile_program,
    timed_call,
    write_record,
)
from jaxmarl_accel.algos.value.config import ValueConfig
from jaxmarl_accel.benchmark.jaxmarl_scripts import Collector
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.envs import make
from jaxmarl_accel.trainer.compiling import compiler_options
from jaxmarl_accel.trainer.train import make_trainer

DEFAULT_ENV_KWARGS = {"see_enemy_actions": True, "walls_cause_death": True,
                      "attack_mode": "closest"}  # ql_rnn_smax.yaml's, without --jaxmarl-src


def env_kwargs(config: dict[str, Any], map_name: str) -> tuple[tuple[str, Any], ...]:
    """Our ``--env-kwargs`` for JaxMARL's ``ENV_KWARGS`` and the map."""
    return tuple(sorted({**config.get("ENV_KWARGS", {}), "scenario": map_name}.items()))


def our_config(settings: Settings, kwargs: tuple, env_steps: int, episode_steps: int,
               algo: str = "qmix") -> TrainConfig:
    """Our ``algo`` run (a key of :data:`~.smax_sides.BASELINES`) of about
    ``env_steps`` env steps (whole rounds of ``num_envs`` episodes of ``episode_steps`` rows);
    MAC-PO with its defaults (its weights as the replay's priorities)."""
    per_round = settings.num_envs * episode_steps
    total = max(1, round(env_steps / per_round)) * per_round
    value = ValueConfig(
        hidden=settings.hidden, mixer_embed=settings.mixer_embed,
        hypernet_hidden=settings.hypernet_hidden, lr=settings.lr, gamma=settings.gamma,
        td_lambda=0.0, grad_clip=settings.max_grad_norm, reward_scale=settings.rew_scale,
        target_update_episodes=settings.target_update_interval * settings.num_envs,
        epsilon_start=settings.eps_start, epsilon_finish=settings.eps_finish,
        epsilon_anneal_steps=max(1, int(settings.eps_decay * total)), double_q=True)
    return TrainConfig(env=f"jaxmarl:{ENV_ID}", env_kwargs=kwargs, algo=algo,
                       learner=value, buffer_capacity=settings.buffer_size,
                       batch_size=settings.batch_size, num_envs=settings.num_envs,
                       total_env_steps=total, eval_every=total,
                       eval_episodes=settings.test_num_envs,
                       learning_starts=settings.learning_starts)


def with_overrides(config: TrainConfig, assignments: list[str]) -> TrainConfig:
    """``config`` with each ``KEY=VALUE`` applied to the learner's or the run's field of that
    name, the value converted to the field's type."""
    for assignment in assignments:
        key, sep, text = assignment.partition("=")
        target = "learner" if key in {f.name for f in dataclasses.fields(ValueConfig)} else None
        fields = {f.name: f for f in dataclasses.fields(ValueConfig if target else TrainConfig)}
        if not sep or key not in fields or key == "learner":
            raise ValueError(f"--ours-set {assignment!r}: expected KEY=VALUE with KEY a field "
                             "of ValueConfig or TrainConfig")
        current = getattr(config.learner if target else config, key)
        value = (text.lower() in ("1", "true", "yes") if isinstance(current, bool)
                 else type(current)(float(text) if isinstance(current, int) else text))
        config = (dataclasses.replace(config, learner=dataclasses.replace(
            config.learner, **{key: value})) if target else dataclasses.replace(
                config, **{key: value}))
    return config


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The bench's flags."""
    parser.add_argument("--jaxmarl-src", default=None,
                        help="root of a local copy of the JaxMARL repository (holding "
                             f"{reference_script('qmix')}, or for --algo vdn "
                             f"{reference_script('vdn')}); without it only ours runs")
    parser.add_argument("--algo", default="qmix", choices=sorted(BASELINES),
                        help="our learner: qmix (beside JaxMARL's qmix_rnn.py, the default), "
                             "vdn (beside its vdn_rnn.py) or macpo (MAC-PO with its defaults, "
                             "beside its qmix_rnn.py: JaxMARL has no MAC-PO)")
    parser.add_argument("--json", default=None, help="write the record to this JSON file")
    parser.add_argument("--map", default="3m", help="SMAX map (default: 3m)")
    parser.add_argument("--env-steps", type=float, default=2e6,
                        help="env steps per seed on both sides (default: 2e6)")
    parser.add_argument("--ref-env-steps", type=float, default=None, help="JaxMARL's env steps "
                        "per seed (default: --env-steps; all real: ours count 101 a battle)")
    parser.add_argument("--seeds", type=int, default=4, help="seeds per side (default: 4)")
    parser.add_argument("--seed", type=int, default=0, help="PRNG seed of the keys")
    parser.add_argument("--ours-vmapped", action="store_true",
                        help="also time our program over all seeds at once")
    parser.add_argument("--vmap-seeds", action="store_true",
                        help="each side trains all seeds in one program vmapped over seeds, "
                             "called once (for GPUs; on CPU JaxMARL's program vmapped over "
                             "seeds hangs, so with the reference and 2 or more seeds this is "
                             "refused there)")
    add_collect_block_argument(parser)
    parser.add_argument("--breakdown", action="store_true", help="split each side's round into "
                        "collection and updates, the steady state once both learn (smax_rounds)")
    parser.add_argument("--ours-set", action="append", default=[], metavar="KEY=VALUE",
                        help="change one of our settings after matching theirs: a field of "
                             "ValueConfig (e.g. lr=1e-3, td_lambda=0.6) or of TrainConfig "
                             "(e.g. batch_size=128); repeatable")
    small = parser.add_argument_group("settings for a quick check (both sides; default: "
                                      "JaxMARL's ql_rnn_smax.yaml)")
    for name in ("num_envs", "num_steps", "batch_size", "hidden", "learning_starts",
                 "test_num_envs", "max_steps"):
        small.add_argument(f"--{name.replace('_', '-')}", type=int, default=None)


def check_args(args: argparse.Namespace) -> None:
    """One-line ``ValueError`` for flags the bench cannot run."""
    if min(args.seeds, args.env_steps, 1 if args.ref_env_steps is None else args.ref_env_steps) < 1:
        raise ValueError("--seeds, --env-steps and --ref-env-steps must be >= 1")
    if args.breakdown and args.vmap_seeds:
        raise ValueError("--breakdown times one seed per program; drop --vmap-seeds")
    if (args.vmap_seeds and args.jaxmarl_src and args.seeds > 1
            and jax.default_backend() == "cpu"):
        raise ValueError("--vmap-seeds with the reference on CPU: JaxMARL's program vmapped "
                         "over seeds hangs in jaxlib's batched LAPACK QR; run per seed "
                         "(without --vmap-seeds) or on a GPU")


def main(args: argparse.Namespace) -> None:
    check_args(args)
    reference = load_reference(args.jaxmarl_src, args.algo)
    if reference is None:
        print("reference skipped: no --jaxmarl-src; running ours only", flush=True)
    base = reference[1] if reference else {"ENV_KWARGS": DEFAULT_ENV_KWARGS}
    if args.max_steps is not None:
        base = {**base, "ENV_KWARGS": {**base["ENV_KWARGS"], "max_steps": args.max_steps}}
    settings = settings_from(base) if reference else Settings()
    settings = dataclasses.replace(settings, **{
        name: getattr(args, name) for name in ("num_envs", "num_steps", "batch_size", "hidden",
                                               "learning_starts", "test_num_envs")
        if getattr(args, name) is not None})
    kwargs = env_kwargs(base, args.map)
    episode_steps = make(f"jaxmarl:{ENV_ID}", **dict(kwargs))[0].spec.episode_length
    apply_collect_block(args.collect_block)
    config = with_overrides(our_config(settings, kwargs, int(args.env_steps), episode_steps,
                                       args.algo), args.ours_set)
    steps = config.total_env_steps  # both sides train for our whole rounds
    ref_steps = int(args.ref_env_steps) if args.ref_env_steps else steps
    ref_round = settings.num_steps * settings.num_envs  # theirs: NUM_UPDATES whole rounds
    keys = jax.random.split(jax.random.PRNGKey(args.seed), args.seeds)
    record: dict[str, Any] = {
        "reference": str(Path(args.jaxmarl_src).resolve()) if reference else None,
        "algo": args.algo, "reference_script": reference_script(args.algo),
        "map": args.map, "env_kwargs": dict(kwargs), "settings": dataclasses.asdict(settings),
        "ours_set": list(args.ours_set), "collect_block": args.collect_block,
        "seeds": args.seeds, "seed": args.seed, "backend": jax.default_backend(),
        "cpu_count": os.cpu_count(), "device": str(jax.devices()[0].device_kind),
        "jax": jax.__version__, "load_average_start": list(os.getloadavg())}
    print(f"{args.algo} on {ENV_ID} {args.map}: {steps:,} env steps per seed, {args.seeds} seed(s)",
          flush=True)
    episodes = steps // episode_steps
    real_steps = lambda out: [float(length) * episodes for length in np.asarray(
        out[1].train_stats["episode_length"])[:, -1]]  # one chunk: eval_every = total
    options = compiler_options()
    record.update(run_side("ours", make_trainer(config).train, keys, steps, our_win_rates,
                           our_updates, args.vmap_seeds, real_steps, options))
    write_record(args.json, record)
    if args.ours_vmapped and not args.vmap_seeds:
        compiled, lower_s, xla_s = compile_program(make_trainer(config).train, keys, options)
        elapsed, _ = timed_call(compiled, keys)
        record.update(ours_vmapped_compile_s=lower_s + xla_s,
                      ours_vmapped_steps_per_s=args.seeds * steps / elapsed)
    ref_config = reference_config(base, settings, args.map, ref_steps)
    if reference is not None:
        module = reference[0]
        env, _ = module.env_from_config(copy.deepcopy(ref_config))
        progress = Collector(ref_steps // ref_round * ref_round, name="ref", keys=keys)
        record.update(run_side("ref", module.make_train(progress.attach(module, ref_config),
                                                        env), keys, progress.total_steps,
                               reference_win_rates, reference_updates, args.vmap_seeds))
        record["ref_curve"] = progress.curves()
        # theirs steps every env on (auto-reset): all its steps are real ones
        record["steps_ratio_median"] = (record["ours_real_steps_per_s_median"]
                                        / record["ref_steps_per_s_median"])
        record["counted_steps_ratio_median"] = (record["ours_steps_per_s_median"]
                                                / record["ref_steps_per_s_median"])
    if args.breakdown:
        breakdown(record, config, reference[0] if reference else None, ref_config, keys,
                  ref_round, steps // (settings.num_envs * episode_steps),
                  int(base.get("NUM_EPOCHS", 8)))
    record["load_average_end"] = list(os.getloadavg())
    write_record(args.json, record)
    for side in ("ours", "ref") if reference else ("ours",):
        low, high = record[f"{side}_win_rate_iqr"]
        real = record.get(f"{side}_real_steps_per_s_median")
        print(f"{side}: win rate median {record[f'{side}_win_rate_median']:.3f} (IQR "
              f"{low:.3f} to {high:.3f}), {record[f'{side}_steps_per_s_median']:,.0f} env "
              f"steps/s{f' counted, {real:,.0f} real' if real else ''}, "
              f"compile {record[f'{side}_compile_s']:.1f} s, "
              f"{record[f'{side}_updates_per_seed']} updates per seed", flush=True)

