"""A real learning check: PPO on 3-agent simple_spread beats the random policy after
20,000 env steps (one seed; about 10 s on 2 cores). Longer runs against the scripted policy
are ``python -m experiments.quality --only ppo a2c``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from jaxmarl_accel.algos.on_policy import OnPolicyConfig
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.envs.evaluate import evaluate_policy
from jaxmarl_accel.envs.policies import random_policy
from jaxmarl_accel.trainer.train import make_trainer


@pytest.mark.slow
def test_ppo_beats_random_on_spread():
    config = TrainConfig(env="simple_spread", env_kwargs=(("num_agents", 3),), algo="ppo",
                         num_envs=16, total_env_steps=20_000, eval_every=20_000,
                         eval_episodes=64,
                         learner=OnPolicyConfig(hidden_sizes=(32, 32),
                                                         rollout_length=25))
    trainer = make_trainer(config)
    _, metrics = jax.jit(trainer.train)(jax.random.PRNGKey(0))
    trained = float(jnp.mean(metrics.eval_return[-1]))
    random = evaluate_policy(trainer.env, trainer.env_params, random_policy(trainer.env),
                             jax.random.PRNGKey(1), 64)
    baseline = float(jnp.mean(random.agent_returns))  # about -27.5 per agent
    assert trained > baseline + 3.0, (trained, baseline)
