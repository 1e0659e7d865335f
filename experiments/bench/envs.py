"""Our MPE environments against jaxmarl 0.2.0's, side by side in one process.

For every configuration both implementations run the same program: ``num_envs`` envs
(``jax.vmap``) stepped ``--steps`` times inside one ``jax.lax.scan``, with auto-reset,
from the same pre-generated random discrete actions and per-step keys (generated outside
the timed region, identical for both sides). The final observations and the summed
rewards are returned so that nothing the env computes can be dead-code eliminated.

* throughput: env steps per second after compilation, one env step being one step of one
  env (``num_envs * steps`` per scan); the best of ``--repeats`` timed calls, each ended
  by ``block_until_ready``, with the two sides' calls interleaved so that both see the
  same background load;
* compile time: ahead-of-time ``jit(...).lower(...).compile()`` of that same scan program
  (tracing + lowering + XLA compilation), measured the same way for both: the fastest of
  ``--compile-repeats`` compilations, with JAX's in-memory caches cleared before each, since
  a single compilation of about a second varies by 10-30% between runs.

Usage: ``python -m experiments.bench envs --json results/bench_envs.json``; a quick run:
``python -m experiments.bench envs --scenarios spread --agents 3 --envs 100 --repeats 1``.

``stag_hunt`` (N agents, N stags, ``--agents``) has no jaxmarl counterpart (``--sides ours``):
its actions are drawn inside the timed program by the random policy over the available
actions (``policies.random_policy``), so the throughput includes that draw.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

DEFAULT_SPREAD_AGENTS = (3, 6, 12, 24, 48)
DEFAULT_ENVS = (100, 1000)
DEFAULT_TAG_TEAMS = ("3v1", "24v8")
# Scenarios with a fixed default team (mpe2 defaults) and their agent counts.
FIXED_SCENARIOS = {"speaker_listener": 2, "adversary": 3, "push": 2, "reference": 2}


@dataclasses.dataclass(frozen=True)
class Case:
    """One benchmark configuration.

    Attributes:
      scenario: short name (``spread``, ``tag``, ``speaker_listener``, ...).
      num_agents: total number of agents N.
      num_envs: number of vmapped envs E.
      variant: human-readable team split, e.g. ``"24v8"`` for tag (empty otherwise).
    """

    scenario: str
    num_agents: int
    num_envs: int
    variant: str = ""


class Carry(NamedTuple):
    """Scan carry of the timed rollout (leading axis E = envs on every leaf)."""

    state: Any
    obs: Any
    reward_sum: jax.Array


class Side(NamedTuple):
    """One implementation prepared for a case: initial carry and the scan body step."""

    init: Callable[[jax.Array], Carry]
    step: Callable[[Carry, jax.Array, jax.Array], Carry]
    action_sizes: tuple[int, ...]


def _parse_teams(text: str) -> tuple[int, int]:
    """``"24v8"`` -> (24 predators, 8 prey)."""
    try:
        predators, prey = (int(part) for part in text.lower().split("v"))
    except ValueError as err:
        raise ValueError(f"--tag-teams: expected entries like '3v1', got {text!r}") from err
    if predators < 1 or prey < 1:
        raise ValueError(f"--tag-teams: both team sizes must be >= 1, got {text!r}")
    return predators, prey


def _ours(case: Case) -> Side:
    """Our env for ``case``: vmapped reset and step over E envs with shared params."""
    from jaxmarl_accel.envs import make
    from jaxmarl_accel.envs.policies import EnvObs, available_actions, random_policy

    if case.scenario == "spread":
        env, params = make("simple_spread", num_agents=case.num_agents)
    elif case.scenario == "tag":
        predators, prey = _parse_teams(case.variant)
        env, params = make("simple_tag", num_predators=predators, num_prey=prey)
    elif case.scenario == "stag_hunt":
        env, params = make("stag_hunt", num_agents=case.num_agents, num_stags=case.num_agents)
    else:
        env, params = make(f"simple_{case.scenario}")
    reset = jax.vmap(env.reset, in_axes=(0, None))
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    uniform = random_policy(env)
    masked = jax.vmap(lambda key, obs, state: uniform(
        (), (), key, EnvObs(obs, state, params), available_actions(env, state, params))[0])

    def init(key: jax.Array) -> Carry:
        obs, state = reset(jax.random.split(key, case.num_envs), params)
        return Carry(state, obs, jnp.zeros((), jnp.float32))

    def body(carry: Carry, key: jax.Array, actions: jax.Array) -> Carry:
        keys = jax.random.split(key, case.num_envs)
        if env.avail_actions is not None:  # uniform over the available actions
            act_keys = jax.random.split(jax.random.fold_in(key, 1), case.num_envs)
            actions = masked(act_keys, carry.obs, carry.state)
        obs, state, reward, _, _, _ = step(keys, carry.state, actions, params)
        return Carry(state, obs, carry.reward_sum + jnp.sum(reward))

    return Side(init, body, tuple(env.spec.action_sizes))


def _reference(case: Case) -> Side:
    """jaxmarl 0.2.0's env for ``case``, driven through its dict-of-agents interface."""
    from jaxmarl.environments import mpe

    if case.scenario == "spread":
        env = mpe.SimpleSpreadMPE(num_agents=case.num_agents, num_landmarks=case.num_agents)
    elif case.scenario == "tag":
        predators, prey = _parse_teams(case.variant)
        env = mpe.SimpleTagMPE(num_good_agents=prey, num_adversaries=predators)
    else:
        classes = {
            "speaker_listener": mpe.SimpleSpeakerListenerMPE,
            "adversary": mpe.SimpleAdversaryMPE,
            "push": mpe.SimplePushMPE,
            "reference": mpe.SimpleReferenceMPE,
        }
        env = classes[case.scenario]()
    agents = list(env.agents)
    reset = jax.vmap(env.reset)
    step = jax.vmap(env.step)

    def init(key: jax.Array) -> Carry:
        obs, state = reset(jax.random.split(key, case.num_envs))
        return Carry(state, obs, jnp.zeros((), jnp.float32))

    def body(carry: Carry, key: jax.Array, actions: jax.Array) -> Carry:
        keys = jax.random.split(key, case.num_envs)
        action_dict = {name: actions[:, i] for i, name in enumerate(agents)}
        obs, state, reward, _, _ = step(keys, carry.state, action_dict)
        total = sum(jnp.sum(r) for r in reward.values())
        return Carry(state, obs, carry.reward_sum + total)

    sizes = tuple(int(env.action_space(name).n) for name in agents)
    return Side(init, body, sizes)


