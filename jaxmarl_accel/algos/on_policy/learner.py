"""A2C and PPO with one policy-value network per team (paper 003's trainer).

The rollout round (:mod:`jaxmarl_accel.trainer.rounds.rollout`) collects ``T`` steps of ``E`` envs
with :attr:`OnPolicyFns.sample` (actions, their log-probabilities and values) and
:attr:`OnPolicyFns.value` (the value of each step's true next observation), then calls
``update`` once on the :class:`~jaxmarl_accel.types.Rollout`:

* A2C (Mnih et al. 2016; WarpDrive's ``A2C``, paper 003): n-step returns to the rollout's
  end (:func:`~.losses.gae` with lambda 1), one gradient step on the whole rollout with
  ``-log pi A + c_v (V - G)^2 - c_e H``. WarpDrive ends the return recursion at the last
  step's own value; here the last step bootstraps from the value of the observation it
  reached, the standard n-step return.
* PPO (Schulman et al. 2017, Alg. 1): GAE (Schulman et al. 2016, eq. 16), then ``epochs``
  passes over the rollout in ``minibatches`` shuffled minibatches of joint steps, each a
  gradient step on the clipped surrogate (eq. 7) with the same value and entropy terms,
  against the log-probabilities of the policy that collected the rollout. (WarpDrive's PPO
  takes the "old" log-probabilities from the same forward pass as the new ones, so its
  ratio is always 1 and its gradient A2C's.)

Every team's loss is a mean over its own agents' samples; their sum is differentiated, so
team k's gradient comes from its agents only. Each team has its own Adam state, its own
learning rate (``team_lr``, WarpDrive's per-policy ``lr``) and its gradient is clipped by
its own global norm (WarpDrive's per-policy ``clip_grad_norm_``).

On an env whose discrete action is several independent choices (``EnvSpec.action_factors``,
continuous Tag's acceleration and turn) the policy head draws each choice from its own
categorical (WarpDrive's multi-discrete heads; ``factored_actions``).

With ``normalize_value`` each team's value head learns its targets in units of their
running mean and standard deviation (MAPPO's ValueNorm, :class:`~.losses.ValueNorm`): the
moments take in the rollout's targets once per ``update``, before its gradient steps (MAPPO
folds in each minibatch's), and every value the rollout round or the advantages read is
mapped back, ``V = mu + sigma v``.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.algos.on_policy import losses
from jaxmarl_accel.algos.on_policy import networks as nets
from jaxmarl_accel.algos.on_policy.config import (
    OnPolicyConfig,
    normalizes_advantage,
    team_learning_rates,
)
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import Policy, PyTree, Rollout


@struct.dataclass
class OnPolicyState:
    """Learner state.

    Attributes:
      params: one parameter tree per team (:func:`~.networks.init_params`).
      opt_state: one Adam state per team.
      updates: ``[]`` int32 gradient steps taken.
      value_norm: with ``normalize_value``, one :class:`~.losses.ValueNorm` per team (its
        value targets' running moments); else ``()``.
    """

    params: tuple[PyTree, ...]
    opt_state: tuple[PyTree, ...]
    updates: jax.Array
    value_norm: tuple[losses.ValueNorm, ...] = ()


class PolicyStep(NamedTuple):
    """Exploration actions of every agent with what the update needs of them.

    Attributes:
      env_action: ``[..., N]`` int32 (discrete) or ``[..., N, act_dim]`` in [0, 1] (the
        Gaussian sample clipped), what the env executes.
      action: what the log-probability is of: the discrete index ``[..., N]`` or the
        unclipped Gaussian sample ``[..., N, act_dim]``.
      log_prob: ``[..., N]`` log pi(action | obs).
      value: ``[..., N]`` V(obs).
    """

    env_action: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array


class OnPolicyFns(NamedTuple):
    """What the rollout round calls besides ``update``.

    Attributes:
      sample: ``(state, obs [E, N, obs_dim], avail [E, N, A] bool or None, key) ->
        PolicyStep`` with leaves ``[E, N, ...]``.
      value: ``(state, obs [..., N, obs_dim]) -> [..., N]`` values.
      rollout_length: T, env steps per env in one rollout.
    """

    sample: Any
    value: Any
    rollout_length: int


class Phases(NamedTuple):
    """The steps ``update`` is composed of.

    Attributes:
      advantages: ``(state, rollout) -> Advantages`` (leaves ``[T, E, N]``).
      minibatch_step: ``(state, minibatch) -> (state, metrics)``: one gradient step of
        every team on a minibatch (leaves ``[B, N, ...]`` of :class:`Minibatch`).
    """

    advantages: Any
    minibatch_step: Any


class Minibatch(NamedTuple):
    """Joint steps to learn from (leaves ``[B, N, ...]``; ``avail`` may be ``None``)."""

    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    advantage: jax.Array
    target: jax.Array
    avail: jax.Array | None


class Skeleton(NamedTuple):
    """The static parts of one on-policy learner, fixed by :func:`build` before tracing: the
    functions below take it first.

    Attributes:
      spec: the env spec.
      config: the hyperparameters.
      policy: the teams' networks (:func:`~.networks.make_policy`).
      txs: one optax transformation per team (its clipping and learning rate).
      ppo: PPO (True) or A2C.
      epochs, minibatches: PPO's, or ``(1, 1)`` for A2C.
      lam: GAE lambda (1 for A2C's n-step returns).
      normalize: advantages standardized per minibatch.
    """

    spec: EnvSpec
    config: OnPolicyConfig
    policy: nets.Policy
    txs: tuple[Any, ...]
    ppo: bool
    epochs: int
    minibatches: int
    lam: float
    normalize: bool


def init(s: Skeleton, key: jax.Array) -> OnPolicyState:
    """A fresh learner: every team's parameters and Adam state (and value moments)."""
    params = nets.init_params(s.policy, key, s.spec.obs_dim, s.config.log_std_init)
    return OnPolicyState(
        params=params, opt_state=tuple(tx.init(p) for tx, p in zip(s.txs, params, strict=True)),
        updates=jnp.zeros((), jnp.int32),
        value_norm=(tuple(losses.value_norm_init() for _ in s.txs)
                    if s.config.normalize_value else ()))


def unnormalized(s: Skeleton, state: OnPolicyState, vals: list[jax.Array]) -> list[jax.Array]:
    """The teams' value-head outputs ``[..., N_k]`` as values (ValueNorm undone)."""
    if not s.config.normalize_value:
        return vals
    moments = [losses.value_norm_moments(norm) for norm in state.value_norm]
    return [mu + sigma * v for v, (mu, sigma) in zip(vals, moments, strict=True)]


def team_mask(s: Skeleton, k: int, avail: jax.Array | None) -> jax.Array | None:
    """Team ``k``'s available actions ``[..., N_k, A]`` (the spec's when ``avail`` is None);
    None for continuous actions."""
    if s.spec.continuous:
        return None
    return nets.team_rows(s.policy.teams, k, s.spec.action_mask if avail is None else avail,
                          -2)


def sample(s: Skeleton, state: OnPolicyState, obs: jax.Array, avail: jax.Array | None,
           key: jax.Array) -> PolicyStep:
    """Exploration actions of every agent of ``obs [E, N, obs_dim]`` (:class:`PolicyStep`)."""
    teams = s.policy.teams
    outs, vals = nets.forward(s.policy, state.params, obs)
    vals = unnormalized(s, state, vals)
    steps = []
    for k, team_key in enumerate(jax.random.split(key, len(teams.names))):
        dist = nets.distribution(s.policy, state.params[k], outs[k], team_mask(s, k, avail))
        action, log_prob = dist.sample_and_log_prob(seed=team_key)
        steps.append((action, log_prob))
    merge = lambda parts, axis: nets.merge_teams(teams, parts, axis)
    action = merge([a for a, _ in steps], -2 if s.spec.continuous else -1)
    env_action = jnp.clip(action, 0.0, 1.0) if s.spec.continuous else action
    return PolicyStep(env_action, action, merge([lp for _, lp in steps], -1), merge(vals, -1))


def value(s: Skeleton, state: OnPolicyState, obs: jax.Array) -> jax.Array:
    """Values ``[..., N]`` of every agent's observation ``obs [..., N, obs_dim]``."""
    return nets.merge_teams(s.policy.teams, unnormalized(s, state, nets.forward(
        s.policy, state.params, obs)[1]), -1)


def make_policy(s: Skeleton, explore: bool) -> Policy:
    """The learner's policy of one env (:attr:`~jaxmarl_accel.algos.Algo.policy`): ``(state,
    carry, key, obs [N, obs_dim], avail [N, A] bool or None) -> (env_action, action_vec [N,
    action_dim], carry)``. Actions sampled (``explore``, static) or each distribution's mode
    (the Gaussian's mean clipped to [0, 1]) over ``avail`` (the spec's valid actions when
    None); ``action_vec`` their one-hot, or the continuous action itself; the carry ``()``."""
    teams, spec = s.policy.teams, s.spec

    def actions(state: OnPolicyState, key: jax.Array, obs: jax.Array,
                avail: jax.Array | None) -> jax.Array:
        if explore:
            return sample(s, state, obs, avail, key).env_action
        outs, _ = nets.forward(s.policy, state.params, obs)
        if spec.continuous:
            return jnp.clip(nets.merge_teams(teams, outs, -2), 0.0, 1.0)
        return nets.merge_teams(teams, [nets.distribution(
            s.policy, state.params[k], outs[k], team_mask(s, k, avail)).mode()
            for k in range(len(teams.names))], -1)

    def policy(state: OnPolicyState, carry: tuple, key: jax.Array, obs: jax.Array,
               avail: jax.Array | None) -> tuple[jax.Array, jax.Array, tuple]:
        env_action = actions(state, key, obs, avail)
        vec = (env_action.astype(jnp.float32) if spec.continuous
               else jax.nn.one_hot(env_action, spec.num_actions, dtype=jnp.float32))
        return env_action, vec, carry

    return policy


def advantages(s: Skeleton, state: OnPolicyState, rollout: Rollout) -> losses.Advantages:
    """GAE (lambda ``s.lam``) over the rollout, leaves ``[T, E, N]``."""
    del state
    return losses.gae(rollout.reward, rollout.value, rollout.next_value,
                      rollout.terminated[..., None], rollout.ended[..., None],
                      s.config.gamma, s.lam)


def team_loss(s: Skeleton, k: int, params: PyTree, batch: Minibatch,
              norm: losses.ValueNorm | None) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Team ``k``'s loss ``L_pi + c_v L_V - c_e H`` on its agents' rows of ``batch``."""
    config = s.config
    rows = lambda x, axis=1: nets.team_rows(s.policy.teams, k, x, axis)
    out, val = nets.team_forward(s.policy, params, rows(batch.obs))
    mask = None if s.spec.continuous else rows(
        s.spec.action_mask if batch.avail is None else batch.avail, -2)
    dist = nets.distribution(s.policy, params, out, mask)
    log_prob = dist.log_prob(rows(batch.action))
    advantage = rows(batch.advantage)
    advantage = losses.standardize(advantage) if s.normalize else advantage
    entropy = jnp.mean(dist.entropy())
    metrics = {}
    if s.ppo:
        clipped = losses.ppo_clip_loss(log_prob, rows(batch.log_prob), advantage,
                                       config.clip_eps)
        policy_loss = clipped.loss
        metrics = {"clip_fraction": clipped.clip_fraction, "approx_kl": clipped.approx_kl}
    else:
        policy_loss = losses.a2c_policy_loss(log_prob, advantage)
    target = rows(batch.target)
    if norm is not None:
        mu, sigma = losses.value_norm_moments(norm)
        target = (target - mu) / sigma
    v_loss = losses.value_loss(val, target)
    loss = policy_loss + config.value_coef * v_loss - config.entropy_coef * entropy
    return loss, {"loss": loss, "policy_loss": policy_loss, "value_loss": v_loss,
                  "entropy": entropy, **metrics}


def total_loss(s: Skeleton, params: tuple[PyTree, ...], batch: Minibatch,
               norms: tuple[losses.ValueNorm, ...]
               ) -> tuple[jax.Array, list[dict[str, jax.Array]]]:
    """The teams' losses summed (each team's gradient comes from its own term)."""
    results = [team_loss(s, k, params[k], batch, norms[k] if norms else None)
               for k in range(len(params))]
    return sum(loss for loss, _ in results), [m for _, m in results]


def minibatch_step(s: Skeleton, state: OnPolicyState, batch: Minibatch
                   ) -> tuple[OnPolicyState, dict[str, jax.Array]]:
    """One gradient step of every team on ``batch`` (leaves ``[B, N, ...]``)."""
    grads, team_metrics = jax.grad(functools.partial(total_loss, s), has_aux=True)(
        state.params, batch, state.value_norm)
    params, opt_states = [], []
    for k, (tx, g, opt, p) in enumerate(zip(s.txs, grads, state.opt_state, state.params,
                                            strict=True)):
        updates, opt = tx.update(g, opt, p)
        params.append(optax.apply_updates(p, updates))
        opt_states.append(opt)
        team_metrics[k]["grad_norm"] = optax.tree.norm(g)
    metrics = jax.tree.map(lambda *m: jnp.mean(jnp.stack(m)), *team_metrics)
    return state.replace(params=tuple(params), opt_state=tuple(opt_states),
                         updates=state.updates + 1), metrics


def update(s: Skeleton, state: OnPolicyState, rollout: Rollout, weights: Any, key: jax.Array
           ) -> tuple[OnPolicyState, dict[str, jax.Array], jax.Array]:
    """Learn from one rollout (leaves ``[T, E, ...]``): advantages, the value moments,
    then ``epochs`` passes of ``minibatches`` shuffled minibatch steps (A2C: one step on
    the rollout as it is). Returns the state, mean metrics and zero priorities."""
    del weights
    estimate = advantages(s, state, rollout)
    if s.config.normalize_value:  # the moments take in this rollout's targets, [T, E, N_k]
        state = state.replace(value_norm=tuple(
            losses.value_norm_update(norm, nets.team_rows(s.policy.teams, k, estimate.returns,
                                                          -1))
            for k, norm in enumerate(state.value_norm)))
    flat = lambda x: None if x is None else x.reshape((-1, *x.shape[2:]))  # [T E, ...]
    batch = Minibatch(flat(rollout.obs), flat(rollout.action), flat(rollout.log_prob),
                      flat(estimate.advantages), flat(estimate.returns), flat(rollout.avail))
    size, minibatches = batch.obs.shape[0], s.minibatches
    if size % minibatches:
        raise ValueError(f"minibatches ({minibatches}) must divide the rollout's "
                         f"{size} joint steps (rollout_length x num_envs)")

    def epoch(state: OnPolicyState, epoch_key: jax.Array
              ) -> tuple[OnPolicyState, dict[str, jax.Array]]:
        shuffled = batch
        if s.epochs * minibatches > 1:  # A2C: one step on the rollout as it is
            order = jax.random.permutation(epoch_key, size)
            shuffled = jax.tree.map(lambda x: jnp.take(x, order, axis=0), batch)
        split = jax.tree.map(
            lambda x: x.reshape((minibatches, size // minibatches, *x.shape[1:])), shuffled)
        return jax.lax.scan(functools.partial(minibatch_step, s), state, split)

    state, metrics = jax.lax.scan(epoch, state, jax.random.split(key, s.epochs))
    return state, jax.tree.map(jnp.mean, metrics), jnp.zeros(())


def build(name: str, spec: EnvSpec, config: OnPolicyConfig) -> Algo:
    """The on-policy learner ``name`` (``"a2c"`` or ``"ppo"``) for ``spec``.

    Args:
      name: ``"a2c"`` or ``"ppo"``.
      spec: the env spec (teams from ``spec.teams``).
      config: hyperparameters.

    Returns:
      :class:`~jaxmarl_accel.algos.base.Algo` learning from rollouts (its policies mask the
      actions an env reports unavailable: the rollout round hands them over,
      :attr:`~jaxmarl_accel.types.Rollout.avail`, and its policy reads them), no memory (the
      carry ``()``) and :class:`OnPolicyFns` as ``on_policy``; each function is this module's
      with its :class:`Skeleton` bound.
    """
    s = make_skeleton(name, spec, config)
    bind = functools.partial
    return Algo(init=bind(init, s), policy=bind(make_policy, s), update=bind(update, s),
                action_dim=spec.act_dim if spec.continuous else spec.num_actions,
                on_policy=OnPolicyFns(bind(sample, s), bind(value, s), config.rollout_length))


def phases(name: str, spec: EnvSpec, config: OnPolicyConfig) -> Phases:
    """The steps the ``update`` of :func:`build`'s learner is composed of (:class:`Phases`),
    with the same :class:`Skeleton` bound, to run or time apart on that learner's state."""
    s = make_skeleton(name, spec, config)
    return Phases(functools.partial(advantages, s), functools.partial(minibatch_step, s))


def make_skeleton(name: str, spec: EnvSpec, config: OnPolicyConfig) -> Skeleton:
    """The static parts of on-policy learner ``name`` for ``spec``: the teams' networks,
    one optimizer per team, the epochs and minibatches (PPO's; A2C: one of each)."""
    policy = nets.make_policy(spec, config.hidden_sizes, config.factored_actions)
    ppo = name == "ppo"
    clip = [optax.clip_by_global_norm(config.grad_clip)] if config.grad_clip is not None else []
    txs = tuple(optax.chain(*clip, optax.adam(lr))
                for lr in team_learning_rates(config, policy.teams.names))
    return Skeleton(spec, config, policy, txs, ppo,
                    *((config.epochs, config.minibatches) if ppo else (1, 1)),
                    config.gae_lambda if ppo else 1.0, normalizes_advantage(name, config))


__all__ = ["Minibatch", "OnPolicyFns", "OnPolicyState", "Phases", "PolicyStep", "Skeleton",
           "build", "make_skeleton", "phases"]
