"""Measure one configuration: every phase on the same filled-buffer state, the whole steps,
the sampler / layout / learner comparisons and (optionally) the real trainer's chunk time."""

from __future__ import annotations

import argparse
import functools
import gc
import math
import time
from typing import Any

import jax
import jax.numpy as jnp

from experiments import timing as cp
from jaxmarl_accel.algos import ActorCriticConfig, make_algo
from jaxmarl_accel.algos.actor_critic.config import actor_step_form
from jaxmarl_accel.buffers import Buffer, make_buffer
from jaxmarl_accel.buffers.storage import tree_leaf_bytes
from jaxmarl_accel.cli import flags
from jaxmarl_accel.cli.memory import ensure_fits
from jaxmarl_accel.config import TrainConfig, steps_per_round
from jaxmarl_accel.envs.policies import learner_policy
from jaxmarl_accel.trainer.steps import example_transition, learn_step, transition_step
from jaxmarl_accel.trainer.train import make_trainer
from jaxmarl_accel.types import Transition

PyTree = Any


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


def measure_config(args: argparse.Namespace, agents: int, log: Any) -> dict[str, Any]:
    """All measurements of one agent count; see the module docstring."""
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
    config = train_config(args, agents, capacity)
    trainer = make_trainer(config)
    env, params, buffer = trainer.env, trainer.env_params, trainer.buffer
    record: dict[str, Any] = {
        "agents": agents, "num_agents": spec.num_agents, "obs_dim": spec.obs_dim,
        "capacity": capacity, "buffer_gb": capacity * per_transition / 2**30,
        "bytes_per_transition": per_transition, "phases": {}, "whole": {}, "compare": {},
        "actor_step": {}}
    log(f"  N={spec.num_agents} learners, obs {spec.obs_dim}, capacity {capacity} "
        f"({record['buffer_gb']:.2f} GiB)")
    state = jax.jit(trainer.init)(jax.random.key(args.seed))
    count = max(args.batch_size, int(args.fill * capacity))
    chunk = min(1024, capacity)
    buf = fill(buffer, state.buffer, example, count, chunk, jax.random.key(args.seed + 1))
    algo_state, env_state, obs = state.algo, state.env_state, state.obs
    del state
    e = args.num_envs
    behaviour = learner_policy(env, algo, scripted_prey=False, explore=True)
    env_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    forms = {form: make_algo(args.algo, spec, ActorCriticConfig(actor_step=form))  # one vmap
             for form in args.actor_steps}
    learner = forms[args.actor_steps[0]].phases

    def act(a_state, obs, e_state, key):
        return jax.vmap(behaviour, in_axes=(None, 0, 0, 0, None))(
            a_state, jax.random.split(key, e), obs, e_state, params)

    def step(e_state, env_action, key):
        return env_step(jax.random.split(key, e), e_state, env_action, params)

    def rollout(carry, a_state, key):  # the trainer's own env step (steps.transition_step)
        b_state, e_state, obs = carry
        act_key, step_key = jax.random.split(key)
        out = transition_step(env, params, behaviour, a_state, e_state, obs, act_key, step_key)
        return buffer.add(b_state, out.transition), out.env_state, out.obs

    def update_whole(carry, key):  # the trainer's own update (steps.learn_step)
        sample_key, update_key = jax.random.split(key)
        learned = learn_step(algo, buffer, *carry, sample_key, update_key)
        return learned.algo, learned.buffer

    ph, whole = record["phases"], record["whole"]
    timer = functools.partial(cp.time_loop, seed=args.seed + 2, reps=args.reps,
                              budget_s=args.budget_s)
    key0 = jax.random.key(args.seed + 3)
    env_action, action_vec = jax.jit(act)(algo_state, obs, env_state, key0)

    def act_body(actor, consts, key):
        a_state, obs, e_state = consts
        _, vec = act(a_state.replace(actor=actor), obs, e_state, key)
        return cp.perturb(actor, jnp.mean(vec))

    ph["action_selection"], _ = timer(act_body, algo_state.actor, (algo_state, obs, env_state))
    ph["env_step"], _ = timer(lambda e_state, c, key: step(e_state, c[0], key)[1], env_state,
                              (env_action,))
    batch = jax.jit(buffer.sample)(buf, key0)
    ph["sampling"], _ = timer(lambda b, c, key: buffer.sample(c[0], key), batch, (buf,))
    exp, weights = batch.experience, batch.weights
    y = jax.jit(learner.target_q)(algo_state, exp, key0)

    def target_body(carry, consts, key):
        a_state, exp = consts
        y = learner.target_q(a_state.replace(target_actor=carry[1]), exp, key)
        return y, cp.perturb(carry[1], jnp.mean(y))

    ph["target_q"], _ = timer(target_body, (y, algo_state.target_actor), (algo_state, exp))
    log(f"  target_q {1e3 * ph['target_q'].median:.2f} ms")

    def q_body(carry, consts, key):
        a_state, exp, weights, y = consts
        a_state = a_state.replace(critic=carry[0], critic_opt=carry[1])
        a_state, _ = learner.critic_step(a_state, exp, weights, y)
        return a_state.critic, a_state.critic_opt

    ph["q_loss"], _ = timer(q_body, (algo_state.critic, algo_state.critic_opt),
                            (algo_state, exp, weights, y))

    def p_body(carry, consts, key, phases=learner):
        a_state, exp = consts
        a_state, _ = phases.actor_step(a_state.replace(actor=carry[0], actor_opt=carry[1]),
                                       exp, key)
        return a_state.actor, a_state.actor_opt

    for form, form_algo in forms.items():  # every actor step form, back to back
        timing, _ = timer(functools.partial(p_body, phases=form_algo.phases),
                          (algo_state.actor, algo_state.actor_opt), (algo_state, exp))
        record["actor_step"][form] = {"p_loss": timing}
        log(f"  p_loss (actor_step={form}) {1e3 * timing.median:.2f} ms")
    ph["p_loss"] = record["actor_step"][args.actor_steps[0]]["p_loss"]

    def target_update_body(carry, consts, key):
        a_state = consts[0].replace(target_actor=carry[0], target_critic=carry[1])
        a_state = learner.target_update(a_state)
        return a_state.target_actor, a_state.target_critic

    ph["target_update"], _ = timer(target_update_body,
                                   (algo_state.target_actor, algo_state.target_critic),
                                   (algo_state,))
    log(f"  q_loss {1e3 * ph['q_loss'].median:.2f} ms")
    del y
    _, _, reward, _, _, info = jax.jit(step)(env_state, env_action, key0)
    trans = Transition(obs=obs, action=action_vec, reward=reward, next_obs=info["final_obs"],
                       done=jnp.zeros_like(reward))
    ph["buffer_add"], buf = timer(lambda s, c, key: buffer.add(s, c[0]), buf, (trans,),
                                  copy=False)
    td = jnp.abs(jax.random.normal(key0, (args.batch_size, spec.num_agents)))
    ph["priority_update"], buf = timer(
        lambda s, c, key: buffer.update_priorities(s, c[0], c[1]), buf, (batch.indices, td),
        copy=False)
    carry = (buf, *jax.tree.map(jnp.copy, (env_state, obs)))
    whole["rollout_step"], (buf, _, _) = timer(lambda c, consts, key: rollout(c, consts[0], key),
                                               carry, (algo_state,), copy=False)
    carry = (jax.tree.map(jnp.copy, algo_state), buf)
    whole["update_step"], (_, buf) = timer(lambda c, consts, key: update_whole(c, key), carry,
                                           (), copy=False)
    log(f"  whole update step {1e3 * whole['update_step'].median:.2f} ms")
    for form, form_algo in forms.items():  # algo.update of every actor step form
        body = lambda s, c, key, a=form_algo: a.update(s, c[0], c[1], key)[0]  # noqa: E731
        entry = record["actor_step"][form]
        entry["update"], _ = timer(body, algo_state, (exp, weights))
        entry["update_memory"] = update_memory(form_algo, algo_state, exp, weights, key0)
        log(f"  algo.update (actor_step={form}) {1e3 * entry['update'].median:.2f} ms, "
            f"temporaries {entry['update_memory']['temp_bytes'] / 2**20:.1f} MiB")
    learner_modes = ("parallel", "sequential") if args.compare else ()
    for mode in learner_modes:
        mode_algo = make_algo(args.algo, spec,
                              ActorCriticConfig(learners=mode, actor_step=args.actor_steps[0]))
        body = lambda s, c, key, a=mode_algo: a.update(s, c[0], c[1], key)[0]  # noqa: E731
        whole[f"learner_update_{mode}"], _ = timer(body, algo_state, (exp, weights))
        log(f"  algo.update ({mode}) {1e3 * whole[f'learner_update_{mode}'].median:.2f} ms")
    del buf, batch, exp, weights, env_state, obs, algo_state
    gc.collect()
    if args.compare:
        record["compare"] = compare_samplers(args, example, capacity, count, chunk, log)
    if args.trainer_chunks:
        record["trainer"] = trainer_check(args, config, log)
    return record


def update_memory(algo: Any, algo_state: PyTree, exp: Transition, weights: jax.Array,
                  key: jax.Array) -> dict[str, int]:
    """XLA's memory plan of one compiled ``algo.update``: the bytes of its temporaries (the
    peak beyond its inputs and outputs), arguments and outputs."""
    compiled = jax.jit(algo.update).lower(algo_state, exp, weights, key).compile()
    stats = compiled.memory_analysis()
    return {"temp_bytes": int(stats.temp_size_in_bytes),
            "argument_bytes": int(stats.argument_size_in_bytes),
            "output_bytes": int(stats.output_size_in_bytes)}


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
