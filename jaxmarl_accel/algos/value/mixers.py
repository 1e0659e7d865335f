"""Mixers: how the agents' chosen Q-values make the value the team reward trains.

A :class:`Mixer` maps the agents' Q-values of their chosen actions ``[..., N]`` (and the
global state ``[..., S]``) to ``heads`` values ``[..., heads]``, each regressed onto the team
reward's targets:

* QMIX (Rashid et al. 2018): one head, a monotonic mixing network whose weights come from
  hypernetworks of the state;
* VDN (Sunehag et al. 2018): one head, the sum of the agents' values;
* IQL: no mixing, N heads, every agent's own value learns the team reward independently.

All three keep each head's greedy joint action equal to the agents' greedy actions
(QMIX eq. 4 implies its eq. 3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxmarl_accel.algos.value.config import ValueConfig
from jaxmarl_accel.envs.base import EnvSpec
from jaxmarl_accel.types import PyTree


class Mixer(NamedTuple):
    """A mixer as pure functions.

    Attributes:
      init: ``(key, state_dim) -> params`` (an empty dict for mixers without parameters).
      apply: ``(params, q [..., N], state [..., S]) -> [..., heads]``.
      heads: number of mixed values (1, or N for IQL).
      reads_state: whether ``apply`` reads the global state (QMIX).
    """

    init: Callable[[jax.Array, int], PyTree]
    apply: Callable[[PyTree, jax.Array, jax.Array], jax.Array]
    heads: int
    reads_state: bool = False


class QMixNet(nn.Module):
    """QMIX's mixing network (Rashid et al. 2018, Sec. 4, Fig. 2; eq. 4 holds because the
    mixing weights are absolute values):

    ``Q_tot = w2(s) . elu(q W1(s) + b1(s)) + V(s)`` with ``W1(s) = |hyper_w1(s)|``
    ``[N, E]`` and ``w2(s) = |hyper_w2(s)|`` ``[E]`` from two-layer ReLU hypernetworks,
    ``b1(s)`` ``[E]`` linear in ``s`` and the state-dependent bias ``V(s)`` from a two-layer
    ReLU network of width E.

    Attributes:
      num_agents: N.
      embed: E, width of the mixing layer.
      hypernet_hidden: width of the hypernetworks' hidden layer.
    """

    num_agents: int
    embed: int
    hypernet_hidden: int

    @nn.compact
    def __call__(self, q: jax.Array, state: jax.Array) -> jax.Array:
        """``q [..., N]``, ``state [..., S]`` -> ``Q_tot [..., 1]``."""
        n, e = self.num_agents, self.embed
        hyper = lambda width: nn.Dense(width)(nn.relu(nn.Dense(self.hypernet_hidden)(state)))
        w1 = jnp.abs(hyper(n * e)).reshape((*state.shape[:-1], n, e))
        b1 = nn.Dense(e)(state)
        w2 = jnp.abs(hyper(e))
        v = nn.Dense(1)(nn.relu(nn.Dense(e)(state)))
        hidden = nn.elu(jnp.einsum("...n,...ne->...e", q, w1) + b1)
        return jnp.sum(hidden * w2, axis=-1, keepdims=True) + v


def qmix(spec: EnvSpec, config: ValueConfig) -> Mixer:
    """QMIX's monotonic mixer (:class:`QMixNet`), one head."""
    net = QMixNet(spec.num_agents, config.mixer_embed, config.hypernet_hidden)
    init = lambda key, state_dim: net.init(
        key, jnp.zeros((1, spec.num_agents)), jnp.zeros((1, state_dim)))
    return Mixer(init=init, apply=net.apply, heads=1, reads_state=True)


def _no_params(key: jax.Array, state_dim: int) -> PyTree:
    return {}


def vdn(spec: EnvSpec, config: ValueConfig) -> Mixer:
    """VDN's additive mixer, ``Q_tot = sum_i Q_i`` (Sunehag et al. 2018, Sec. 3), one head."""
    return Mixer(init=_no_params, heads=1,
                 apply=lambda params, q, state: jnp.sum(q, axis=-1, keepdims=True))


def iql(spec: EnvSpec, config: ValueConfig) -> Mixer:
    """No mixer: N heads, each agent's own value (independent Q-learning on the team reward)."""
    return Mixer(init=_no_params, heads=spec.num_agents, apply=lambda params, q, state: q)
