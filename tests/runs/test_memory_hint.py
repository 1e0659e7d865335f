"""What a refusal for memory tells to lower: the flags of the run's learner, and
use_full_observation=false where every agent observes every agent."""

from __future__ import annotations

import numpy as np
import pytest

from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.runs import memory


def test_a_run_that_does_not_fit_names_the_flags_that_apply():
    gridworld = TrainConfig(algo="a2c", env="tag_gridworld",
                            env_kwargs=(("num_runners", 996),))
    free, _ = memory.available_bytes()
    state = {"a": np.zeros(4, np.float32)}
    with pytest.raises(ValueError) as refused:
        memory.check_state_fits(state, seeds=1, temp_bytes=2 * free, config=gridworld)
    message = str(refused.value)
    assert "\n" not in message and "--rollout-length" in message
    assert "--buffer-capacity" not in message
    assert ("--env-kwargs use_full_observation=false: each of the 1,000 agents then observes "
            "6 values instead of 4,001") in message
    partial = TrainConfig(algo="a2c", env="tag_gridworld",
                          env_kwargs=(("num_runners", 996), ("use_full_observation", False)))
    assert "use_full_observation" not in memory.fit_hint(partial, 1)
    assert memory.fit_hint(None) == "lower --buffer-capacity, --seeds or --num-envs"
    small = TrainConfig(algo="a2c", env="tag_continuous", env_kwargs=(("num_runners", 2),))
    assert "use_full_observation" not in memory.fit_hint(small)  # already partial
