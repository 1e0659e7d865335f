"""The one registry of learners: an algorithm's name is written here and nowhere else.

``make_algo(name, spec, config)`` builds it. Two families share the protocol
(:class:`~jaxmarl_accel.algos.base.Algo`):

* actor-critic (MADDPG, MATD3, MASAC; :class:`ActorCriticConfig`): a variant is a function
  ``(spec, config) -> Variant`` (:mod:`jaxmarl_accel.algos.actor_critic.variant`)
  assembled by the shared
  skeleton; adding an algorithm is one module with its ``variant`` and one line below;
* value-based (QMIX, VDN, IQL; :class:`ValueConfig`): a mixer is a function
  ``(spec, config) -> Mixer`` (:mod:`jaxmarl_accel.algos.value.mixers`) plugged into the
  value skeleton (:mod:`jaxmarl_accel.algos.value.learner`); OW-QMIX, CW-QMIX (Rashid et
  al. 2020), MAC-PO and AccMER (paper 004) are QMIX with weighted QMIX's ``Q*``
  (:mod:`jaxmarl_accel.algos.value.central`) and a weighting of QMIX's loss plugged in
  (:mod:`~jaxmarl_accel.algos.value.wqmix`, :mod:`~jaxmarl_accel.algos.value.macpo`);
  MAC-PO samples by its weights by default (``per``), AccMER only with the reuse sampler
  (:func:`sampler_defaults`);
* on-policy (A2C, PPO; :class:`OnPolicyConfig`): one policy-value network per team,
  learning from the rollout it just collected (paper 003's trainer,
  :mod:`jaxmarl_accel.algos.on_policy`).
"""

from __future__ import annotations

from collections.abc import Callable

import jax

from jaxmarl_accel.algos.actor_critic import local_critic, maddpg, masac, matd3
from jaxmarl_accel.algos.actor_critic.config import ActorCriticConfig
from jaxmarl_accel.algos.actor_critic.learner import build
from jaxmarl_accel.algos.actor_critic.variant import Variant
from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.algos.on_policy import OnPolicyConfig
from jaxmarl_accel.algos.on_policy import learner as on_policy_learner
from jaxmarl_accel.algos.on_policy.config import check_for as check_on_policy
from jaxmarl_accel.algos.value import learner as value_learner
from jaxmarl_accel.algos.value import macpo, mixers, wqmix
from jaxmarl_accel.algos.value.central import Weighting
from jaxmarl_accel.algos.value.config import ValueConfig
from jaxmarl_accel.buffers import PRIORITIZED
from jaxmarl_accel.checks import check_choice
from jaxmarl_accel.envs.base import EnvSpec

VARIANTS: dict[str, Callable[[EnvSpec, ActorCriticConfig], Variant]] = {
    "maddpg": maddpg.variant,
    "matd3": matd3.variant,
    "masac": masac.variant,
}
MIXERS: dict[str, Callable[[EnvSpec, ValueConfig], mixers.Mixer]] = {
    "qmix": mixers.qmix,
    "vdn": mixers.vdn,
    "iql": mixers.iql,
}
QSTAR_ALGOS: dict[str, Callable[[ValueConfig, str], Weighting]] = {
    "owqmix": lambda config, mode: wqmix.optimistic(config),
    "cwqmix": lambda config, mode: wqmix.centralized(config),
    "macpo": macpo.weighting,
    "accmer": macpo.weighting,
}
"""QMIX with weighted QMIX's ``Q*`` -> its weighting of QMIX's loss, ``(config, mode) ->
Weighting`` (``mode``: MAC-PO's concrete ``macpo_weighting``, :func:`weighting_mode`)."""
MACPO_AUTO: dict[str, str] = {"macpo": "priority", "accmer": "both"}
"""``macpo_weighting="auto"`` of the learners with MAC-PO's weights (paper 004): MAC-PO's
weights are its sampling priorities (with a sampler that draws by priority), AccMER's are
its loss weights (eq. 1) and its table's ranks (Alg. 1)."""
SAMPLER_DEFAULTS: dict[str, tuple[str, dict[str, object]]] = {
    "macpo": ("per", {"alpha": 1.0, "beta": 0.0, "beta_final": 0.0}),
    "accmer": ("reuse", {"reuse_ratio": 0.5, "loss_weights": "ones", "decay": 1.0}),
}
"""Learners' default sampler -> ``(sampler, its default keyword arguments)``: MAC-PO draws
episodes in proportion to their optimal weights (PER with exponent 1 and no importance
correction: the expected gradient of eq. 1, Fujimoto et al. 2020); AccMER (paper 004,
Alg. 1: reuse ratio 0.5, decay 1.0 as at punishment 0; the learner applies the MAC-PO
weights, so the sampler's own loss weights are ones)."""
SAMPLER_REQUIRED: dict[str, tuple[str, ...]] = {"accmer": ("reuse", "reuse_block")}
"""Learners defined by their sampler -> the samplers they accept (AccMER: Alg. 1's reuse,
or the reuse of the authors' code, :mod:`jaxmarl_accel.buffers.reuse_block`)."""
ON_POLICY: tuple[str, ...] = ("a2c", "ppo")
"""The on-policy learners (paper 003's trainer: A2C; and PPO)."""
ALGOS: tuple[str, ...] = (*VARIANTS, *MIXERS, *QSTAR_ALGOS, *ON_POLICY)
LearnerConfig = ActorCriticConfig | ValueConfig | OnPolicyConfig
FAMILIES: dict[str, tuple[type, tuple[str, ...]]] = {
    "actor_critic": (ActorCriticConfig, tuple(VARIANTS)),
    "value": (ValueConfig, (*MIXERS, *QSTAR_ALGOS)),
    "on_policy": (OnPolicyConfig, ON_POLICY),
}
"""Each learner family -> ``(its hyperparameter class, its learners)``. The class carries the
family's ``REPLAY_DEFAULTS`` (the run's replay and schedule defaults); the command line
makes one flag per field of each class."""
FAMILY_TITLES: dict[str, str] = {"actor_critic": "actor-critic", "value": "value-based",
                                 "on_policy": "on-policy"}
