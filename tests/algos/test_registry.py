"""The one registry of learners: names, the plug-ins each name chooses, what each needs."""

from __future__ import annotations

import dataclasses

import pytest

import jaxmarl_accel.algos as algos
from jaxmarl_accel.algos import ActorCriticConfig, make_algo, registry
from jaxmarl_accel.algos.actor_critic import losses
from jaxmarl_accel.algos.actor_critic import variant as v
from jaxmarl_accel.algos.registry import AlgoSpec, variant_of
from tests.algos.helpers import SMALL, make_spec

# name: (num_critics, next_actors, actor_critics, alpha, continuous_default)
PLUG_INS = {
    "maddpg": (1, v.target_actors, v.first_critic, v.no_entropy, "sigmoid"),
    "matd3": (2, v.target_actors, v.first_critic, v.no_entropy, "sigmoid"),
    "masac": (2, v.online_actors, v.all_critics, v.entropy_coefficient, "gaussian"),
}


def test_names_are_registered_once_each_by_its_family():
    assert algos.ALGOS == ("maddpg", "matd3", "masac", "qmix", "vdn", "iql", "owqmix", "cwqmix",
                           "macpo", "accmer", "a2c", "ppo", "mappo", "pqn",
                           "pqn_vdn")
    assert registry.registered_algos()[:len(algos.ALGOS)] == algos.ALGOS
    records = [registry.algo_spec(name) for name in algos.ALGOS]
    assert all(isinstance(r, AlgoSpec) and r.name == n for r, n in zip(records, algos.ALGOS,
                                                                       strict=True))
    own = ("actor_critic", "value", "on_policy", "pqn")  # user code may have registered more
    assert {name: registry.family_members(name) for name in own} == {
        "actor_critic": ("maddpg", "matd3", "masac"),
        "value": ("qmix", "vdn", "iql", "owqmix", "cwqmix", "macpo", "accmer"),
        "on_policy": ("a2c", "ppo", "mappo"),
        "pqn": ("pqn", "pqn_vdn")}
    # each family registers its learners in its own package
    for record in records:
        assert record.build.__module__.startswith(
            f"jaxmarl_accel.algos.{record.family.name}."), record.name


def test_defaults_and_samplers_come_from_the_records():
    assert registry.default_sampler("macpo") == ("per", {"alpha": 1.0, "beta": 0.0,
                                                         "beta_final": 0.0})
    assert registry.default_sampler("accmer")[0] == "reuse"
    assert registry.default_sampler("qmix") is None
    assert registry.algo_spec("ppo").updates_per_round(algos.OnPolicyConfig()) == 16
    assert registry.algo_spec("a2c").updates_per_round is None


def test_a_clashing_name_or_a_wrong_record_is_one_line():
    clash = dataclasses.replace(registry.algo_spec("qmix"))
    with pytest.raises(ValueError, match="algo 'qmix' is already registered") as error:
        registry.register_algo(clash)
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match="register_algo takes an AlgoSpec, got dict"):
        registry.register_algo({"name": "x"})
    assert registry.register_algo(registry.algo_spec("qmix")) is registry.algo_spec("qmix")


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
    assert registry.algo_spec(name).family.replay(SMALL) == "transition"
    phases = registry.algo_phases(name, make_spec(2, continuous=False), SMALL)
    assert phases._fields == ("target_q", "critic_step", "actor_step", "target_update")
    assert algo._fields == ("init", "policy", "update", "action_dim", "initial_carry",
                            "observe", "on_policy")
    assert algo.initial_carry() == () and algo.observe is None


def test_make_algo_rejects_bad_arguments():
    spec = make_spec(2, continuous=False)
    with pytest.raises(ValueError, match="algo must be one of maddpg, .*; got 'dqn'"):
        make_algo("dqn", spec, ActorCriticConfig())
    with pytest.raises(ValueError, match="config"):
        make_algo("maddpg", spec, {"gamma": 0.9})
    with pytest.raises(ValueError, match="spec"):
        make_algo("maddpg", "simple_spread", ActorCriticConfig())
