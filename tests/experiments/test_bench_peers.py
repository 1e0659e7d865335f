"""bench train --peers: one-line errors without the peers, the PyTorch MADDPG driver's schedule
on a stand-in checkout, and tiny measurements of the peers where torch and BenchMARL are
installed (the ``peers`` extra). ``PEER_MADDPG_PATH``, when set to a checkout of
github.com/Git-123-Hub/maddpg-pettingzoo-pytorch, also runs that code itself."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import logging
import os
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from experiments.bench import peers
from experiments.bench import train as bench_train
from experiments.bench.__main__ import main
from jaxmarl_accel.algos.actor_critic.config import ActorCriticConfig
from jaxmarl_accel.cli import flags

TINY_OURS = ["--envs", "simple_spread", "--agents", "2", "--seeds", "1", "--learners",
             "parallel", "--num-envs", "2", "--update-every", "10", "--batch-size", "32",
             "--capacity", "256", "--chunk-steps", "40", "--chunks", "1"]
TINY_PEERS = peers.PeerSettings(batch_size=32, update_every=10, num_envs=2,
                                buffer_capacity=256, warmup_steps=20, timed_steps=40)

# A stand-in for the checkout's MADDPG.py: its interface, logging set-up and a call log.
STAND_IN = '''
import logging, os


class MADDPG:
    def __init__(self, dim_info, capacity, batch_size, actor_lr, critic_lr, res_dir):
        logger = logging.getLogger()
        logger.setLevel(logging.INFO)
        logger.addHandler(logging.FileHandler(os.path.join(res_dir, "maddpg.log"), mode="w"))
        self.dim_info, self.added = dim_info, 0
        self.log("init", capacity, batch_size, actor_lr, critic_lr)

    def log(self, *fields):
        with open(CALLS, "a") as handle:
            handle.write(" ".join(map(str, fields)) + "\\n")

    def select_action(self, obs):
        return {agent: 0 for agent in obs}

    def add(self, obs, action, reward, next_obs, done):
        assert all(type(a) is int for a in action.values())
        assert set(done) == set(obs) and all(isinstance(d, bool) for d in done.values())
        self.added += 1

    def learn(self, batch_size, gamma):
        self.log("learn", self.added, batch_size, gamma)

    def update_target(self, tau):
        self.log("target", tau)
'''


def stand_in_checkout(folder: Path) -> tuple[Path, Path]:
    """A folder with the stand-in ``MADDPG.py`` and the file it logs its calls to."""
    calls = folder / "calls.txt"
    folder.mkdir(exist_ok=True)
    (folder / "MADDPG.py").write_text(f"CALLS = {str(calls)!r}\n{STAND_IN}")
    return folder, calls


def exit_message(argv: list[str]) -> str:
    with pytest.raises(SystemExit) as info:
        main(argv)
    return str(info.value.code)


def test_maddpg_torch_without_a_checkout_is_a_one_line_error(tmp_path):
    message = exit_message(["train", "--peers", "maddpg_torch", *TINY_OURS])
    assert "\n" not in message
    assert "--peers maddpg_torch needs --peer-maddpg-path DIR" in message
    assert peers.MADDPG_TORCH_URL in message
    message = exit_message(["train", "--peers", "maddpg_torch", "--peer-maddpg-path",
                            str(tmp_path), *TINY_OURS])
    assert "\n" not in message and "has no MADDPG.py" in message


def test_peers_without_their_packages_are_one_line_errors(tmp_path, monkeypatch):
    checkout, _ = stand_in_checkout(tmp_path / "checkout")
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now fails
    monkeypatch.setitem(sys.modules, "benchmarl", None)
    for argv in (["--peers", "benchmarl"],
                 ["--peers", "maddpg_torch", "--peer-maddpg-path", str(checkout)]):
        message = exit_message(["train", *argv, *TINY_OURS])
        assert "\n" not in message
        assert "needs the 'peers' extra" in message and "pip install -e '.[peers]'" in message


def test_peers_refuse_settings_they_cannot_follow(tmp_path):
    checkout, _ = stand_in_checkout(tmp_path / "checkout")
    message = exit_message(["train", "--peers", "benchmarl", "--algo", "matd3", *TINY_OURS])
    assert "\n" not in message and "--algo" in message
    message = exit_message(["train", "--peers", "maddpg_torch", "--peer-maddpg-path",
                            str(checkout), "--hidden-sizes", "32", *TINY_OURS])
    assert "\n" not in message and "2x64" in message


def bench_train_args(argv: list[str]) -> argparse.Namespace:
    """``bench train``'s flags parsed as its command line parses them."""
    parser = argparse.ArgumentParser()
    bench_train.add_arguments(parser)
    return parser.parse_args(argv)


