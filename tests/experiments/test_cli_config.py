"""experiments.cli_config: flags generated from the config dataclasses, and the configs
built back from them."""

from __future__ import annotations

import argparse

import pytest

from experiments import cli_config
from jaxmarl_accel.algos import AlgoConfig
from jaxmarl_accel.config import TrainConfig


def _parser(**kwargs) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    cli_config.add_dataclass_flags(parser, TrainConfig, skip=("env_kwargs", "sampler_kwargs"),
                                   choices=cli_config.train_choices(), **kwargs)
    cli_config.add_dataclass_flags(parser, AlgoConfig, choices=cli_config.train_choices())
    return parser


def test_every_scalar_field_is_a_documented_flag():
    help_text = _parser().format_help()
    for name in ("--buffer-capacity", "--batch-size", "--hidden-sizes", "--learners",
                 "--grad-clip", "--target-entropy"):
        assert name in help_text
    assert "transitions held by the replay buffer" in help_text


def test_defaults_parse_back_to_the_default_configs():
    args = _parser().parse_args([])
    assert cli_config.train_config_from_args(args) == TrainConfig()


def test_values_tuples_optionals_and_fixed_fields():
    args = _parser().parse_args(["--algo", "masac", "--hidden-sizes", "8", "4",
                                 "--grad-clip", "none", "--straight-through", "false",
                                 "--learners", "sequential"])
    config = cli_config.train_config_from_args(args, num_envs=5)
    assert config.algo == "masac" and config.num_envs == 5
    assert config.algo_config == AlgoConfig(hidden_sizes=(8, 4), grad_clip=None,
                                            straight_through=False, learners="sequential")


def test_only_defaults_aliases_and_shown_defaults():
    parser = argparse.ArgumentParser()
    names = cli_config.add_dataclass_flags(
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
