"""The timed phases of one agent count (see :mod:`experiments.characterize.phases`): each
phase of papers 000/002 on its own, compiled, on one filled-buffer state, then the whole
rollout and update steps and ``algo.update`` of every actor step form and learner mode.
:func:`experiments.characterize.measure.measure_config` sets the state up and calls
:func:`time_phases`. Shapes: E envs, N agents, B batch, A action-vector width.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from experiments import timing as cp
from jaxmarl_accel.algos import ActorCriticConfig, make_algo
from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.algos.registry import algo_phases
from jaxmarl_accel.buffers import Buffer
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.envs.policies import EnvObs, available_actions
from jaxmarl_accel.trainer.policy import learner_policy
from jaxmarl_accel.trainer.steps import learn_step, transition_step
from jaxmarl_accel.types import PyTree, Transition


class Bench(NamedTuple):
    """One agent count's run as its phases are timed (E envs, N agents, A action width).

    Attributes:
      args: the flags. spec: the env spec. buffer: the run's replay buffer.
      act: ``(algo_state, obs [E, N, obs_dim], env_state, key) -> (env_action,
        action [E, N, A])``: the behaviour policy (with exploration) in every env.
      step: ``(env_state, env_action, key) -> env.step``'s outputs for every env.
      rollout: ``((buffer_state, env_state, obs), algo_state, key) -> the same triple``:
        the trainer's own env step and add (``steps.transition_step``).
      update_whole: ``((algo_state, buffer_state), key) -> the same pair``: the trainer's own
        update step (``steps.learn_step``).
      forms: each ``--actor-step`` form -> the learner with it.
      form_phases: each form -> the steps of its update (its record's ``phases`` hook);
        ``phases``: the first one's.
      timer: :func:`experiments.timing.time_loop` with the run's seed, reps and budget.
      key: the key of the untimed calls.
    """

    args: argparse.Namespace
    spec: EnvSpec
    buffer: Buffer
    act: Callable[..., tuple[PyTree, jax.Array]]
    step: Callable[..., tuple]
    rollout: Callable[..., tuple]
    update_whole: Callable[..., tuple]
    forms: dict[str, Algo]
    form_phases: dict[str, Any]
    phases: Any
    timer: Callable[..., tuple[cp.Timing, PyTree]]
    key: jax.Array


def make_bench(args: argparse.Namespace, spec: EnvSpec, algo: Algo, trainer: Any) -> Bench:
    """The functions timed on one agent count's ``trainer`` with the learner ``algo`` of the
    env ``spec`` (see :class:`Bench`)."""
    env, params, buffer = trainer.env, trainer.env_params, trainer.buffer
    e = args.num_envs
    behaviour = learner_policy(env, algo, scripted_prey=False, explore=True)
    env_step = jax.vmap(env.step, in_axes=(0, 0, 0, None))
    forms = {form: make_algo(args.algo, spec, ActorCriticConfig(actor_step=form))  # one vmap
             for form in args.actor_steps}
    form_phases = {form: algo_phases(args.algo, spec, ActorCriticConfig(actor_step=form))
                   for form in args.actor_steps}

    def act(a_state, obs, e_state, key):
        def one(key, obs, e_state):
            env_action, action_vec, _ = behaviour(a_state, (), key, EnvObs(obs, e_state, params),
                                                  available_actions(env, e_state, params))
            return env_action, action_vec

        return jax.vmap(one)(jax.random.split(key, e), obs, e_state)

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

    timer = functools.partial(cp.time_loop, seed=args.seed + 2, reps=args.reps,
                              budget_s=args.budget_s)
    return Bench(args=args, spec=spec, buffer=buffer, act=act, step=step, rollout=rollout,
                 update_whole=update_whole, forms=forms, form_phases=form_phases,
                 phases=form_phases[args.actor_steps[0]], timer=timer,
                 key=jax.random.key(args.seed + 3))


def time_phases(bench: Bench, record: dict[str, Any], algo_state: PyTree, env_state: PyTree,
                obs: jax.Array, buf: PyTree, log: Any) -> None:
    """Time every phase and whole step into ``record`` on one filled buffer ``buf`` (consumed),
    in this order: action selection, env step, sampling, the learner's phases, buffer add,
    priority update, the whole rollout and update steps, ``algo.update`` per actor step form
    and per learner mode. ``obs`` is ``[E, N, obs_dim]``."""
    ph = record["phases"]
    env_action, action_vec = time_env_phases(bench, ph, algo_state, env_state, obs)
    batch = jax.jit(bench.buffer.sample)(buf, bench.key)
    ph["sampling"], _ = bench.timer(lambda b, c, key: bench.buffer.sample(c[0], key), batch,
                                    (buf,))
    exp, weights = batch.experience, batch.weights
    time_learner_phases(bench, record, algo_state, exp, weights, log)
    buf = time_buffer_phases(bench, ph, buf, env_state, obs, env_action, action_vec,
                             batch.indices)
    time_whole_steps(bench, record["whole"], buf, algo_state, env_state, obs, log)
    time_updates(bench, record, algo_state, exp, weights, log)


def time_env_phases(bench: Bench, ph: dict[str, cp.Timing], algo_state: PyTree,
                    env_state: PyTree, obs: jax.Array) -> tuple[PyTree, jax.Array]:
    """Time ``action_selection`` and ``env_step`` into ``ph``; returns the env action and the
    action vectors ``[E, N, A]`` at ``obs`` (``[E, N, obs_dim]``)."""
    env_action, action_vec = jax.jit(bench.act)(algo_state, obs, env_state, bench.key)

    def act_body(actor, consts, key):
        a_state, obs, e_state = consts
        _, vec = bench.act(a_state.replace(actor=actor), obs, e_state, key)
        return cp.perturb(actor, jnp.mean(vec))

    ph["action_selection"], _ = bench.timer(act_body, algo_state.actor,
                                            (algo_state, obs, env_state))
    ph["env_step"], _ = bench.timer(lambda e_state, c, key: bench.step(e_state, c[0], key)[1],
                                    env_state, (env_action,))
    return env_action, action_vec


def time_learner_phases(bench: Bench, record: dict[str, Any], algo_state: PyTree,
                        exp: Transition, weights: jax.Array, log: Any) -> None:
    """Time the learner's own phases (``target_q``, ``q_loss``, ``p_loss`` of every actor step
    form, ``target_update``) into ``record`` on a sampled batch ``exp`` (leaves
    ``[B, N, ...]``) with importance weights ``weights [B]``."""
    ph, learner, timer = record["phases"], bench.phases, bench.timer
    y = jax.jit(learner.target_q)(algo_state, exp, bench.key)

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

    for form, form_phases in bench.form_phases.items():  # every actor step form, back to back
        timing, _ = timer(functools.partial(p_body, phases=form_phases),
                          (algo_state.actor, algo_state.actor_opt), (algo_state, exp))
        record["actor_step"][form] = {"p_loss": timing}
        log(f"  p_loss (actor_step={form}) {1e3 * timing.median:.2f} ms")
    ph["p_loss"] = record["actor_step"][bench.args.actor_steps[0]]["p_loss"]

    def target_update_body(carry, consts, key):
        a_state = consts[0].replace(target_actor=carry[0], target_critic=carry[1])
        a_state = learner.target_update(a_state)
        return a_state.target_actor, a_state.target_critic

    ph["target_update"], _ = timer(target_update_body,
                                   (algo_state.target_actor, algo_state.target_critic),
                                   (algo_state,))
    log(f"  q_loss {1e3 * ph['q_loss'].median:.2f} ms")


def time_buffer_phases(bench: Bench, ph: dict[str, cp.Timing], buf: PyTree, env_state: PyTree,
                       obs: jax.Array, env_action: PyTree, action_vec: jax.Array,
                       indices: jax.Array) -> PyTree:
    """Time ``buffer_add`` (E transitions from ``obs [E, N, obs_dim]`` and ``action_vec
    [E, N, A]``) and ``priority_update`` (the sampled ``indices``) into ``ph`` on ``buf``
    (consumed); returns the buffer after them."""
    _, _, reward, _, _, info = jax.jit(bench.step)(env_state, env_action, bench.key)
    trans = Transition(obs=obs, action=action_vec, reward=reward, next_obs=info["final_obs"],
                       done=jnp.zeros_like(reward))
    buffer = bench.buffer
    ph["buffer_add"], buf = bench.timer(lambda s, c, key: buffer.add(s, c[0]), buf, (trans,),
                                        copy=False)
    td = jnp.abs(jax.random.normal(bench.key, (bench.args.batch_size, bench.spec.num_agents)))
    ph["priority_update"], buf = bench.timer(
        lambda s, c, key: buffer.update_priorities(s, c[0], c[1]), buf, (indices, td),
        copy=False)
    return buf


def time_whole_steps(bench: Bench, whole: dict[str, cp.Timing], buf: PyTree,
                     algo_state: PyTree, env_state: PyTree, obs: jax.Array, log: Any) -> None:
    """Time the trainer's whole rollout step and whole update step into ``whole`` on ``buf``
    (consumed), from ``obs [E, N, obs_dim]``."""
    carry = (buf, *jax.tree.map(jnp.copy, (env_state, obs)))
    whole["rollout_step"], (buf, _, _) = bench.timer(
        lambda c, consts, key: bench.rollout(c, consts[0], key), carry, (algo_state,),
        copy=False)
    carry = (jax.tree.map(jnp.copy, algo_state), buf)
    whole["update_step"], _ = bench.timer(lambda c, consts, key: bench.update_whole(c, key),
                                          carry, (), copy=False)
    log(f"  whole update step {1e3 * whole['update_step'].median:.2f} ms")


def time_updates(bench: Bench, record: dict[str, Any], algo_state: PyTree, exp: Transition,
                 weights: jax.Array, log: Any) -> None:
    """Time ``algo.update`` (and record its memory plan) for every actor step form, and with
    parallel and sequential learners unless ``--no-compare``, on the batch ``exp`` (leaves
    ``[B, N, ...]``) with weights ``[B]``."""
    args, timer = bench.args, bench.timer
    for form, form_algo in bench.forms.items():  # algo.update of every actor step form
        body = lambda s, c, key, a=form_algo: a.update(s, c[0], c[1], key)[0]  # noqa: E731
        entry = record["actor_step"][form]
        entry["update"], _ = timer(body, algo_state, (exp, weights))
        entry["update_memory"] = update_memory(form_algo, algo_state, exp, weights, bench.key)
        log(f"  algo.update (actor_step={form}) {1e3 * entry['update'].median:.2f} ms, "
            f"temporaries {entry['update_memory']['temp_bytes'] / 2**20:.1f} MiB")
    learner_modes = ("parallel", "sequential") if args.compare else ()
    for mode in learner_modes:
        mode_algo = make_algo(args.algo, bench.spec,
                              ActorCriticConfig(learners=mode, actor_step=args.actor_steps[0]))
        body = lambda s, c, key, a=mode_algo: a.update(s, c[0], c[1], key)[0]  # noqa: E731
        whole = record["whole"]
        whole[f"learner_update_{mode}"], _ = timer(body, algo_state, (exp, weights))
        log(f"  algo.update ({mode}) {1e3 * whole[f'learner_update_{mode}'].median:.2f} ms")


def update_memory(algo: Any, algo_state: PyTree, exp: Transition, weights: jax.Array,
                  key: jax.Array) -> dict[str, int]:
    """XLA's memory plan of one compiled ``algo.update``: the bytes of its temporaries (the
    peak beyond its inputs and outputs), arguments and outputs."""
    compiled = jax.jit(algo.update).lower(algo_state, exp, weights, key).compile()
    stats = compiled.memory_analysis()
    return {"temp_bytes": int(stats.temp_size_in_bytes),
            "argument_bytes": int(stats.argument_size_in_bytes),
            "output_bytes": int(stats.output_size_in_bytes)}
