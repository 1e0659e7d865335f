"""The training phases of papers 000/002, each as its own compiled function, and their timing.

Phases (paper 000 Fig. 2/3, paper 002 section V):

* rollout, once per vectorized env step: ``action_selection`` (every agent's actor with
  exploration), ``env_step``, ``buffer_add``;
* update, once per ``update_every`` env steps: ``sampling`` (mini-batch), ``target_q``
  (target actors at ``next_obs`` and target critics -> ``y``), ``q_loss`` (critic forward,
  backward and optimizer step), ``p_loss`` (actor forward through the critic, backward and
  optimizer step), ``target_update`` (soft update of all target networks), and
  ``priority_update`` (PER-style samplers only; identity otherwise).

The learner's own ``update`` keeps these steps in private closures, so the three learner
phases here are rebuilt from the public pieces (``algos.networks``, ``algos.policies``, the
algorithm module's ``variant``) with the same shapes and arithmetic; the check
``sum of phases / whole step`` compares them with the real ``algo.update``.
"""

from __future__ import annotations

import importlib
import statistics
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from jaxmarl_accel.algos import AlgoConfig, AlgoState, networks
from jaxmarl_accel.algos.policies import make_policy
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import Transition

PyTree = Any
ROLLOUT_PHASES = ("action_selection", "env_step", "buffer_add")
UPDATE_PHASES = ("sampling", "target_q", "q_loss", "p_loss", "target_update", "priority_update")
PHASES = ROLLOUT_PHASES + UPDATE_PHASES


class Timing(NamedTuple):
    """Seconds of one phase: compile time, and the per-iteration time of each timed call
    (a call runs the phase ``inner`` times in a compiled loop, so dispatch is amortized)."""

    compile_s: float
    samples: tuple[float, ...]
    inner: int = 1

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    def stat(self, name: str) -> float:
        """``"median"`` or ``"min"`` seconds per iteration (min: the least disturbed call,
        the better estimate on a machine shared with other work)."""
        return min(self.samples) if name == "min" else self.median

    def summary(self) -> dict[str, float]:
        """Median, min, max and inter-quartile range in milliseconds per iteration."""
        ms = sorted(1e3 * s for s in self.samples)
        q = statistics.quantiles(ms, n=4, method="inclusive") if len(ms) > 1 else [ms[0]] * 3
        return {"median_ms": statistics.median(ms), "min_ms": ms[0], "max_ms": ms[-1],
                "q25_ms": q[0], "q75_ms": q[2], "reps": len(ms), "inner": self.inner,
                "compile_s": self.compile_s}


def perturb(tree: PyTree, value: jax.Array) -> PyTree:
    """``tree + 1e-12 * value``: makes the next loop iteration depend on this one's output so
    that XLA cannot hoist loop-invariant work out of a timing loop (a few tiny adds)."""
    return jax.tree.map(lambda x: x + 1e-12 * value.astype(x.dtype), tree)


def time_loop(body: Callable, carry: PyTree, consts: tuple, *, seed: int, reps: int,
              budget_s: float, target_s: float = 0.05, max_inner: int = 200,
              copy: bool = True) -> tuple[Timing, PyTree]:
    """Time ``carry = body(carry, consts, key)`` as it runs inside the training scan.

    One compiled ``fori_loop`` runs ``inner`` iterations per call (key ``fold_in(key, i)``),
    with the carry donated (updated in place). A first call with one iteration warms up and
    sizes ``inner`` so that a call lasts about ``target_s``; then ``reps`` calls are timed
    (at least two, fewer than ``reps`` once ``budget_s`` is spent). The carry is copied
    first unless ``copy`` is False (then the caller's carry is consumed).

    Returns:
      ``(Timing, final carry)``.
    """
    def run(carry, consts, key, inner):
        step = lambda i, c: body(c, consts, jax.random.fold_in(key, i))  # noqa: E731
        return jax.lax.fori_loop(0, inner, step, carry)

    if copy:
        carry = jax.tree.map(jnp.copy, carry)
    key = jax.random.key(seed)
    start = time.perf_counter()
    compiled = jax.jit(run, donate_argnums=0).lower(carry, consts, key, 1).compile()
    compile_s = time.perf_counter() - start
    first = float("inf")
    for _ in range(2):  # the faster of two single iterations sizes the loop
        start = time.perf_counter()
        carry = jax.block_until_ready(compiled(carry, consts, key, 1))
        first = min(first, time.perf_counter() - start)
    inner = int(min(max_inner, max(1, round(target_s / max(first, 1e-6)))))
    samples: list[float] = []
    for rep in range(reps):
        start = time.perf_counter()
        carry = jax.block_until_ready(compiled(carry, consts, jax.random.fold_in(key, rep),
                                               inner))
        samples.append((time.perf_counter() - start) / inner)
        if len(samples) >= 2 and sum(samples) * inner > budget_s:
            break
    return Timing(compile_s, tuple(samples), inner), carry


def algo_variant(name: str, spec: EnvSpec, config: AlgoConfig) -> Any:
    """The skeleton plug-ins of algorithm ``name`` (its module's public ``variant``)."""
    return importlib.import_module(f"jaxmarl_accel.algos.{name}").variant(spec, config)


