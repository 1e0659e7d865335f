"""Recurrent PQN (``agent="rnn"``, as JaxMARL's ``pqn_vdn_rnn``): the shared Q-network has a
GRU (:class:`~.networks.RNNQNetwork`), whose state the rollout round carries from step to
step and round to round and resets at episode ends (the round's carry contract,
:mod:`jaxmarl_accel.trainer.rounds.rollout`).

Acting is :mod:`~.learner`'s on one GRU step from the carry. Learning unrolls the GRU over
each env's rollout again from the carry the rollout started with, its state set to zero
before every step that starts an episode, so the recomputed Q-values are those the rollout
was collected with (truncated backpropagation through the rollout); the Q(lambda) returns
are :mod:`~.learner`'s, and each minibatch is ``num_envs / minibatches`` whole env
sequences.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.algos.on_policy.skeleton import OnPolicyFns, PolicyStep
from jaxmarl_accel.algos.pqn import networks as nets
from jaxmarl_accel.algos.pqn.config import PQNConfig, epsilon
from jaxmarl_accel.algos.pqn.learner import PQNState, Skeleton, make_skeleton, targets
from jaxmarl_accel.algos.shuffle import minibatch_order
from jaxmarl_accel.algos.value.targets import chosen, epsilon_greedy, greedy, masked_q
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import Policy, PyTree, Rollout


def initial_carry(s: Skeleton, lead: tuple[int, ...]) -> jax.Array:
    """The GRU state at an episode's start, zeros ``[*lead, N, H]``."""
    return jnp.zeros((*lead, s.spec.num_agents, s.config.hidden_sizes[0]), jnp.float32)


def init(s: Skeleton, key: jax.Array) -> PQNState:
    """A fresh learner: the network's parameters and RAdam's state, counters at 0."""
    params = nets.init_recurrent(s.net, key, s.spec.obs_dim, s.spec.num_agents)
    return PQNState(params=params, batch_stats={}, opt_state=s.tx.init(params),
                    env_steps=jnp.zeros((), jnp.int32), updates=jnp.zeros((), jnp.int32))


def _avail(s: Skeleton, avail: jax.Array | None, shape: tuple[int, ...]) -> jax.Array:
    return jnp.broadcast_to(s.spec.action_mask if avail is None else avail, shape)


def sample(s: Skeleton, state: PQNState, carry: jax.Array, obs: jax.Array,
           world: jax.Array | None, avail: jax.Array | None, key: jax.Array
           ) -> tuple[PolicyStep, jax.Array]:
    """One GRU step from ``carry [E, N, H]`` at ``obs [E, N, obs_dim]``, then epsilon-greedy
    over ``avail``: ``(PolicyStep [E, N], carry after the step)`` (``world`` unused)."""
    del world
    carry, q = nets.q_step(s.net, state.params, carry, obs)
    mask = _avail(s, avail, q.shape)
    action = epsilon_greedy(q, mask, epsilon(s.config, state.env_steps), key)
    best = jnp.max(masked_q(q, mask), axis=-1)
    return PolicyStep(action, action, jnp.zeros(action.shape, jnp.float32), best), carry


def value(s: Skeleton, state: PQNState, carry: jax.Array, obs: jax.Array,
          world: jax.Array | None, avail: jax.Array | None = None) -> jax.Array:
    """``max_a Q`` ``[E, N]`` one GRU step on from ``carry`` at the observations a step
    reached, over the actions ``avail [E, N, A]`` available there (the spec's valid actions
    when None; ``world`` unused)."""
    del world
    _, q = nets.q_step(s.net, state.params, carry, obs)
    return jnp.max(masked_q(q, _avail(s, avail, q.shape)), axis=-1)


def make_policy(s: Skeleton, explore: bool) -> Policy:
    """The policy of one env: ``(state, carry [N, H], key, obs [N, obs_dim], avail [N, A]
    or None) -> (env_action [N], one-hot [N, A], carry')``, epsilon-greedy (``explore``)
    or greedy over ``avail``."""

    def policy(state: PQNState, carry: jax.Array, key: jax.Array, obs: jax.Array,
               avail: jax.Array | None) -> tuple[jax.Array, jax.Array, jax.Array]:
        if explore:
            step, carry = sample(s, state, carry, obs, None, avail, key)
            action = step.env_action
        else:
            carry, q = nets.q_step(s.net, state.params, carry, obs)
            action = greedy(q, _avail(s, avail, q.shape))
        return action, jax.nn.one_hot(action, s.spec.num_actions, dtype=jnp.float32), carry

    return policy


