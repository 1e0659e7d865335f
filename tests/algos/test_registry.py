"""The one registry of learners: names, the plug-ins each name chooses, what each needs."""

from __future__ import annotations

import dataclasses

import pytest

import jaxmarl_accel.algos as algos
from jaxmarl_accel.algos import ActorCriticConfig, make_algo
from jaxmarl_accel.algos.actor_critic import losses
from jaxmarl_accel.algos.actor_critic import variant as v
from jaxmarl_accel.algos.base import REPLAY_KINDS, Needs
from jaxmarl_accel.algos.registry import (
    ALGOS,
    MIXERS,
    ON_POLICY,
    QSTAR_ALGOS,
    VARIANTS,
    variant_of,
)
from tests.algos.helpers import SMALL, make_spec

# name: (num_critics, next_actors, actor_critics, alpha, continuous_default)
PLUG_INS = {
    "maddpg": (1, v.target_actors, v.first_critic, v.no_entropy, "sigmoid"),
    "matd3": (2, v.target_actors, v.first_critic, v.no_entropy, "sigmoid"),
    "masac": (2, v.online_actors, v.all_critics, v.entropy_coefficient, "gaussian"),
}


def test_names_are_registered_once_and_exported():
    assert ALGOS == ("maddpg", "matd3", "masac", "qmix", "vdn", "iql", "owqmix", "cwqmix",
                     "macpo", "accmer", "a2c", "ppo")
    assert (*VARIANTS, *MIXERS, *QSTAR_ALGOS, *ON_POLICY) == ALGOS
    assert algos.ALGOS is ALGOS


@pytest.mark.parametrize("name", ["maddpg", "matd3", "masac"])
def test_each_algorithm_chooses_its_plug_ins(name):
    spec = make_spec(2, continuous=True)
    variant = variant_of(name, spec, SMALL)
    got = (variant.num_critics, variant.next_actors, variant.actor_critics, variant.alpha,
           variant.continuous_default)
    assert got == PLUG_INS[name]
    assert variant.policy_delay == (SMALL.policy_delay if name == "matd3" else 1)
    delayed = name == "matd3" and SMALL.policy_delay > 1  # only MATD3 plugs in a delay
    assert variant.actor_schedule.gate is (v.run_when_due if delayed else v.run_always)
    assert (variant.next_action is v.sampled_next_action) == (name != "matd3")
    assert variant.temperature is losses.fixed_temperature
    auto = variant_of(name, spec, dataclasses.replace(SMALL, auto_alpha=True))
    tuned = losses.sac_temperature_step if name == "masac" else losses.fixed_temperature
    assert auto.temperature is tuned


@pytest.mark.parametrize("name", ["maddpg", "matd3", "masac"])
def test_actor_critic_learners_declare_what_they_need(name):
    algo = make_algo(name, make_spec(2, continuous=False), SMALL)
    assert algo.needs == Needs(replay="transition")
    assert algo.needs.replay in REPLAY_KINDS
    assert algo.phases._fields == ("target_q", "critic_step", "actor_step", "target_update")
    assert algo._fields == ("init", "act", "update", "action_dim", "phases", "needs",
                            "initial_carry", "observe", "on_policy")
    assert algo.initial_carry is None and algo.observe is None


def test_make_algo_rejects_bad_arguments():
    spec = make_spec(2, continuous=False)
    with pytest.raises(ValueError, match="name"):
        make_algo("dqn", spec, ActorCriticConfig())
    with pytest.raises(ValueError, match="config"):
        make_algo("maddpg", spec, {"gamma": 0.9})
    with pytest.raises(ValueError, match="spec"):
        make_algo("maddpg", "simple_spread", ActorCriticConfig())
