"""Recurrent QMIX against JaxMARL's ``baselines/QLearning/qmix_rnn.py``, side by side.

``python -m experiments.bench qmix --jaxmarl-src PATH --seeds 1 8 --json PATH`` builds, for
each seed count, two whole training runs on MPE spread with 3 agents, each one compiled
program ``jax.jit(jax.vmap(train))`` over the seeds' keys:

* ours: ``make_trainer(config).train`` with ``algo="qmix"`` (episode rounds);
* theirs: ``make_train(config, env)`` of ``PATH/baselines/QLearning/qmix_rnn.py``, imported
  from that local copy of the JaxMARL repository and run on the installed ``jaxmarl``'s envs
  and wrappers, with its own settings (``config/config.yaml`` merged with
  ``config/alg/ql_rnn_mpe.yaml``), loaded as the benchmark command's reference pairs load it
  (:func:`jaxmarl_accel.benchmark.jaxmarl_scripts.load_baseline`: stand-ins for hydra,
  omegaconf and wandb where they are not installed).

Both runs have the same number of rounds (``--rounds``): a round runs one episode in each
of the 8 envs, adds the 8 episodes to the episode replay and, once learning has started,
makes one update on a batch of 32 episodes. Learning starts at the same round on both sides
(theirs: once its replay holds ``BUFFER_BATCH_SIZE`` rounds and ``LEARNING_STARTS`` env steps
have been taken; ours: ``learning_starts`` set to that round's env steps), so both make the
same number of updates (read back from both programs' outputs and recorded).

Timing: compile time is ``lower().compile()`` of the whole program after ``jax.clear_caches()``
(tracing and lowering, then XLA, recorded apart). Ours is compiled with the XLA options the
library compiles its programs with (:func:`jaxmarl_accel.trainer.compiling.compiler_options`: on
the CPU, optimization level 1 with LLVM's expensive passes off), theirs with XLA's defaults, as
each side's users get them; ``--ref-compiler-options ours`` gives theirs our options too (both
recorded as ``*_compiler_options``). Throughput is env steps per second of the compiled program
including its initialisation and learning, ``block_until_ready``, one warm-up call then
``--reps`` calls of each side interleaved (ours, theirs, ours, ...) so that both see the same
background load; ``steps_per_s`` is the fastest call (the least disturbed on a shared machine),
``steps_per_s_median`` the median. Env steps are what each program steps: 25 per episode for
ours, 26 for theirs (its rollout takes ``NUM_STEPS`` = 26 steps, the last one into the next
episode, which only bootstraps the final target); ``rounds_ratio`` compares rounds (episodes and
updates) per second. With ``--breakdown`` the 1-seed programs run once more without learning
(learning starting after the run), which splits a round into collection and the update.

Settings matched (ours from theirs): 8 envs, batch 32 episodes, replay 5000 episodes,
learning rate 0.005, gradient clipping at norm 25, gamma 0.9, one-step double-Q targets
(``td_lambda = 0``), agent network Dense 64 -> ReLU -> GRU 64 -> Dense shared by all agents,
QMIX mixer with embedding 32 and hypernetworks of 128 units, mixer state the concatenated
observations, team reward the sum of the agents' rewards, hard target copy every 200 rounds
(``target_update_episodes`` = 200 x 8), epsilon 1.0 -> 0.05 over the first 10% of the run's
rounds (``EPS_DECAY`` 0.1), one update per round.

Differences that remain:

* optimizer: theirs RAdam with the learning rate decaying linearly to 1e-10 over the run;
  ours Adam at a constant rate;
* agent input: theirs observation and agent id (21); ours also the previous action's
  one-hot (26), as in pymarl2;
* episode rows: theirs 26 env steps per episode row set (25 transitions learned, the 26th
  step, into the next episode, only bootstraps), ours 25 steps and the pre-reset
  observation as row 26; theirs resets the GRU state on ``done`` inside its scan, ours
  starts every replayed episode from a zero state;
* loss: theirs the plain mean over the 25 transitions, ours the mean over filled steps
  (all 25 on MPE spread);
* initialisation: theirs orthogonal (mixer scale 0.001), ours flax's defaults;
* evaluation: theirs ``TEST_DURING_TRAINING`` off (its greedy tests of 512 envs every 5% of
  updates would dominate a short run), ours one greedy evaluation of 8 episodes at the end;
* epsilon clock: theirs counts rounds (updates of its scan), ours env steps; both reach
  0.05 after the same round.

On jaxlib 0.10.2's CPU backend, on the 2-core development machine, JaxMARL's program
vmapped over 2 or more seeds hangs in ``block_until_ready``, with and without
``--xla-flags=--xla_cpu_use_xnnpack=false`` or ``--xla_cpu_multi_thread_eigen=false``: its
GRU's orthogonal initializer runs LAPACK's QR under ``vmap``, whose batched kernel waits on
XLA's intra-op pool from inside it (ours draws the same matrices with plain ``jnp``,
:mod:`jaxmarl_accel.algos.initializers`). On CPU the reference therefore runs at 1 seed
only: larger seed counts time ours alone and their records say why
(``reference_skipped``).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import os
import sys
import types
from pathlib import Path
from typing import Any

import jax
import numpy as np

from experiments.bench.timing import (
    Side,
    add_collect_block_argument,
    apply_collect_block,
    run_sides,
    write_record,
)
from jaxmarl_accel.algos.value.config import ValueConfig
from jaxmarl_accel.benchmark.jaxmarl_scripts import SCRIPTS, load_baseline, stand_ins
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.trainer.compiling import compiler_options
from jaxmarl_accel.trainer.train import make_trainer

REFERENCE = ("qmix_rnn", "mpe")  # JaxMARL's baseline and suite (jaxmarl_scripts.SCRIPTS)
OUR_EPISODE_STEPS = 25  # MPE spread's episode length


@dataclasses.dataclass(frozen=True)
class Settings:
    """The run's settings, named after JaxMARL's keys (``ql_rnn_mpe.yaml``'s values by
    default; read from the reference's config files when it is given).

    Attributes:
      num_envs: NUM_ENVS, envs per seed (one episode each per round).
      num_steps: NUM_STEPS, env steps of one round's rollout in theirs (25 + 1).
      buffer_size: BUFFER_SIZE, episodes the replay holds.
      batch_size: BUFFER_BATCH_SIZE, episodes per update (and rounds before theirs samples).
      hidden: HIDDEN_SIZE, agent network width.
      mixer_embed: MIXER_EMBEDDING_DIM.
      hypernet_hidden: MIXER_HYPERNET_HIDDEN_DIM.
      lr: LR.
      gamma: GAMMA.
      max_grad_norm: MAX_GRAD_NORM.
      target_update_interval: TARGET_UPDATE_INTERVAL, rounds between hard target copies.
      eps_start, eps_finish: EPS_START, EPS_FINISH.
      eps_decay: EPS_DECAY, fraction of the rounds over which epsilon anneals.
      learning_starts: LEARNING_STARTS, env steps (theirs) before the first update.
    """

    num_envs: int = 8
    num_steps: int = 26
    buffer_size: int = 5000
    batch_size: int = 32
    hidden: int = 64
    mixer_embed: int = 32
    hypernet_hidden: int = 128
    lr: float = 0.005
    gamma: float = 0.9
    max_grad_norm: float = 25.0
    target_update_interval: int = 200
    eps_start: float = 1.0
    eps_finish: float = 0.05
    eps_decay: float = 0.1
    learning_starts: int = 10_000


def _key(field: str) -> str:
    return {"batch_size": "BUFFER_BATCH_SIZE", "hidden": "HIDDEN_SIZE",
            "mixer_embed": "MIXER_EMBEDDING_DIM",
            "hypernet_hidden": "MIXER_HYPERNET_HIDDEN_DIM"}.get(field, field.upper())


def settings_from(config: dict[str, Any]) -> Settings:
    """:class:`Settings` from JaxMARL's merged config dict (keys as in its YAML files)."""
    values = {}
    for field in dataclasses.fields(Settings):
        default = getattr(Settings, field.name)
        values[field.name] = type(default)(config.get(_key(field.name), default))
    return Settings(**values)


def first_update_round(settings: Settings) -> int:
    """The 1-based round of the first update in theirs: its trajectory replay samples once it
    holds ``batch_size`` rounds, and it learns once more than ``learning_starts`` env steps
    (``num_steps * num_envs`` a round) have been taken."""
    per_round = settings.num_steps * settings.num_envs
    return max(settings.batch_size, settings.learning_starts // per_round + 1)


def our_config(settings: Settings, rounds: int, learn: bool = True) -> TrainConfig:
    """Our QMIX run with ``settings`` for ``rounds`` rounds (learning from the same round as
    theirs, or never when ``learn`` is False)."""
    per_round = OUR_EPISODE_STEPS * settings.num_envs
    total = rounds * per_round
    value = ValueConfig(
        hidden=settings.hidden, mixer_embed=settings.mixer_embed,
        hypernet_hidden=settings.hypernet_hidden, lr=settings.lr, gamma=settings.gamma,
        td_lambda=0.0, grad_clip=settings.max_grad_norm,
        target_update_episodes=settings.target_update_interval * settings.num_envs,
        epsilon_start=settings.eps_start, epsilon_finish=settings.eps_finish,
        epsilon_anneal_steps=max(1, round(settings.eps_decay * rounds) * per_round),
        double_q=True)
    starts = first_update_round(settings) * per_round if learn else total + 1
    return TrainConfig(env="simple_spread", env_kwargs=(("num_agents", 3),), algo="qmix",
                       learner=value, buffer_capacity=settings.buffer_size,
                       batch_size=settings.batch_size, num_envs=settings.num_envs,
                       total_env_steps=total, eval_every=total, eval_episodes=8,
                       learning_starts=starts)


def reference_config(base: dict[str, Any], settings: Settings, rounds: int,
                     learn: bool = True) -> dict[str, Any]:
    """JaxMARL's config dict: its own merged ``base`` with ``settings``, ``rounds`` rounds,
    no tests during training and no logging (no learning when ``learn`` is False)."""
    config = copy.deepcopy(base)
    config.update({_key(f.name): getattr(settings, f.name) for f in dataclasses.fields(Settings)})
    total = rounds * settings.num_steps * settings.num_envs
    config.update(TOTAL_TIMESTEPS=total, TEST_DURING_TRAINING=False, WANDB_MODE="disabled",
                  NUM_EPOCHS=1, TAU=1.0)
    if not learn:
        config["LEARNING_STARTS"] = total + 1
    return config


def _logging_stand_ins() -> Any:
    """Empty ``hydra``, ``omegaconf`` and ``wandb`` modules while a JaxMARL script is
    imported (:func:`jaxmarl_accel.benchmark.jaxmarl_scripts.stand_ins`; ``bench ippo``
    loads its script with it)."""
    return stand_ins()


def check_reference_src(src: str, script: Path) -> None:
    """Refuse (ValueError, one line) a ``--jaxmarl-src`` that does not hold JaxMARL's
    ``script`` before anything is compiled (``bench ippo``'s check)."""
    if not (Path(src) / script).is_file():
        raise ValueError(f"--jaxmarl-src {src!r} holds no {script}: give the root of "
                         "a JaxMARL checkout, or leave the flag out to run ours only")


def load_reference(src: str | None, baseline: str = REFERENCE[0], suite: str = REFERENCE[1]
                   ) -> tuple[types.ModuleType, dict[str, Any]] | None:
    """JaxMARL's ``baseline`` script on ``suite`` (default: ``qmix_rnn`` on MPE) as a module
    and its own config (:func:`~jaxmarl_accel.benchmark.jaxmarl_scripts.load_baseline`), from
    a local copy of the JaxMARL repository at ``src``; None when ``src`` is None (ours only);
    a ``src`` without the script is refused in one line before anything is compiled."""
    if src is None:
        return None
    try:
        return load_baseline(src, baseline, suite)
    except ValueError as error:
        raise ValueError(f"--jaxmarl-src: {error}, or leave the flag out to run ours "
                         "only") from None


def our_updates(out: Any) -> int:
    """Updates of seed 0 in our program's output (summed over its chunks)."""
    return int(np.asarray(out[1].updates)[0].sum())


def reference_updates(out: Any) -> int:
    """Updates (gradient steps) of seed 0 in theirs."""
    return int(np.asarray(out["runner_state"][0].grad_steps)[0])


def bench_seeds(args: argparse.Namespace, settings: Settings, reference: Any | None,
                seeds: int, learn: bool = True) -> dict[str, Any]:
    """The record of one seed count: both sides compiled, timed and compared."""
    keys = jax.random.split(jax.random.PRNGKey(args.seed), seeds)
    ours_options = compiler_options()
    sides = [Side("ours", make_trainer(our_config(settings, args.rounds, learn)).train, keys,
                  args.rounds * settings.num_envs * OUR_EPISODE_STEPS, our_updates,
                  ours_options)]
    if reference is not None:
        module, base = reference
        config = reference_config(base, settings, args.rounds, learn)
        env, _ = module.env_from_config(copy.deepcopy(config))
        sides.append(Side("ref", module.make_train(copy.deepcopy(config), env), keys,
                          config["TOTAL_TIMESTEPS"], reference_updates,
                          ours_options if args.ref_compiler_options == "ours" else None))
    run_sides(sides, args.reps)
    record: dict[str, Any] = {"seeds": seeds, "rounds": args.rounds, "learning": learn,
                              "first_update_round": first_update_round(settings)}
    for side in sides:
        record.update(side.summary())
    if reference is not None:
        ours, ref = sides
        record["steps_ratio"] = record["ours_steps_per_s"] / record["ref_steps_per_s"]
        record["steps_ratio_median"] = (record["ours_steps_per_s_median"]
                                        / record["ref_steps_per_s_median"])
        record["rounds_ratio"] = min(ref.samples) / min(ours.samples)
        record["compile_ratio"] = record["ours_compile_s"] / record["ref_compile_s"]
        record["hlo_ratio"] = record["ours_hlo_instructions"] / record["ref_hlo_instructions"]
    return record


def breakdown(with_learning: dict[str, Any], without: dict[str, Any], side: str,
              rounds: int) -> dict[str, float]:
    """Milliseconds of a round's collection (the run without learning, per round) and of one
    update (the extra time of the run with learning, per update), fastest calls."""
    full, collect = min(with_learning[f"{side}_seconds"]), min(without[f"{side}_seconds"])
    updates = max(with_learning[f"{side}_updates_per_seed"], 1)
    return {f"{side}_collect_ms_per_round": 1e3 * collect / rounds,
            f"{side}_update_ms": 1e3 * (full - collect) / updates}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The bench's flags."""
    parser.add_argument("--jaxmarl-src", default=None,
                        help="root of a local copy of the JaxMARL repository (holding "
                             f"baselines/{SCRIPTS[REFERENCE]}); without it only ours runs")
    parser.add_argument("--json", default=None, help="write the record to this JSON file")
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 8],
                        help="seed counts trained at once (default: 1 8)")
    parser.add_argument("--rounds", type=int, default=128,
                        help="rounds per seed: one episode per env and, once learning has "
                             "started (round 49 at JaxMARL's settings), one update (default: 128)")
    parser.add_argument("--reps", type=int, default=2,
                        help="timed calls of each side after a warm-up call (default: 2)")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time the 1-seed programs without learning, to split a "
                             "round into collection and update")
    parser.add_argument("--seed", type=int, default=0, help="PRNG seed of the keys")
    parser.add_argument("--ref-compiler-options", choices=("xla", "ours"), default="xla",
                        help="XLA options JaxMARL's program is compiled with: xla = XLA's "
                             "defaults (default), ours = the options ours is compiled with "
                             "(jaxmarl_accel.trainer.compiling)")
    add_collect_block_argument(parser)
    parser.add_argument("--xla-flags", default="",
                        help="added to XLA_FLAGS before the backend starts, for both sides "
                             "(e.g. --xla_cpu_multi_thread_eigen=false; see the module docstring)")
    overrides = parser.add_argument_group(
        "settings (both sides; default: JaxMARL's ql_rnn_mpe.yaml)")
    for name in ("num_envs", "batch_size", "buffer_size", "hidden", "mixer_embed",
                 "hypernet_hidden", "learning_starts"):
        overrides.add_argument(f"--{name.replace('_', '-')}", type=int, default=None)