def loss(s: Skeleton, params: PyTree, batch: tuple[jax.Array, ...]) -> tuple[jax.Array,
                                                                               jax.Array]:
    """The squared error over whole sequences: ``batch = (obs [T, B, N, D], action [T, B,
    N], target [T, B] or [T, B, N], h0 [B, N, H], first [T, B])``."""
    obs, action, target, h0, first = batch
    taken = chosen(nets.q_unroll(s.net, params, obs, h0, first), action)  # [T, B, N]
    predicted = jnp.sum(taken, axis=-1) if s.vdn else taken
    return jnp.mean(jnp.square(predicted - target)), jnp.mean(taken)


def minibatch_step(s: Skeleton, state: PQNState, batch: tuple[jax.Array, ...]
                   ) -> tuple[PQNState, dict[str, jax.Array]]:
    """One gradient step on a minibatch of whole sequences."""
    (value_loss, q_mean), grads = jax.value_and_grad(
        functools.partial(loss, s), has_aux=True)(state.params, batch)
    updates, opt_state = s.tx.update(grads, state.opt_state, state.params)
    state = state.replace(params=optax.apply_updates(state.params, updates),
                          opt_state=opt_state, updates=state.updates + 1)
    return state, {"loss": value_loss, "q_taken": q_mean, "grad_norm": optax.tree.norm(grads)}


def update(s: Skeleton, state: PQNState, rollout: Rollout, weights: Any, key: jax.Array
           ) -> tuple[PQNState, dict[str, jax.Array], jax.Array]:
    """Learn from one rollout (leaves ``[T, E, ...]``, ``carry [E, N, H]``): Q(lambda)
    returns, then ``epochs`` passes of ``minibatches`` minibatches of whole env sequences."""
    del weights
    returns = targets(s, rollout)
    steps, envs = rollout.reward.shape[:2]
    first = jnp.concatenate([jnp.zeros((1, envs)), rollout.ended[:-1]], axis=0)
    h0 = initial_carry(s, (envs,)) if rollout.carry is None else rollout.carry
    batch = (rollout.obs, rollout.action.astype(jnp.int32), returns, h0, first)
    minibatches = s.config.minibatches
    if envs % minibatches:
        raise ValueError(f"minibatches ({minibatches}) must divide num_envs ({envs}): "
                         "agent 'rnn' learns from whole env sequences")
    env_axis = (1, 1, 1, 0, 1)  # obs, action, target, h0, first

    def epoch(state: PQNState, epoch_key: jax.Array) -> tuple[PQNState, dict[str, jax.Array]]:
        order = minibatch_order(epoch_key, envs)

        def split(x: jax.Array, axis: int) -> jax.Array:
            x = jnp.moveaxis(jnp.take(x, order, axis=axis), axis, 0)  # envs first
            x = x.reshape((minibatches, envs // minibatches, *x.shape[1:]))
            return jnp.moveaxis(x, 1, axis + 1)  # [M, ..., B, ...]

        parts = tuple(split(x, axis) for x, axis in zip(batch, env_axis, strict=True))
        return jax.lax.scan(functools.partial(minibatch_step, s), state, parts)

    rate = epsilon(s.config, state.env_steps)
    state, metrics = jax.lax.scan(epoch, state, jax.random.split(key, s.config.epochs))
    state = state.replace(env_steps=state.env_steps + steps * envs)
    return (state, {**jax.tree.map(jnp.mean, metrics), "epsilon": rate,
                    "target": jnp.mean(returns)}, jnp.zeros(()))


def build(name: str, spec: EnvSpec, config: PQNConfig) -> Algo:
    """The recurrent PQN learner ``name`` (``"pqn"`` or ``"pqn_vdn"``) for ``spec``: an
    :class:`~jaxmarl_accel.algos.base.Algo` whose carry is the GRU state ``[N, H]`` of one
    env (``[E, N, H]`` in the rollout round)."""
    s = make_skeleton(name, spec, config)
    bind = functools.partial
    return Algo(init=bind(init, s), policy=bind(make_policy, s), update=bind(update, s),
                action_dim=spec.num_actions,
                initial_carry=lambda: initial_carry(s, ()),
                on_policy=OnPolicyFns(bind(sample, s), bind(value, s), config.rollout_length,
                                      initial_carry=lambda num_envs: initial_carry(
                                          s, (num_envs,))))


__all__ = ["build", "initial_carry"]
