"""The registry of replay kinds (:mod:`jaxmarl_accel.trainer.rounds.record`): the package's
rounds are records, the table is built from them, and user code adds one without an edit
inside the package (registered, or named by its family as ``package.module:ROUND``); every
way such a reference can fail is one line, status 2 on the command line."""

from __future__ import annotations

import dataclasses
import sys

import jax
import numpy as np
import pytest

import jaxmarl_accel as jm
from jaxmarl_accel.algos import algo_spec
from jaxmarl_accel.trainer import rounds
from jaxmarl_accel.trainer.rounds import ROUNDS, round_of, round_spec
from jaxmarl_accel.trainer.train import make_trainer
from tests.cli.test_run import exit_code, one_line
from tests.trainer.test_train import tiny_config

USER_ROUNDS = '''
import dataclasses

from jaxmarl_accel.algos import registry
from jaxmarl_accel.algos.actor_critic import specs
from jaxmarl_accel.trainer.rounds import TRANSITION

ROUND = dataclasses.replace(TRANSITION, name="every_update_every")


def learner(name, replay):
    family = dataclasses.replace(specs.FAMILY, name="ac_" + name, replay=lambda config: replay)
    return dataclasses.replace(registry.algo_spec("maddpg"), name=name, family=family)


SPEC = learner("maddpg_user_round", "user_rounds_mod:ROUND")
MISSING_ATTR = learner("maddpg_missing_attr", "user_rounds_mod:NOTHING")
NOT_A_ROUND = learner("maddpg_not_a_round", "user_rounds_mod:SPEC")
NO_MODULE = learner("maddpg_no_module", "nosuch_rounds_pkg:ROUND")
UNKNOWN_NAME = learner("maddpg_unknown", "sequence")
'''


@pytest.fixture
def user_rounds(tmp_path, monkeypatch):
    """A working folder with a user's module of a replay kind and learners naming it."""
    (tmp_path / "user_rounds_mod.py").write_text(USER_ROUNDS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("user_rounds_mod", None)


def test_the_table_of_rounds_is_built_from_the_records():
    assert list(ROUNDS) == ["transition", "episode", "rollout"]
    for name, record in ROUNDS.items():
        assert record.name == name and round_spec(name) is record
        assert record.check is not None and record.summary
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.name = "other"  # type: ignore[misc]
    assert round_of(tiny_config()) is rounds.TRANSITION
    assert round_of(jm.TrainConfig(algo="qmix", env="stag_hunt")) is rounds.EPISODE
    assert round_of(jm.TrainConfig(algo="ppo")) is rounds.ROLLOUT


def test_the_trainer_carries_its_plan():
    trainer = make_trainer(tiny_config())
    plan = trainer.plan
    assert plan.learner is algo_spec("maddpg")
    assert plan.round is rounds.TRANSITION
    assert plan.schedule.steps_per_round * plan.schedule.rounds_per_chunk == \
        trainer.steps_per_chunk
    assert plan.schedule.clock_stride == 5  # num_envs: every env acts every 5 clock steps


def test_register_round_refuses_in_one_line():
    for spec, message in ((object(), "register_round takes a RoundSpec, got object"),
                          (dataclasses.replace(rounds.EPISODE, name="transition"),
                           "round 'transition' is already registered")):
        with pytest.raises(ValueError, match=message) as error:
            jm.register_round(spec)
        assert "\n" not in str(error.value)
    assert jm.register_round(rounds.TRANSITION) is rounds.TRANSITION  # the same: allowed


def test_a_user_round_named_by_reference_trains_like_the_one_it_copies(user_rounds):
    import user_rounds_mod

    config = tiny_config(algo="user_rounds_mod:SPEC")
    trainer = make_trainer(config)
    assert trainer.plan.round is user_rounds_mod.ROUND
    assert "user_rounds_mod:ROUND" in rounds.registered_rounds()
    keys = jax.random.split(jax.random.PRNGKey(0), 2)
    _, mine = jax.jit(jax.vmap(trainer.train))(keys)
    _, theirs = jax.jit(jax.vmap(make_trainer(tiny_config()).train))(keys)
    np.testing.assert_array_equal(np.asarray(mine.eval_return), np.asarray(theirs.eval_return))


@pytest.mark.parametrize("algo, message", [
    ("MISSING_ATTR", "round 'user_rounds_mod:NOTHING': module 'user_rounds_mod' has no "
                     "attribute 'NOTHING'"),
    ("NOT_A_ROUND", "is an object of type AlgoSpec, not a jaxmarl_accel.RoundSpec"),
    ("NO_MODULE", "no module named 'nosuch_rounds_pkg'"),
    ("UNKNOWN_NAME", "round must be one of transition, episode, rollout"),
])
def test_a_round_that_does_not_load_is_one_line(user_rounds, capsys, algo, message):
    with pytest.raises(ValueError, match="asks for a replay kind the trainer cannot run") as error:
        tiny_config(algo=f"user_rounds_mod:{algo}")
    assert message in str(error.value) and "\n" not in str(error.value)
    assert exit_code(["--algo", f"user_rounds_mod:{algo}", "--quiet"]) == 2
    assert message in one_line(capsys.readouterr().err)
