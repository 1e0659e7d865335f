"""The value-based family (QMIX, VDN, IQL): every phase of an episode round, timed alone.

``python -m experiments.characterize --algo qmix --env stag_hunt --agents 8 16 32 --out DIR``

An episode round (:mod:`jaxmarl_accel.trainer.rounds.episode`) runs one episode in each of E
envs (T steps, masked after its end), adds the E episodes to the episode replay and makes
one update on B episodes. For every agent count this module builds the run
(``make_trainer``: env, episode replay, recurrent learner), collects E real episodes under
the exploration policy, fills the replay with them and times each phase of
:data:`~experiments.characterize.phases.VALUE_PHASES` (and ``agent_forward``) compiled in
a loop on that state (:func:`experiments.timing.time_loop`), then three whole steps compiled
as one function each: the collection of E episodes (``steps.collect_episodes``), the update
step (sample + ``algo.update`` + priorities, ``steps.learn_step``) and the whole round
(collection + add + update step).

FLOPs are not estimated for this family (:mod:`experiments.flops` counts the
actor-critic networks only).
"""

from __future__ import annotations

import argparse
import functools
import time
from typing import Any

import jax
import jax.numpy as jnp

from experiments import timing as cp
from experiments.characterize import value_report as vr
from jaxmarl_accel.algos import ValueConfig
from jaxmarl_accel.algos.registry import algo_phases
from jaxmarl_accel.cli import flags
from jaxmarl_accel.cli.scenario_flags import scenario_kwargs
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.runs.memory import ensure_fits
from jaxmarl_accel.trainer.steps import collect_episodes, env_views, example_episode, learn_step
from jaxmarl_accel.trainer.train import make_trainer
from jaxmarl_accel.tree_util import tree_leaf_bytes
from jaxmarl_accel.types import PyTree

FULL = {"agents": [8, 16, 32], "batch_size": ValueConfig.REPLAY_DEFAULTS["batch_size"],
        "buffer_capacity": ValueConfig.REPLAY_DEFAULTS["buffer_capacity"],
        "num_envs": ValueConfig.REPLAY_DEFAULTS["num_envs"], "reps": 5}
QUICK = {"agents": [4, 8], "batch_size": 16, "buffer_capacity": 64, "num_envs": 8, "reps": 3}


class SkipConfig(Exception):
    """Raised when a configuration would not fit in memory (reported, not measured)."""


