"""ValueConfig defaults and validation; the registry's value family (names, config types,
one-line refusals)."""

from __future__ import annotations

import pytest

from jaxmarl_accel.algos import ALGOS, ActorCriticConfig, OnPolicyConfig, make_algo
from jaxmarl_accel.algos.registry import algo_spec, config_type, family_of
from jaxmarl_accel.algos.value import ValueConfig
from tests.algos.value.helpers import SMALL, SMALL_MLP, value_spec


def test_defaults_are_the_reference_settings():
    c = ValueConfig()
    assert (c.agent, c.hidden, c.mixer_embed, c.hypernet_hidden) == ("rnn", 64, 32, 64)
    assert (c.lr, c.gamma, c.td_lambda, c.grad_clip) == (1e-3, 0.99, 0.6, 10.0)
    assert c.target_update_episodes == 200 and c.double_q
    assert (c.epsilon_start, c.epsilon_finish, c.epsilon_anneal_steps) == (1.0, 0.05, 100_000)
    assert (c.qstar_hidden, c.qstar_layers, c.wqmix_w, c.macpo_weighting) == (256, 3, 0.1, "auto")
    assert ValueConfig(wqmix_w=1).wqmix_w == 1  # the edge of (0, 1]


@pytest.mark.parametrize("kwargs", [
    {"agent": "transformer"}, {"hidden": 0}, {"mixer_embed": 2.5}, {"hypernet_hidden": -1},
    {"target_update_episodes": 0}, {"epsilon_anneal_steps": True}, {"lr": 0.0},
    {"grad_clip": -1.0}, {"gamma": 1.5}, {"td_lambda": -0.1}, {"epsilon_start": 2.0},
    {"epsilon_finish": -0.5}, {"double_q": 1}, {"wqmix_w": 0.0}, {"wqmix_w": 1.5},
    {"wqmix_w": -0.1}, {"wqmix_w": True}, {"macpo_weighting": "sampler"},
    {"agent_ids": 0}, {"agent_q_min": float("nan")}, {"agent_q_max": "2"},
    {"agent_q_min": 2.0, "agent_q_max": -5.0}, {"agent_ids": False, "agent": "mlp"},
    {"agent_q_max": 2.0, "agent": "mlp"},
])
def test_bad_fields_raise_one_line_value_errors_naming_them(kwargs):
    field = next((name for name in kwargs if name != "agent"), "agent")
    with pytest.raises(ValueError, match=field) as info:
        ValueConfig(**kwargs)
    assert "\n" not in str(info.value)


def test_epsilon_finish_may_not_exceed_start():
    with pytest.raises(ValueError, match="epsilon_finish"):
        ValueConfig(epsilon_start=0.1, epsilon_finish=0.5)


def test_families_and_config_types():
    assert {name: family_of(name) for name in ALGOS} == {
        "maddpg": "actor_critic", "matd3": "actor_critic", "masac": "actor_critic",
        "qmix": "value", "vdn": "value", "iql": "value", "owqmix": "value", "cwqmix": "value",
        "macpo": "value", "accmer": "value", "a2c": "on_policy", "ppo": "on_policy",
        "mappo": "on_policy",
        "pqn": "pqn", "pqn_vdn": "pqn"}
    assert config_type("matd3") is ActorCriticConfig and config_type("qmix") is ValueConfig
    with pytest.raises(ValueError, match="algo must be one of maddpg, .*; got 'dqn'"):
        family_of("dqn")


def test_make_algo_refuses_a_config_of_the_other_family():
    spec = value_spec()
    with pytest.raises(ValueError, match="config must be of type ValueConfig for algo 'qmix', got "
                                         "ActorCriticConfig"):
        make_algo("qmix", spec, ActorCriticConfig())
    with pytest.raises(ValueError,
                       match="config must be of type ActorCriticConfig for algo 'maddpg'"):
        make_algo("maddpg", spec, SMALL)


def test_the_replay_kind_follows_the_learner():
    def replay(name, config):
        return algo_spec(name).family.replay(config)

    assert replay("qmix", SMALL) == "episode"
    assert replay("qmix", SMALL_MLP) == "transition"
    assert replay("maddpg", ActorCriticConfig()) == "transition"
    assert replay("ppo", OnPolicyConfig()) == "rollout"