"""How help and errors call each learner family."""


def _check_name(name: str) -> None:
    check_choice("name", name, sorted(ALGOS))


def family_of(name: str) -> str:
    """The family of algorithm ``name``: ``"actor_critic"``, ``"value"`` or
    ``"on_policy"``."""
    _check_name(name)
    return next(family for family, (_, names) in FAMILIES.items() if name in names)


def config_type(name: str) -> type[ActorCriticConfig] | type[ValueConfig] | type[OnPolicyConfig]:
    """The hyperparameter class of algorithm ``name`` (:class:`ActorCriticConfig`,
    :class:`ValueConfig` or :class:`OnPolicyConfig`)."""
    return FAMILIES[family_of(name)][0]


def variant_of(name: str, spec: EnvSpec, config: ActorCriticConfig) -> Variant:
    """The :class:`Variant` (plug-ins) of actor-critic algorithm ``name``."""
    check_choice("name", name, sorted(VARIANTS))
    return VARIANTS[name](spec, config)


def replay_needed(config: LearnerConfig) -> str:
    """The replay kind a learner with ``config`` learns from: ``"episode"`` for recurrent
    value learners, ``"rollout"`` (none: its own rollouts) for on-policy learners,
    ``"transition"`` for actor-critic and feed-forward value learners."""
    if isinstance(config, OnPolicyConfig):
        return "rollout"
    return "episode" if isinstance(config, ValueConfig) and config.agent == "rnn" else "transition"


def weighting_mode(name: str, config: ValueConfig, sampler: str | None = None) -> str:
    """The concrete ``macpo_weighting`` of learner ``name`` (``"priority"``, ``"loss"`` or
    ``"both"``): ``config``'s, or for ``"auto"`` :data:`MACPO_AUTO`'s, except that MAC-PO
    with a ``sampler`` that ignores priorities weights its loss (``"loss"``)."""
    if config.macpo_weighting != "auto":
        return config.macpo_weighting
    if name == "macpo" and sampler is not None and sampler not in PRIORITIZED:
        return "loss"
    return MACPO_AUTO.get(name, "priority")


def check_weighting(name: str, config: ValueConfig, sampler: str) -> None:
    """Raise a one-line ValueError when MAC-PO's weights would act nowhere: learner
    ``name`` weights by priority only and ``sampler`` ignores priorities."""
    if name in MACPO_AUTO and weighting_mode(name, config, sampler) == "priority" and (
            sampler not in PRIORITIZED):
        raise ValueError(f"macpo_weighting 'priority': sampler {sampler!r} ignores priorities, "
                         "so MAC-PO's weights would act nowhere; use a sampler of "
                         f"{PRIORITIZED} or macpo_weighting 'loss'")


def _check_state(name: str, spec: EnvSpec, config: ValueConfig) -> None:
    """OW- and CW-QMIX mix over the env's global state (Rashid et al. 2020, Sec. 5)."""
    if name not in ("owqmix", "cwqmix"):
        return
    if spec.state_dim == 0:
        raise ValueError(f"env: algo {name!r} mixes Q_tot and Q* over the global state; "
                         f"{spec.name} has none (state_dim 0)")
    if config.agent != "rnn":
        raise ValueError(f"agent: algo {name!r} mixes over the global state, which transition "
                         "replay does not store; use agent 'rnn'")