def test_peer_settings_left_out_take_our_defaults():
    # the documented command leaves --batch-size and --num-envs out: ours resolve them from
    # the family's defaults, and the peers must run at the same numbers
    args = bench_train_args(["--envs", "simple_spread", "--agents", "3"])
    ours = flags.train_config_from_args(args)
    settings = peers.settings_from_args(args)
    assert (settings.batch_size, settings.num_envs) == (
        ActorCriticConfig.REPLAY_DEFAULTS["batch_size"],
        ActorCriticConfig.REPLAY_DEFAULTS["num_envs"])
    assert (settings.batch_size, settings.update_every, settings.num_envs,
            settings.buffer_capacity) == (ours.batch_size, ours.update_every, ours.num_envs,
                                          ours.buffer_capacity)
    assert settings.hidden_sizes == ours.learner.hidden_sizes
    assert None not in [v for k, v in dataclasses.asdict(settings).items() if k != "maddpg_path"]
    # both drivers' schedules: the fill of one batch (1024) in rounds of 100 and of 100
    assert settings.rounds(settings.update_every) == peers.PeerRounds(11, 10, 100)
    assert settings.rounds(max(settings.num_envs, settings.update_every)).fill == 11
    given = peers.settings_from_args(bench_train_args(["--batch-size", "32", "--num-envs",
                                                       "2", "--update-every", "10"]))
    assert (given.batch_size, given.num_envs, given.update_every) == (32, 2, 10)


class StandInEnv:
    """mpe2's parallel-env interface on two agents: 25-step episodes, zero observations."""

    possible_agents = ("adversary_0", "agent_0")

    def __init__(self, episode_length: int):
        self.episode_length, self.agents, self.t = episode_length, [], 0

    def reset(self, seed=None):
        self.agents, self.t = list(self.possible_agents), 0
        return {a: np.zeros(4, np.float32) for a in self.agents}, {}

    def observation_space(self, agent):
        return types.SimpleNamespace(shape=(4,))

    def action_space(self, agent):
        return types.SimpleNamespace(n=5, sample=lambda: np.int64(1))

    def step(self, action):
        self.t += 1
        obs = {a: np.zeros(4, np.float32) for a in self.agents}
        over = self.t >= self.episode_length
        terminated, truncated = {a: False for a in obs}, {a: over for a in obs}
        if over:
            self.agents = []
        return obs, {a: 0.0 for a in obs}, terminated, truncated, {}

    def close(self):
        pass


def test_maddpg_torch_driver_runs_at_the_bench_defaults_without_torch(tmp_path, monkeypatch):
    # the documented command with torch absent: a stand-in torch, env and checkout run the
    # driver's schedule at the settings the bench resolves (batch 1024 left out)
    checkout, calls = stand_in_checkout(tmp_path / "checkout")
    stand_in_torch = types.SimpleNamespace(manual_seed=lambda seed: None, __version__="none",
                                           get_num_threads=lambda: 2,
                                           set_num_threads=lambda count: None)
    monkeypatch.setitem(sys.modules, "torch", stand_in_torch)
    path = Path(peers.__file__).with_name("peer_maddpg_torch.py")
    spec = importlib.util.spec_from_file_location("peer_maddpg_torch_stand_in", path)
    driver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(driver)
    monkeypatch.setattr(driver, "make_env", lambda env, agents, length: StandInEnv(length))
    settings = peers.settings_from_args(bench_train_args(
        ["--peer-maddpg-path", str(checkout), "--peer-steps", "150",
         "--peer-warmup-steps", "100"]))
    result = driver.time_peer("simple_tag", 1, settings)
    assert result.timed_steps == 200 and result.updates == 2  # whole rounds of 100 steps
    lines = [line.split() for line in calls.read_text().splitlines()]
    assert lines[0] == ["init", "100000", "1024", "0.01", "0.01"]
    # random actions fill 1,100 steps (one batch in whole rounds), then 100 + 200 learn
    assert [int(f[1]) for f in lines if f[0] == "learn"] == [1200, 1300, 1400]


