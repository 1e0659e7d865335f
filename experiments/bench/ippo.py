"""PPO against JaxMARL's ``baselines/IPPO/ippo_ff_mpe.py`` on MPE spread, side by side.

``python -m experiments.bench ippo --jaxmarl-src PATH --seeds 1 4 --json PATH`` times, for
each seed count, whole training runs at JaxMARL's ``ippo_ff_mpe.yaml`` settings (16 envs x
128 steps a rollout, 4 epochs of 4 minibatches, two hidden layers of 64 units, lr 2.5e-4,
gamma 0.99, GAE lambda 0.95, clip 0.2, entropy 0.01, value 0.5, gradient norm 0.5) and the
same env steps a seed (``--env-steps``, rounded down to whole rollouts of 2,048 env steps):

* ours: ``make_trainer(config).train`` with ``algo="ppo"``, every seed in one program
  ``jax.jit(jax.vmap(train))`` over the seeds' keys, on each ``--env`` (our ``simple_spread``
  and JaxMARL's own env through the adapter, ``jaxmarl:MPE_simple_spread_v3``), one greedy
  evaluation at the end (``eval_every`` = the whole run);
* theirs: ``make_train(config)`` of ``PATH/baselines/IPPO/ippo_ff_mpe.py``, imported from
  that local copy of the JaxMARL repository and run on the installed ``jaxmarl``, with its
  own settings. Its seeds run ONE AFTER ANOTHER through one compiled ``jax.jit(train)``: its
  own ``NUM_SEEDS`` vmap batches the QR of its orthogonal initializers, which deadlocks XLA's
  intra-op pool on a 2-core CPU (jax 0.10.2). Its module imports hydra, omegaconf and wandb;
  missing ones get empty stand-ins for the import, and its per-update ``io_callback`` (as its
  users run it) calls a ``wandb.log`` that does nothing.

Timing: each program is compiled once (``lower().compile()``, recorded apart), called once
to warm up (not with ``--no-warmup``), then ``--reps`` timed calls interleaved (ours, theirs,
ours, ...) so that both see the same machine; a call of theirs is all its seeds one by one.
``steps_per_s`` is env steps (one step of one env, every agent acting) of all seeds over the
fastest call, ``_median`` over the median call. The final return of a seed is the mean
per-agent return of the training (exploration) episodes of its last rollout on JaxMARL's side
(its ``returned_episode_returns`` of the last update, divided by the agent count its log
wrapper multiplies the rewards by) and of its last chunk on ours (``train_return``: the whole
run unless ``--eval-every`` cuts it into chunks), with our greedy evaluation's
(``eval_return``) beside it.

Differences that remain (ours is the library's PPO at these settings): theirs anneals the
learning rate linearly to 0 and uses Adam's epsilon 1e-5, ours a constant rate and epsilon
1e-8; theirs has separate actor and critic networks with tanh, ours one ReLU torso with a
policy and a value head (paper 003's network); theirs bootstraps a time-limit end as a
terminal state, ours from the value of the last observation.
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import os
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import jax
import numpy as np

from experiments.bench.qmix import _logging_stand_ins, check_reference_src
from experiments.bench.timing import compile_program, write_record
from jaxmarl_accel.algos.on_policy.config import OnPolicyConfig
from jaxmarl_accel.algos.registry import algo_phases
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.trainer.compiling import compiler_options
from jaxmarl_accel.trainer.train import make_trainer

REFERENCE_SCRIPT = Path("baselines/IPPO/ippo_ff_mpe.py")
REFERENCE_CONFIG = Path("baselines/IPPO/config/ippo_ff_mpe.yaml")
ENVS = ("simple_spread", "jaxmarl:MPE_simple_spread_v3")
LAYOUTS_CHILD = "JAXMARL_BENCH_LAYOUTS_CHILD"
"""Set in the process ``--layouts`` starts when its own CPU backend had started unsplit."""


def load_reference(src: str | None) -> tuple[types.ModuleType, dict[str, Any]] | None:
    """JaxMARL's script as a module and its config, from a JaxMARL checkout at ``src``;
    None when ``src`` is None (ours only). Its ``wandb`` is replaced by one whose ``log``
    does nothing (the per-update callback still runs)."""
    if src is None:
        return None
    check_reference_src(src, REFERENCE_SCRIPT)
    import yaml  # a dependency of flax

    with open(Path(src) / REFERENCE_CONFIG) as handle:
        config = yaml.safe_load(handle)
    spec = importlib.util.spec_from_file_location("jaxmarl_ippo_ff_mpe",
                                                  Path(src) / REFERENCE_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    with _logging_stand_ins():
        spec.loader.exec_module(module)
    module.wandb = types.SimpleNamespace(log=lambda *args, **kwargs: None)
    return module, config


def rollout_steps(base: dict[str, Any]) -> int:
    """Env steps of one rollout of every env (``NUM_ENVS x NUM_STEPS``)."""
    return int(base["NUM_ENVS"]) * int(base["NUM_STEPS"])


def reference_config(base: dict[str, Any], env_steps: int) -> dict[str, Any]:
    """JaxMARL's config with ``TOTAL_TIMESTEPS`` set to ``env_steps`` a seed."""
    return {**copy.deepcopy(base), "TOTAL_TIMESTEPS": env_steps}


