"""Our Tag environments against WarpDrive's numpy ones (paper 003), side by side on one CPU.

For every env (``tag_gridworld``, ``tag_continuous``) and agent count N (``--agents``,
default 5 and 1,000, the ends of paper 003's Figs. 13-14), both sides run the same
configuration under uniformly random actions, with a reset whenever an episode ends:

* ours: ``--num-envs`` envs under ``jax.vmap``, ``--steps`` steps inside one compiled
  ``jax.lax.scan`` (actions drawn inside it by ``env.random_action``, auto-reset in the
  step); env steps/s = envs x steps / seconds, the best of ``--repeats`` timed calls after
  compilation (compile seconds reported apart);
* WarpDrive: one instance of its numpy env (``example_envs/.../tag_*.py`` of the checkout
  named by ``--warpdrive-src``; its CPU step, the one paper 003 compares its GPU step with),
  stepped from pre-built action dicts for at least ``--ref-seconds`` and 2 steps;
  env steps/s = steps / seconds (resets included).

``ratio`` = ours / WarpDrive's env steps/s (the same N on both sides, so it is also the
ratio of agent steps/s). Agent split: gridworld N - 1 taggers and WarpDrive's single
runner; continuous ``max(1, N // 10)`` taggers (the yaml's 10:100), the rest runners, k =
``min(10, N - 1)`` nearest agents observed. Partial observations unless
``--full-observation``. The other settings are the defaults of WarpDrive's run configs.
The records carry the load average at the start and end of each measurement: compare
ratios taken on a quiet machine.

Usage: ``python -m experiments.bench warpdrive --warpdrive-src DIR --json
docs/results/bench/warpdrive.json``; quick check: ``--agents 5 --num-envs 10 --steps 20
--repeats 1 --ref-seconds 0.5``. WarpDrive's env modules import ``gym`` for their action
spaces only; when gym is not installed it is stubbed for that import.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import platform
import sys
import time
import types
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.envs import make

REFERENCE = {"tag_gridworld": ("tag_gridworld.tag_gridworld", "TagGridWorld"),
             "tag_continuous": ("tag_continuous.tag_continuous", "TagContinuous")}
CONTINUOUS_YAML = {"grid_length": 20.0, "episode_length": 500, "max_acceleration": 0.1,
                   "min_acceleration": -0.1, "max_turn": 2.356, "min_turn": -2.356,
                   "num_acceleration_levels": 20, "num_turn_levels": 20,
                   "tag_reward_for_tagger": 10.0, "tag_penalty_for_runner": -10.0,
                   "tagging_distance": 0.02}
GRIDWORLD_YAML = {"grid_length": 100, "episode_length": 100, "wall_hit_penalty": 0.1,
                  "tag_reward_for_tagger": 10.0, "tag_penalty_for_runner": 5.0,
                  "step_cost_for_tagger": 0.01}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The bench's flags."""
    parser.add_argument("--warpdrive-src", required=True,
                        help="a checkout of salesforce/warp-drive (holds example_envs/)")
    parser.add_argument("--json", default=None, help="write the records to this JSON file")
    parser.add_argument("--envs", nargs="+", default=list(REFERENCE), choices=list(REFERENCE),
                        help="environments (default: both)")
    parser.add_argument("--agents", nargs="+", type=int, default=[5, 1000],
                        help="agent counts N (default: 5 1000)")
    parser.add_argument("--num-envs", type=int, default=None,
                        help="our vmapped envs (default: 1000 at N <= 50, else 20)")
    parser.add_argument("--steps", type=int, default=100,
                        help="our steps per timed scan (default: 100)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="our timed scans, the best is kept (default: 3)")
    parser.add_argument("--ref-seconds", type=float, default=5.0,
                        help="WarpDrive's timed seconds per configuration (default: 5)")
    parser.add_argument("--full-observation", action="store_true",
                        help="every agent observes every agent (default: partial)")


def env_kwargs(env: str, agents: int, full: bool) -> dict[str, Any]:
    """Both sides' make / constructor keywords for ``agents`` agents (module docstring)."""
    if env == "tag_gridworld":
        return {**GRIDWORLD_YAML, "num_taggers": agents - 1, "use_full_observation": full}
    taggers = max(1, agents // 10)
    return {**CONTINUOUS_YAML, "num_taggers": taggers, "num_runners": agents - taggers,
            "use_full_observation": full, "num_other_agents_observed": min(10, agents - 1)}


def load_reference(src: str, env: str) -> type:
    """WarpDrive's numpy env class of ``env`` from the checkout ``src`` (gym stubbed for the
    import when it is not installed)."""
    if src not in sys.path:
        sys.path.insert(0, src)
    stubs: dict[str, types.ModuleType] = {}
    if importlib.util.find_spec("gym") is None:
        gym, spaces = types.ModuleType("gym"), types.ModuleType("gym.spaces")
        spaces.Discrete = spaces.MultiDiscrete = lambda *args, **kwargs: args
        gym.spaces = spaces
        stubs = {"gym": gym, "gym.spaces": spaces}
        sys.modules.update(stubs)
    try:
        module, name = REFERENCE[env]
        return getattr(importlib.import_module(f"example_envs.{module}"), name)
    finally:
        for key in stubs:
            sys.modules.pop(key, None)


def time_reference(reference: type, env: str, kwargs: dict[str, Any], seconds: float
                   ) -> tuple[float, int]:
    """``(env steps/s, steps timed)`` of WarpDrive's numpy env under random actions."""
    ref = reference(**({"seed": 0} if env == "tag_continuous" else {}), **kwargs)
    n, rng = ref.num_agents, np.random.default_rng(0)
    if env == "tag_gridworld":
        draws = rng.integers(0, 5, (64, n))
        actions = [{i: int(a) for i, a in enumerate(row)} for row in draws]
    else:
        draws = rng.integers(0, [kwargs["num_acceleration_levels"] + 1,
                                 kwargs["num_turn_levels"] + 1], (64, n, 2))
        actions = [{i: [int(a), int(b)] for i, (a, b) in enumerate(row)} for row in draws]
    ref.reset()
    steps, start = 0, time.perf_counter()
    while steps < 2 or time.perf_counter() - start < seconds:
        _, _, done, _ = ref.step(actions[steps % len(actions)])
        if done["__all__"]:
            ref.reset()
        steps += 1
    return steps / (time.perf_counter() - start), steps


def time_ours(env_name: str, kwargs: dict[str, Any], num_envs: int, steps: int, repeats: int
              ) -> tuple[float, float]:
    """``(env steps/s, compile seconds)`` of our env: ``num_envs`` vmapped, ``steps`` per scan."""
    env, params = make(env_name, **kwargs)

    def rollout(key: jax.Array, state: Any, params: Any) -> tuple[Any, jax.Array]:
        def one(carry: tuple[Any, jax.Array], key: jax.Array):
            state, total = carry
            act_key, step_key = jax.random.split(key)
            keys = jax.random.split(step_key, num_envs)
            actions = jax.vmap(env.random_action)(jax.random.split(act_key, num_envs))
            _, state, reward, *_ = jax.vmap(env.step, (0, 0, 0, None))(keys, state, actions,
                                                                      params)
            return (state, total + jnp.sum(reward)), None

        (state, total), _ = jax.lax.scan(one, (state, jnp.zeros(())),
                                         jax.random.split(key, steps))
        return state, total

    keys = jax.random.split(jax.random.PRNGKey(0), num_envs)
    _, state = jax.jit(jax.vmap(env.reset, (0, None)))(keys, params)
    start = time.perf_counter()
    compiled = jax.jit(rollout, donate_argnums=1).lower(keys[0], state, params).compile()
    compile_s = time.perf_counter() - start
    best = float("inf")
    for rep in range(repeats + 1):  # the first call warms up
        start = time.perf_counter()
        state, total = jax.block_until_ready(compiled(keys[rep % num_envs], state, params))
        if rep:
            best = min(best, time.perf_counter() - start)
    return num_envs * steps / best, compile_s


def bench_one(args: argparse.Namespace, env: str, agents: int) -> dict[str, Any]:
    """One (env, N) configuration, both sides."""
    kwargs = env_kwargs(env, agents, args.full_observation)
    num_envs = args.num_envs or (1000 if agents <= 50 else 20)
    load_start = list(os.getloadavg())
    ours, compile_s = time_ours(env, kwargs, num_envs, args.steps, args.repeats)
    reference = load_reference(args.warpdrive_src, env)
    theirs, ref_steps = time_reference(reference, env, kwargs, args.ref_seconds)
    return {"env": env, "num_agents": agents, "num_taggers": kwargs["num_taggers"],
            "num_runners": agents - kwargs["num_taggers"],
            "observation": "full" if args.full_observation else "partial",
            "k": kwargs.get("num_other_agents_observed"), "num_envs": num_envs,
            "steps_per_scan": args.steps, "ours_env_steps_per_s": ours,
            "warpdrive_env_steps_per_s": theirs, "ratio": ours / theirs,
            "ours_agent_steps_per_s": ours * agents, "ours_compile_s": compile_s,
            "warpdrive_steps_timed": ref_steps, "load_average_start": load_start,
            "load_average_end": list(os.getloadavg()), "cpu_count": os.cpu_count(),
            "device": str(jax.devices()[0]), "jax": jax.__version__, "numpy": np.__version__,
            "python": platform.python_version()}


def main(args: argparse.Namespace) -> None:
    print(f"{'env':<16}{'N':>6}{'envs':>6}{'ours steps/s':>15}{'WarpDrive':>12}{'ratio':>9}"
          f"{'compile s':>11}{'load':>7}", flush=True)
    records = []
    for env in args.envs:
        for agents in args.agents:
            r = bench_one(args, env, agents)
            print(f"{env:<16}{agents:>6}{r['num_envs']:>6}{r['ours_env_steps_per_s']:>15,.0f}"
                  f"{r['warpdrive_env_steps_per_s']:>12,.1f}{r['ratio']:>9,.0f}"
                  f"{r['ours_compile_s']:>11.1f}{r['load_average_end'][0]:>7.2f}", flush=True)
            records.append(r)
            if args.json:
                os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
                with open(args.json, "w") as handle:
                    json.dump(records, handle, indent=2)
