"""Weighted QMIX's unrestricted centralized value ``Q*``, its targets and its loss.

Weighted QMIX (Rashid et al. 2020, "Weighted QMIX: Expanding Monotonic Value Function
Factorisation for Deep Multi-Agent RL", NeurIPS; WQMIX below) learns beside QMIX an
unrestricted joint value ``Q*`` and regresses both onto one target. As in WQMIX Sec. 5
(Fig. 1) and its reference code (``max_q_learner`` with the ``central_rnn`` agent and the
``ff`` central mixer, also in pymarl2):

* ``Q*`` (:class:`QStar`): its own agent network (QMIX's architecture, its own
  parameters) gives each agent a utility per action; a feed-forward network
  (:class:`QStarNet`) mixes the utilities of the chosen actions with the state, with no
  monotonicity constraint;
* the target (WQMIX Sec. 5): ``y = r + gamma Q*^-(s', u')`` at QMIX's greedy joint action
  ``u'`` (each agent's greedy available action under the online QMIX agents: double Q;
  under the target QMIX agents with ``double_q=False``), ``Q*^-`` the target copy of
  ``Q*`` (copied with QMIX's target networks); over an episode the TD(lambda) returns of
  these bootstrap values (:func:`~.targets.td_lambda_targets`), as pymarl2's
  ``max_q_learner`` does;
* the loss: ``sum mask w (Q_tot - y)^2 / sum mask + sum mask (Q*(s, u) - y)^2 / sum mask``:
  ``Q*``'s squared error unweighted (weight 1 as in WQMIX's code; pymarl2 halves it,
  which with separate parameters and Adam only changes its share of the clipped norm),
  QMIX's weighted per step by a :class:`Weighting`: OW- or CW-QMIX's rule
  (:mod:`~.wqmix`) or MAC-PO's optimal weights (:mod:`~.macpo`). The two parts share no
  parameters, so ``Q*``'s loss never reaches the QMIX agents.

Shapes: B episodes, T steps (rows ``T + 1`` with the bootstrap row), N agents, A actions,
S the mixer's state width.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp
from flax import struct

from jaxmarl_accel.algos.networks import MLP
from jaxmarl_accel.algos.value import networks, targets
from jaxmarl_accel.algos.value.config import ValueConfig
from jaxmarl_accel.types import Episode, PyTree


class QStarNet(nn.Module):
    """``Q*``'s feed-forward mixer (WQMIX Sec. 5, Fig. 1 left; the reference code's
    ``QMixerCentralFF``): ``layers`` ReLU layers of ``hidden`` units over the concatenated
    state and agents' chosen utilities, a linear output, plus a state value
    ``V(s) = Dense(1)(ReLU(Dense(hidden)(s)))``; no monotonicity constraint.

    Attributes:
      hidden: width of each hidden layer (and of V's).
      layers: number of hidden layers.
    """

    hidden: int
    layers: int

    @nn.compact
    def __call__(self, q: jax.Array, state: jax.Array) -> jax.Array:
        """``q [..., N]``, ``state [..., S]`` -> ``Q* [..., 1]``."""
        x = jnp.concatenate([state, q], axis=-1)
        for _ in range(self.layers):
            x = nn.relu(nn.Dense(self.hidden)(x))
        value = nn.Dense(1)(nn.relu(nn.Dense(self.hidden)(state)))
        return nn.Dense(1)(x) + value


@struct.dataclass
class QStarParams:
    """Parameters of ``Q*``: its agent network (no agent axis) and its mixer."""

    agent: PyTree
    mixer: PyTree


class QStar(NamedTuple):
    """The static modules of ``Q*``: ``agent`` (QMIX's agent architecture) and ``mixer``."""

    agent: networks.RNNAgent | MLP
    mixer: QStarNet


def make_qstar(config: ValueConfig, num_actions: int) -> QStar:
    """``Q*`` of ``config``: an agent network like QMIX's (``agent``, ``hidden``,
    ``agent_ids``; never clamped, as the authors' ``central_rnn`` agent) and a
    :class:`QStarNet` of ``qstar_layers`` layers of ``qstar_hidden`` units."""
    return QStar(agent=networks.make_agent(config.agent, config.hidden, num_actions,
                                           config.agent_ids),
                 mixer=QStarNet(config.qstar_hidden, config.qstar_layers))


def init_qstar(qstar: QStar, key: jax.Array, in_dim: int, num_agents: int,
               state_dim: int) -> QStarParams:
    """Fresh ``Q*`` parameters for agent inputs of width ``in_dim`` and mixer states of
    width ``state_dim``."""
    agent_key, mixer_key = jax.random.split(key)
    return QStarParams(
        agent=networks.init_agent(qstar.agent, agent_key, in_dim),
        mixer=qstar.mixer.init(mixer_key, jnp.zeros((1, num_agents)), jnp.zeros((1, state_dim))))


def qstar_at(qstar: QStar, params: QStarParams, batch: Episode, actions: jax.Array,
             state: jax.Array) -> jax.Array:
    """``Q*(s_t, u_t)`` of every row at the joint actions ``actions [B, T + 1, N]`` (int),
    the mixer reading ``state [B, T + 1, S]``: ``[B, T + 1]``."""
    utilities = targets.chosen(networks.episode_q(qstar.agent, params.agent, batch), actions)
    return qstar.mixer.apply(params.mixer, utilities, state)[..., 0]


def qstar_targets(qstar: QStar, target: QStarParams, batch: Episode, greedy: jax.Array,
                  state: jax.Array, gamma: float, lam: float) -> jax.Array:
    """The targets of QMIX and ``Q*`` (module docstring) from the target ``Q*``.

    Args:
      target: the target copy of ``Q*``'s parameters.
      batch: episodes, leaves ``[B, T + 1, ...]``.
      greedy: ``[B, T + 1, N]`` QMIX's greedy joint action of every row.
      state: ``[B, T + 1, S]`` the mixer's input.
      gamma, lam: discount and TD(lambda)'s lambda.

    Returns:
      ``[B, T, 2]``: column 0 the targets ``y``, column 1 ``Q*^-(s_t, u_t^greedy)`` of the
      step's own row (CW-QMIX compares ``y`` with it).
    """
    boot = qstar_at(qstar, target, batch, greedy, state)[..., None]  # [B, T + 1, 1]
    y = targets.td_lambda_targets(batch.reward.astype(jnp.float32),
                                  batch.terminated.astype(jnp.float32),
                                  batch.filled.astype(jnp.float32), boot, gamma, lam)
    return jnp.concatenate([y, boot[:, :-1]], axis=-1)


class StepValues(NamedTuple):
    """What a weighting reads, per step of a batch (no gradient flows through any).

    Attributes:
      q: ``[B, T + 1, N, A]`` the online QMIX agents' Q-values.
      batch: the episodes (actions, available actions), leaves ``[B, T + 1, ...]``.
      mask: ``[B, T]`` bool, the filled steps.
      q_tot: ``[B, T]`` QMIX's ``Q_tot(s_t, u_t)``.
      y: ``[B, T]`` the targets.
      qstar: ``[B, T]`` the online ``Q*(s_t, u_t)`` at the taken joint action.
      qstar_greedy: ``[B, T]`` the target ``Q*^-(s_t, u_t^greedy)`` at QMIX's greedy one.
    """

    q: jax.Array
    batch: Episode
    mask: jax.Array
    q_tot: jax.Array
    y: jax.Array
    qstar: jax.Array
    qstar_greedy: jax.Array


class StepWeights(NamedTuple):
    """A weighting's answer: ``loss [B, T]`` each step's weight in QMIX's loss,
    ``priority [B, T]`` each step's share of its episode's priority (their mean over the
    episode's filled steps is the priority) and ``info``, scalar metrics by name."""

    loss: jax.Array
    priority: jax.Array
    info: dict[str, jax.Array]


class Weighting(NamedTuple):
    """How a learner with ``Q*`` weights QMIX's loss.

    Attributes:
      name: the prefix of its metrics (``wqmix``, ``macpo``).
      weights: ``StepValues -> StepWeights`` (0 on unfilled steps).
    """

    name: str
    weights: Callable[[StepValues], StepWeights]


def masked_mean(x: jax.Array, mask: jax.Array) -> jax.Array:
    """Mean of ``x`` over the entries where ``mask`` (same shape, bool) holds; ``[]``."""
    return jnp.sum(jnp.where(mask, x, 0.0)) / jnp.maximum(jnp.sum(mask), 1)


def greedy_steps(q: jax.Array, batch: Episode) -> jax.Array:
    """``[B, T]`` bool: every agent took QMIX's greedy available action at the step
    (``q [B, T + 1, N, A]``; rows without available actions count all as available)."""
    avail = batch.avail[:, :-1] | ~jnp.any(batch.avail[:, :-1], axis=-1, keepdims=True)
    greedy = targets.greedy(q[:, :-1], avail)
    return jnp.all(greedy == batch.action[:, :-1], axis=-1)


def qstar_loss(qstar: QStar, params: QStarParams, batch: Episode, state: jax.Array,
               y: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``Q*``'s part of the loss: ``(sum mask (Q*(s_t, u_t) - y)^2 / sum mask [],
    Q*(s_t, u_t) [B, T])`` at the taken actions, ``state [B, T + 1, S]``, ``y [B, T]`` (no
    gradient into ``y``)."""
    mask = batch.filled[:, :-1] > 0
    value = qstar_at(qstar, params, batch, batch.action, state)[:, :-1]
    error = jnp.where(mask, value - jax.lax.stop_gradient(y), 0.0)
    return masked_mean(error**2, mask), value


__all__ = ["QStar", "QStarNet", "QStarParams", "StepValues", "StepWeights", "Weighting",
           "greedy_steps", "init_qstar", "make_qstar", "masked_mean", "qstar_at", "qstar_loss",
           "qstar_targets"]