def our_config(base: dict[str, Any], env: str, env_steps: int, eval_episodes: int = 32,
               eval_every: int | None = None) -> TrainConfig:
    """Our PPO run at the settings of JaxMARL's ``base`` config on ``env``: one chunk (one
    greedy evaluation, at the end) unless ``eval_every`` env steps say otherwise."""
    learner = OnPolicyConfig(
        hidden_sizes=(64, 64), lr=float(base["LR"]), gamma=float(base["GAMMA"]),
        gae_lambda=float(base["GAE_LAMBDA"]), clip_eps=float(base["CLIP_EPS"]),
        entropy_coef=float(base["ENT_COEF"]), value_coef=float(base["VF_COEF"]),
        grad_clip=float(base["MAX_GRAD_NORM"]), rollout_length=int(base["NUM_STEPS"]),
        epochs=int(base["UPDATE_EPOCHS"]), minibatches=int(base["NUM_MINIBATCHES"]))
    return TrainConfig(algo="ppo", env=env, learner=learner, num_envs=int(base["NUM_ENVS"]),
                       total_env_steps=env_steps, eval_every=eval_every or env_steps,
                       eval_episodes=eval_episodes)


class Program:
    """One side's compiled program for a seed count, with its timed calls."""

    def __init__(self, name: str, compiled: Any, keys: jax.Array, compile_s: float,
                 steps_per_seed: int, one_by_one: bool) -> None:
        self.name, self.compiled, self.keys = name, compiled, keys
        self.compile_s, self.steps_per_seed, self.one_by_one = compile_s, steps_per_seed, one_by_one
        self.samples: list[float] = []
        self.out: Any = None

    def call(self, record: bool = True) -> None:
        start = time.perf_counter()
        if self.one_by_one:
            self.out = [jax.block_until_ready(self.compiled(key)) for key in self.keys]
        else:
            self.out = jax.block_until_ready(self.compiled(self.keys))
        if record:
            self.samples.append(time.perf_counter() - start)

    def summary(self) -> dict[str, Any]:
        steps = len(self.keys) * self.steps_per_seed
        return {"compile_s": self.compile_s, "env_steps_per_seed": self.steps_per_seed,
                "seconds": list(self.samples), "steps_per_s": steps / min(self.samples),
                "steps_per_s_median": steps / statistics.median(self.samples),
                "seeds_one_by_one": self.one_by_one}


def ours_program(config: TrainConfig, keys: jax.Array) -> tuple[Program, Any]:
    """Our whole run over ``keys`` in one ``jit(vmap(train))``, and its trainer."""
    trainer = make_trainer(config)
    compiled, lower_s, xla_s = compile_program(trainer.train, keys, compiler_options())
    return Program(f"ours[{config.env}]", compiled, keys, lower_s + xla_s,
                   trainer.total_steps, one_by_one=False), trainer