def resolve(args: argparse.Namespace, parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Fill the value family's defaults (``--quick`` or not) and check the flags it uses."""
    for name, value in (QUICK if args.quick else FULL).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.fill > 1.0:
        parser.error(f"--fill must be in (0, 1], got {args.fill}")
    try:
        for agents in args.agents:
            train_config(args, agents, args.buffer_capacity)
    except ValueError as error:
        parser.error(str(error))
    return args


def train_config(args: argparse.Namespace, agents: int, capacity: int) -> TrainConfig:
    """The run measured: ``--env-kwargs`` with ``agents`` as the scenario's agent count,
    ``capacity`` episodes of replay, learning from the first round."""
    return flags.train_config_from_args(
        args, env=args.env, env_kwargs=scenario_kwargs(args.env, args.env_kwargs, agents),
        buffer_capacity=capacity, learning_starts=0, eval_episodes=1)


def update_bytes(num_agents: int, batch_size: int, rows: int, obs_dim: int, num_actions: int,
                 hidden: int, state_dim: int, mixer_width: int) -> int:
    """Rough peak bytes of one update on ``batch_size`` episodes of ``rows`` (T + 1) rows:
    per agent row the float inputs of the online and target unrolls (obs + N + A each),
    about 12 hidden-wide activations (GRU gates kept for the backward pass, the target
    unroll, the cotangents) and 4 Q-value rows; per episode row the mixer's state input
    twice and 3 hypernetwork outputs of ``mixer_width`` (N x embed + hidden + embed)."""
    agent = num_agents * (2 * (obs_dim + num_agents + num_actions) + 12 * hidden + 4 * num_actions)
    mixer = 2 * state_dim + 3 * mixer_width
    return batch_size * rows * (agent + mixer) * 4


def measure_config(args: argparse.Namespace, agents: int, log: Any) -> dict[str, Any]:
    """Every value-family phase and the two whole steps at one agent count."""
    probe = train_config(args, agents, args.buffer_capacity)
    spec, value = make_trainer(probe).env.spec, probe.learner
    example = example_episode(spec)
    per_episode = tree_leaf_bytes(example)
    capacity = max(args.batch_size, min(args.buffer_capacity,
                                        int(args.max_buffer_gb * 2**30 // per_episode)))
    rows = spec.episode_length + 1
    state_dim = spec.state_dim or spec.num_agents * spec.obs_dim
    need = update_bytes(spec.num_agents, args.batch_size, rows, spec.obs_dim, spec.num_actions,
                        value.hidden, state_dim,
                        spec.num_agents * value.mixer_embed + value.hypernet_hidden
                        + value.mixer_embed) + capacity * per_episode
    log(f"  memory: ~{need / 2**30:.1f} GiB needed (update + replay)")
    try:
        ensure_fits(need, "the update and the replay", "skipped",
                    fraction=args.max_memory_fraction)
    except ValueError as error:
        raise SkipConfig(str(error)) from None
    trainer = make_trainer(train_config(args, agents, capacity))
    env, params, buffer, algo = trainer.env, trainer.env_params, trainer.buffer, trainer.algo
    e = args.num_envs
    record: dict[str, Any] = {
        "agents": agents, "num_agents": spec.num_agents, "obs_dim": spec.obs_dim,
        "num_actions": spec.num_actions, "state_dim": state_dim,
        "episode_length": spec.episode_length, "capacity": capacity,
        "buffer_gb": capacity * per_episode / 2**30, "bytes_per_episode": per_episode,
        "phases": {}, "whole": {}}
    log(f"  N={spec.num_agents}, obs {spec.obs_dim}, T={spec.episode_length}, capacity "
        f"{capacity} episodes ({record['buffer_gb']:.2f} GiB)")
    state = jax.jit(trainer.init)(jax.random.key(args.seed))
    algo_state = algo.observe(state.algo, 0, value.target_update_episodes)  # target copy due
    collect = jax.jit(lambda a_state, key: collect_episodes(env, params, algo, a_state, key, e,
                                                            explore=True))
    start = time.perf_counter()
    batch_e = jax.block_until_ready(collect(algo_state, jax.random.key(args.seed + 1)))
    record["collect_first_call_s"] = time.perf_counter() - start
    record["episode_lengths"] = [int(x) for x in batch_e.lengths]
    record["round_steps"] = int(jnp.max(batch_e.lengths))  # the collect loop's steps
    buf = fill(buffer, state.buffer, batch_e.episodes,
               max(args.batch_size, int(args.fill * capacity)))
    del state
    log(f"  collected {e} episodes (lengths {min(record['episode_lengths'])}-"
        f"{max(record['episode_lengths'])}), replay filled with {int(buf.size)}")
    timer = functools.partial(cp.time_loop, seed=args.seed + 2, reps=args.reps,
                              budget_s=args.budget_s)
    ph, whole = record["phases"], record["whole"]
    key0 = jax.random.key(args.seed + 3)
    buf = time_rollout(ph, timer, env, params, algo, algo_state, buffer, buf, batch_e, e)
    log(f"  action_selection {1e3 * ph['action_selection'].median:.3f} ms, env_step "
        f"{1e3 * ph['env_step'].median:.3f} ms, buffer_add {1e3 * ph['buffer_add'].median:.2f} ms")
    whole["collect"], _ = timer(
        lambda batch, c, key: collect_episodes(env, params, algo, c[0], key, e, explore=True),
        batch_e, (algo_state,))
    log(f"  whole collect ({e} episodes) {1e3 * whole['collect'].median:.1f} ms")
    phases = algo_phases(trainer.config.algo, spec, trainer.config.learner, trainer.config.sampler)
    buf = time_update(ph, timer, phases, algo_state, buffer, buf, key0, log)

    def update_step(carry, consts, key):
        sample_key, update_key = jax.random.split(key)
        learned = learn_step(algo, buffer, *carry, sample_key, update_key)
        return learned.algo, learned.buffer

    whole["update_step"], (_, buf) = timer(update_step, (jax.tree.map(jnp.copy, algo_state),
                                                         buf), (), copy=False)
    log(f"  whole update step {1e3 * whole['update_step'].median:.1f} ms")

    def round_step(carry, consts, key):  # the episode trainer's round
        a_state, b_state = carry
        collect_key, sample_key, update_key = jax.random.split(key, 3)
        batch = collect_episodes(env, params, algo, a_state, collect_key, e, explore=True)
        learned = learn_step(algo, buffer, a_state, buffer.add(b_state, batch.episodes),
                             sample_key, update_key)
        return learned.algo, learned.buffer

    whole["round"], _ = timer(round_step, (jax.tree.map(jnp.copy, algo_state), buf), (),
                              copy=False)
    log(f"  whole round {1e3 * whole['round'].median:.1f} ms")
    return record


def fill(buffer: Any, buf: PyTree, episodes: PyTree, count: int) -> PyTree:
    """Add the E ``episodes`` (leaves ``[E, T + 1, ...]``) again and again until ``count``
    episodes have been added."""
    add = jax.jit(buffer.add, donate_argnums=0)
    per_add = jax.tree.leaves(episodes)[0].shape[0]
    for _ in range(-(-count // per_add)):
        buf = add(buf, episodes)
    return jax.block_until_ready(buf)


def time_rollout(ph: dict[str, cp.Timing], timer: Any, env: Any, params: PyTree, algo: Any,
                 algo_state: PyTree, buffer: Any, buf: PyTree, batch_e: Any, e: int) -> PyTree:
    """Time ``action_selection``, ``env_step`` (one step of E envs) and ``buffer_add`` (E
    episodes); returns the replay state (consumed by the add loop)."""
    obs, env_state = jax.vmap(env.reset, in_axes=(0, None))(
        jax.random.split(jax.random.key(0), e), params)
    views = jax.vmap(env_views, in_axes=(None, 0, 0, None))
    gstate, avail = views(env, env_state, obs, params)
    act = jax.vmap(algo.policy(True), in_axes=(None, 0, 0, 0, 0))
    carry = jax.tree.map(lambda leaf: jnp.broadcast_to(leaf, (e, *leaf.shape)),
                         algo.initial_carry())

    def act_body(running, consts, key):
        a_state, obs, avail = consts
        action, _, memory = act(a_state, running[1], jax.random.split(key, e), obs, avail)
        return action, memory

    ph["action_selection"], (action, _) = timer(
        act_body, (jnp.zeros(avail.shape[:-1], jnp.int32), carry), (algo_state, obs, avail))

    def step_body(running, consts, key):
        e_state, _, _, _, total = running
        obs, e_state, reward, terminated, truncated, info = jax.vmap(
            env.step, in_axes=(0, 0, 0, None))(jax.random.split(key, e), e_state, consts[0],
                                                params)
        g, av = views(env, e_state, obs, params)
        used = [jnp.mean(leaf.astype(jnp.float32)) for leaf in jax.tree.leaves(info)]
        total = total + jnp.mean(reward) + jnp.mean(terminated | truncated) + 1e-12 * sum(used)
        return e_state, obs, g, av, total

    ph["env_step"], _ = timer(step_body, (env_state, obs, gstate, avail, jnp.zeros(())),
                              (action,))
    ph["buffer_add"], buf = timer(lambda b, c, key: buffer.add(b, c[0]), buf,
                                  (batch_e.episodes,), copy=False)
    return buf


def time_update(ph: dict[str, cp.Timing], timer: Any, learner: Any, algo_state: PyTree,
                buffer: Any, buf: PyTree, key: jax.Array, log: Any) -> PyTree:
    """Time ``sampling``, ``targets``, ``agent_forward``, ``loss_and_grad``, ``apply``,
    ``target_update`` and ``priority_update`` (``learner``: the steps of the learner's
    update, its record's ``phases`` hook) on one sampled batch; returns the replay state
    (consumed by the priority loop)."""
    sampled = jax.jit(buffer.sample)(buf, key)
    ph["sampling"], _ = timer(lambda s, c, k: buffer.sample(c[0], k), sampled, (buf,))
    batch, weights = sampled.experience, sampled.weights
    zeros = lambda shaped: jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shaped)  # noqa: E731
    q_shape = jax.eval_shape(learner.agent_q, algo_state, batch)

    def agent_body(carry, consts, key):
        a_state, batch = consts
        agent = carry[1]
        q = learner.agent_q(a_state.replace(params=a_state.params.replace(agent=agent)), batch)
        return q, cp.perturb(agent, jnp.mean(q))

    ph["agent_forward"], (q, _) = timer(agent_body, (zeros(q_shape), algo_state.params.agent),
                                        (algo_state, batch))

    def targets_body(carry, consts, key):
        a_state, batch, q = consts
        y = learner.targets(a_state.replace(target=carry[1]), batch, q)
        return y, cp.perturb(carry[1], jnp.mean(y))

    y_shape = jax.eval_shape(learner.targets, algo_state, batch, q)
    ph["targets"], (y, _) = timer(targets_body, (zeros(y_shape), algo_state.target),
                                  (algo_state, batch, q))
    log(f"  agent_forward {1e3 * ph['agent_forward'].median:.1f} ms, targets "
        f"{1e3 * ph['targets'].median:.1f} ms")

    def grad_body(carry, consts, key):
        a_state, batch, weights, y = consts
        grads, info = learner.loss_and_grad(a_state.replace(params=carry[0]), batch, weights, y)
        return cp.perturb(carry[0], info.grad_norm), grads, info.td

    grad_shapes = jax.eval_shape(learner.loss_and_grad, algo_state, batch, weights, y)
    ph["loss_and_grad"], (_, grads, td) = timer(
        grad_body, (algo_state.params, zeros(grad_shapes[0]), zeros(grad_shapes[1].td)),
        (algo_state, batch, weights, y))
    log(f"  loss_and_grad {1e3 * ph['loss_and_grad'].median:.1f} ms")

    def apply_body(carry, consts, key):
        a_state = learner.apply(consts[0].replace(params=carry[0], opt_state=carry[1]),
                                consts[1])
        return a_state.params, a_state.opt_state

    ph["apply"], _ = timer(apply_body, (algo_state.params, algo_state.opt_state),
                           (algo_state, grads))

    def target_body(carry, consts, key):
        a_state = learner.target_update(consts[0].replace(target=carry[0],
                                                          last_target_update=carry[1]))
        return a_state.target, a_state.last_target_update

    ph["target_update"], _ = timer(target_body,
                                   (algo_state.target, algo_state.last_target_update),
                                   (algo_state,))
    ph["priority_update"], buf = timer(
        lambda b, c, k: buffer.update_priorities(b, c[0], c[1]), buf,
        (sampled.indices, td), copy=False)
    return buf


def main(args: argparse.Namespace, settings: dict[str, Any], log: Any) -> list[dict[str, Any]]:
    """Measure every ``--agents`` count, writing the outputs after each (partial results
    kept); returns the records."""
    records, derived = [], []
    for agents in args.agents:
        start = time.perf_counter()
        log(f"[{agents} agents] measuring ...")
        try:
            record = measure_config(args, agents, log)
        except SkipConfig as why:
            log(f"[{agents} agents] SKIPPED: {why}")
            continue
        d = vr.derive(args, record)
        records.append(record)
        derived.append(d)
        log(f"[{agents} agents] done in {time.perf_counter() - start:.0f} s: round "
            f"{1e3 * d['round_s']:.0f} ms, {1e6 * d['per_env_step_s']:.0f} us per env step; "
            f"phase sum / whole: update {d['check']['update_sum_over_whole']:.2f}, round "
            f"{d['check']['round_sum_over_whole']:.2f}; largest phase "
            f"{max(d['shares_round'], key=d['shares_round'].get)}")
        written = vr.write_outputs(args, settings, records, derived)
        log("wrote " + ", ".join(written))
    if records:
        print(vr.table(args, records, derived))
    return records
