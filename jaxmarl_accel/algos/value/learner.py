"""The value-based learners: one skeleton, the mixer (QMIX, VDN, IQL) plugged in, and for
OW-/CW-QMIX, MAC-PO and AccMER weighted QMIX's ``Q*`` with a weighting of QMIX's loss.

One update (QMIX, Rashid et al. 2018, Alg. 1 of its appendix; the loss of its Sec. 4):

1. the shared agent network over every replayed episode, ``Q_i(tau_t, .)`` ``[B, T+1, N, A]``
   (recurrent agents unrolled from a zero GRU state at each episode's start; with
   ``train_rows`` K over its first K steps only, :func:`~.batches.first_rows`);
2. targets: the target agents and target mixer at the online network's greedy available
   actions (double Q, van Hasselt et al. 2016), then TD(lambda) over each episode
   (:func:`~.targets.td_lambda_targets`);
3. the loss ``sum mask w (Q_tot - y)^2 / sum mask`` over the episodes' filled steps (and
   heads), ``w`` the sampler's per-episode weights, and its gradient with respect to the
   agent network and the mixer together;
4. one Adam step on the gradient clipped to global norm ``grad_clip``;
5. a hard copy online -> target once ``target_update_episodes`` episodes have finished
   since the last copy (checked after the step, as in pymarl2).

The feed-forward form learns from transitions, as one-step episodes
(:func:`~.batches.transition_episode`). No step draws random numbers: ``update`` ignores
its key.

The learners with weighted QMIX's unrestricted ``Q*`` (OW-/CW-QMIX, MAC-PO, AccMER;
a :class:`~.central.Weighting` given to :func:`build`, QMIX's mixer) change steps 2-3 and
nothing in acting (:mod:`~.central`):

2. targets: TD(lambda) over the target ``Q*`` at QMIX's greedy joint actions, for QMIX and
   ``Q*`` alike;
3. the loss adds ``Q*``'s own unweighted squared error, and each filled step's squared
   error in QMIX's part is multiplied by the weighting's weight (OW-/CW-QMIX's 1 or ``w``,
   :mod:`~.wqmix`; MAC-PO's normalized optimal weight or 1, :mod:`~.macpo`); each
   episode's priority is the mean of the weighting's priority terms over its filled steps
   (OW-/CW-QMIX: ``|Q_tot - y|``; MAC-PO: its eq.-2 weight).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.algos.value import batches, central, networks, targets
from jaxmarl_accel.algos.value.acting import Carry, initial_carry, make_policy
from jaxmarl_accel.algos.value.config import ValueConfig
from jaxmarl_accel.algos.value.mixers import Mixer
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import Episode, Policy, PyTree, Transition


@struct.dataclass
class ValueParams:
    """Parameters of the shared agent network (no agent axis), of the mixer and, for the
    learners with weighted QMIX's ``Q*``, of ``Q*`` (:class:`~.central.QStarParams`;
    ``None`` otherwise)."""

    agent: PyTree
    mixer: PyTree
    qstar: central.QStarParams | None = None


@struct.dataclass
class ValueState:
    """Learner state of a value learner.

    Attributes:
      params: online :class:`ValueParams`.
      target: target :class:`ValueParams` (a copy of an earlier ``params``).
      opt_state: optax state of ``params``.
      env_steps: ``[]`` int32 env steps the trainer has taken (epsilon's clock).
      episodes: ``[]`` int32 episodes the trainer has finished (the target update's clock).
      last_target_update: ``[]`` int32 value of ``episodes`` at the last target copy.
      step: ``[]`` int32 updates done so far.
    """

    params: ValueParams
    target: ValueParams
    opt_state: PyTree
    env_steps: jax.Array
    episodes: jax.Array
    last_target_update: jax.Array
    step: jax.Array


class LossInfo(NamedTuple):
    """What the loss reports: the weighted ``loss []``; ``td [B]``, each episode's priority
    (its mean ``|Q_tot - y|`` over its filled steps and heads; with a weighting the mean of
    its priority terms, MAC-PO's unnormalized optimal weight); ``q_mean []``, the mean
    ``Q_tot`` of the filled steps; ``grad_norm []``, the gradient's norm before clipping;
    ``weighted``: the scalars of the learners with ``Q*`` by name, ``qstar_loss`` and the
    weighting's (``weight_mean``; MAC-PO's ``f_pi_mean``, ``bellman_error``), each prefixed
    by the weighting's name (``macpo_``, ``wqmix_``); empty for the other learners."""

    loss: jax.Array
    td: jax.Array
    q_mean: jax.Array
    grad_norm: jax.Array
    weighted: dict[str, jax.Array] = {}


class Phases(NamedTuple):
    """The steps 1-5 of one update (module docstring). ``batch`` is what ``update`` takes
    (an :class:`Episode` with leaves ``[B, T + 1, ...]``, or for the feed-forward form a
    :class:`Transition` with leaves ``[B, N, ...]``, read as ``T = 1``); H is the mixer's
    number of heads (1; N for IQL). ``update(state, batch, weights, key)`` is::

        q = agent_q(state, batch)
        y = targets(state, batch, q)
        grads, info = loss_and_grad(state, batch, weights, y)
        state = target_update(apply(state, grads))

    with ``step + 1``, except that ``update`` runs the online agent forward once for
    steps 1 and 3.

    Attributes:
      agent_q: ``(state, batch) -> q [B, T + 1, N, A]``, the online agent network.
      targets: ``(state, batch, q [B, T + 1, N, A]) -> y [B, T, H]``: target agents,
        double-Q bootstrap values, target mixer and TD(lambda) (learners with ``Q*``:
        ``[B, T, 2]``, :func:`~.central.qstar_targets`).
      loss_and_grad: ``(state, batch, weights [B], y [B, T, H]) -> (grads, LossInfo)``,
        the agent and mixer forward and backward.
      apply: ``(state, grads) -> state``, one clipped Adam step of ``params``.
      target_update: ``state -> state``, the copy online -> target if it is due.
    """

    agent_q: Callable[[ValueState, Any], jax.Array]
    targets: Callable[[ValueState, Any, jax.Array], jax.Array]
    loss_and_grad: Callable[..., tuple[ValueParams, LossInfo]]
    apply: Callable[[ValueState, ValueParams], ValueState]
    target_update: Callable[[ValueState], ValueState]


class Skeleton(NamedTuple):
    """The static parts of one value learner.

    Attributes:
      spec, config, mixer: the env spec, hyperparameters and plugged-in mixer.
      agent: the shared agent module; recurrent: whether it is the GRU agent.
      tx: the optimizer (clip, then Adam).
      state_dim: width of the global state the mixer reads from the batch (recurrent QMIX
        on an env with a state), 0 when it reads the concatenated observations instead.
      qstar: weighted QMIX's ``Q*`` (:class:`~.central.QStar`), ``None`` for QMIX, VDN, IQL.
      weighting: how QMIX's loss is weighted beside ``Q*``, ``None`` without ``Q*``.
    """

    spec: EnvSpec
    config: ValueConfig
    mixer: Mixer
    agent: Any
    recurrent: bool
    tx: optax.GradientTransformation
    state_dim: int
    qstar: central.QStar | None = None
    weighting: central.Weighting | None = None


def make_skeleton(spec: EnvSpec, config: ValueConfig, mixer: Mixer,
                  weighting: central.Weighting | None = None) -> Skeleton:
    """All static set-up: agent network, optimizer, the mixer's state width and, with a
    ``weighting``, weighted QMIX's ``Q*`` (which needs a mixer that reads the state)."""
    recurrent = config.agent == "rnn"
    if weighting is not None and not mixer.reads_state:
        raise ValueError(f"weighting: {weighting.name} weights QMIX's loss beside Q*; the "
                         "mixer must read the state (QMIX), not VDN's or IQL's")
    return Skeleton(
        spec=spec, config=config, mixer=mixer,
        agent=networks.make_agent(config.agent, config.hidden, spec.num_actions,
                                  config.agent_ids, config.agent_q_min, config.agent_q_max),
        recurrent=recurrent,
        tx=optax.chain(optax.clip_by_global_norm(config.grad_clip), optax.adam(config.lr)),
        state_dim=spec.state_dim if recurrent and mixer.reads_state else 0,
        qstar=None if weighting is None else central.make_qstar(config, spec.num_actions),
        weighting=weighting)


def init(sk: Skeleton, key: jax.Array) -> ValueState:
    """Fresh learner state (targets equal to the online networks, counters at 0)."""
    agent_key, mixer_key, qstar_key = jax.random.split(key, 3)
    n, a = sk.spec.num_agents, sk.spec.num_actions
    in_dim = networks.input_width(sk.agent, sk.spec.obs_dim, n, a)
    mixer_in = sk.state_dim or n * sk.spec.obs_dim
    qstar = None if sk.qstar is None else central.init_qstar(sk.qstar, qstar_key, in_dim, n,
                                                             mixer_in)
    params = ValueParams(agent=networks.init_agent(sk.agent, agent_key, in_dim),
                         mixer=sk.mixer.init(mixer_key, mixer_in), qstar=qstar)
    zero = jnp.zeros((), jnp.int32)
    return ValueState(params=params, target=params, opt_state=sk.tx.init(params),
                      env_steps=zero, episodes=zero, last_target_update=zero, step=zero)


def observe(state: ValueState, env_steps: jax.Array, episodes: jax.Array) -> ValueState:
    """``state`` with the trainer's counters (``[]`` int) of env steps and finished episodes."""
    return state.replace(env_steps=jnp.asarray(env_steps, jnp.int32),
                         episodes=jnp.asarray(episodes, jnp.int32))


def as_episode(sk: Skeleton, batch: Episode | Transition) -> Episode:
    """The batch as episodes (:func:`~.batches.transition_episode` for the feed-forward
    form), shape-checked, cut to ``config.train_rows`` steps (:func:`~.batches.first_rows`),
    its reward times ``config.reward_scale``."""
    episode = batch if sk.recurrent else batches.transition_episode(sk.spec, batch)
    batches.check_episode(sk.spec, episode, sk.state_dim)
    episode = batches.first_rows(episode, sk.config.train_rows)  # 0 unless recurrent
    scale = sk.config.reward_scale  # a Python 1.0 is static: runs at the default compute what
    if isinstance(scale, jax.Array) or scale != 1.0:  # they did; a swept value is an array
        episode = episode.replace(reward=episode.reward.astype(jnp.float32)
                                  * sk.config.reward_scale)
    return episode


def agent_q(sk: Skeleton, agent_params: PyTree, batch: Episode) -> jax.Array:
    """Step 1: the agent network over episodes, ``[B, T + 1, N, A]`` (recurrent agents see
    observation, id and previous action, scanned over time from a zero state)."""
    return networks.episode_q(sk.agent, agent_params, batch)


def episode_targets(sk: Skeleton, target: ValueParams, batch: Episode,
                    q: jax.Array) -> jax.Array:
    """Step 2: ``y [B, T, H]`` from the target networks ``target`` and the online Q-values
    ``q [B, T + 1, N, A]`` (which choose the bootstrap actions when ``double_q``); with
    ``Q*`` ``[B, T, 2]`` from the target ``Q*`` at QMIX's greedy joint actions
    (:func:`~.central.qstar_targets`)."""
    avail = batch.avail | ~jnp.any(batch.avail, axis=-1, keepdims=True)  # padding rows: all
    state = batches.mixer_input(batch, sk.state_dim)
    lam = sk.config.td_lambda if sk.recurrent else 0.0
    if sk.qstar is not None:
        chooser = q if sk.config.double_q else agent_q(sk, target.agent, batch)
        greedy = targets.greedy(jax.lax.stop_gradient(chooser), avail)
        return central.qstar_targets(sk.qstar, target.qstar, batch, greedy, state,
                                     sk.config.gamma, lam)
    boot = targets.bootstrap_q(agent_q(sk, target.agent, batch), q, avail, sk.config.double_q)
    q_hat = sk.mixer.apply(target.mixer, boot, state)
    return targets.td_lambda_targets(batch.reward.astype(jnp.float32),
                                     batch.terminated.astype(jnp.float32),
                                     batch.filled.astype(jnp.float32), q_hat,
                                     sk.config.gamma, lam)


def weighted_terms(sk: Skeleton, params: ValueParams, q: jax.Array, q_tot: jax.Array,
                   state: jax.Array, batch: Episode, y: jax.Array
                   ) -> tuple[jax.Array, central.StepWeights]:
    """The part of step 3 that ``Q*`` adds (:mod:`~.central`).

    Args:
      q: ``[B, T + 1, N, A]`` online Q-values; q_tot: ``[B, T, 1]`` QMIX's mixed value.
      state: ``[B, T + 1, S']`` the mixer's input; y: ``[B, T, 2]`` (:func:`episode_targets`).

    Returns:
      ``(qstar_loss [], StepWeights)``: ``Q*``'s mean squared error over the filled steps
      (its gradient reaches ``Q*`` only) and the weighting's step weights (no gradient), its
      info holding ``qstar_loss`` too.
    """
    sg = jax.lax.stop_gradient
    qstar_loss, q_star = central.qstar_loss(sk.qstar, params.qstar, batch, state, y[..., 0])
    values = central.StepValues(q=sg(q), batch=batch, mask=batch.filled[:, :-1] > 0,
                                q_tot=sg(q_tot[..., 0]), y=sg(y[..., 0]), qstar=sg(q_star),
                                qstar_greedy=sg(y[..., 1]))
    step = jax.tree.map(sg, sk.weighting.weights(values))
    return qstar_loss, step._replace(info={"qstar_loss": sg(qstar_loss), **step.info})


def episode_loss(sk: Skeleton, params: ValueParams, q: jax.Array, batch: Episode,
                 weights: jax.Array, y: jax.Array) -> tuple[jax.Array, LossInfo]:
    """Step 3's loss (module docstring) of online Q-values ``q [B, T + 1, N, A]`` against
    ``y [B, T, H]`` (with ``Q*``: ``[B, T, 2]``) with per-episode ``weights [B]``, reading
    the mixer's (and ``Q*``'s) parameters from ``params``; ``grad_norm`` is left 0."""
    q_taken = targets.chosen(q[:, :-1], batch.action[:, :-1])  # [B, T, N]
    state = batches.mixer_input(batch, sk.state_dim)
    q_tot = sk.mixer.apply(params.mixer, q_taken, state[:, :-1])  # [B, T, H]
    y_mix = y[..., :sk.mixer.heads]
    mask = jnp.broadcast_to(batch.filled[:, :-1, None] > 0, q_tot.shape)  # [B, T, H]
    delta = jnp.where(mask, q_tot - jax.lax.stop_gradient(y_mix), 0.0)
    count = jnp.sum(mask, axis=(1, 2)).astype(jnp.float32)  # [B]
    item = weights.astype(jnp.float32)[:, None, None]  # [B, 1, 1]
    extra, info = jnp.zeros(()), {}
    td = jnp.sum(jnp.abs(delta), axis=(1, 2)) / jnp.maximum(count, 1.0)
    if sk.qstar is not None:
        extra, step = weighted_terms(sk, params, q, q_tot, state, batch, y)
        item = item * step.loss[..., None]  # [B, T, 1]
        td = jnp.sum(step.priority, axis=1) / jnp.maximum(count, 1.0)
        info = {f"{sk.weighting.name}_{name}": value for name, value in step.info.items()}
    loss = jnp.sum(item * delta**2) / jnp.maximum(jnp.sum(count), 1.0) + extra
    q_mean = jnp.sum(jnp.where(mask, q_tot, 0.0)) / jnp.maximum(jnp.sum(count), 1.0)
    return loss, LossInfo(loss, jax.lax.stop_gradient(td), jax.lax.stop_gradient(q_mean),
                          jnp.zeros(()), info)


def loss_and_grad(sk: Skeleton, state: ValueState, batch: Episode, weights: jax.Array,
                  y: jax.Array) -> tuple[ValueParams, LossInfo]:
    """Step 3: gradient of :func:`episode_loss` with respect to ``state.params``."""
    def loss_fn(params: ValueParams) -> tuple[jax.Array, LossInfo]:
        return episode_loss(sk, params, agent_q(sk, params.agent, batch), batch, weights, y)

    (_, info), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    return grads, info._replace(grad_norm=optax.tree.norm(grads))


def apply(sk: Skeleton, state: ValueState, grads: ValueParams) -> ValueState:
    """Step 4: one optimizer step (clip to ``grad_clip``, Adam)."""
    updates, opt_state = sk.tx.update(grads, state.opt_state, state.params)
    return state.replace(params=optax.apply_updates(state.params, updates), opt_state=opt_state)


def target_update(sk: Skeleton, state: ValueState) -> ValueState:
    """Step 5: ``target <- params`` once ``episodes - last_target_update >=
    target_update_episodes``, then ``last_target_update <- episodes``."""
    due = state.episodes - state.last_target_update >= sk.config.target_update_episodes
    target = jax.tree.map(lambda new, old: jnp.where(due, new, old), state.params, state.target)
    return state.replace(target=target,
                         last_target_update=jnp.where(due, state.episodes,
                                                      state.last_target_update))


def update(sk: Skeleton, state: ValueState, batch: Episode | Transition, weights: jax.Array,
           key: jax.Array) -> tuple[ValueState, dict[str, jax.Array], jax.Array]:
    """One update (see :attr:`Algo.update` and :class:`Phases`): returns the new state,
    scalar metrics and each episode's priority ``td [B]`` (mean ``|Q_tot - y|`` over its
    filled steps and heads; with a weighting the mean of its priority terms, MAC-PO's
    optimal weight, :class:`LossInfo`)."""
    episode = as_episode(sk, batch)
    chex.assert_shape(weights, episode.filled.shape[:1])

    def loss_fn(params: ValueParams) -> tuple[jax.Array, tuple[LossInfo, jax.Array]]:
        q = agent_q(sk, params.agent, episode)
        y = episode_targets(sk, state.target, episode, jax.lax.stop_gradient(q))
        loss, info = episode_loss(sk, params, q, episode, weights, y)
        return loss, (info, y)

    (_, (info, y)), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    old_last = state.last_target_update
    new_state = target_update(sk, apply(sk, state, grads))
    filled = jnp.maximum(jnp.sum(episode.filled[:, :-1]), 1.0)
    metrics = {"loss": info.loss, "td_error": jnp.mean(info.td), "q_mean": info.q_mean,
               "target_mean": jnp.sum(jnp.mean(y[..., :sk.mixer.heads], axis=-1)
                                      * episode.filled[:, :-1]) / filled,
               "grad_norm": optax.tree.norm(grads),
               "epsilon": targets.epsilon(sk.config, state.env_steps),
               "target_updated": (new_state.last_target_update != old_last).astype(jnp.float32),
               **info.weighted}
    if sk.recurrent and episode.filled.shape != batch.filled.shape:  # cut by train_rows
        metrics["cut_episodes"] = batches.cut_fraction(batch, sk.config.train_rows)
    return new_state.replace(step=state.step + 1), metrics, info.td


def build(spec: EnvSpec, config: ValueConfig, mixer: Mixer,
          weighting: central.Weighting | None = None) -> Algo:
    """The value learner with ``mixer`` (QMIX, VDN or IQL) as an :class:`Algo`: episode
    replay and a recurrent policy (:func:`~.acting.make_policy`, the carry of
    :func:`~.acting.initial_carry`) for ``config.agent == "rnn"``, transition replay and a
    policy without memory for ``"mlp"``; its update is composed of :func:`phases`. With a
    ``weighting`` (QMIX's mixer only) it learns weighted QMIX's ``Q*`` beside QMIX and
    weights QMIX's loss by it (OW-/CW-QMIX, MAC-PO, AccMER; module docstring)."""
    sk = make_skeleton(spec, config, mixer, weighting)

    def init_fn(key: jax.Array) -> ValueState:
        return init(sk, key)

    def update_fn(state: ValueState, batch: Any, weights: jax.Array, key: jax.Array):
        return update(sk, state, batch, weights, key)

    def policy_fn(explore: bool) -> Policy:
        return make_policy(sk.agent, spec, config, sk.recurrent, explore)

    def initial_carry_fn() -> Carry | tuple:
        return initial_carry(spec, config) if sk.recurrent else ()

    return Algo(init=init_fn, policy=policy_fn, update=update_fn, action_dim=spec.num_actions,
                initial_carry=initial_carry_fn, observe=observe)


def phases(spec: EnvSpec, config: ValueConfig, mixer: Mixer,
           weighting: central.Weighting | None = None) -> Phases:
    """The steps the ``update`` of :func:`build`'s learner is composed of (:class:`Phases`),
    with the same static parts bound, for the characterization to run and time apart on
    that learner's state."""
    sk = make_skeleton(spec, config, mixer, weighting)

    def agent_q_fn(state: ValueState, batch: Any) -> jax.Array:
        return agent_q(sk, state.params.agent, as_episode(sk, batch))

    def targets_fn(state: ValueState, batch: Any, q: jax.Array) -> jax.Array:
        return episode_targets(sk, state.target, as_episode(sk, batch), q)

    def loss_and_grad_fn(state: ValueState, batch: Any, weights: jax.Array, y: jax.Array):
        return loss_and_grad(sk, state, as_episode(sk, batch), weights, y)

    def apply_fn(state: ValueState, grads: ValueParams) -> ValueState:
        return apply(sk, state, grads)

    def target_update_fn(state: ValueState) -> ValueState:
        return target_update(sk, state)

    return Phases(agent_q=agent_q_fn, targets=targets_fn, loss_and_grad=loss_and_grad_fn,
                  apply=apply_fn, target_update=target_update_fn)
