"""A2C, PPO and MAPPO with one policy-value network (MAPPO: actor and critic) per team
(paper 003's trainer), feed-forward or recurrent.

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
* MAPPO (Yu et al. 2022): PPO whose value is a separate critic of the global state with the
  agent's one-hot id (:func:`~.models.critic_input`), the actor reading only the agent's
  own observation (:mod:`~.models`). Without ``agent="rnn"`` and with a critic of the
  agent's own observation it would be IPPO (de Witt et al. 2020): PPO here.
* ``agent="rnn"`` (any of the three): a GRU after the first layer (:mod:`~.models`), its
  state carried from step to step and reset where an episode ends; the rollout keeps the
  carry each env's sequence started from (:attr:`~jaxmarl_accel.types.Rollout.carry`), so
  the update unrolls each sequence from it and recomputes the values the rollout was
  collected with (:func:`recomputed_values`); minibatches are whole env sequences
  (``minibatches`` splits the env axis), gradients truncated at the rollout's start.

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

from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.algos.on_policy import losses, models
from jaxmarl_accel.algos.on_policy import networks as nets
from jaxmarl_accel.algos.on_policy.acting import (
    initial_carry,
    make_policy,
    sample,
    value,
)
from jaxmarl_accel.algos.on_policy.config import OnPolicyConfig
from jaxmarl_accel.algos.on_policy.skeleton import (
    Minibatch,
    OnPolicyFns,
    OnPolicyState,
    PolicyStep,
    Skeleton,
    init,
    make_skeleton,
    unnormalized,
)
from jaxmarl_accel.algos.shuffle import minibatch_order
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import PyTree, Rollout


class Phases(NamedTuple):
    """The steps ``update`` is composed of.

    Attributes:
      advantages: ``(state, rollout) -> Advantages`` (leaves ``[T, E, N]``).
      minibatch_step: ``(state, minibatch) -> (state, metrics)``: one gradient step of
        every team on a minibatch (leaves ``[B, N, ...]`` of :class:`Minibatch`).
    """

    advantages: Any
    minibatch_step: Any


def advantages(s: Skeleton, state: OnPolicyState, rollout: Rollout) -> losses.Advantages:
    """GAE (lambda ``s.lam``) over the rollout, leaves ``[T, E, N]``."""
    del state
    return losses.gae(rollout.reward, rollout.value, rollout.next_value,
                      rollout.terminated[..., None], rollout.ended[..., None],
                      s.config.gamma, s.lam)


def team_sequence(s: Skeleton, k: int, params: PyTree, batch: Minibatch
                  ) -> tuple[jax.Array, jax.Array]:
    """Team ``k``'s policy outputs ``[..., N_k, out_size]`` and value-head outputs ``[...,
    N_k]`` on its agents' rows of ``batch``: one step per joint step, or (recurrent) each
    env sequence unrolled from the carry it started with (:func:`~.models.unroll`)."""
    policy = s.policy
    if isinstance(policy.net, nets.PolicyValueNet):
        return nets.team_forward(policy, params, nets.team_rows(policy.teams, k, batch.obs, 1))
    rows = functools.partial(nets.team_rows, policy.teams, k, axis=-2)

    def run(net: models.TeamNet, net_params: PyTree, x: jax.Array, name: str
            ) -> tuple[jax.Array | None, jax.Array | None]:
        if policy.recurrent:
            return models.unroll(net, net_params, x, rows(batch.carry[name]), batch.first)
        return models.step(net, net_params, x, None)[:2]

    out, val = run(policy.net, params["net"], rows(batch.obs), "net")
    if policy.critic is not None:
        _, val = run(policy.critic, params["critic"], models.critic_input(
            batch.world, policy.teams.rows[k], s.spec.num_agents), "critic")
    return out, val


def recomputed_values(s: Skeleton, state: OnPolicyState, rollout: Rollout) -> jax.Array:
    """The values ``[T, E, N]`` of a rollout's observations as the update computes them
    (recurrent: each env's sequence unrolled from the rollout's carry), mapped back from
    the value moments: equal to ``rollout.value`` while the parameters are those that
    collected it."""
    batch = sequences(s, rollout, losses.Advantages(rollout.value, rollout.value))
    if not s.policy.recurrent:
        batch = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), batch)
    vals = [team_sequence(s, k, p, batch)[1] for k, p in enumerate(state.params)]
    merged = nets.merge_teams(s.policy.teams, unnormalized(s, state, vals), -1)
    return merged.reshape(rollout.value.shape)


def sequences(s: Skeleton, rollout: Rollout, estimate: losses.Advantages) -> Minibatch:
    """The rollout as one :class:`Minibatch` of its ``E`` env sequences (leaves ``[T, E,
    ...]``, the carry ``[E, ...]``; ``first`` from the episode ends of the steps before)."""
    first = jnp.concatenate([jnp.zeros_like(rollout.ended[:1]), rollout.ended[:-1]])
    return Minibatch(rollout.obs, rollout.action, rollout.log_prob, estimate.advantages,
                     estimate.returns, rollout.avail, rollout.world,
                     rollout.carry if s.policy.recurrent else None,
                     first if s.policy.recurrent else None)


def team_loss(s: Skeleton, k: int, params: PyTree, batch: Minibatch,
              norm: losses.ValueNorm | None) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Team ``k``'s loss ``L_pi + c_v L_V - c_e H`` on its agents' rows of ``batch``."""
    config = s.config
    agent_axis = 2 if s.policy.recurrent else 1  # [T, B, N, ...] or [B, N, ...]
    rows = lambda x, axis=agent_axis: nets.team_rows(s.policy.teams, k, x, axis)
    out, val = team_sequence(s, k, params, batch)
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
    batch = sequences(s, rollout, estimate)
    if s.policy.recurrent:  # minibatches of whole env sequences: the env axis is split
        batch, carry = batch._replace(carry=None), batch.carry
        size = batch.obs.shape[1]
    else:  # minibatches of joint steps, [T E, ...]
        batch = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), batch)
        size = batch.obs.shape[0]
    minibatches = s.minibatches
    if size % minibatches:
        raise ValueError(f"minibatches ({minibatches}) must divide the rollout's {size} "
                         + ("env sequences (num_envs)" if s.policy.recurrent
                            else "joint steps (rollout_length x num_envs)"))

    def split(x: jax.Array, order: jax.Array | None, axis: int) -> jax.Array:
        if order is not None:
            x = jnp.take(x, order, axis=axis)
        x = x.reshape((*x.shape[:axis], minibatches, size // minibatches, *x.shape[axis + 1:]))
        return jnp.moveaxis(x, axis, 0)

    def epoch(state: OnPolicyState, epoch_key: jax.Array
              ) -> tuple[OnPolicyState, dict[str, jax.Array]]:
        order = None
        if s.epochs * minibatches > 1:  # A2C: one step on the rollout as it is
            order = minibatch_order(epoch_key, size)
        if not s.policy.recurrent:
            return jax.lax.scan(functools.partial(minibatch_step, s), state,
                                jax.tree.map(lambda x: split(x, order, 0), batch))
        parts = jax.tree.map(lambda x: split(x, order, 1), batch)._replace(
            carry=jax.tree.map(lambda x: split(x, order, 0), carry))
        return jax.lax.scan(functools.partial(minibatch_step, s), state, parts)

    state, metrics = jax.lax.scan(epoch, state, jax.random.split(key, s.epochs))
    return state, jax.tree.map(jnp.mean, metrics), jnp.zeros(())


def build(name: str, spec: EnvSpec, config: OnPolicyConfig) -> Algo:
    """The on-policy learner ``name`` (``"a2c"``, ``"ppo"`` or ``"mappo"``) for ``spec``.

    Args:
      name: ``"a2c"``, ``"ppo"`` or ``"mappo"``.
      spec: the env spec (teams from ``spec.teams``).
      config: hyperparameters.

    Returns:
      :class:`~jaxmarl_accel.algos.base.Algo` learning from rollouts (its policies mask the
      actions an env reports unavailable: the rollout round hands them over,
      :attr:`~jaxmarl_accel.types.Rollout.avail`, and its policy reads them), the carry
      ``()`` or (``agent="rnn"``) the policy network's GRU state ``{"net": [N, H]}``, and
      :class:`OnPolicyFns` as ``on_policy``; each function is its module's with its
      :class:`Skeleton` bound.
    """
    s = make_skeleton(name, spec, config)
    bind = functools.partial
    fns = OnPolicyFns(bind(sample, s), bind(value, s), config.rollout_length,
                      initial_carry=lambda num_envs: initial_carry(s, (num_envs,), True),
                      reads_world=s.policy.critic is not None)
    return Algo(init=bind(init, s), policy=bind(make_policy, s), update=bind(update, s),
                action_dim=spec.act_dim if spec.continuous else spec.num_actions,
                initial_carry=lambda: initial_carry(s, (), False), on_policy=fns)


def phases(name: str, spec: EnvSpec, config: OnPolicyConfig) -> Phases:
    """The steps the ``update`` of :func:`build`'s learner is composed of (:class:`Phases`),
    with the same :class:`Skeleton` bound, to run or time apart on that learner's state."""
    s = make_skeleton(name, spec, config)
    return Phases(functools.partial(advantages, s), functools.partial(minibatch_step, s))


__all__ = ["Minibatch", "OnPolicyFns", "OnPolicyState", "Phases", "PolicyStep", "Skeleton",
           "build", "make_skeleton", "phases", "recomputed_values"]
