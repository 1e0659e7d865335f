"""bench train --peers: one-line errors without the peers, the PyTorch MADDPG driver's schedule
on a stand-in checkout, and tiny measurements of the peers where torch and BenchMARL are
installed (the ``peers`` extra). ``PEER_MADDPG_PATH``, when set to a checkout of
github.com/Git-123-Hub/maddpg-pettingzoo-pytorch, also runs that code itself."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

import pytest

from experiments.bench import peers
from experiments.bench.__main__ import main

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
