"""MAC-PO's optimal prioritization weights (paper 004, Sec. IV-A, Lemma 1, eq. 1-3).

For a replayed item (one filled step of an episode, or one transition) Lemma 1 gives the
weight of the weighted Bellman loss ``L = sum_k w_k (Q_tot - y)^2`` (paper 004, eq. 1)::

    w  ∝  |Q_tot - y|  *  exp(-|Q_tot - Q*|)  *  f(pi),                          (eq. 2)
    f(pi) = 1 + sum_i prod_{j != i} pi_j - n prod_i pi_i,                       (eq. 3)

What each term is here, and where the choice comes from:

* ``Q_tot``: QMIX's mixed value of the step's taken joint action (paper 004, eq. 1's Q_k);
* ``y``: eq. 1's "fixed target obtained through a target network" (``B* Q_{k-1}``); the
  paper does not say which network, so as in the authors' code, which builds MAC-PO on
  weighted QMIX's ``max_q_learner``: the TD(lambda) target bootstrapped from the target
  ``Q*`` at QMIX's greedy next joint action (:mod:`~.central`), the target QMIX and ``Q*``
  regress onto;
* ``Q*``: "the optimal action value function"; the paper does not say how it is estimated,
  so as in the authors' code weighted QMIX's unrestricted ``Q*`` (its own agent network
  and a feed-forward mixer over the state, :class:`~.central.QStar`), online, at the
  step's taken joint action;
* ``pi_i``: agent i's probability of its taken action; the paper does not define a policy
  for a value learner, so the softmax of its Q-values over its available actions.

Since ``1 + sum_i prod_{j != i} pi_j - n prod_i pi_i = 1 + sum_i (1 - pi_i) prod_{j != i}
pi_j`` and the sum is the probability that exactly one agent deviates when each agent i
keeps its action with probability ``pi_i``, ``f`` lies in ``[1, 2]``. The products of 32-48
probabilities underflow float32, and ``prod_j pi_j / pi_i`` is 0 / 0 once they do, so
:func:`joint_action_factor` sums the terms in log space (``logsumexp``), without dividing.

Where the weights act (``macpo_weighting``, :func:`weighting`): as each replayed episode's
sampling priority (MAC-PO: prioritized replay of whole episodes, each episode's priority
its mean eq.-2 weight over its filled steps from the batch that last drew it), in the loss
(eq. 1), or both (AccMER, whose eq. 1 weights its loss and whose Alg. 1 ranks its table by
the same weights).

Normalization, "the necessary normalization" the paper applies without stating it. Lemma 1
fixes the weights up to their sum (``w = ... / Z*``). As sampling priorities the sampler
supplies it: MAC-PO's prioritized replay draws episode i with probability
``p_i / sum_k p_k`` (``per`` with exponent 1 and no importance correction, whose expected
gradient is eq. 1's, Fujimoto et al. 2020, the equivalence paper 004 Sec. IV-A cites), so
the priorities are eq. 2 as it is. As loss weights the batch supplies it
(``macpo_normalization``, :func:`normalize`): ``"mean"`` divides by their mean over the
batch's filled steps (the batch's estimate of ``Z*``); ``"minmax"`` maps them linearly onto
``[floor, 1]`` (the smallest to ``floor``, the largest to 1, all 1 when equal), so no filled
step leaves the loss and its scale does not follow the TD errors'; ``"none"`` uses eq. 2 as
it is.

The authors' code (the AccMER repository's ``max_q_learner``) weights the loss only:
QMIX's squared errors times eq. 2's weights as they are (``macpo_weighting="loss"`` with
``"none"`` here), ``pi_i`` the softmax over all actions, available or not, and episodes
drawn by its reuse table or uniformly, not by priority; the quality suite's
``macpo-fig3b-authors`` entry runs that form with uniform replay. Their agent network also
differs from pymarl2's on the stag hunt: no one-hot id in its input and Q-values clamped to
``[-5, 2]`` (so ``pi_i`` is a softmax of clamped values); ``macpo-fig3b-authors-agent``
adds both (``ValueConfig.agent_ids``, ``agent_q_min``, ``agent_q_max``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmarl_accel.algos.value import targets
from jaxmarl_accel.algos.value.central import StepValues, StepWeights, Weighting, masked_mean
from jaxmarl_accel.algos.value.config import MACPO_WEIGHTINGS, NORMALIZATIONS, ValueConfig
from jaxmarl_accel.checks import check_choice

LOG_PI_FLOOR = -1e3
"""Log-probabilities are clamped here (``exp(-1000)`` is 0 in float32 anyway) so that a
probability that underflowed to 0 adds a finite log."""


def taken_log_prob(q: jax.Array, avail: jax.Array, action: jax.Array) -> jax.Array:
    """``log pi_i``: log of the softmax over the available actions of ``q [..., A]``
    (``avail [..., A]`` bool; rows with none available count all as available) at
    ``action [...]`` (int) -> ``[...]``, clamped at :data:`LOG_PI_FLOOR`."""
    avail = avail | ~jnp.any(avail, axis=-1, keepdims=True)
    log_pi = jax.nn.log_softmax(targets.masked_q(q, avail), axis=-1)
    return jnp.maximum(targets.chosen(log_pi, action), LOG_PI_FLOOR)


def joint_action_factor(log_pi: jax.Array) -> jax.Array:
    """Eq. 3, ``f(pi)`` from the agents' log-probabilities of their taken actions.

    Args:
      log_pi: ``[..., N]`` ``log pi_i`` (``<= 0``; the agent axis last).

    Returns:
      ``[...]`` float32 ``f(pi) = 1 + sum_i (1 - pi_i) prod_{j != i} pi_j`` in ``[1, 2]``,
      the sum taken as ``exp(logsumexp_i(log(1 - pi_i) + sum_{j != i} log pi_j))``.
    """
    log_pi = jnp.clip(log_pi.astype(jnp.float32), LOG_PI_FLOOR, 0.0)
    others = jnp.sum(log_pi, axis=-1, keepdims=True) - log_pi  # sum_{j != i} log pi_j
    log_one_minus = jnp.log1p(-jnp.exp(log_pi))  # -inf where pi_i == 1: that term is 0
    terms = log_one_minus + others
    top = jnp.max(terms, axis=-1, keepdims=True)
    top = jnp.where(jnp.isfinite(top), top, 0.0)
    return 1.0 + jnp.exp(top[..., 0]) * jnp.sum(jnp.exp(terms - top), axis=-1)


def optimal_weights(td_abs: jax.Array, value_gap: jax.Array, f_pi: jax.Array) -> jax.Array:
    """Eq. 2 before normalization: ``|Q_tot - y| * exp(-|Q_tot - Q*|) * f(pi)``; the three
    terms are arrays of one shape (``[B, T]`` for episodes), the result has it too."""
    return jnp.abs(td_abs) * jnp.exp(-jnp.abs(value_gap)) * f_pi


def normalize(weights: jax.Array, mask: jax.Array, how: str, floor: float) -> jax.Array:
    """The loss weights of one batch: ``weights`` (``[B, T]``) normalized over its items
    where ``mask`` (same shape, bool) holds (see the module docstring); 0 elsewhere.

    ``how``: ``"minmax"`` onto ``[floor, 1]``, ``"mean"`` divided by their mean (ones when
    they are all 0), or ``"none"``."""
    check_choice("how", how, NORMALIZATIONS)
    if how == "none":
        return jnp.where(mask, weights, 0.0)
    if how == "mean":
        mean = masked_mean(weights, mask)
        return jnp.where(mask, jnp.where(mean > 0, weights / jnp.where(mean > 0, mean, 1.0),
                                         1.0), 0.0)
    low = jnp.min(jnp.where(mask, weights, jnp.inf))
    high = jnp.max(jnp.where(mask, weights, -jnp.inf))
    spread = high - low
    scaled = jnp.where(spread > 0, (weights - low) / jnp.where(spread > 0, spread, 1.0), 1.0)
    return jnp.where(mask, floor + (1.0 - floor) * scaled, 0.0)


def weighting(config: ValueConfig, mode: str) -> Weighting:
    """MAC-PO's :class:`~.central.Weighting`: each filled step's eq.-2 weight (no
    gradient), its episode's priority term; with ``mode`` ``"loss"`` or ``"both"`` also its
    loss weight, normalized over the batch by ``config.macpo_normalization`` (1 on every
    filled step with ``"priority"``). Metrics: the means over the filled steps of f, of the
    weights and of ``|Q_tot - y|`` (``bellman_error``)."""
    check_choice("mode", mode, MACPO_WEIGHTINGS[1:])

    def weights(v: StepValues) -> StepWeights:
        batch = v.batch
        log_pi = taken_log_prob(v.q[:, :-1], batch.avail[:, :-1], batch.action[:, :-1])
        f_pi = joint_action_factor(log_pi)  # [B, T]
        raw = jnp.where(v.mask, optimal_weights(v.q_tot - v.y, v.q_tot - v.qstar, f_pi), 0.0)
        loss = (normalize(raw, v.mask, config.macpo_normalization, config.macpo_floor)
                if mode in ("loss", "both") else v.mask.astype(jnp.float32))
        info = {"f_pi_mean": masked_mean(f_pi, v.mask), "weight_mean": masked_mean(raw, v.mask),
                "bellman_error": masked_mean(jnp.abs(v.q_tot - v.y), v.mask)}
        return StepWeights(loss=loss, priority=raw, info=info)

    return Weighting(name="macpo", weights=weights)


__all__ = ["LOG_PI_FLOOR", "NORMALIZATIONS", "joint_action_factor", "normalize",
           "optimal_weights", "taken_log_prob", "weighting"]
