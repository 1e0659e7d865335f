"""experiments.flags: flags generated from the config dataclasses, and the configs
built back from them."""

from __future__ import annotations

import argparse
import os
import re

import pytest

from jaxmarl_accel.algos import ActorCriticConfig
from jaxmarl_accel.cli import flags
from jaxmarl_accel.config import TrainConfig


def _parser(**kwargs) -> argparse.ArgumentParser:
    parser = flags.Parser()
    flags.add_dataclass_flags(parser, TrainConfig, skip=("env_kwargs", "sampler_kwargs"),
                                   choices=flags.train_choices(), **kwargs)
    flags.add_dataclass_flags(parser, ActorCriticConfig, choices=flags.train_choices())
    return parser


def test_every_scalar_field_is_a_documented_flag():
    help_text = _parser().format_help()
    for name in ("--buffer-capacity", "--batch-size", "--hidden-sizes", "--learners",
                 "--grad-clip", "--target-entropy"):
        assert name in help_text
    assert "transitions held by the replay buffer" in help_text


def test_defaults_parse_back_to_the_default_configs():
    args = _parser().parse_args([])
    assert flags.train_config_from_args(args) == TrainConfig()


def test_values_tuples_optionals_and_fixed_fields():
    args = _parser().parse_args(["--algo", "masac", "--hidden-sizes", "8", "4",
                                 "--grad-clip", "none", "--straight-through", "false",
                                 "--learners", "sequential"])
    config = flags.train_config_from_args(args, num_envs=5)
    assert config.algo == "masac" and config.num_envs == 5
    assert config.learner == ActorCriticConfig(hidden_sizes=(8, 4), grad_clip=None,
                                            straight_through=False, learners="sequential")


@pytest.mark.parametrize("values", [["32,16"], ["32", "16"], ["32,", "16"], ["3_2,16"]])
def test_list_flags_take_commas_as_item_separators(values):
    # a comma in a list flag separates items: "64,64" was once read as one layer of 6,464 units
    args = _parser().parse_args(["--hidden-sizes", *values])
    assert flags.train_config_from_args(args).learner.hidden_sizes == (32, 16)


@pytest.mark.parametrize("value", [",", "64,x", "1.5"])
def test_list_flags_refuse_what_is_not_integers(value, capsys):
    with pytest.raises(SystemExit):
        _parser().parse_args(["--hidden-sizes", value])
    assert "expected" in capsys.readouterr().err


def test_only_defaults_aliases_and_shown_defaults():
    parser = argparse.ArgumentParser()
    names = flags.add_dataclass_flags(
        parser, TrainConfig, only=("buffer_capacity", "batch_size"),
        defaults={"buffer_capacity": 500}, aliases={"buffer_capacity": ("--capacity",)},
        shown_defaults={"batch_size": "set later"})
    assert names == ["buffer_capacity", "batch_size"]
    assert parser.parse_args([]).buffer_capacity == 500
    assert parser.parse_args(["--capacity", "7"]).buffer_capacity == 7
    assert "(default: set later)" in parser.format_help()


def test_registry_choices_are_enforced(capsys):
    with pytest.raises(SystemExit):
        _parser().parse_args(["--sampler", "nope"])
    assert "invalid choice" in capsys.readouterr().err


@pytest.mark.parametrize("text, value", [("1000", 1000), ("1e6", 1_000_000),
                                         ("1_500_000", 1_500_000), ("2,000", 2000),
                                         ("-3", -3), ("2.5e1", 25)])
def test_integers_in_the_notations_of_the_readme(text, value):
    assert flags.parse_int(text) == value


@pytest.mark.parametrize("text", ["1.5", "1e-3", "inf", "ten", ""])
def test_non_integers_are_refused(text):
    with pytest.raises(argparse.ArgumentTypeError, match="expected an integer"):
        flags.parse_int(text)


def test_help_texts_are_plain_and_name_flags():
    assert flags.plain_text("one of :data:`SAMPLERS`, :class:`~a.b.Config` or "
                                 "``\"x\"``") == 'one of SAMPLERS, Config or "x"'
    help_text = _parser().format_help()
    assert "``" not in help_text and ":data:" not in help_text
    assert "max(--num-envs, --update-every)" in " ".join(help_text.split())
    assert not re.search(r"--\w[\w-]*-\n", help_text)  # no flag broken at a hyphen
    assert "--auto-alpha {true,false}" in help_text


def test_validation_messages_name_the_flags():
    fields = ("total_env_steps", "eval_every", "gamma", "prey", "alpha", "auto_alpha")
    assert flags.flag_message(
        "total_env_steps (60000) must be a multiple of eval_every (50000)", fields) == (
        "--total-env-steps (60000) must be a multiple of --eval-every (50000)")
    assert flags.flag_message("gamma must lie in [0, 1]", fields) == (
        "--gamma must lie in [0, 1]")
    assert flags.flag_message("alpha must be > 0 when auto_alpha is set", fields) == (
        "--alpha must be > 0 when --auto-alpha is set")
    prose = "prey='scripted' needs a scenario with prey"
    assert flags.flag_message(prose, fields) == prose
    assert flags.flag_message("prey: the alpha of prey", fields) == "--prey: the alpha of prey"


def test_usage_errors_are_one_line(capsys):
    parser = flags.Parser(prog="cmd")
    parser.add_argument("--n", type=flags.parse_int)
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args(["--n", "x"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        "cmd: error: argument --n: expected an integer such as 1000000 or 1e6, got 'x'; "
        "see --help\n")


def test_cpu_devices_set_xla_flags_once(monkeypatch):
    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    flags.split_cpu(1)
    assert flags.CPU_DEVICES_FLAG not in os.environ["XLA_FLAGS"]
    flags.split_cpu(2)
    assert os.environ["XLA_FLAGS"] == (
        "--xla_cpu_enable_fast_math=false --xla_force_host_platform_device_count=2")
    flags.split_cpu(2)  # the same count again: left as it is
    assert os.environ["XLA_FLAGS"].count(flags.CPU_DEVICES_FLAG) == 1
    with pytest.raises(ValueError, match="XLA_FLAGS sets"):
        flags.split_cpu(4)
    with pytest.raises(ValueError, match=">= 1"):
        flags.split_cpu(0)
