"""Paper 004's learning settings for the value learners (AccMER, MAC-PO, QMIX, ...): the
stag hunt with 8 agents, its miscapture punishment and the batch and replay sizes of its
Tables II and III, as ``TrainConfig`` fields (``--preset`` on the command line)."""

from __future__ import annotations

from typing import Any, NamedTuple

from jaxmarl_accel.algos.registry import default_sampler, family_members, family_of
from jaxmarl_accel.algos.value.config import ValueConfig
from jaxmarl_accel.checks import check_choice, choice_message


class Paper004Setting(NamedTuple):
    """One of paper 004's learning settings (Sec. V-A/B): the stag hunt's miscapture
    punishment, the batch and replay sizes in episodes (Table II / III) and AccMER's weight
    decay gamma_W (Sec. V-B)."""

    punishment: float
    batch_size: int
    replay: int
    decay: float


PAPER004: dict[str, Paper004Setting] = {
    "paper004-p0": Paper004Setting(0.0, 256, 100_000, 1.0),     # Table II, Fig. 3a
    "paper004-p1.5": Paper004Setting(-1.5, 128, 10_000, 0.8),   # Table III, Fig. 3b
}
PRESETS: tuple[str, ...] = tuple(PAPER004)
PRESET_REPLAY_CAP = 20_000
"""Largest replay a preset asks for, in episodes. An episode of the 8-agent stag hunt
takes 195 KiB of replay (201 rows of uint8 observations and state, available actions,
actions, reward and flags), so Table II's 100,000 would be 18.6 GiB per seed and the cap is
3.7 GiB per seed (Table III's 10,000 are 1.9 GiB, below it). A run of 1.05M env steps
collects 5,256 episodes (8 envs x 657 rounds of 200 steps), so below 4M env steps the cap
drops no episode; AccMER's window keeps the paper's ``floor(d / b)`` with the paper's d."""


def preset(name: str, algo: str, replay_cap: int = PRESET_REPLAY_CAP) -> dict[str, Any]:
    """The :class:`TrainConfig` fields of one of paper 004's settings (:data:`PRESETS`)
    for value learner ``algo``, over the family's defaults (pymarl2's):

    * ``"paper004-p0"``: Table II, Fig. 3a: the stag hunt with 8 agents and 8 stags and no
      miscapture punishment, batches of 256 episodes, a replay of 100,000 episodes capped
      at ``replay_cap`` (:data:`PRESET_REPLAY_CAP`), AccMER's decay gamma_W 1.0;
    * ``"paper004-p1.5"``: Table III, Fig. 3b: punishment -1.5, batches of 128, a replay of
      10,000, gamma_W 0.8.

    Both: epsilon annealed from 0.995 (Sec. V-A) to 0.05 over 100K env steps; target
    copies every 200 episodes, learning rate 1e-3 and TD(lambda) 0.6 are the defaults
    already; AccMER's reuse window is ``floor(d / b)`` with the paper's replay size d
    (Alg. 1; 390 and 78 updates). ``TrainConfig(**preset(name, algo), algo=algo)`` is the
    run.
    """
    check_choice("preset", name, PRESETS)
    if family_of(algo) != "value":
        raise ValueError(f"preset {name!r} sets paper 004's value learners on the stag hunt; "
                         + choice_message("algo", algo, family_members("value")))
    if replay_cap < 1:
        raise ValueError(f"replay_cap must be >= 1, got {replay_cap}")
    setting = PAPER004[name]
    fields: dict[str, Any] = {
        "env": "stag_hunt",
        "env_kwargs": (("miscapture_punishment", setting.punishment), ("num_agents", 8),
                       ("num_stags", 8)),
        "batch_size": setting.batch_size,
        "buffer_capacity": min(setting.replay, replay_cap),
        "learner": ValueConfig(epsilon_start=0.995),
    }
    own = default_sampler(algo)
    if own is not None and own[0] == "reuse":
        fields["sampler_kwargs"] = (("decay", setting.decay),
                                    ("reuse_window", setting.replay // setting.batch_size))
    return fields


__all__ = ["PAPER004", "PRESETS", "PRESET_REPLAY_CAP", "Paper004Setting", "preset"]
