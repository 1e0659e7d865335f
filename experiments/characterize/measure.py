"""Measure one configuration: every phase on the same filled-buffer state, the whole steps
(both timed by :mod:`experiments.characterize.phase_timing`), the sampler / layout / learner
comparisons and (optionally) the real trainer's chunk time."""

from __future__ import annotations

import argparse
import functools
import gc
import math
import time
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from experiments import timing as cp
from experiments.characterize import phase_timing as pt
from jaxmarl_accel.algos.actor_critic.config import actor_step_form
from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.buffers import Buffer, make_buffer
from jaxmarl_accel.cli import flags
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.runs.memory import ensure_fits
from jaxmarl_accel.trainer.rounds.transition import steps_per_round
from jaxmarl_accel.trainer.steps import example_transition
from jaxmarl_accel.trainer.train import make_trainer
from jaxmarl_accel.tree_util import tree_leaf_bytes
from jaxmarl_accel.types import PyTree, Transition


def env_kwargs(env: str, agents: int, tag_widths: str) -> tuple[tuple[str, int], ...]:
    """Scenario kwargs for ``agents``: spread agents, or tag predators (with paper 000's
    P/3 prey and max(2, P/3) obstacles when ``tag_widths == "paper"``: obs 16 at P=3, 98 at
    P=24, the widths the paper reports)."""
    if env == "simple_spread":
        return (("num_agents", agents),)
    if tag_widths == "paper":
        return (("num_obstacles", max(2, agents // 3)), ("num_predators", agents),
                ("num_prey", max(1, agents // 3)))
    return (("num_predators", agents),)


def train_config(args: argparse.Namespace, agents: int, capacity: int, **over: Any) -> TrainConfig:
    """The run configuration measured (one chunk = one round of ``max(E, update_every)``
    env steps, so that the trainer check can time single rounds)."""
    spr = max(args.num_envs, args.update_every)
    fields = dict(
        env=args.env, env_kwargs=env_kwargs(args.env, agents, args.tag_widths),
        buffer_capacity=capacity, total_env_steps=spr * 1000,
        learning_starts=args.batch_size, eval_every=spr, eval_episodes=1)
    fields.update(over)
    return flags.train_config_from_args(args, **fields)


class SkipConfig(Exception):
    """Raised when a configuration would not fit in memory (reported, not measured)."""


def update_bytes(num_agents: int, batch_size: int, obs_dim: int, action_dim: int,
                 actor_step: str = "linear") -> int:
    """Rough peak bytes of one parallel update. With ``actor_step="full"`` the actor step
    builds every agent's centralized critic input ``[N, B, N * (obs_dim + action_dim)]``
    float32 and XLA keeps about three such arrays alive (forward input, its cotangent, the
    target-Q input); measured 10.7 GB RSS at 48 predators (N=64, obs 194, B=1024) against
    9.7 GB estimated. With ``"linear"`` the joint input ``[B, N * (obs_dim + action_dim)]``
    is built once per step and the per-agent temporaries are first-layer activations
    ``[N, 2, B, 64]``; about four of each, plus the critics' kernels, their gradients and
    Adam moments (2 critics of ``N * (obs_dim + action_dim) * 64`` floats per agent, x5)."""
    joint = num_agents * (obs_dim + action_dim)
    if actor_step_form(actor_step, num_agents) == "full":
        return 3 * num_agents * batch_size * joint * 4
    hidden = 4 * num_agents * 2 * batch_size * 64
    critics = 5 * num_agents * 2 * joint * 64
    return (4 * batch_size * joint + hidden + critics) * 4


def capacity_for(args: argparse.Namespace, example: Transition) -> int:
    """``--capacity`` lowered so that one buffer stays under ``--max-buffer-gb``."""
    per = tree_leaf_bytes(example) + 8  # a slot and its share of PER's sum tree (2 nodes)
    fit = int(args.max_buffer_gb * 2**30 // per)
    return max(args.batch_size * 2, min(args.buffer_capacity, fit))


def random_batch(key: jax.Array, count: int, example: Transition) -> Transition:
    """``count`` random transitions (normal observations, one-hot actions), ``[E, N, ...]``."""
    obs_key, next_key, act_key, rew_key = jax.random.split(key, 4)
    n, dim = example.obs.shape
    adim = example.action.shape[-1]
    act = jax.nn.one_hot(jax.random.randint(act_key, (count, n), 0, adim), adim)
    return Transition(obs=jax.random.normal(obs_key, (count, n, dim)), action=act,
                      reward=jax.random.normal(rew_key, (count, n)),
                      next_obs=jax.random.normal(next_key, (count, n, dim)),
                      done=jnp.zeros((count, n)))


def fill(buffer: Buffer, state: PyTree, example: Transition, count: int, chunk: int,
         key: jax.Array) -> PyTree:
    """Add ``count`` random transitions (in adds of ``chunk``) and give every written slot a
    random priority (exponential TD errors), so priority samplers see a skewed tree."""
    add = jax.jit(lambda s, k: buffer.add(s, random_batch(k, chunk, example)), donate_argnums=0)
    prio = jax.jit(lambda s, i, k: buffer.update_priorities(
        s, i, jax.random.exponential(k, i.shape)), donate_argnums=0)
    for i in range(max(1, count // chunk)):
        state = add(state, jax.random.fold_in(key, i))
    for i in range(max(1, count // chunk)):
        idx = jnp.arange(i * chunk, (i + 1) * chunk, dtype=jnp.int32)
        state = prio(state, idx, jax.random.fold_in(key, 10**6 + i))
    return jax.block_until_ready(state)


class Plan(NamedTuple):
    """What one agent count is measured with (N agents, A action-vector width).

    Attributes:
      spec: the env spec. algo: the learner (its behaviour policy and update are timed).
      example: one transition of the run's shapes (leaves ``[N, ...]``).
      capacity: the buffer capacity (``--capacity`` lowered to ``--max-buffer-gb``).
      per_transition: bytes of one stored transition.
    """

    spec: EnvSpec
    algo: Algo
    example: Transition
    capacity: int
    per_transition: int


def plan_config(args: argparse.Namespace, agents: int, log: Any) -> Plan:
    """The spec, learner, example transition and buffer capacity of ``agents``, after checking
    that the update and two buffers fit in memory (:class:`SkipConfig` where they do not)."""
    probe = make_trainer(train_config(args, agents, 2 * args.batch_size))
    spec, algo = probe.env.spec, probe.algo
    example = example_transition(spec, algo.action_dim)
    capacity = capacity_for(args, example)
    per_transition = tree_leaf_bytes(example)
    need = max(update_bytes(spec.num_agents, args.batch_size, spec.obs_dim, algo.action_dim,
                            form) for form in args.actor_steps)
    need += 2 * capacity * per_transition  # the main buffer and one comparison buffer
    log(f"  memory: ~{need / 2**30:.1f} GiB needed (update + buffers)")
    try:
        ensure_fits(need, "the update and two buffers", "skipped",
                    fraction=args.max_memory_fraction)
    except ValueError as error:
        raise SkipConfig(str(error)) from None
    return Plan(spec, algo, example, capacity, per_transition)


def measure_config(args: argparse.Namespace, agents: int, log: Any) -> dict[str, Any]:
    """All measurements of one agent count; see the module docstring."""
    plan = plan_config(args, agents, log)
    config = train_config(args, agents, plan.capacity)
    trainer = make_trainer(config)
    spec, capacity = plan.spec, plan.capacity
    record: dict[str, Any] = {
        "agents": agents, "num_agents": spec.num_agents, "obs_dim": spec.obs_dim,
        "capacity": capacity, "buffer_gb": capacity * plan.per_transition / 2**30,
        "bytes_per_transition": plan.per_transition, "phases": {}, "whole": {}, "compare": {},
        "actor_step": {}}
    log(f"  N={spec.num_agents} learners, obs {spec.obs_dim}, capacity {capacity} "
        f"({record['buffer_gb']:.2f} GiB)")
    state = jax.jit(trainer.init)(jax.random.key(args.seed))
    count = max(args.batch_size, int(args.fill * capacity))
    chunk = min(1024, capacity)
    buf = fill(trainer.buffer, state.buffer, plan.example, count, chunk,
               jax.random.key(args.seed + 1))
    bench = pt.make_bench(args, plan.spec, plan.algo, trainer)
    pt.time_phases(bench, record, state.algo, state.env_state, state.obs, buf, log)
    del state, buf
    gc.collect()
    if args.compare:
        record["compare"] = compare_samplers(args, plan.example, capacity, count, chunk, log)
    if args.trainer_chunks:
        record["trainer"] = trainer_check(args, config, log)
    return record


def sampler_variants(args: argparse.Namespace) -> list[tuple[str, str, str, dict]]:
    """(label, sampler, layout, kwargs) of the comparison buffers (paper 000 Fig. 8/14, VI-C)."""
    out = [("uniform", "uniform", "transition_major", {}),
           ("uniform_agent_major", "uniform", "agent_major", {})]
    out += [(f"neighbor{n}", "neighbor", "transition_major", {"neighbors": n})
            for n in args.neighbors]
    out += [("per", "per", "transition_major", {}),
            ("prioritized_locality", "prioritized_locality", "transition_major", {})]
    return out


def compare_samplers(args: argparse.Namespace, example: Transition, capacity: int, count: int,
                     chunk: int, log: Any) -> dict[str, dict[str, cp.Timing]]:
    """Sampling and priority-update time of each comparison buffer, one buffer in memory at
    a time, same capacity, fill and batch."""
    out: dict[str, dict[str, cp.Timing]] = {}
    timer = functools.partial(cp.time_loop, seed=args.seed + 5, reps=args.reps,
                              budget_s=args.budget_s)
    n = example.obs.shape[0]
    for label, sampler, layout, kwargs in sampler_variants(args):
        buffer = make_buffer(sampler, capacity=capacity, batch_size=args.batch_size,
                             layout=layout, **kwargs)
        buf = fill(buffer, buffer.init(example), example, count, chunk,
                   jax.random.key(args.seed + 1))
        first = jax.jit(buffer.sample)(buf, jax.random.key(args.seed))
        sample, _ = timer(lambda b, c, key, buffer=buffer: buffer.sample(c[0], key), first,
                          (buf,))

        # the priority update on its own, with a real batch's indices (a fused sample +
        # update would let XLA drop the unused gather of the transitions)
        td = jnp.abs(jax.random.normal(jax.random.key(args.seed), (*first.indices.shape, n)))
        prio, buf = timer(lambda s, c, key, buffer=buffer: buffer.update_priorities(s, *c),
                          buf, (first.indices, td), copy=False)
        out[label] = {"sample": sample, "priority_update": prio}
        log(f"  sampler {label}: {1e3 * sample.median:.2f} ms, "
            f"priority update {1e3 * prio.median:.3f} ms")
        del buf
        gc.collect()
    return out


def trainer_check(args: argparse.Namespace, config: TrainConfig, log: Any) -> dict[str, Any]:
    """Time the real trainer's ``run_chunk`` (one round: ``iters`` vectorized env steps, the
    round's updates and a 1-episode evaluation) on chunks that run updates."""
    trainer = make_trainer(config)
    spr = steps_per_round(config)
    first = math.ceil(config.batch_size / spr) - 1  # first chunk index that updates
    run = jax.jit(trainer.run_chunk, donate_argnums=0)
    # distinct buffers for every leaf: init may alias leaves, which donation refuses
    state = jax.tree.map(jnp.copy, jax.jit(trainer.init)(jax.random.key(args.seed + 4)))
    start = time.perf_counter()
    compiled = run.lower(state, jnp.int32(0)).compile()
    compile_s = time.perf_counter() - start
    for c in range(first + 1):
        state, _ = compiled(state, jnp.int32(c))
    jax.block_until_ready(state)
    samples = []
    for c in range(first + 1, first + 1 + args.trainer_chunks):
        start = time.perf_counter()
        state, metrics = compiled(state, jnp.int32(c))
        jax.block_until_ready((state, metrics))
        samples.append(time.perf_counter() - start)
    updates = int(metrics.updates)
    log(f"  trainer chunk ({spr} env steps, {updates} update): "
        f"{1e3 * min(samples):.1f} ms")
    return {"timing": cp.Timing(compile_s, tuple(samples)), "env_steps": spr,
            "updates": updates}