def _rollout_fn(side: Side) -> Callable[[Carry, jax.Array, jax.Array], Carry]:
    """The timed program: scan ``side.step`` over per-step keys [T] and actions [T, E, N]."""

    def rollout(carry: Carry, keys: jax.Array, actions: jax.Array) -> Carry:
        def body(c: Carry, xs: tuple[jax.Array, jax.Array]) -> tuple[Carry, None]:
            return side.step(c, xs[0], xs[1]), None

        final, _ = jax.lax.scan(body, carry, (keys, actions))
        return final

    return rollout


def _random_actions(key: jax.Array, sizes: tuple[int, ...], steps: int, envs: int) -> jax.Array:
    """Uniform discrete actions int32 [T, E, N]; agent i draws from ``[0, sizes[i])``."""
    u = jax.random.uniform(key, (steps, envs, len(sizes)))
    return jnp.floor(u * jnp.asarray(sizes, jnp.float32)).astype(jnp.int32)


class Prepared(NamedTuple):
    """One side compiled for one case, with its inputs and its compile time."""

    run: Callable[[], Any]
    compile_s: float


def _prepare(
    side: Side, case: Case, steps: int, seed: int, compile_repeats: int = 1
) -> Prepared:
    """Builds inputs (outside the timed region) and AOT-compiles the rollout of one side.

    The compile time is the fastest of ``compile_repeats`` full compilations (tracing,
    lowering, XLA), each after ``jax.clear_caches()`` so that none is served from a cache.
    """
    key_init, key_steps, key_actions = jax.random.split(jax.random.PRNGKey(seed), 3)
    carry = jax.block_until_ready(jax.jit(side.init)(key_init))
    keys = jax.random.split(key_steps, steps)
    actions = jax.block_until_ready(
        _random_actions(key_actions, side.action_sizes, steps, case.num_envs)
    )
    compile_s = float("inf")
    for _ in range(compile_repeats):
        jax.clear_caches()
        start = time.perf_counter()
        compiled = jax.jit(_rollout_fn(side)).lower(carry, keys, actions).compile()
        compile_s = min(compile_s, time.perf_counter() - start)
    return Prepared(lambda: compiled(carry, keys, actions), compile_s)


