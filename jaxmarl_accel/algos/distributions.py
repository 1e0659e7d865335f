"""Action distributions on top of the raw actor outputs.

An :class:`ActionDistribution` turns raw actor outputs ``out [..., out_size]`` into

* ``sample``: a differentiable action vector for the losses (the critic-facing
  ``action_vec``) and an entropy bonus (an estimate of ``-log pi``, 0 for deterministic
  actors);
* ``explore`` / ``exploit``: the env action and the action vector stored in the replay.

Four kinds:

* discrete (all algorithms): Gumbel-softmax over masked logits (Jang et al. 2017;
  ``SoftCategoricalPd`` of the original MADDPG code, temperature 1): the loss
  differentiates through ``softmax(logits + g)``. By default (``straight_through``) the
  forward value is that sample's one-hot, so the critics, which the replay trains on
  one-hot actions, are also evaluated on one-hot actions in the actor step and the
  target; otherwise it is the soft sample itself. The bonus is the exact entropy
  ``-sum_a p log p`` of the categorical (used by MASAC only).
  Exploration samples ``argmax(logits + g)`` (the same Gumbel draw's hard action, i.e. a
  categorical sample); the stored action vector is its one-hot, so that the critics
  are trained on the actions the env executed. Invalid (padded) actions get logit -1e9.
* deterministic continuous (MADDPG, MATD3): ``a = sigmoid(out)`` in ``[0, 1]``, explored
  with clipped Gaussian noise of std ``explore_noise``.
* squashed Gaussian (MASAC continuous; Haarnoja et al. 2018, App. C): ``out = [mean,
  log_std]``, ``a = (tanh(u) + 1) / 2`` with ``u ~ N(mean, std)``, bonus ``-log pi(a)``
  including the change-of-variables term ``log |da/du| = log(1/2) + log(1 - tanh(u)^2)``
  in its overflow-free form ``2 (log 2 - u - softplus(-2u))``.
* Gumbel-softmax on continuous actions (``continuous_policy="gumbel_softmax"``): the
  original MADDPG code on MPE. The actor's outputs are logits over the action components,
  the action is the soft sample ``softmax((out + g) / T)`` (a point of the simplex), and the
  env reads it as continuous move intensities (force ``accel * (a_right - a_left, a_up -
  a_down)``). Exploration executes and stores that soft sample; ``exploit`` is
  ``softmax(out / T)``.

Which parts are ``distrax`` objects and which are computed here:

* ``distrax.Categorical`` over the masked logits gives the discrete exploration sample
  (one Gumbel draw, ``argmax(logits + g)``), the greedy action (its mode) and the entropy
  bonus of both Gumbel-softmax heads.
* ``distrax.Transformed(MultivariateNormalDiag(mean, std), Block(Chain([ScalarAffine(1/2,
  1/2), Tanh()]), 1))`` is the squashed Gaussian: its ``sample_and_log_prob`` draws ``u``
  and returns ``a`` with ``log pi(a)`` (Gaussian log-density minus the log-Jacobian of the
  squashing), its bijector gives the greedy action ``squash(mean)``.
* Computed here: the Gumbel-softmax relaxation (the soft sample ``softmax((z + g) / T)``
  and its straight-through one-hot), which ``distrax`` lacks (its ``straight_through``
  wrapper passes the gradient of the probabilities, not of a relaxed sample), and the
  deterministic sigmoid head with clipped Gaussian noise, which is no distribution.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, Protocol

import distrax
import jax
import jax.numpy as jnp

from jaxmarl_accel.envs.base import EnvSpec

_NEG = -1e9
# a = (tanh(u) + 1) / 2 on each action component (the Jacobian is diagonal, so the block's
# log-determinant is the sum over the last axis).
_SQUASH = distrax.Block(distrax.Chain([distrax.ScalarAffine(shift=0.5, scale=0.5),
                                       distrax.Tanh()]), ndims=1)


class HeadSettings(Protocol):
    """The settings an action distribution reads (the actor-critic learners' config has
    them all: :class:`~jaxmarl_accel.algos.actor_critic.config.ActorCriticConfig`).

    Attributes:
      gumbel_temperature: temperature T of the Gumbel-softmax relaxation.
      straight_through: whether the relaxed discrete action is replaced by its one-hot in
        the forward pass.
      explore_noise: std of the deterministic continuous head's exploration noise.
      log_std_min: lower clip of the squashed Gaussian's log std.
      log_std_max: upper clip of that log std.
      continuous_policy: the continuous head: ``"auto"``, ``"sigmoid"``, ``"gaussian"`` or
        ``"gumbel_softmax"``.
    """

    gumbel_temperature: float
    straight_through: bool
    explore_noise: float
    log_std_min: float
    log_std_max: float
    continuous_policy: str


class ActionDistribution(NamedTuple):
    """Action distribution over raw actor outputs (``mask`` is ``[..., action_dim]`` bool).

    Attributes:
      out_size: width of the actor's output layer.
      action_dim: width of the critic-facing action vector.
      sample: ``(out [..., out_size], mask, key) -> (action_vec [..., A], bonus [...])``,
        differentiable in ``out``.
      explore: ``(out, mask, key) -> (env_action, action_vec)``.
      exploit: ``(out, mask) -> (env_action, action_vec)``, deterministic.
      reg: ``(out, mask) -> []`` mean squared pre-activation output (actor regularizer).
    """

    out_size: int
    action_dim: int
    sample: Callable[..., tuple[jax.Array, jax.Array]]
    explore: Callable[..., tuple[jax.Array, jax.Array]]
    exploit: Callable[..., tuple[jax.Array, jax.Array]]
    reg: Callable[..., jax.Array]


def _mean_square(out: jax.Array, mask: jax.Array) -> jax.Array:
    """Regularizer of an unmasked head: mean squared pre-activation output ``[]``."""
    del mask
    return jnp.mean(out**2)


def _explore_by_sampling(sample: Callable[..., tuple[jax.Array, jax.Array]]
                         ) -> Callable[..., tuple[jax.Array, jax.Array]]:
    """``explore`` of a stochastic continuous head: the env executes one sample of the action
    vector and the replay stores it, ``(a [..., A], a [..., A])``."""

    def explore(out: jax.Array, mask: jax.Array, key: jax.Array) -> tuple[jax.Array, jax.Array]:
        a, _ = sample(out, mask, key)
        return a, a

    return explore


def _masked_logits(out: jax.Array, mask: jax.Array) -> jax.Array:
    """``out [..., A]`` with the actions where ``mask`` is False at -1e9."""
    return jnp.where(mask, out, _NEG)


def masked_categorical(out: jax.Array, mask: jax.Array) -> distrax.Categorical:
    """The categorical over ``out [..., A]`` with the actions where ``mask`` is False at logit
    -1e9 (probability 0); int32 samples."""
    return distrax.Categorical(logits=_masked_logits(out, mask), dtype=jnp.int32)


class FactoredCategorical(distrax.Distribution):
    """Independent categoricals over the factors of a mixed-radix action index
    (``EnvSpec.action_factors``; WarpDrive's ``MultiDiscrete`` policy heads): logits
    ``[..., K_1 + ... + K_m]``, one block per factor, and events that are the joint index
    ``a = (..(c_1 K_2 + c_2)..) K_m + c_m`` ``[...]`` int32. ``log_prob``, ``entropy`` and
    ``mode`` are the factors' summed (independence). distrax has no multi-discrete
    distribution, hence this class; each factor is a ``distrax.Categorical``.

    Args:
      logits: ``[..., sum(factors)]``.
      factors: ``(K_1, ..., K_m)``, most significant first.
    """

    def __init__(self, logits: jax.Array, factors: tuple[int, ...]) -> None:
        super().__init__()
        if logits.shape[-1] != sum(factors):
            raise ValueError(f"logits have {logits.shape[-1]} entries, the factors {factors} "
                             f"need {sum(factors)}")
        self._factors = tuple(int(k) for k in factors)
        starts = [sum(self._factors[:j]) for j in range(len(self._factors))]
        self._parts = tuple(
            distrax.Categorical(logits=logits[..., start:start + k], dtype=jnp.int32)
            for start, k in zip(starts, self._factors, strict=True))
        self._batch = logits.shape[:-1]

    @property
    def event_shape(self) -> tuple[int, ...]:
        return ()

    @property
    def batch_shape(self) -> tuple[int, ...]:
        return self._batch

    def _join(self, digits: list[jax.Array]) -> jax.Array:
        index = digits[0]
        for k, digit in zip(self._factors[1:], digits[1:], strict=True):
            index = index * k + digit
        return index.astype(jnp.int32)

    def _split(self, value: jax.Array) -> list[jax.Array]:
        digits, rest = [], jnp.asarray(value, jnp.int32)
        for k in reversed(self._factors):
            digits.append(rest % k)
            rest = rest // k
        return digits[::-1]

    def _sample_n(self, key: jax.Array, n: int) -> jax.Array:
        keys = jax.random.split(key, len(self._parts))
        return self._join([part._sample_n(k, n)  # noqa: SLF001 (distrax's own protocol)
                           for part, k in zip(self._parts, keys, strict=True)])

    def log_prob(self, value: jax.Array) -> jax.Array:
        return sum(part.log_prob(digit)
                   for part, digit in zip(self._parts, self._split(value), strict=True))

    def entropy(self) -> jax.Array:
        return sum(part.entropy() for part in self._parts)

    def mode(self) -> jax.Array:
        return self._join([part.mode() for part in self._parts])


def squashed_gaussian(out: jax.Array, act_dim: int, log_std_min: float,
                      log_std_max: float) -> distrax.Transformed:
    """The policy ``a = (tanh(u) + 1) / 2``, ``u ~ N(mean, diag(std^2))``, of
    ``out [..., 2 act_dim] = [mean, log_std]`` (``log_std`` clipped to its bounds); events
    ``[..., act_dim]`` in ``(0, 1)``."""
    mean = out[..., :act_dim]
    log_std = jnp.clip(out[..., act_dim:], log_std_min, log_std_max)
    return distrax.Transformed(distrax.MultivariateNormalDiag(mean, jnp.exp(log_std)), _SQUASH)


def _gumbel_softmax(logits: jax.Array, key: jax.Array, temperature: float) -> jax.Array:
    """The relaxed one-hot sample ``softmax((logits + g) / T)``, ``g`` standard Gumbel."""
    return jax.nn.softmax((logits + jax.random.gumbel(key, logits.shape)) / temperature)


def _discrete(spec: EnvSpec, config: HeadSettings) -> ActionDistribution:
    num_actions = spec.num_actions

    def sample(out, mask, key):
        soft = _gumbel_softmax(_masked_logits(out, mask), key, config.gumbel_temperature)
        if config.straight_through:
            hard = jax.nn.one_hot(jnp.argmax(soft, axis=-1), num_actions, dtype=soft.dtype)
            soft = soft + jax.lax.stop_gradient(hard - soft)
        return soft, masked_categorical(out, mask).entropy()

    def explore(out, mask, key):
        idx = masked_categorical(out, mask).sample(seed=key)
        return idx, jax.nn.one_hot(idx, num_actions, dtype=jnp.float32)

    def exploit(out, mask):
        idx = masked_categorical(out, mask).mode()
        return idx, jax.nn.one_hot(idx, num_actions, dtype=jnp.float32)

    def reg(out, mask):
        mask = jnp.broadcast_to(mask, out.shape)
        return jnp.sum(jnp.where(mask, out**2, 0.0)) / jnp.maximum(jnp.sum(mask), 1)

    return ActionDistribution(num_actions, num_actions, sample, explore, exploit, reg)


def _deterministic(spec: EnvSpec, config: HeadSettings) -> ActionDistribution:
    def sample(out, mask, key):
        del mask, key
        return jax.nn.sigmoid(out), jnp.zeros(out.shape[:-1])

    def explore(out, mask, key):
        del mask
        a = jax.nn.sigmoid(out) + config.explore_noise * jax.random.normal(key, out.shape)
        a = jnp.clip(a, 0.0, 1.0)
        return a, a

    def exploit(out, mask):
        del mask
        a = jax.nn.sigmoid(out)
        return a, a

    return ActionDistribution(spec.act_dim, spec.act_dim, sample, explore, exploit,
                              _mean_square)


def _gumbel_softmax_continuous(spec: EnvSpec, config: HeadSettings) -> ActionDistribution:
    temperature = config.gumbel_temperature

    def sample(out, mask, key):
        del mask
        return (_gumbel_softmax(out, key, temperature),
                distrax.Categorical(logits=out).entropy())

    def exploit(out, mask):
        del mask
        a = jax.nn.softmax(out / temperature)
        return a, a

    return ActionDistribution(spec.act_dim, spec.act_dim, sample, _explore_by_sampling(sample),
                              exploit, _mean_square)


def _squashed_gaussian(spec: EnvSpec, config: HeadSettings) -> ActionDistribution:
    act_dim = spec.act_dim

    def policy(out):
        return squashed_gaussian(out, act_dim, config.log_std_min, config.log_std_max)

    def sample(out, mask, key):
        del mask
        a, log_prob = policy(out).sample_and_log_prob(seed=key)
        return a, -log_prob

    def exploit(out, mask):
        del mask
        a = _SQUASH.forward(out[..., :act_dim])
        return a, a

    def reg(out, mask):
        del mask
        return jnp.mean(out[..., :act_dim] ** 2)

    return ActionDistribution(2 * act_dim, act_dim, sample, _explore_by_sampling(sample),
                              exploit, reg)


def make_distribution(spec: EnvSpec, config: HeadSettings,
                      continuous_default: str = "sigmoid") -> ActionDistribution:
    """The action distribution for ``spec``'s action space.

    Args:
      spec: the environment spec (discrete or continuous actions).
      config: the head's settings (any object with :class:`HeadSettings`' fields, e.g. the
        learner's config).
      continuous_default: the continuous head used with ``config.continuous_policy="auto"``:
        ``"sigmoid"`` (deterministic actors: MADDPG, MATD3) or ``"gaussian"`` (squashed
        Gaussian: MASAC). Discrete actions are always a Gumbel-softmax categorical.
    """
    if not spec.continuous:
        return _discrete(spec, config)
    kind = config.continuous_policy
    if kind == "auto":
        kind = continuous_default
    return {"sigmoid": _deterministic, "gaussian": _squashed_gaussian,
            "gumbel_softmax": _gumbel_softmax_continuous}[kind](spec, config)