def main(args: argparse.Namespace) -> None:
    if args.rounds < 1 or args.reps < 1 or min(args.seeds) < 1:
        raise ValueError("--rounds, --reps and every --seeds count must be >= 1")
    if args.xla_flags:  # read when the backend starts (jaxmarl's import may start it)
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {args.xla_flags}".strip()
    apply_collect_block(args.collect_block)
    reference = load_reference(args.jaxmarl_src)
    settings = settings_from(reference[1]) if reference is not None else Settings()
    chosen = {name: getattr(args, name) for name in
              ("num_envs", "batch_size", "buffer_size", "hidden", "mixer_embed",
               "hypernet_hidden", "learning_starts") if getattr(args, name) is not None}
    settings = dataclasses.replace(settings, **chosen)
    if reference is None:
        print("reference skipped: no --jaxmarl-src; timing ours only", flush=True)
    result: dict[str, Any] = {
        "reference": None if reference is None else str(Path(args.jaxmarl_src).resolve()),
        "settings": dataclasses.asdict(settings), "backend": jax.default_backend(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""), "collect_block": args.collect_block,
        "cpu_count": os.cpu_count(), "load_average_start": list(os.getloadavg()),
        "records": []}
    header = (f"{'seeds':>5}{'ours steps/s':>14}{'jaxmarl steps/s':>17}{'ratio':>7}"
              f"{'(median)':>9}{'ours compile s':>16}{'jaxmarl compile s':>19}{'ratio':>7}"
              f"{'updates':>9}")
    print(header, flush=True)
    for seeds in args.seeds:
        hangs = reference is not None and seeds > 1 and jax.default_backend() == "cpu"
        if hangs:
            print(f"{seeds} seeds: ours only; JaxMARL's program hangs vmapped over seeds on "
                  "CPU (module docstring)", file=sys.stderr, flush=True)
        record = bench_seeds(args, settings, None if hangs else reference, seeds)
        if hangs:
            record["reference_skipped"] = "JaxMARL's program hangs vmapped over seeds on CPU"
        result["records"].append(record)
        nan = float("nan")
        print(f"{seeds:>5}{record['ours_steps_per_s']:>14,.0f}"
              f"{record.get('ref_steps_per_s', nan):>17,.0f}{record.get('steps_ratio', nan):>7.2f}"
              f"{record.get('steps_ratio_median', nan):>9.2f}{record['ours_compile_s']:>16.1f}"
              f"{record.get('ref_compile_s', nan):>19.1f}{record.get('compile_ratio', nan):>7.2f}"
              f"{record['ours_updates_per_seed']:>5}/{record.get('ref_updates_per_seed', '-')}",
              flush=True)
        write_record(args.json, result)
    if args.breakdown:
        with_learning = next((r for r in result["records"] if r["seeds"] == 1), None)
        if with_learning is None:
            with_learning = bench_seeds(args, settings, reference, 1)
        without = bench_seeds(args, settings, reference, 1, learn=False)
        parts = {"no_learning": without}
        for side in ("ours", "ref") if reference is not None else ("ours",):
            parts.update(breakdown(with_learning, without, side, args.rounds))
        result["breakdown"] = parts
        print("1 seed, ms: " + ", ".join(f"{k} {v:.2f}" for k, v in parts.items()
                                         if k != "no_learning"), flush=True)
    result["load_average_end"] = list(os.getloadavg())
    write_record(args.json, result)

