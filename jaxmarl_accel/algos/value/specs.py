"""The value-based family's learners, registered: QMIX (Rashid et al. 2018), VDN (Sunehag et
al. 2018), IQL, OW-/CW-QMIX (Rashid et al. 2020), MAC-PO and AccMER (paper 004), one
:class:`~jaxmarl_accel.algos.registry.AlgoSpec` each.

A mixer is a function ``(spec, config) -> Mixer`` (:mod:`~.mixers`) plugged into the value
skeleton (:mod:`~.learner`); the learners with weighted QMIX's ``Q*`` (:mod:`~.central`) are
QMIX plus a weighting of its loss (:mod:`~.wqmix`, :mod:`~.macpo`). MAC-PO samples by its
weights by default (PER), AccMER only with the reuse samplers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from jaxmarl_accel.algos.registry import AlgoSpec, BuildContext, Family, register_algo
from jaxmarl_accel.algos.value import learner as value_learner
from jaxmarl_accel.algos.value import macpo, mixers, targets, wqmix
from jaxmarl_accel.algos.value.central import Weighting
from jaxmarl_accel.algos.value.config import (
    AGENTS,
    MACPO_WEIGHTINGS,
    NORMALIZATIONS,
    ValueConfig,
    replay_kind,
)
from jaxmarl_accel.buffers import is_prioritized, prioritized_samplers
from jaxmarl_accel.envs.base import EnvSpec

FAMILY = Family(
    name="value", title="value-based", config_type=ValueConfig, replay=replay_kind,
    replay_defaults=ValueConfig.REPLAY_DEFAULTS,
    help="jaxmarl_accel.algos.value.ValueConfig; --gamma and --grad-clip above apply to "
         "them too",
    choices={"agent": AGENTS, "macpo_normalization": NORMALIZATIONS,
             "macpo_weighting": MACPO_WEIGHTINGS},
    sweepable=("lr", "gamma", "reward_scale", "td_lambda", "grad_clip", "epsilon_start",
               "epsilon_finish", "wqmix_w", "macpo_floor"),
    exploration=lambda config, clocks: {"epsilon": targets.epsilon(config, clocks)})


def weighting_mode(config: ValueConfig, auto: str, sampler: str | None = None) -> str:
    """The concrete ``macpo_weighting`` (``"priority"``, ``"loss"`` or ``"both"``):
    ``config``'s, or for ``"auto"`` the learner's own ``auto`` (MAC-PO: its weights are its
    sampling priorities; AccMER: its loss weights and its table's ranks, eq. 1 and Alg. 1),
    except that priorities with a ``sampler`` that ignores them weight the loss instead."""
    if config.macpo_weighting != "auto":
        return config.macpo_weighting
    if auto == "priority" and sampler is not None and not is_prioritized(sampler):
        return "loss"
    return auto


def _check_env(name: str, spec: EnvSpec, config: ValueConfig, needs_state: bool) -> None:
    """Value learners pick discrete actions; OW- and CW-QMIX mix over the env's global
    state (Rashid et al. 2020, Sec. 5), which transition replay does not store."""
    if spec.continuous:
        raise ValueError(f"algo {name!r} needs discrete actions; {spec.name} was made with "
                         "continuous_actions=True")
    if not needs_state:
        return
    if spec.state_dim == 0:
        raise ValueError(f"env: algo {name!r} mixes Q_tot and Q* over the global state; "
                         f"{spec.name} has none (state_dim 0)")
    if config.agent != "rnn":
        raise ValueError(f"agent: algo {name!r} mixes over the global state, which transition "
                         "replay does not store; use agent 'rnn'")


def builder(name: str, mixer: Callable[[EnvSpec, ValueConfig], mixers.Mixer],
            weighting: Callable[[ValueConfig, str], Weighting] | None = None,
            auto: str = "priority", needs_state: bool = False,
            assemble: Callable[..., Any] = value_learner.build
            ) -> Callable[[EnvSpec, ValueConfig, BuildContext], Any]:
    """The ``build`` of value learner ``name``: ``mixer`` in the value skeleton, with
    ``weighting(config, mode)`` of QMIX's loss by weighted QMIX's ``Q*`` when given (``mode``
    from :func:`weighting_mode` with the learner's ``auto``). ``assemble``: what is made of
    them, the learner (:func:`~.learner.build`) or its update's phases
    (:func:`~.learner.phases`, the record's ``phases`` hook)."""

    def build(spec: EnvSpec, config: ValueConfig, context: BuildContext) -> Any:
        if context.observe_at is not None:
            raise ValueError(f"observe_at: algo {name!r} learns from observations; only the "
                             "neighbourhood critics observe physical states themselves")
        _check_env(name, spec, config, needs_state)
        if weighting is None:
            return assemble(spec, config, mixer(spec, config))
        return assemble(spec, config, mixer(spec, config),
                        weighting(config, weighting_mode(config, auto, context.sampler)))

    return build


def weights_checker(name: str, auto: str, sampler_required: bool = False
                    ) -> Callable[[Any], None]:
    """The run check of a learner with MAC-PO's weights: they must act somewhere (priorities
    need a sampler that draws by them); AccMER (``sampler_required``) draws with the reuse
    samplers and weights its loss itself."""

    def check(run: Any) -> None:
        if sampler_required:
            if run.sampler not in ("reuse", "reuse_block"):
                raise ValueError(f"sampler {run.sampler!r}: algo {name!r} draws AccMER's reused "
                                 "and fresh sets with the 'reuse' sampler, or 'reuse_block'; "
                                 "use --sampler reuse")
            loss_weights = dict(run.sampler_kwargs).get("loss_weights", "ones")
            if loss_weights != "ones":
                raise ValueError(f"sampler_kwargs loss_weights={loss_weights!r}: algo {name!r} "
                                 "weights its loss by MAC-PO's weights itself; use 'ones'")
        if (weighting_mode(run.learner, auto, run.sampler) == "priority"
                and not is_prioritized(run.sampler)):
            raise ValueError(f"macpo_weighting 'priority': sampler {run.sampler!r} ignores "
                             "priorities, so MAC-PO's weights would act nowhere; use a sampler "
                             f"of {prioritized_samplers()} or macpo_weighting 'loss'")

    return check


def _spec(name: str, mixer: Callable[..., mixers.Mixer], summary: str, **extra: Any
          ) -> AlgoSpec:
    parts = (name, mixer, extra.pop("weighting", None), extra.pop("auto", "priority"),
             extra.pop("needs_state", False))
    return AlgoSpec(name=name, family=FAMILY, build=builder(*parts), summary=summary,
                    variant=mixer, phases=builder(*parts, assemble=value_learner.phases),
                    **extra)


QMIX = register_algo(_spec("qmix", mixers.qmix,
                           "QMIX (monotonic hypernetwork mixer of the global state)"))
VDN = register_algo(_spec("vdn", mixers.vdn, "VDN (sum mixer)"))
IQL = register_algo(_spec("iql", mixers.iql, "IQL (no mixer)"))
OWQMIX = register_algo(_spec(
    "owqmix", mixers.qmix, "OW-QMIX: QMIX with weighted QMIX's Q*, optimistic weights",
    weighting=lambda config, mode: wqmix.optimistic(config), needs_state=True))
CWQMIX = register_algo(_spec(
    "cwqmix", mixers.qmix, "CW-QMIX: QMIX with weighted QMIX's Q*, central weights",
    weighting=lambda config, mode: wqmix.centralized(config), needs_state=True))
MACPO = register_algo(_spec(
    "macpo", mixers.qmix, "MAC-PO: QMIX with Lemma 1's optimal weights as episode priorities",
    weighting=macpo.weighting, auto="priority",
    # PER with exponent 1 and no importance correction: episodes drawn in proportion to
    # their optimal weights, the expected gradient of eq. 1 (Fujimoto et al. 2020)
    sampler="per", sampler_kwargs={"alpha": 1.0, "beta": 0.0, "beta_final": 0.0},
    check=weights_checker("macpo", "priority")))
ACCMER = register_algo(_spec(
    "accmer", mixers.qmix, "AccMER: MAC-PO with the reuse sampler",
    weighting=macpo.weighting, auto="both",
    # Alg. 1: reuse ratio 0.5, decay 1.0 as at punishment 0; the learner applies MAC-PO's
    # weights, so the sampler's own loss weights are ones
    sampler="reuse", sampler_kwargs={"reuse_ratio": 0.5, "loss_weights": "ones", "decay": 1.0},
    samplers=("reuse", "reuse_block"), check=weights_checker("accmer", "both", True)))

__all__ = ["ACCMER", "CWQMIX", "FAMILY", "IQL", "MACPO", "OWQMIX", "QMIX", "VDN", "builder",
           "weighting_mode", "weights_checker"]