class LearnerPhases(NamedTuple):
    """The learner's phases as pure functions of the same inputs as ``algo.update``.

    Attributes:
      target_q: ``(algo_state, batch [B, N, ...], key) -> y [N, B]``.
      q_loss: ``(algo_state, critic_opt, batch, weights [B], y [N, B], key) -> (critic,
        critic_opt)`` for all N agents.
      p_loss: ``(algo_state, actor_opt, batch, key) -> (actor, actor_opt)``.
      target_update: ``(algo_state, key) -> (target_actor, target_critic)``.
      init_opt: ``algo_state -> (actor_opt, critic_opt)``, optimizer states of the rebuild.
    """

    target_q: Callable
    q_loss: Callable
    p_loss: Callable
    target_update: Callable
    init_opt: Callable


def learner_phases(name: str, spec: EnvSpec, config: AlgoConfig) -> LearnerPhases:
    """Rebuild the learner steps of ``algos/core.py`` (``critic_loss``, ``actor_loss``,
    target update) phase by phase, all agents in one ``vmap`` (the parallel learners)."""
    variant = algo_variant(name, spec, config)
    policy = make_policy(spec, config, variant.stochastic)
    actor_mlp = networks.MLP(config.hidden_sizes, policy.out_size)
    critic_mlp = networks.MLP(config.hidden_sizes, 1)
    n = spec.num_agents
    mask = spec.action_mask if not spec.continuous else jnp.ones((n, policy.action_dim), bool)
    clip = [optax.clip_by_global_norm(config.grad_clip)] if config.grad_clip else []
    critic_tx = optax.chain(*clip, optax.adam(config.critic_lr))
    actor_tx = optax.chain(*clip, optax.adam(config.actor_lr))
    alpha = config.alpha if variant.entropy else 0.0

    def flat_step(tx, grads, opt_state, params):
        flat, unravel = ravel_pytree(params)
        updates, opt_state = tx.update(ravel_pytree(grads)[0], opt_state, flat)
        return unravel(flat + updates), opt_state

    def init_opt(state: AlgoState):
        actor_opt = jax.vmap(lambda p: actor_tx.init(ravel_pytree(p)[0]))(state.actor)
        critic_opt = jax.vmap(lambda p: critic_tx.init(ravel_pytree(p)[0]))(state.critic)
        return actor_opt, critic_opt

    def target_q(state: AlgoState, batch: Transition, key: jax.Array) -> jax.Array:
        params = state.actor if variant.target_from_online else state.target_actor
        out = networks.apply_actors(actor_mlp, params, batch.next_obs)
        next_action, bonus = variant.next_action(policy, out, mask, key)
        x_next = networks.critic_input(batch.next_obs, next_action)

        def one(target_critic, i):
            q_next = jnp.min(networks.apply_critics(critic_mlp, target_critic, x_next), axis=0)
            soft = q_next + alpha * bonus[:, i]
            return batch.reward[:, i] + config.gamma * (1.0 - batch.done[:, i]) * soft

        return jax.vmap(one)(state.target_critic, jnp.arange(n))

    def q_loss(state, critic_opt, batch, weights, y, key):
        del key
        x = networks.critic_input(batch.obs, batch.action)

        def loss(critic, y_i):
            q = networks.apply_critics(critic_mlp, critic, x)
            return jnp.mean(weights * jnp.sum((q - y_i) ** 2, axis=0))

        def one(critic, opt, y_i):
            return flat_step(critic_tx, jax.grad(loss)(critic, y_i), opt, critic)

        return jax.vmap(one)(state.critic, critic_opt, y)

    def p_loss(state, actor_opt, batch, key):
        def loss(actor, critic, i, agent_key):
            out = actor_mlp.apply(actor, jnp.take(batch.obs, i, axis=1))
            own, bonus = policy.sample(out, mask[i], agent_key)
            select = jax.nn.one_hot(i, n)[None, :, None]
            joint = batch.action * (1.0 - select) + own[:, None, :] * select
            used = jax.tree.map(lambda x: x[: variant.actor_critics], critic)
            q = jnp.min(networks.apply_critics(
                critic_mlp, used, networks.critic_input(batch.obs, joint)), axis=0)
            return (-jnp.mean(q) - alpha * jnp.mean(bonus)
                    + config.actor_reg * policy.reg(out, mask[i]))

        def one(actor, critic, opt, i, agent_key):
            grads = jax.grad(loss)(actor, critic, i, agent_key)
            return flat_step(actor_tx, grads, opt, actor)

        keys = jax.random.split(key, n)
        return jax.vmap(one)(state.actor, state.critic, actor_opt, jnp.arange(n), keys)

    def target_update(state: AlgoState, key: jax.Array):
        del key
        return (optax.incremental_update(state.actor, state.target_actor, config.tau),
                optax.incremental_update(state.critic, state.target_critic, config.tau))

    return LearnerPhases(target_q, q_loss, p_loss, target_update, init_opt)
