"""MAC-PO's optimal prioritization weights (paper 004, Sec. III, Lemma 1, eq. 2-3).

For a replayed item (one filled step of an episode, or one transition) Lemma 1 gives the
weight of the weighted Bellman loss ``L = sum_k w_k (Q_tot - y)^2`` (paper 004, eq. 1)::

    w  ∝  |Q_tot - y|  *  exp(-|Q_tot - Q*|)  *  f(pi),                          (eq. 2)
    f(pi) = 1 + sum_i prod_{j != i} pi_j - n prod_i pi_i,                       (eq. 3)

with ``pi_i`` agent i's probability of its taken action, here the softmax of its Q-values
over its available actions. ``Q*`` is an unrestricted centralized value: weighted QMIX's
``Q^*`` (Rashid et al. 2020, Sec. 5), a non-monotonic feed-forward mixer (``qstar_layers``
ReLU layers of ``qstar_hidden`` units) over the global state and the agents' chosen
Q-values, trained beside QMIX on its own TD(lambda) loss (:class:`QStarNet`).

Since ``1 + sum_i prod_{j != i} pi_j - n prod_i pi_i = 1 + sum_i (1 - pi_i) prod_{j != i}
pi_j`` and the sum is the probability that exactly one agent deviates when each agent i
keeps its action with probability ``pi_i``, ``f`` lies in ``[1, 2]``. The products of 32-48
probabilities underflow float32, and ``prod_j pi_j / pi_i`` is 0 / 0 once they do, so
:func:`joint_action_factor` sums the terms in log space (``logsumexp``), without dividing.

Normalization (the paper applies "the necessary normalization" without stating it):
``"minmax"`` maps a batch's weights linearly onto ``[floor, 1]`` (its smallest weight to
``floor``, its largest to 1; all ``1`` when they are equal), so that no filled item is
dropped from the loss and the loss's scale does not follow the TD errors' scale;
``"none"`` uses eq. 2 as it is.
"""

from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxmarl_accel.algos.value import targets
from jaxmarl_accel.algos.value.config import NORMALIZATIONS, ValueConfig

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

    ``how``: ``"minmax"`` onto ``[floor, 1]``, or ``"none"``."""
    if how not in NORMALIZATIONS:
        raise ValueError(f"how must be one of {NORMALIZATIONS}, got {how!r}")
    if how == "none":
        return jnp.where(mask, weights, 0.0)
    low = jnp.min(jnp.where(mask, weights, jnp.inf))
    high = jnp.max(jnp.where(mask, weights, -jnp.inf))
    spread = high - low
    scaled = jnp.where(spread > 0, (weights - low) / jnp.where(spread > 0, spread, 1.0), 1.0)
    return jnp.where(mask, floor + (1.0 - floor) * scaled, 0.0)


class QStarNet(nn.Module):
    """Weighted QMIX's unrestricted ``Q^*`` (Rashid et al. 2020, Sec. 5; paper 004 uses its
    ``Q^*`` in eq. 2): ``layers`` ReLU layers of ``hidden`` units over the concatenated
    state and agents' chosen Q-values, then a linear output; no monotonicity constraint.

    Attributes:
      hidden: width of each hidden layer.
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
        return nn.Dense(1)(x)


def qstar_net(config: ValueConfig) -> QStarNet:
    """The ``Q^*`` network of ``config`` (``qstar_hidden``, ``qstar_layers``)."""
    return QStarNet(config.qstar_hidden, config.qstar_layers)


__all__ = ["LOG_PI_FLOOR", "NORMALIZATIONS", "QStarNet", "joint_action_factor", "normalize",
           "optimal_weights", "qstar_net", "taken_log_prob"]