def _throughputs(prepared: dict[str, Prepared], case: Case, steps: int, repeats: int):
    """Env steps/s of each side: best of ``repeats`` calls, the sides' calls interleaved.

    Interleaving (ours, ref, ours, ref, ...) lets both sides see the same background
    load, which matters on a shared machine.
    """
    best = dict.fromkeys(prepared, float("inf"))
    for _ in range(repeats):
        for name, side in prepared.items():
            start = time.perf_counter()
            jax.block_until_ready(side.run())
            best[name] = min(best[name], time.perf_counter() - start)
    return {name: case.num_envs * steps / seconds for name, seconds in best.items()}


def _cases(args: argparse.Namespace) -> list[Case]:
    cases: list[Case] = []
    for scenario in args.scenarios:
        for envs in args.envs:
            if scenario in ("spread", "stag_hunt"):
                cases += [Case(scenario, n, envs) for n in args.agents]
            elif scenario == "tag":
                for teams in args.tag_teams:
                    predators, prey = _parse_teams(teams)
                    cases.append(Case("tag", predators + prey, envs, teams))
            else:
                cases.append(Case(scenario, FIXED_SCENARIOS[scenario], envs))
    return cases


def _csv(kind: Callable[[str], Any]) -> Callable[[str], list[Any]]:
    return lambda text: [kind(part) for part in text.split(",") if part]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register this benchmark's flags on ``parser``."""
    valid = ("spread", "tag", "stag_hunt", *FIXED_SCENARIOS)
    parser.epilog = (
        "Both sides run the same program: envs vmapped, --steps steps in one lax.scan with "
        "auto-reset, the same pre-generated random discrete actions and keys. Throughput = "
        "envs*steps / best wall time of --repeats calls after compilation; compile time = "
        "the fastest of --compile-repeats AOT jit(...).lower(...).compile() of that program, "
        "caches cleared before each, measured alike for both. "
        "Spread uses N landmarks; tag 2 obstacles; the other scenarios their mpe2 defaults."
    )
    parser.add_argument(
        "--json", metavar="PATH", default=None,
        help="write the records (a JSON list) to PATH; parent folders are created",
    )
    parser.add_argument(
        "--scenarios", type=_csv(str), default=["spread", "tag"],
        help=f"comma-separated scenarios to time, from {','.join(valid)} (default: spread,tag)",
    )
    parser.add_argument(
        "--agents", type=_csv(int), default=list(DEFAULT_SPREAD_AGENTS),
        help="comma-separated agent counts N for spread (N landmarks each) and stag_hunt (N "
        "stags) (default: 3,6,12,24,48)",
    )
    parser.add_argument(
        "--tag-teams", type=_csv(str), default=list(DEFAULT_TAG_TEAMS),
        help="comma-separated tag team sizes PREDATORSvPREY (default: 3v1,24v8)",
    )
    parser.add_argument(
        "--envs", type=_csv(int), default=list(DEFAULT_ENVS),
        help="comma-separated numbers of vmapped envs (default: 100,1000)",
    )
    parser.add_argument(
        "--steps", type=int, default=100,
        help="env steps per scan; one timed call runs envs*steps env steps (default: 100)",
    )
    parser.add_argument(
        "--repeats", type=int, default=3,
        help="timed calls per side and configuration, interleaved between the sides; the "
        "fastest counts (default: 3)",
    )
    parser.add_argument(
        "--compile-repeats", type=int, default=3,
        help="compilations per side and configuration (caches cleared before each); the "
        "fastest counts (default: 3)",
    )
    parser.add_argument(
        "--sides", type=_csv(str), default=["ours", "ref"],
        help="which implementations to run: ours, ref or both (default: ours,ref)",
    )
    parser.add_argument("--seed", type=int, default=0, help="PRNG seed for states and actions")
    parser.set_defaults(valid_scenarios=valid)


