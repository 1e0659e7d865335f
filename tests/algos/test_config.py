"""ActorCriticConfig defaults and validation."""

from __future__ import annotations

import pytest

from jaxmarl_accel.algos import ActorCriticConfig


def test_defaults_are_the_papers_settings():
    c = ActorCriticConfig()
    assert c.hidden_sizes == (64, 64)
    assert (c.actor_lr, c.critic_lr, c.gamma, c.tau) == (0.01, 0.01, 0.95, 0.01)
    assert (c.grad_clip, c.actor_reg, c.learners) == (0.5, 1e-3, "parallel")
    assert (c.policy_delay, c.target_noise, c.target_noise_clip) == (2, 0.2, 0.5)
    assert (c.alpha, c.auto_alpha) == (0.05, False)
    assert c.actor_step == "auto"


def test_auto_actor_step_is_linear_at_every_n():
    from jaxmarl_accel.algos.actor_critic.config import actor_step_form

    assert [actor_step_form("auto", n) for n in (1, 3, 4, 7, 8, 32)] == ["linear"] * 6
    assert actor_step_form("linear", 3) == "linear" and actor_step_form("full", 32) == "full"


@pytest.mark.parametrize("kwargs", [
    {"hidden_sizes": ()}, {"hidden_sizes": (64, 0)}, {"actor_lr": 0.0}, {"critic_lr": -1.0},
    {"gamma": 1.5}, {"tau": -0.1}, {"grad_clip": 0.0}, {"actor_reg": -1.0},
    {"learners": "async"}, {"policy_delay": 0}, {"target_noise": -0.2},
    {"alpha": -0.05}, {"auto_alpha": True, "alpha": 0.0}, {"gumbel_temperature": 0.0},
    {"log_std_min": 2.0, "log_std_max": -5.0}, {"continuous_policy": "beta"},
    {"actor_step": "fast"},
])
def test_bad_config_raises_value_error(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs)) if len(kwargs) == 1 else None):
        ActorCriticConfig(**kwargs)