def reference_program(module: types.ModuleType, config: dict[str, Any], keys: jax.Array
                      ) -> Program:
    """JaxMARL's ``train`` compiled once for one key; its seeds run one by one."""
    jax.clear_caches()
    start = time.perf_counter()
    compiled = jax.jit(module.make_train(copy.deepcopy(config))).lower(keys[0]).compile()
    steps = (int(config["TOTAL_TIMESTEPS"]) // int(config["NUM_STEPS"])
             // int(config["NUM_ENVS"])) * rollout_steps(config)
    return Program("jaxmarl", compiled, keys, time.perf_counter() - start, steps,
                   one_by_one=True)


def our_returns(out: Any) -> dict[str, list[float]]:
    """Per seed: the last chunk's training and greedy returns, mean over agents."""
    metrics = out[1]
    return {"final_train_return": np.asarray(metrics.train_return)[:, -1].mean(-1).tolist(),
            "final_eval_return": np.asarray(metrics.eval_return)[:, -1].mean(-1).tolist()}


def reference_returns(outs: list[Any], num_agents: int) -> dict[str, list[float]]:
    """Per seed: the return logged in its last update (its ``MPELogWrapper`` multiplies
    the rewards by the agent count, "as per the on-policy codebase"), and that divided by
    the agent count: the per-agent return ours reports."""
    logged = [float(np.asarray(out["metrics"]["returned_episode_returns"])[-1]) for out in outs]
    return {"final_logged_return": logged,
            "final_train_return": [value / num_agents for value in logged]}


def reference_agents(base: dict[str, Any]) -> int:
    """Agents of JaxMARL's env of ``base`` (``ENV_NAME``)."""
    import jaxmarl

    return int(jaxmarl.make(base["ENV_NAME"], **base.get("ENV_KWARGS", {})).num_agents)


def bench_seeds(args: argparse.Namespace, base: dict[str, Any],
                reference: types.ModuleType | None, seeds: int) -> dict[str, Any]:
    """The record of one seed count: every side compiled, timed (interleaved) and scored."""
    keys = jax.random.split(jax.random.PRNGKey(args.seed), seeds)
    steps = args.env_steps // rollout_steps(base) * rollout_steps(base)
    programs = [ours_program(our_config(base, env, steps, eval_every=args.eval_every), keys)[0]
                for env in args.env]
    if reference is not None:
        programs.append(reference_program(reference, reference_config(base, steps), keys))
    for program in programs if args.warmup else ():
        program.call(record=False)
    for _ in range(args.reps):
        for program in programs:
            program.call()
    record: dict[str, Any] = {"seeds": seeds, "env_steps_per_seed": steps, "sides": {}}
    for program in programs:
        scores = (reference_returns(program.out, reference_agents(base))
                  if program.one_by_one else our_returns(program.out))
        record["sides"][program.name] = {**program.summary(), **scores}
    if reference is not None:
        ref = record["sides"]["jaxmarl"]["steps_per_s"]
        record["ratios"] = {name: side["steps_per_s"] / ref
                            for name, side in record["sides"].items() if name != "jaxmarl"}
    return record


def profile_minibatch_step(base: dict[str, Any], env: str, seeds: int, calls: int
                           ) -> dict[str, Any]:
    """One PPO minibatch step (every team's gradient step on ``rollout / NUM_MINIBATCHES``
    joint steps) of ``seeds`` seeds vmapped, on random data, profiled op by op
    (:func:`experiments.bench.update_profile.profile`): wall and busy milliseconds, cores
    kept busy and the slowest top-level instructions."""
    import jax.numpy as jnp

    from experiments.bench.update_profile import instructions, profile
    from jaxmarl_accel.algos.on_policy.learner import Minibatch

    config = our_config(base, env, rollout_steps(base))
    trainer = make_trainer(config)
    spec = trainer.env.spec
    step = algo_phases(config.algo, spec, config.learner).minibatch_step
    keys = jax.random.split(jax.random.PRNGKey(0), seeds)
    shape = (seeds, rollout_steps(base) // int(base["NUM_MINIBATCHES"]), spec.num_agents)
    batch = Minibatch(jax.random.normal(keys[0], (*shape, spec.obs_dim)),
                      jax.random.randint(keys[0], shape, 0, spec.num_actions),
                      -jnp.ones(shape), jax.random.normal(keys[0], shape),
                      jax.random.normal(keys[0], shape), None)
    state = jax.vmap(trainer.algo.init)(keys)
    compiled = jax.jit(jax.vmap(step), compiler_options=compiler_options()).lower(
        state, batch).compile()
    jax.block_until_ready(compiled(state, batch))
    result = profile(compiled, (state, batch), calls, instructions(compiled.as_text()))
    return {"seeds": seeds, **{name: result[name] for name in ("wall_ms", "busy_ms",
                                                                "cores_busy")},
            "top_level": result["top_level"][:12]}


def seed_layouts(base: dict[str, Any], env: str, seeds: int, cpu_devices: int, reps: int
                 ) -> dict[str, Any]:
    """One chunk of our run (10 rollouts and a greedy evaluation) at 1 seed and at ``seeds``
    seeds laid out three ways: in one ``vmap`` on one device, one seed after another on one
    device (:func:`~jaxmarl_accel.trainer.sharding.in_groups`), and sharded over
    ``cpu_devices`` CPU devices. Each program compiled once, then ``reps`` calls of all of
    them interleaved; per layout the fastest call's seconds and its ratio to 1 seed's."""
    from jaxmarl_accel.trainer.sharding import make_sharded_trainer, plan_layout

    trainer = make_trainer(our_config(base, env, 40 * 10 * rollout_steps(base),
                                      eval_every=10 * rollout_steps(base)))
    num_envs = trainer.config.num_envs
    layouts = {"1 seed": (1, 1, 1), f"{seeds} seeds, one vmap": (seeds, 1, 1),
               f"{seeds} seeds, one after another": (seeds, 1, seeds),
               f"{seeds} seeds on {cpu_devices} CPU devices": (seeds, cpu_devices, 1)}
    programs = {}
    for name, (count, devices, groups) in layouts.items():
        sharded = make_sharded_trainer(trainer, plan_layout(count, num_envs, devices), count,
                                       lane_groups=groups)
        compiled = sharded.run_chunk.lower(sharded.abstract_state, np.int32(0)).compile()
        state, _ = compiled(sharded.init(jax.random.PRNGKey(0)), np.int32(0))
        programs[name] = [compiled, jax.block_until_ready(state), []]
    for rep in range(reps):
        for program in programs.values():
            start = time.perf_counter()
            program[1], _ = program[0](program[1], np.int32(rep + 1))
            jax.block_until_ready(program[1])
            program[2].append(time.perf_counter() - start)
    one = min(programs["1 seed"][2])
    return {"env": env, "seeds": seeds, "cpu_devices": cpu_devices,
            "env_steps_per_seed": trainer.steps_per_chunk,
            "seconds": {name: min(p[2]) for name, p in programs.items()},
            "times_one_seed": {name: min(p[2]) / one for name, p in programs.items()}}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The bench's flags."""
    parser.add_argument("--jaxmarl-src", default=None,
                        help=f"root of a local copy of the JaxMARL repository (holding "
                             f"{REFERENCE_SCRIPT}); without it only ours runs")
    parser.add_argument("--json", default=None, help="write the record to this JSON file")
    parser.add_argument("--seeds", nargs="+", type=int, default=[1, 4],
                        help="seed counts (ours: in one program; JaxMARL's: one after "
                             "another) (default: 1 4)")
    parser.add_argument("--env-steps", type=int, default=204_800,
                        help="env steps a seed, rounded down to whole rollouts of "
                             "NUM_ENVS x NUM_STEPS (default: 204800)")
    parser.add_argument("--env", nargs="+", default=list(ENVS),
                        help=f"our env(s) (default: {' '.join(ENVS)})")
    parser.add_argument("--reps", type=int, default=3,
                        help="timed calls of each side after a warm-up call (default: 3)")
    parser.add_argument("--eval-every", type=int, default=None, metavar="STEPS",
                        help="our chunk: env steps between greedy evaluations (default: the "
                             "whole run, one chunk). Our final training return averages the "
                             "episodes of the last chunk: for a learning comparison, set it "
                             "to a few rollouts (e.g. 20480) so that it is the end of the "
                             "run's, as JaxMARL's last update's log is")
    parser.add_argument("--no-warmup", dest="warmup", action="store_false",
                        help="no untimed first call (for long runs, where it would double "
                             "the time and one call's start-up is negligible)")
    parser.add_argument("--seed", type=int, default=0, help="PRNG seed of the keys")
    parser.add_argument("--profile-step", type=int, default=0, metavar="CALLS",
                        help="also profile one minibatch step op by op at each seed count, "
                             "over CALLS calls (default: 0, off)")
    parser.add_argument("--layouts", type=int, default=0, metavar="CPU_DEVICES",
                        help="instead of the comparison: one chunk of ours at 1 seed and at "
                             "the largest --seeds count in one vmap, one seed after another "
                             "and sharded over CPU_DEVICES CPU devices (the CPU split before "
                             "JAX starts), each as a multiple of 1 seed's time")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="change one of JaxMARL's config keys for both sides (e.g. "
                             "NUM_ENVS=8); repeatable")


def parse_sets(pairs: list[str], base: dict[str, Any]) -> dict[str, Any]:
    """``base`` with each ``KEY=VALUE`` of ``--set`` applied (VALUE as YAML)."""
    import yaml

    changed = dict(base)
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key not in base:
            raise ValueError(f"--set {pair!r}: expected KEY=VALUE with KEY one of the "
                             f"config's keys ({', '.join(sorted(base))})")
        changed[key] = yaml.safe_load(value)
    return changed


def default_settings() -> dict[str, Any]:
    """JaxMARL's ``ippo_ff_mpe.yaml`` values this bench reads, for a run without its source."""
    return {"LR": 2.5e-4, "NUM_ENVS": 16, "NUM_STEPS": 128, "UPDATE_EPOCHS": 4,
            "NUM_MINIBATCHES": 4, "GAMMA": 0.99, "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2,
            "ENT_COEF": 0.01, "VF_COEF": 0.5, "MAX_GRAD_NORM": 0.5,
            "ENV_NAME": "MPE_simple_spread_v3", "ENV_KWARGS": {}}


def main(args: argparse.Namespace) -> None:
    if args.reps < 1 or min(args.seeds) < 1:
        raise ValueError("--reps and every --seeds count must be >= 1")
    start_load = list(os.getloadavg())
    if args.layouts:
        from jaxmarl_accel.cli.flags import split_cpu

        split_cpu(args.layouts)
        if jax.local_device_count() < args.layouts:  # the backend started before the split
            if os.environ.get(LAYOUTS_CHILD):
                raise ValueError(f"--layouts {args.layouts}: the CPU backend has "
                                 f"{jax.local_device_count()} device(s)")
            env = dict(os.environ, **{LAYOUTS_CHILD: "1"})
            subprocess.run([sys.executable, "-m", "experiments.bench", *sys.argv[1:]],
                           env=env, check=True)
            return
        base = parse_sets(args.set, default_settings())
        record = seed_layouts(base, args.env[0], max(args.seeds), args.layouts, args.reps)
        record.update(load_average_start=start_load, load_average_end=list(os.getloadavg()),
                      backend=jax.default_backend(), cpu_count=os.cpu_count())
        for name, ratio in record["times_one_seed"].items():
            print(f"{name:>36}: {record['seconds'][name]:.3f} s a chunk, {ratio:.2f}x 1 seed's",
                  flush=True)
        write_record(args.json, record)
        return
    reference = load_reference(args.jaxmarl_src)
    base = parse_sets(args.set, reference[1] if reference is not None else default_settings())
    if args.env_steps < rollout_steps(base):
        raise ValueError(f"--env-steps must be at least one rollout ({rollout_steps(base)})")
    if reference is None:
        print("reference skipped: no --jaxmarl-src; timing ours only", flush=True)
    result: dict[str, Any] = {
        "reference": None if reference is None else str(Path(args.jaxmarl_src).resolve()),
        "settings": base, "backend": jax.default_backend(), "cpu_count": os.cpu_count(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "load_average_start": start_load, "records": []}
    for seeds in args.seeds:
        record = bench_seeds(args, base, None if reference is None else reference[0], seeds)
        result["records"].append(record)
        for name, side in record["sides"].items():
            returns = " ".join(f"{r:.1f}" for r in side["final_train_return"])
            print(f"{seeds} seed(s) {name:>36}: {side['steps_per_s']:>10,.0f} env steps/s, "
                  f"compile {side['compile_s']:.1f} s, final return {returns}", flush=True)
        if args.profile_step:
            record["minibatch_step_profile"] = profile_minibatch_step(
                base, args.env[0], seeds, args.profile_step)
            step = record["minibatch_step_profile"]
            print(f"{seeds} seed(s) one minibatch step: {step['wall_ms']:.3f} ms, "
                  f"{step['cores_busy']:.2f} cores busy", flush=True)
        write_record(args.json, {**result, "load_average_end": list(os.getloadavg())})
    result["load_average_end"] = list(os.getloadavg())
    write_record(args.json, result)
