"""The value-based learner of QMIX, VDN and IQL: one skeleton, the mixer plugged in.

One update (QMIX, Rashid et al. 2018, Alg. 1 of its appendix; the loss of its Sec. 4):

1. the shared agent network over every replayed episode, ``Q_i(tau_t, .)`` ``[B, T+1, N, A]``
   (recurrent agents unrolled from a zero GRU state at each episode's start);
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

MAC-PO (paper 004, Sec. III; ``macpo_weights=True`` in :func:`build`, QMIX's mixer) adds two
things to this update, and nothing to acting:

* an unrestricted centralized value ``Q*`` (:class:`~.macpo.QStarNet`) over the state and
  the agents' chosen Q-values (gradient stopped into the agents), with its own target copy
  and its own TD(lambda) loss ``sum mask (Q* - y*)^2 / sum mask`` added to QMIX's, ``y*``
  bootstrapped by the target ``Q*`` at the same double-Q actions as QMIX's ``y``;
* the weights of Lemma 1 (eq. 2-3, :mod:`~.macpo`) on each filled step of the batch,
  ``|Q_tot - y| exp(-|Q_tot - Q*|) f(pi)``, normalized over the batch
  (``macpo_normalization``), multiply that step's squared TD error in QMIX's loss.

The weights drive the loss, not the sampling. Lemma 1 derives them as the weights of the
loss (eq. 1), per step; drawing items in proportion to them with an unweighted loss has the
same expectation but adds sampling noise, and only whole episodes can be drawn while the
weights differ from step to step; doing both would apply them twice. Each episode's mean
unnormalized weight over its filled steps is the priority ``update`` returns, so a sampler
that ranks items (AccMER's reuse sampler, or PER) orders them by MAC-PO's weight; the
sampler's own loss weights still multiply the loss (PER's importance weights), which is
why AccMER's reuse sampler is used with ``loss_weights="ones"``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax
from flax import struct

from jaxmarl_accel.algos.base import Algo, Needs
from jaxmarl_accel.algos.value import batches, macpo, networks, targets
from jaxmarl_accel.algos.value.config import ValueConfig
from jaxmarl_accel.algos.value.mixers import Mixer
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import Episode, Transition

PyTree = Any


@struct.dataclass
class ValueParams:
    """Parameters of the shared agent network (no agent axis), of the mixer and, for
    MAC-PO, of the unrestricted value ``Q*`` (``None`` otherwise)."""

    agent: PyTree
    mixer: PyTree
    qstar: PyTree = None


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


class Carry(NamedTuple):
    """A recurrent agent's memory of one env: ``hidden [N, hidden]`` GRU state and
    ``prev_action [N, A]`` one-hot of the previous action (zeros at an episode's start)."""

    hidden: jax.Array
    prev_action: jax.Array


class LossInfo(NamedTuple):
    """What the loss reports: the weighted ``loss []``; ``td [B]``, each episode's priority
    (its mean ``|Q_tot - y|`` over its filled steps and heads; with MAC-PO its mean
    unnormalized optimal weight); ``q_mean []``, the mean ``Q_tot`` of the filled steps;
    ``grad_norm []``, the gradient's norm before clipping; ``macpo``: MAC-PO's scalars
    (``qstar_loss``, ``f_pi_mean``, ``weight_mean``, ``bellman_error``), empty for the
    other learners."""

    loss: jax.Array
    td: jax.Array
    q_mean: jax.Array
    grad_norm: jax.Array
    macpo: dict[str, jax.Array] = {}


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
        double-Q bootstrap values, target mixer and TD(lambda) (MAC-PO: ``[B, T, H + 1]``,
        the last column ``Q*``'s targets).
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
      qstar: MAC-PO's ``Q*`` module, ``None`` for the other learners.
    """

    spec: EnvSpec
    config: ValueConfig
    mixer: Mixer
    agent: Any
    recurrent: bool
    tx: optax.GradientTransformation
    state_dim: int
    qstar: Any = None


def make_skeleton(spec: EnvSpec, config: ValueConfig, mixer: Mixer,
                  macpo_weights: bool = False) -> Skeleton:
    """All static set-up: agent network, optimizer, the mixer's state width and, with
    ``macpo_weights``, MAC-PO's ``Q*`` (which needs a mixer that reads the state)."""
    recurrent = config.agent == "rnn"
    if macpo_weights and not mixer.reads_state:
        raise ValueError("macpo_weights: MAC-PO weights QMIX's loss; the mixer must read the "
                         "state (QMIX), not VDN's or IQL's")
    return Skeleton(
        spec=spec, config=config, mixer=mixer,
        agent=networks.make_agent(config.agent, config.hidden, spec.num_actions),
        recurrent=recurrent,
        tx=optax.chain(optax.clip_by_global_norm(config.grad_clip), optax.adam(config.lr)),
        state_dim=spec.state_dim if recurrent and mixer.reads_state else 0,
        qstar=macpo.qstar_net(config) if macpo_weights else None)


def init(sk: Skeleton, key: jax.Array) -> ValueState:
    """Fresh learner state (targets equal to the online networks, counters at 0)."""
    agent_key, mixer_key, qstar_key = jax.random.split(key, 3)
    n, a = sk.spec.num_agents, sk.spec.num_actions
    in_dim = sk.spec.obs_dim + n + (a if sk.recurrent else 0)
    mixer_in = sk.state_dim or n * sk.spec.obs_dim
    qstar = None if sk.qstar is None else sk.qstar.init(
        qstar_key, jnp.zeros((1, n)), jnp.zeros((1, mixer_in)))
    params = ValueParams(agent=networks.init_agent(sk.agent, agent_key, in_dim),
                         mixer=sk.mixer.init(mixer_key, mixer_in), qstar=qstar)
    zero = jnp.zeros((), jnp.int32)
    return ValueState(params=params, target=params, opt_state=sk.tx.init(params),
                      env_steps=zero, episodes=zero, last_target_update=zero, step=zero)


def observe(state: ValueState, env_steps: jax.Array, episodes: jax.Array) -> ValueState:
    """``state`` with the trainer's counters (``[]`` int) of env steps and finished episodes."""
    return state.replace(env_steps=jnp.asarray(env_steps, jnp.int32),
                         episodes=jnp.asarray(episodes, jnp.int32))


def initial_carry(sk: Skeleton) -> Carry:
    """One env's :class:`Carry` at an episode's start: zeros ``[N, hidden]``, ``[N, A]``."""
    n = sk.spec.num_agents
    return Carry(hidden=jnp.zeros((n, sk.config.hidden), jnp.float32),
                 prev_action=jnp.zeros((n, sk.spec.num_actions), jnp.float32))


def _choose(sk: Skeleton, state: ValueState, q: jax.Array, avail: jax.Array, key: jax.Array,
            explore: bool) -> jax.Array:
    if explore:
        return targets.epsilon_greedy(q, avail, targets.epsilon(sk.config, state.env_steps), key)
    return targets.greedy(q, avail)


def act_recurrent(sk: Skeleton, state: ValueState, carry: Carry, obs: jax.Array,
                  avail: jax.Array, key: jax.Array, explore: bool) -> tuple[jax.Array, Carry]:
    """Every agent's action in one env and the env's next carry.

    Args:
      state: learner state (epsilon from ``state.env_steps``).
      carry: the env's :class:`Carry` (leaves ``[N, ...]``).
      obs: ``[N, obs_dim]`` observations (cast to float32).
      avail: ``[N, A]`` bool available actions.
      key: randomness of the epsilon-greedy choice.
      explore: static; epsilon-greedy if True, greedy otherwise (both over ``avail``).

    Returns:
      ``action [N]`` int32 and the carry after this step.
    """
    n, a = sk.spec.num_agents, sk.spec.num_actions
    chex.assert_shape(obs, (n, sk.spec.obs_dim))
    chex.assert_shape(avail, (n, a))
    chex.assert_shape([carry.hidden, carry.prev_action], [(n, sk.config.hidden), (n, a)])
    x = networks.agent_inputs(obs.astype(jnp.float32), carry.prev_action)
    hidden, q = sk.agent.apply(state.params.agent, carry.hidden, x)
    action = _choose(sk, state, q, avail, key, explore)
    return action, Carry(hidden, jax.nn.one_hot(action, sk.spec.num_actions, dtype=jnp.float32))


def act_feedforward(sk: Skeleton, state: ValueState, obs: jax.Array, key: jax.Array,
                    explore: bool) -> tuple[jax.Array, jax.Array]:
    """Every agent's action at ``obs [..., N, obs_dim]`` over the valid actions
    (``spec.action_mask``): ``(env_action [..., N] int32, one-hot [..., N, A] float32)``;
    epsilon-greedy (``explore``, static) or greedy."""
    chex.assert_axis_dimension(obs, -2, sk.spec.num_agents)
    chex.assert_axis_dimension(obs, -1, sk.spec.obs_dim)
    q = sk.agent.apply(state.params.agent, networks.agent_inputs(obs.astype(jnp.float32), None))
    action = _choose(sk, state, q, jnp.broadcast_to(sk.spec.action_mask, q.shape), key, explore)
    return action, jax.nn.one_hot(action, sk.spec.num_actions, dtype=jnp.float32)


def as_episode(sk: Skeleton, batch: Episode | Transition) -> Episode:
    """The batch as episodes (:func:`~.batches.transition_episode` for the feed-forward
    form), shape-checked."""
    episode = batch if sk.recurrent else batches.transition_episode(sk.spec, batch)
    batches.check_episode(sk.spec, episode, sk.state_dim)
    return episode


def agent_q(sk: Skeleton, agent_params: PyTree, batch: Episode) -> jax.Array:
    """Step 1: the agent network over episodes, ``[B, T + 1, N, A]`` (recurrent agents see
    observation, id and previous action, scanned over time from a zero state)."""
    if not sk.recurrent:
        obs = batch.obs.astype(jnp.float32)
        return sk.agent.apply(agent_params, networks.agent_inputs(obs, None))
    prev = batches.previous_actions(batch, sk.spec.num_actions)
    return networks.unroll(sk.agent, agent_params, batch.obs, prev)


def episode_targets(sk: Skeleton, target: ValueParams, batch: Episode,
                    q: jax.Array) -> jax.Array:
    """Step 2: ``y [B, T, H]`` from the target networks ``target`` and the online Q-values
    ``q [B, T + 1, N, A]`` (which choose the bootstrap actions when ``double_q``); with
    MAC-PO ``[B, T, H + 1]``, the last column the target ``Q*``'s TD(lambda) targets at the
    same bootstrap actions."""
    avail = batch.avail | ~jnp.any(batch.avail, axis=-1, keepdims=True)  # padding rows: all
    boot = targets.bootstrap_q(agent_q(sk, target.agent, batch), q, avail, sk.config.double_q)
    state = batches.mixer_input(batch, sk.state_dim)
    q_hat = sk.mixer.apply(target.mixer, boot, state)
    if sk.qstar is not None:
        q_hat = jnp.concatenate([q_hat, sk.qstar.apply(target.qstar, boot, state)], axis=-1)
    lam = sk.config.td_lambda if sk.recurrent else 0.0
    return targets.td_lambda_targets(batch.reward.astype(jnp.float32),
                                     batch.terminated.astype(jnp.float32),
                                     batch.filled.astype(jnp.float32), q_hat,
                                     sk.config.gamma, lam)


def macpo_step_weights(sk: Skeleton, qstar_params: PyTree, q: jax.Array, q_taken: jax.Array,
                       q_tot: jax.Array, state: jax.Array, batch: Episode, y: jax.Array
                       ) -> tuple[jax.Array, jax.Array, dict[str, jax.Array]]:
    """MAC-PO's part of step 3 (paper 004, Lemma 1): ``Q*``'s own loss, and each filled
    step's optimal weight.

    Args:
      q: ``[B, T + 1, N, A]`` online Q-values; q_taken: ``[B, T, N]`` at the taken actions.
      q_tot: ``[B, T, 1]`` QMIX's mixed value; state: ``[B, T, S']`` the mixer's input.
      y: ``[B, T, 2]`` targets of QMIX (column 0) and of ``Q*`` (column 1).

    Returns:
      ``(qstar_loss [], raw [B, T], info)``: ``Q*``'s mean squared TD error over the filled
      steps (its gradient reaches ``Q*`` only), eq. 2's unnormalized weights (no gradient;
      0 on unfilled steps) and, for the metrics, ``qstar_loss`` and the means over the filled
      steps of f, of the weights and of ``|Q_tot - y|`` (``bellman_error``).
    """
    sg = jax.lax.stop_gradient
    mask = batch.filled[:, :-1] > 0  # [B, T]
    count = jnp.maximum(jnp.sum(mask), 1.0)
    q_star = sk.qstar.apply(qstar_params, sg(q_taken), state)[..., 0]  # [B, T]
    qstar_loss = jnp.sum(jnp.where(mask, q_star - sg(y[..., -1]), 0.0) ** 2) / count
    log_pi = macpo.taken_log_prob(sg(q[:, :-1]), batch.avail[:, :-1], batch.action[:, :-1])
    f_pi = macpo.joint_action_factor(log_pi)  # [B, T]
    raw = sg(macpo.optimal_weights(q_tot[..., 0] - y[..., 0], q_tot[..., 0] - q_star, f_pi))
    raw = jnp.where(mask, raw, 0.0)
    mean = lambda x: jnp.sum(jnp.where(mask, x, 0.0)) / count
    info = {"qstar_loss": sg(qstar_loss), "f_pi_mean": mean(f_pi), "weight_mean": mean(raw),
            "bellman_error": sg(mean(jnp.abs(q_tot[..., 0] - y[..., 0])))}
    return qstar_loss, raw, info


def episode_loss(sk: Skeleton, params: ValueParams, q: jax.Array, batch: Episode,
                 weights: jax.Array, y: jax.Array) -> tuple[jax.Array, LossInfo]:
    """Step 3's loss (module docstring) of online Q-values ``q [B, T + 1, N, A]`` against
    ``y [B, T, H]`` (MAC-PO: ``[B, T, H + 1]``) with per-episode ``weights [B]``, reading
    the mixer's (and ``Q*``'s) parameters from ``params``; ``grad_norm`` is left 0."""
    q_taken = targets.chosen(q[:, :-1], batch.action[:, :-1])  # [B, T, N]
    state = batches.mixer_input(batch, sk.state_dim)[:, :-1]
    q_tot = sk.mixer.apply(params.mixer, q_taken, state)  # [B, T, H]
    y_mix = y[..., :sk.mixer.heads]
    mask = jnp.broadcast_to(batch.filled[:, :-1, None] > 0, q_tot.shape)  # [B, T, H]
    delta = jnp.where(mask, q_tot - jax.lax.stop_gradient(y_mix), 0.0)
    count = jnp.sum(mask, axis=(1, 2)).astype(jnp.float32)  # [B]
    item = weights.astype(jnp.float32)[:, None, None]  # [B, 1, 1]
    extra, info = jnp.zeros(()), {}
    td = jnp.sum(jnp.abs(delta), axis=(1, 2)) / jnp.maximum(count, 1.0)
    if sk.qstar is not None:
        extra, raw, info = macpo_step_weights(sk, params.qstar, q, q_taken, q_tot, state,
                                              batch, y)
        step = macpo.normalize(raw, mask[..., 0], sk.config.macpo_normalization,
                               sk.config.macpo_floor)
        item = item * step[..., None]  # [B, T, 1]
        td = jnp.sum(raw, axis=1) / jnp.maximum(count, 1.0)  # the priority: mean weight
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
    filled steps and heads; MAC-PO: its mean optimal weight, :class:`LossInfo`)."""
    episode = as_episode(sk, batch)

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
               **{f"macpo_{name}": value for name, value in info.macpo.items()}}
    return new_state.replace(step=state.step + 1), metrics, info.td


def build(spec: EnvSpec, config: ValueConfig, mixer: Mixer, macpo_weights: bool = False) -> Algo:
    """The value learner with ``mixer`` (QMIX, VDN or IQL) as an :class:`Algo`: episode
    replay and recurrent ``act`` for ``config.agent == "rnn"``, transition replay and the
    stateless ``act`` for ``"mlp"``; its ``phases`` are :class:`Phases`. With
    ``macpo_weights`` (QMIX's mixer only) the loss is weighted by MAC-PO's optimal weights
    (module docstring)."""
    sk = make_skeleton(spec, config, mixer, macpo_weights)

    def init_fn(key: jax.Array) -> ValueState:
        return init(sk, key)

    def update_fn(state: ValueState, batch: Any, weights: jax.Array, key: jax.Array):
        return update(sk, state, batch, weights, key)

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

    phases = Phases(agent_q=agent_q_fn, targets=targets_fn, loss_and_grad=loss_and_grad_fn,
                    apply=apply_fn, target_update=target_update_fn)
    common = dict(init=init_fn, update=update_fn, action_dim=spec.num_actions, phases=phases,
                  observe=observe)
    if not sk.recurrent:
        def act_fn(state: ValueState, obs: jax.Array, key: jax.Array, explore: bool):
            return act_feedforward(sk, state, obs, key, explore)

        return Algo(act=act_fn, needs=Needs(replay="transition"), **common)

    def act_rnn_fn(state: ValueState, carry: Carry, obs: jax.Array, avail: jax.Array,
                   key: jax.Array, explore: bool):
        return act_recurrent(sk, state, carry, obs, avail, key, explore)

    def initial_carry_fn() -> Carry:
        return initial_carry(sk)

    needs = Needs(replay="episode", avail_actions=True,
                  global_state=mixer.reads_state and sk.state_dim > 0)
    return Algo(act=act_rnn_fn, needs=needs, initial_carry=initial_carry_fn, **common)
