"""The shared one-line choice error, and that configs, buffers and envs use it."""

from __future__ import annotations

import pytest

from jaxmarl_accel.algos.value import ValueConfig
from jaxmarl_accel.buffers import make_buffer
from jaxmarl_accel.checks import check_choice, choice_message
from jaxmarl_accel.config import TrainConfig
from jaxmarl_accel.envs import make


def test_a_valid_choice_is_returned_and_a_bad_one_names_field_options_and_value():
    assert check_choice("sampler", "per", ("uniform", "per")) == "per"
    with pytest.raises(ValueError) as info:
        check_choice("sampler", "fifo", iter(("uniform", "per")))
    assert str(info.value) == "sampler must be one of uniform, per; got 'fifo'"
    assert choice_message("k", 3, (1, 2)) == "k must be one of 1, 2; got 3"


@pytest.mark.parametrize("build, message", [
    (lambda: TrainConfig(sampler="fifo"), "sampler must be one of uniform, "),
    (lambda: ValueConfig(agent="lstm"), "agent must be one of rnn, mlp; got 'lstm'"),
    (lambda: make_buffer("uniform", capacity=8, batch_size=2, layout="rows"),
     "layout must be one of transition_major, "),
    (lambda: make("simple_tag", predator_reward="mine"), "predator_reward must be one of "),
])
def test_configs_buffers_and_envs_share_the_format(build, message):
    with pytest.raises(ValueError) as info:
        build()
    assert str(info.value).startswith(message)
    assert "; got " in str(info.value) and "(" not in str(info.value).split("; got")[0]