def _check(args: argparse.Namespace) -> None:
    for name in args.scenarios:
        if name not in args.valid_scenarios:
            raise ValueError(f"--scenarios: unknown {name!r}; valid: {args.valid_scenarios}")
    if any(n < 1 for n in args.agents):
        raise ValueError(f"--agents: every N must be >= 1, got {args.agents}")
    if any(e < 1 for e in args.envs):
        raise ValueError(f"--envs: every count must be >= 1, got {args.envs}")
    if args.steps < 1 or args.repeats < 1 or args.compile_repeats < 1:
        raise ValueError("--steps, --repeats and --compile-repeats must be >= 1")
    if not set(args.sides) <= {"ours", "ref"} or not args.sides:
        raise ValueError(f"--sides: expected a subset of ours,ref, got {args.sides}")
    if "stag_hunt" in args.scenarios and "ref" in args.sides:
        raise ValueError("--scenarios stag_hunt has no jaxmarl reference: pass --sides ours")
    for teams in args.tag_teams:
        _parse_teams(teams)


def _fmt(value: float | None, spec: str) -> str:
    width = int(spec.split(".")[0].rstrip(","))
    return f"{'-':>{width}}" if value is None else format(value, spec)


def main(args: argparse.Namespace) -> None:
    """Run every selected case, print a table and optionally write JSON records."""
    _check(args)
    if "ref" in args.sides:  # importing jaxmarl resets sys.stdout: do it before printing
        import jaxmarl.environments.mpe  # noqa: F401
    jax.block_until_ready(jax.jit(lambda x: x + 1)(jnp.zeros(())))  # backend start-up
    header = (
        f"{'scenario':<17}{'N':>4}{'envs':>6} {'ours st/s':>11} {'ref st/s':>11} "
        f"{'speedup':>8} {'ours comp':>9} {'ref comp':>9} {'comp ratio':>10}"
    )
    print(f"device: {jax.devices()[0].device_kind}, steps per scan: {args.steps}")
    print(header)
    print("-" * len(header))
    records = []
    builders = {"ours": _ours, "ref": _reference}
    for case in _cases(args):
        prepared = {name: _prepare(builders[name](case), case, args.steps, args.seed,
                                   args.compile_repeats)
                    for name in ("ours", "ref") if name in args.sides}
        rates = _throughputs(prepared, case, args.steps, args.repeats)
        ours, ref = ((rates.get(name), prepared[name].compile_s if name in prepared else None)
                     for name in ("ours", "ref"))
        speedup = ours[0] / ref[0] if None not in (ours[0], ref[0]) else None
        comp_ratio = ours[1] / ref[1] if None not in (ours[1], ref[1]) else None
        records.append(
            {
                "scenario": case.scenario,
                "variant": case.variant,
                "num_agents": case.num_agents,
                "num_envs": case.num_envs,
                "ours_steps_per_s": ours[0],
                "ref_steps_per_s": ref[0],
                "ours_compile_s": ours[1],
                "ref_compile_s": ref[1],
                "throughput_ratio": speedup,
                "compile_ratio": comp_ratio,
            }
        )
        name = case.scenario + (f" {case.variant}" if case.variant else "")
        print(
            f"{name:<17}{case.num_agents:>4}{case.num_envs:>6} {_fmt(ours[0], '11,.0f')} "
            f"{_fmt(ref[0], '11,.0f')} {_fmt(speedup, '8.2f')} {_fmt(ours[1], '9.2f')} "
            f"{_fmt(ref[1], '9.2f')} {_fmt(comp_ratio, '10.3f')}",
            flush=True,
        )
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
        print(f"wrote {len(records)} records to {args.json}")

