"""A2C and PPO with one policy-value network per team (paper 003's trainer).

The rollout round (:mod:`jaxmarl_accel.rounds.rollout`) collects ``T`` steps of ``E`` envs
with :attr:`OnPolicyFns.sample` (actions, their log-probabilities and values) and
:attr:`OnPolicyFns.value` (the value of each step's true next observation), then calls
``update`` once on the :class:`Rollout`:

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

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxmarl_accel.algos.base import Algo, Needs
from jaxmarl_accel.algos.on_policy import losses
from jaxmarl_accel.algos.on_policy import networks as nets
from jaxmarl_accel.algos.on_policy.config import (
    OnPolicyConfig,
    normalizes_advantage,
    team_learning_rates,
)
from jaxmarl_accel.envs.base import EnvSpec

PyTree = Any


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


class Rollout(NamedTuple):
    """``T`` steps of ``E`` envs under the learner's exploration policy (leaves ``[T, E, ...]``).

    Attributes:
      obs: ``[T, E, N, obs_dim]`` observations acted on.
      action: ``[T, E, N]`` or ``[T, E, N, act_dim]`` (:attr:`PolicyStep.action`).
      log_prob: ``[T, E, N]`` their log-probabilities when collected.
      value: ``[T, E, N]`` values of ``obs`` when collected.
      reward: ``[T, E, N]``.
      next_value: ``[T, E, N]`` values of the observation each step reached, before any
        auto-reset (``info["final_obs"]``).
      terminated: ``[T, E]`` float32, 1 where the episode terminated.
      ended: ``[T, E]`` float32, 1 where it ended (terminated or truncated).
      avail: ``[T, E, N, A]`` bool available actions of ``obs``, or ``None`` when the env
        has no state-dependent availability (``spec.action_mask`` applies).
    """

    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    next_value: jax.Array
    terminated: jax.Array
    ended: jax.Array
    avail: jax.Array | None = None


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


def build(name: str, spec: EnvSpec, config: OnPolicyConfig) -> Algo:
    """The on-policy learner ``name`` (``"a2c"`` or ``"ppo"``) for ``spec``.

    Args:
      name: ``"a2c"`` or ``"ppo"``.
      spec: the env spec (teams from ``spec.teams``).
      config: hyperparameters.

    Returns:
      :class:`~jaxmarl_accel.algos.base.Algo` with ``needs.replay == "rollout"`` (its
      policies mask the actions an env reports unavailable: the rollout round hands them
      over, :attr:`Rollout.avail`), an empty carry (``initial_carry() == ()``, so greedy
      evaluation passes the available actions to ``act``) and :class:`OnPolicyFns` as
      ``on_policy``.
    """
    policy = nets.make_policy(spec, config.hidden_sizes, config.factored_actions)
    teams = policy.teams
    ppo = name == "ppo"
    epochs, minibatches = (config.epochs, config.minibatches) if ppo else (1, 1)
    lam = config.gae_lambda if ppo else 1.0
    normalize = normalizes_advantage(name, config)
    clip = [optax.clip_by_global_norm(config.grad_clip)] if config.grad_clip else []
    txs = tuple(optax.chain(*clip, optax.adam(lr))
                for lr in team_learning_rates(config, teams.names))
    action_mask = spec.action_mask  # [N, A]
    norm_values = config.normalize_value

    def init(key: jax.Array) -> OnPolicyState:
        params = nets.init_params(policy, key, spec.obs_dim, config.log_std_init)
        return OnPolicyState(
            params=params, opt_state=tuple(tx.init(p) for tx, p in zip(txs, params, strict=True)),
            updates=jnp.zeros((), jnp.int32),
            value_norm=tuple(losses.value_norm_init() for _ in txs) if norm_values else ())

    def unnormalized(state: OnPolicyState, vals: list[jax.Array]) -> list[jax.Array]:
        """The teams' value-head outputs ``[..., N_k]`` as values (ValueNorm undone)."""
        if not norm_values:
            return vals
        moments = [losses.value_norm_moments(norm) for norm in state.value_norm]
        return [mu + sigma * v for v, (mu, sigma) in zip(vals, moments, strict=True)]

    def team_mask(k: int, avail: jax.Array | None) -> jax.Array | None:
        if spec.continuous:
            return None
        return nets.team_rows(teams, k, action_mask if avail is None else avail, -2)

    def sample(state: OnPolicyState, obs: jax.Array, avail: jax.Array | None,
               key: jax.Array) -> PolicyStep:
        outs, vals = nets.forward(policy, state.params, obs)
        vals = unnormalized(state, vals)
        steps = []
        for k, team_key in enumerate(jax.random.split(key, len(teams.names))):
            dist = nets.distribution(policy, state.params[k], outs[k], team_mask(k, avail))
            action, log_prob = dist.sample_and_log_prob(seed=team_key)
            steps.append((action, log_prob))
        merge = lambda parts, axis: nets.merge_teams(teams, parts, axis)
        action = merge([a for a, _ in steps], -2 if spec.continuous else -1)
        env_action = jnp.clip(action, 0.0, 1.0) if spec.continuous else action
        return PolicyStep(env_action, action, merge([lp for _, lp in steps], -1),
                          merge(vals, -1))

    def value(state: OnPolicyState, obs: jax.Array) -> jax.Array:
        return nets.merge_teams(teams, unnormalized(state, nets.forward(
            policy, state.params, obs)[1]), -1)

    def act(state: OnPolicyState, carry: tuple, obs: jax.Array, avail: jax.Array,
            key: jax.Array, explore: bool) -> tuple[jax.Array, tuple]:
        if explore:
            return sample(state, obs, avail, key).env_action, carry
        outs, _ = nets.forward(policy, state.params, obs)
        if spec.continuous:
            return jnp.clip(nets.merge_teams(teams, outs, -2), 0.0, 1.0), carry
        modes = [nets.distribution(policy, state.params[k], outs[k], team_mask(k, avail)).mode()
                 for k in range(len(teams.names))]
        return nets.merge_teams(teams, modes, -1), carry

    def advantages(state: OnPolicyState, rollout: Rollout) -> losses.Advantages:
        del state
        return losses.gae(rollout.reward, rollout.value, rollout.next_value,
                          rollout.terminated[..., None], rollout.ended[..., None],
                          config.gamma, lam)

    def team_loss(k: int, params: PyTree, batch: Minibatch, norm: losses.ValueNorm | None
                  ) -> tuple[jax.Array, dict[str, jax.Array]]:
        rows = lambda x, axis=1: nets.team_rows(teams, k, x, axis)
        out, val = nets.team_forward(policy, params, rows(batch.obs))
        mask = None if spec.continuous else rows(
            action_mask if batch.avail is None else batch.avail, -2)
        dist = nets.distribution(policy, params, out, mask)
        log_prob = dist.log_prob(rows(batch.action))
        advantage = rows(batch.advantage)
        advantage = losses.standardize(advantage) if normalize else advantage
        entropy = jnp.mean(dist.entropy())
        metrics = {}
        if ppo:
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

    def total_loss(params: tuple[PyTree, ...], batch: Minibatch,
                   norms: tuple[losses.ValueNorm, ...]
                   ) -> tuple[jax.Array, list[dict[str, jax.Array]]]:
        results = [team_loss(k, params[k], batch, norms[k] if norms else None)
                   for k in range(len(params))]
        return sum(loss for loss, _ in results), [m for _, m in results]

    def minibatch_step(state: OnPolicyState, batch: Minibatch
                       ) -> tuple[OnPolicyState, dict[str, jax.Array]]:
        grads, team_metrics = jax.grad(total_loss, has_aux=True)(state.params, batch,
                                                                 state.value_norm)
        params, opt_states = [], []
        for k, (tx, g, opt, p) in enumerate(zip(txs, grads, state.opt_state, state.params,
                                                strict=True)):
            updates, opt = tx.update(g, opt, p)
            params.append(optax.apply_updates(p, updates))
            opt_states.append(opt)
            team_metrics[k]["grad_norm"] = optax.tree.norm(g)
        metrics = jax.tree.map(lambda *m: jnp.mean(jnp.stack(m)), *team_metrics)
        return state.replace(params=tuple(params), opt_state=tuple(opt_states),
                             updates=state.updates + 1), metrics

    def update(state: OnPolicyState, rollout: Rollout, weights: Any, key: jax.Array
               ) -> tuple[OnPolicyState, dict[str, jax.Array], jax.Array]:
        del weights
        estimate = advantages(state, rollout)
        if norm_values:  # the moments take in this rollout's targets ([T, E, N_k] per team)
            state = state.replace(value_norm=tuple(
                losses.value_norm_update(norm, nets.team_rows(teams, k, estimate.returns, -1))
                for k, norm in enumerate(state.value_norm)))
        flat = lambda x: None if x is None else x.reshape((-1, *x.shape[2:]))  # [T E, ...]
        batch = Minibatch(flat(rollout.obs), flat(rollout.action), flat(rollout.log_prob),
                          flat(estimate.advantages), flat(estimate.returns),
                          flat(rollout.avail))
        size = batch.obs.shape[0]
        if size % minibatches:
            raise ValueError(f"minibatches ({minibatches}) must divide the rollout's "
                             f"{size} joint steps (rollout_length x num_envs)")

        def epoch(state: OnPolicyState, epoch_key: jax.Array
                  ) -> tuple[OnPolicyState, dict[str, jax.Array]]:
            shuffled = batch
            if epochs * minibatches > 1:  # A2C: one step on the rollout as it is
                order = jax.random.permutation(epoch_key, size)
                shuffled = jax.tree.map(lambda x: jnp.take(x, order, axis=0), batch)
            split = jax.tree.map(
                lambda x: x.reshape((minibatches, size // minibatches, *x.shape[1:])), shuffled)
            return jax.lax.scan(minibatch_step, state, split)

        state, metrics = jax.lax.scan(epoch, state, jax.random.split(key, epochs))
        return state, jax.tree.map(jnp.mean, metrics), jnp.zeros(())

    return Algo(init=init, act=act, update=update,
                action_dim=spec.act_dim if spec.continuous else spec.num_actions,
                phases=Phases(advantages, minibatch_step),
                needs=Needs(replay="rollout"),
                initial_carry=tuple,
                on_policy=OnPolicyFns(sample, value, config.rollout_length))


__all__ = ["Minibatch", "OnPolicyFns", "OnPolicyState", "Phases", "PolicyStep", "Rollout",
           "build"]