def test_maddpg_torch_driver_follows_the_update_schedule(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("mpe2")
    from experiments.bench import peer_maddpg_torch

    checkout, calls = stand_in_checkout(tmp_path / "checkout")
    root = logging.getLogger()
    handlers, level, path = list(root.handlers), root.level, list(sys.path)
    settings = peers.PeerSettings(batch_size=32, update_every=10, warmup_steps=20,
                                  timed_steps=35, maddpg_path=str(checkout))
    result = peer_maddpg_torch.time_peer("simple_tag", 2, settings)
    assert result.timed_steps == 40 and result.updates == 4  # 35 rounded up to whole rounds
    assert result.env_steps_per_s > 0 and result.details["agents_total"] == 3
    lines = [line.split() for line in calls.read_text().splitlines()]
    assert lines[0] == ["init", "100000", "32", "0.01", "0.01"]
    learns = [int(fields[1]) for fields in lines if fields[0] == "learn"]
    # random actions fill 40 steps (one batch, whole rounds), then 20 + 40 steps learn
    assert learns == [50, 60, 70, 80, 90, 100]
    assert {tuple(fields) for fields in lines if fields[0] == "target"} == {("target", "0.01")}
    assert root.handlers == handlers and root.level == level and sys.path == path
    assert "MADDPG" not in sys.modules


@pytest.mark.skipif(not os.environ.get("PEER_MADDPG_PATH"),
                    reason="PEER_MADDPG_PATH names no checkout of the PyTorch MADDPG")
def test_maddpg_torch_peer_runs_its_checkout():
    pytest.importorskip("torch")
    from experiments.bench import peer_maddpg_torch

    settings = peers.PeerSettings(batch_size=32, update_every=10, warmup_steps=20,
                                  timed_steps=40, maddpg_path=os.environ["PEER_MADDPG_PATH"])
    for env in ("simple_spread", "simple_tag"):
        result = peer_maddpg_torch.time_peer(env, 2, settings)
        assert result.updates == 4 and result.env_steps_per_s > 0


def test_benchmarl_peer_times_whole_iterations():
    pytest.importorskip("benchmarl")
    from experiments.bench import peer_benchmarl

    result = peer_benchmarl.time_peer("simple_spread", 2, TINY_PEERS)
    assert result.timed_steps == 40 and result.updates == 4
    assert result.env_steps_per_s > 0 and result.setup_s > 0 and result.warmup_s > 0
    assert result.details["num_envs"] == 2 and result.details["actions"] == "continuous"


def test_train_bench_records_peer_throughput_and_ratio(tmp_path, capsys):
    pytest.importorskip("benchmarl")
    checkout, _ = stand_in_checkout(tmp_path / "checkout")
    path = tmp_path / "train.json"
    main(["train", "--json", str(path), *TINY_OURS, "--peers", "maddpg_torch", "benchmarl",
          "--peer-maddpg-path", str(checkout), "--peer-steps", "40", "--peer-warmup-steps",
          "20"])
    (record,) = json.loads(path.read_text())
    assert set(record["peers"]) == {"maddpg_torch", "benchmarl"}
    for entry in record["peers"].values():
        assert entry["peer_timed_steps"] == 40 and entry["peer_updates"] == 4
        assert entry["ratio"] == pytest.approx(
            record["env_steps_per_s_per_seed"] / entry["peer_env_steps_per_s"])
        assert entry["peer_torch_threads"] == 1
    assert "ratios from this run" in capsys.readouterr().out
