"""PQN (Gallici et al. 2024, Alg. 1): Q-learning from the rollouts of parallel envs, with
neither a replay buffer nor a target network; the normalized network keeps it stable.

The rollout round (:mod:`jaxmarl_accel.trainer.rounds.rollout`, whose contract this meets)
collects ``T`` steps of ``E`` envs with :func:`sample` (epsilon-greedy over the available
actions; the step's ``value`` is ``max_a Q(s_t, a)`` over them) and :func:`value` (``max_a
Q`` of the observation each step reached, over the actions available there), then calls
:func:`update` once on the :class:`~jaxmarl_accel.types.Rollout`: Q(lambda) returns from
the values taken while acting (:mod:`~.returns`), then ``epochs`` passes over the rollout in
``minibatches`` shuffled minibatches of joint steps, each one RAdam step on the squared
error

* ``pqn`` (independent agents): ``mean_{b, i} (Q(o_i, a_i) - G_i)^2``, each agent's return
  of its own reward;
* ``pqn_vdn`` (Sunehag et al. 2018, eq. 1): ``mean_b (sum_i Q(o_i, a_i) - G)^2``, the
  return of the team reward (the shared reward, or the sum of the agents') from the
  bootstrap ``sum_i max_a Q(o_i, a)``.

One Q-network is shared by all agents (their one-hot id in its input), as in JaxMARL's
PQN-VDN. Epsilon falls on the learner's own count of the env steps it learned from
(:func:`~.config.epsilon`), the same for every seed.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.algos.on_policy.skeleton import OnPolicyFns, PolicyStep
from jaxmarl_accel.algos.pqn import networks as nets
from jaxmarl_accel.algos.pqn.config import PQNConfig, epsilon
from jaxmarl_accel.algos.pqn.returns import q_lambda_returns
from jaxmarl_accel.algos.shuffle import minibatch_order
from jaxmarl_accel.algos.value.batches import team_reward
from jaxmarl_accel.algos.value.targets import chosen, epsilon_greedy, greedy, masked_q
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import Policy, PyTree, Rollout


@struct.dataclass
class PQNState:
    """Learner state.

    Attributes:
      params: the shared Q-network's parameters.
      batch_stats: its BatchNorm running averages (``{}`` without BatchNorm).
      opt_state: RAdam's state.
      env_steps: ``[]`` int32 env steps of the rollouts learned from (epsilon's clock).
      updates: ``[]`` int32 gradient steps taken.
    """

    params: PyTree
    batch_stats: PyTree
    opt_state: PyTree
    env_steps: jax.Array
    updates: jax.Array


class Minibatch(NamedTuple):
    """Joint steps to learn from: ``obs [B, N, obs_dim]``, ``action [B, N]`` int32 and
    ``target [B]`` (``pqn_vdn``) or ``[B, N]`` (``pqn``)."""

    obs: jax.Array
    action: jax.Array
    target: jax.Array


class Skeleton(NamedTuple):
    """The static parts of one PQN learner, fixed by :func:`build` before tracing.

    Attributes:
      spec: the env spec.
      config: the hyperparameters.
      net: the shared Q-network (:class:`~.networks.RNNQNetwork` for ``agent="rnn"``).
      tx: the optimizer (gradient clipping, then RAdam).
      vdn: whether the agents' Q-values are summed (``pqn_vdn``) or learn apart (``pqn``).
    """

    spec: EnvSpec
    config: PQNConfig
    net: nets.QNetwork | nets.RNNQNetwork
    tx: Any
    vdn: bool


def init(s: Skeleton, key: jax.Array) -> PQNState:
    """A fresh learner: the network's variables and RAdam's state, counters at 0."""
    params, batch_stats = nets.init_variables(s.net, key, s.spec.obs_dim, s.spec.num_agents)
    return PQNState(params=params, batch_stats=batch_stats, opt_state=s.tx.init(params),
                    env_steps=jnp.zeros((), jnp.int32), updates=jnp.zeros((), jnp.int32))


def _q(s: Skeleton, state: PQNState, obs: jax.Array) -> jax.Array:
    """Every agent's Q-values ``[..., N, A]`` while acting at ``obs [..., N, obs_dim]``."""
    chex.assert_axis_dimension(obs, -2, s.spec.num_agents)
    chex.assert_axis_dimension(obs, -1, s.spec.obs_dim)
    return nets.q_values(s.net, state.params, state.batch_stats, obs)


def _avail(s: Skeleton, avail: jax.Array | None, shape: tuple[int, ...]) -> jax.Array:
    """The available actions ``[..., N, A]`` (the spec's valid actions when ``avail`` is
    None)."""
    return jnp.broadcast_to(s.spec.action_mask if avail is None else avail, shape)


def act(s: Skeleton, state: PQNState, obs: jax.Array, avail: jax.Array | None,
        key: jax.Array) -> PolicyStep:
    """Epsilon-greedy actions of every agent of ``obs [..., N, obs_dim]`` over ``avail [...,
    N, A]`` (the spec's valid actions when None) at epsilon of ``state.env_steps``: a
    :class:`~jaxmarl_accel.algos.on_policy.skeleton.PolicyStep` with leaves ``[..., N]``,
    log-probabilities 0 (unused) and values ``max_a Q`` over the available actions."""
    q = _q(s, state, obs)
    mask = _avail(s, avail, q.shape)
    action = epsilon_greedy(q, mask, epsilon(s.config, state.env_steps), key)
    best = jnp.max(masked_q(q, mask), axis=-1)
    return PolicyStep(action, action, jnp.zeros(action.shape, jnp.float32), best)


def sample(s: Skeleton, state: PQNState, carry: tuple, obs: jax.Array,
           world: jax.Array | None, avail: jax.Array | None, key: jax.Array
           ) -> tuple[PolicyStep, tuple]:
    """The rollout round's ``sample``: :func:`act` on ``obs [E, N, obs_dim]`` (``world``
    unused), the carry ``()`` as it came."""
    del world
    return act(s, state, obs, avail, key), carry


def value(s: Skeleton, state: PQNState, carry: tuple, obs: jax.Array,
          world: jax.Array | None, avail: jax.Array | None = None) -> jax.Array:
    """``max_a Q`` ``[..., N]`` of every agent's observation ``obs [..., N, obs_dim]`` over
    the actions ``avail [..., N, A]`` available there (the spec's valid actions when None):
    the bootstrap where an episode ended or the rollout ends (``carry`` and ``world``
    unused)."""
    del carry, world
    q = _q(s, state, obs)
    return jnp.max(masked_q(q, _avail(s, avail, q.shape)), axis=-1)


def make_policy(s: Skeleton, explore: bool) -> Policy:
    """The learner's policy of one env (:attr:`~jaxmarl_accel.algos.Algo.policy`): ``(state,
    carry, key, obs [N, obs_dim], avail [N, A] bool or None) -> (env_action [N] int32,
    one-hot [N, A], carry)``, epsilon-greedy at the learner's epsilon (``explore``, static)
    or greedy, over ``avail``; the carry ``()``."""

    def policy(state: PQNState, carry: tuple, key: jax.Array, obs: jax.Array,
               avail: jax.Array | None) -> tuple[jax.Array, jax.Array, tuple]:
        if explore:
            action = act(s, state, obs, avail, key).env_action
        else:
            q = _q(s, state, obs)
            action = greedy(q, _avail(s, avail, q.shape))
        return action, jax.nn.one_hot(action, s.spec.num_actions, dtype=jnp.float32), carry

    return policy


def targets(s: Skeleton, rollout: Rollout) -> jax.Array:
    """The Q(lambda) returns of ``rollout`` (leaves ``[T, E, ...]``): ``[T, E]`` of the team
    reward for ``pqn_vdn`` (bootstraps summed over agents), ``[T, E, N]`` for ``pqn``."""
    reward = s.config.reward_scale * (team_reward(s.spec, rollout.reward) if s.vdn
                                      else rollout.reward)
    joint = (lambda x: jnp.sum(x, axis=-1)) if s.vdn else (lambda x: x)
    return q_lambda_returns(reward, joint(rollout.value), joint(rollout.next_value),
                            rollout.terminated, rollout.ended, s.config.gamma,
                            s.config.q_lambda)


def loss(s: Skeleton, params: PyTree, batch_stats: PyTree, batch: Minibatch
         ) -> tuple[jax.Array, tuple[PyTree, jax.Array]]:
    """The squared error of ``batch`` (module docstring) with the BatchNorm averages after
    it and the mean Q-value of the actions taken."""
    q, batch_stats = nets.q_values_learning(s.net, params, batch_stats, batch.obs)
    taken = chosen(q, batch.action)  # [B, N]
    predicted = jnp.sum(taken, axis=-1) if s.vdn else taken
    return jnp.mean(jnp.square(predicted - batch.target)), (batch_stats, jnp.mean(taken))


def minibatch_step(s: Skeleton, state: PQNState, batch: Minibatch
                   ) -> tuple[PQNState, dict[str, jax.Array]]:
    """One gradient step on ``batch`` (leaves ``[B, ...]``)."""
    (value_loss, (batch_stats, q_mean)), grads = jax.value_and_grad(
        functools.partial(loss, s), has_aux=True)(state.params, state.batch_stats, batch)
    updates, opt_state = s.tx.update(grads, state.opt_state, state.params)
    state = state.replace(params=optax.apply_updates(state.params, updates),
                          batch_stats=batch_stats, opt_state=opt_state,
                          updates=state.updates + 1)
    return state, {"loss": value_loss, "q_taken": q_mean, "grad_norm": optax.tree.norm(grads)}


def update(s: Skeleton, state: PQNState, rollout: Rollout, weights: Any, key: jax.Array
           ) -> tuple[PQNState, dict[str, jax.Array], jax.Array]:
    """Learn from one rollout (leaves ``[T, E, ...]``): its Q(lambda) returns, then
    ``epochs`` passes of ``minibatches`` shuffled minibatch steps. Returns the state, mean
    metrics (with the epsilon the rollout was collected at) and zero priorities."""
    del weights
    returns = targets(s, rollout)
    flat = lambda x: x.reshape((-1, *x.shape[2:]))  # [T E, ...]
    batch = Minibatch(flat(rollout.obs), flat(rollout.action).astype(jnp.int32), flat(returns))
    size, minibatches = batch.obs.shape[0], s.config.minibatches
    if size % minibatches:
        raise ValueError(f"minibatches ({minibatches}) must divide the rollout's {size} joint "
                         "steps (rollout_length x num_envs)")

    def epoch(state: PQNState, epoch_key: jax.Array) -> tuple[PQNState, dict[str, jax.Array]]:
        order = minibatch_order(epoch_key, size)
        split = jax.tree.map(lambda x: jnp.take(x, order, axis=0).reshape(
            (minibatches, size // minibatches, *x.shape[1:])), batch)
        return jax.lax.scan(functools.partial(minibatch_step, s), state, split)

    rate = epsilon(s.config, state.env_steps)
    state, metrics = jax.lax.scan(epoch, state, jax.random.split(key, s.config.epochs))
    state = state.replace(env_steps=state.env_steps + size)
    return (state, {**jax.tree.map(jnp.mean, metrics), "epsilon": rate,
                    "target": jnp.mean(returns)}, jnp.zeros(()))


def make_skeleton(name: str, spec: EnvSpec, config: PQNConfig) -> Skeleton:
    """The static parts of PQN learner ``name`` (``"pqn"`` or ``"pqn_vdn"``) for ``spec``."""
    net = (nets.RNNQNetwork(config.hidden_sizes, spec.num_actions, config.norm)
           if config.agent == "rnn" else
           nets.QNetwork(config.hidden_sizes, spec.num_actions, config.norm, config.norm_input))
    tx = optax.chain(optax.clip_by_global_norm(config.grad_clip), optax.radam(config.lr))
    return Skeleton(spec, config, net, tx, name == "pqn_vdn")


def build(name: str, spec: EnvSpec, config: PQNConfig) -> Algo:
    """The PQN learner ``name`` (``"pqn"`` or ``"pqn_vdn"``) for ``spec`` (discrete actions).

    Returns:
      :class:`~jaxmarl_accel.algos.base.Algo` learning from rollouts, acting over the
      available actions, without memory (carry ``()``), with
      :class:`~jaxmarl_accel.algos.on_policy.skeleton.OnPolicyFns` as ``on_policy``; each
      function is this module's with its :class:`Skeleton` bound.
    """
    s = make_skeleton(name, spec, config)
    bind = functools.partial
    return Algo(init=bind(init, s), policy=bind(make_policy, s), update=bind(update, s),
                action_dim=spec.num_actions,
                on_policy=OnPolicyFns(bind(sample, s), bind(value, s), config.rollout_length))


__all__ = ["Minibatch", "PQNState", "Skeleton", "build", "make_skeleton"]