def make_algo(name: str, spec: EnvSpec, config: LearnerConfig,
              observe_at: Callable[[jax.Array, jax.Array], jax.Array] | None = None,
              sampler: str | None = None) -> Algo:
    """The learner ``name`` for environment ``spec`` as a bundle of pure functions.

    Args:
      name: one of :data:`ALGOS` (``"maddpg"``, ``"matd3"``, ``"masac"``, ``"qmix"``,
        ``"vdn"``, ``"iql"``, ``"owqmix"``, ``"cwqmix"``, ``"macpo"``, ``"accmer"``,
        ``"a2c"``, ``"ppo"``).
      spec: static environment spec (agents, observation and action spaces).
      config: learner hyperparameters of the algorithm's family (:func:`config_type`).
      observe_at: neighbourhood critics only (``config.critic != "joint"``): the env's
        ``(physical [N, F], agents [M]) -> [M, obs_dim]`` (``Env.observe_physical_at`` at
        its params); ``update`` then takes batches of packed physical states and observes
        only the rows it reads (:mod:`~jaxmarl_accel.algos.actor_critic.local_critic`).
      sampler: the run's replay sampler, if known: resolves MAC-PO's
        ``macpo_weighting="auto"`` (:func:`weighting_mode`).

    Returns:
      :class:`~jaxmarl_accel.algos.base.Algo` with ``init``, ``act``, ``update``, its
      ``phases`` and its ``needs`` (see their docstrings for shapes).
    """
    _check_name(name)
    if not isinstance(spec, EnvSpec):
        raise ValueError(f"spec must be an EnvSpec, got {type(spec).__name__}")
    wanted = config_type(name)
    if not isinstance(config, wanted):
        raise ValueError(f"config must be of type {wanted.__name__} for algo {name!r}, got "
                         f"{type(config).__name__}")
    if observe_at is not None and (name not in VARIANTS or config.critic == "joint"):
        raise ValueError(f"observe_at: algo {name!r} with critic "
                         f"{getattr(config, 'critic', None)!r} learns from observations; only "
                         "the neighbourhood critics observe physical states themselves")
    if name in ON_POLICY:
        check_on_policy(name, config)
        return on_policy_learner.build(name, spec, config)
    if name in VARIANTS:
        if config.critic != "joint":
            return local_critic.build(spec, config, variant_of(name, spec, config), observe_at)
        return build(spec, config, variant_of(name, spec, config))
    if spec.continuous:
        raise ValueError(f"algo {name!r} needs discrete actions; {spec.name} was made with "
                         "continuous_actions=True")
    _check_state(name, spec, config)
    if name in MIXERS:
        return value_learner.build(spec, config, MIXERS[name](spec, config))
    weighting = QSTAR_ALGOS[name](config, weighting_mode(name, config, sampler))
    return value_learner.build(spec, config, MIXERS["qmix"](spec, config), weighting)


def sampler_defaults(name: str) -> tuple[str, dict[str, object]] | None:
    """``(sampler, default sampler keyword arguments)`` of a learner with a default sampler
    (``"macpo"``: PER by its weights; ``"accmer"``: the reuse sampler, the only one it
    takes), ``None`` for learners whose default is the run's."""
    _check_name(name)
    return SAMPLER_DEFAULTS.get(name)


def check_sampler(name: str, sampler: str, sampler_kwargs: dict[str, object]) -> None:
    """Raise a one-line ValueError when learner ``name`` cannot use ``sampler`` with
    ``sampler_kwargs`` (AccMER needs the reuse sampler with ``loss_weights='ones'``)."""
    wanted = sampler_defaults(name)
    if wanted is None or name not in SAMPLER_REQUIRED:
        return
    if sampler not in SAMPLER_REQUIRED[name]:
        others = " or ".join(repr(other) for other in SAMPLER_REQUIRED[name][1:])
        raise ValueError(f"sampler {sampler!r}: algo {name!r} draws AccMER's reused and fresh "
                         f"sets with the {wanted[0]!r} sampler, or {others}; use --sampler "
                         f"{wanted[0]}")
    if sampler_kwargs.get("loss_weights", "ones") != "ones":
        raise ValueError(f"sampler_kwargs loss_weights={sampler_kwargs['loss_weights']!r}: "
                         f"algo {name!r} weights its loss by MAC-PO's weights itself; use 'ones'")
