"""Peer MADDPG implementations timed beside ours: ``python -m experiments.bench train --peers``.

* ``maddpg_torch``: the PyTorch MADDPG of https://github.com/Git-123-Hub/maddpg-pettingzoo-pytorch
  (one env, a replay buffer and a Python-level update per agent), driven through its own
  ``MADDPG`` class from a checkout given by ``--peer-maddpg-path`` on mpe2's
  ``simple_spread_v3`` and ``simple_tag_v3`` (see :mod:`experiments.bench.peer_maddpg_torch`).
* ``benchmarl``: BenchMARL's MADDPG on VMAS's ``simple_spread``, per-agent networks, through
  its ``Experiment`` (see :mod:`experiments.bench.peer_benchmarl`); needs the ``peers`` extra.

A peer runs once per scenario and agent count of the bench's matrix, in the same process
as ours, at our N, batch size, replay capacity, update schedule (one update of all agents per
``update_every`` env steps), hidden widths and learner settings. Its setup (building env,
networks and buffers; imports excluded), its warm-up (random actions until the replay holds a
batch, as ours starts learning at ``learning_starts`` = batch size, then
``--peer-warmup-steps`` env steps with learning) and its timed window (``--peer-steps`` env
steps with learning) are reported apart. ``ratio`` is our env steps/s per seed over the
peer's (one seed).

Peers run with ``--peer-torch-threads`` torch threads (default 1). torch's own default, one
thread per core, made the PyTorch MADDPG 10x slower on a loaded 2-core machine (50-60
against 600-900 env steps/s on spread with 3 agents): operations on 64-wide layers are too
small to split between threads, and a split waits whenever one of its threads is descheduled.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from jaxmarl_accel.algos.actor_critic.config import ActorCriticConfig
from jaxmarl_accel.cli import flags
from jaxmarl_accel.config import TrainConfig

MADDPG_TORCH_URL = "https://github.com/Git-123-Hub/maddpg-pettingzoo-pytorch"
PEERS_EXTRA = "pip install -e '.[peers]'"


class PeerRounds(NamedTuple):
    """Rounds (of one update of all agents each) in the three phases of a peer's run."""

    fill: int
    warmup: int
    timed: int


@dataclasses.dataclass(frozen=True)
class PeerSettings:
    """What every peer runs at (ours, from the bench's flags).

    Attributes:
      batch_size: transitions per update of one agent.
      update_every: env steps between two updates of all agents.
      num_envs: envs stepped at once where the peer has vectorized envs (BenchMARL).
      buffer_capacity: replay capacity in transitions.
      hidden_sizes: widths of the hidden ReLU layers of actors and critics.
      actor_lr, critic_lr, gamma, tau, grad_clip: learner settings.
      episode_length: env steps per episode.
      warmup_steps: env steps with learning after the replay fill, before timing.
      timed_steps: env steps timed (rounded up to whole update rounds).
      maddpg_path: checkout of the PyTorch MADDPG, or None.
      torch_threads: torch's intra-op threads while a peer runs.
      seed: seed of the peers' torch, NumPy and env generators.
    """

    batch_size: int = ActorCriticConfig.REPLAY_DEFAULTS["batch_size"]
    update_every: int = TrainConfig.update_every
    num_envs: int = ActorCriticConfig.REPLAY_DEFAULTS["num_envs"]
    buffer_capacity: int = 100_000  # bench train's default replay
    hidden_sizes: tuple[int, ...] = ActorCriticConfig.hidden_sizes
    actor_lr: float = ActorCriticConfig.actor_lr
    critic_lr: float = ActorCriticConfig.critic_lr
    gamma: float = ActorCriticConfig.gamma
    tau: float = ActorCriticConfig.tau
    grad_clip: float | None = ActorCriticConfig.grad_clip
    episode_length: int = 25
    warmup_steps: int = 1000
    timed_steps: int = 10_000
    maddpg_path: str | None = None
    torch_threads: int = 1
    seed: int = 0

    def rounds(self, per_round: int) -> PeerRounds:
        """The peer's schedule in rounds of ``per_round`` env steps: the replay fill (one
        batch), the warm-up and the timed window, each rounded up to whole rounds."""
        whole = lambda steps: math.ceil(steps / per_round)
        return PeerRounds(whole(self.batch_size), whole(self.warmup_steps),
                          whole(self.timed_steps))


class PeerResult(NamedTuple):
    """One peer's measurement on one scenario and agent count.

    Attributes:
      env_steps_per_s: env steps (all agents stepping once) per second in the timed window,
        including learning.
      setup_s: building env, networks and buffers (imports excluded).
      warmup_s: replay fill and warm-up steps with learning.
      timed_s: the timed window.
      timed_steps: env steps in the timed window.
      updates: updates of all agents in the timed window.
      details: what the peer ran on (env, actions, threads, versions, the load average
        after it ran).
    """

    env_steps_per_s: float
    setup_s: float
    warmup_s: float
    timed_s: float
    timed_steps: int
    updates: int
    details: dict[str, Any]


class PeerUnavailable(RuntimeError):
    """A requested peer cannot run here; the message is one line saying what it needs."""


class Peer(NamedTuple):
    """A peer: the scenarios it runs, its module (imported when it runs) and what it needs."""

    envs: tuple[str, ...]
    module: str
    modules_needed: tuple[str, ...]


PEERS: dict[str, Peer] = {
    "maddpg_torch": Peer(("simple_spread", "simple_tag"), "experiments.bench.peer_maddpg_torch",
                         ("torch", "mpe2")),
    "benchmarl": Peer(("simple_spread",), "experiments.bench.peer_benchmarl",
                      ("torch", "vmas", "benchmarl")),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The peer flags of ``bench train``."""
    group = parser.add_argument_group(
        "peers (other MADDPG implementations timed in the same run at the same settings)")
    group.add_argument("--peers", nargs="+", default=[], choices=sorted(PEERS),
                       help="maddpg_torch: the PyTorch MADDPG of "
                            f"{MADDPG_TORCH_URL} on mpe2 (spread and tag), needs "
                            "--peer-maddpg-path and torch; benchmarl: BenchMARL's MADDPG on "
                            f"VMAS simple_spread, needs the 'peers' extra ({PEERS_EXTRA}) "
                            "(default: none)")
    group.add_argument("--peer-maddpg-path", default=None, metavar="DIR",
                       help=f"a checkout of {MADDPG_TORCH_URL} (git clone it anywhere outside "
                            "this repository); its MADDPG class is imported from DIR")
    group.add_argument("--peer-steps", type=int, default=10_000,
                       help="env steps timed per peer measurement, after the warm-up "
                            "(default: 10000)")
    group.add_argument("--peer-warmup-steps", type=int, default=1000,
                       help="env steps with learning after the replay holds a batch, before "
                            "a peer is timed (default: 1000)")
    group.add_argument("--peer-torch-threads", type=int, default=1,
                       help="torch intra-op threads while a peer runs (default: 1, the "
                            "peers' fastest on 2 cores; torch's own default is one per core)")


def settings_from_args(args: argparse.Namespace) -> PeerSettings:
    """The peers' settings from the bench's flags, flags left out resolved to the family's
    defaults exactly as ours are (through ``TrainConfig``); raises :class:`PeerUnavailable`
    when a requested peer cannot run here or cannot follow these settings."""
    if args.peers and args.algo != "maddpg":
        raise PeerUnavailable(f"--peers times MADDPG implementations; --algo is {args.algo!r}, "
                              "leave it at maddpg")
    config = flags.train_config_from_args(args)
    learner = ActorCriticConfig(**flags.dataclass_values(ActorCriticConfig, args))
    settings = PeerSettings(
        batch_size=config.batch_size, update_every=config.update_every,
        num_envs=config.num_envs, buffer_capacity=config.buffer_capacity,
        hidden_sizes=tuple(learner.hidden_sizes), actor_lr=learner.actor_lr,
        critic_lr=learner.critic_lr, gamma=learner.gamma, tau=learner.tau,
        grad_clip=learner.grad_clip, warmup_steps=args.peer_warmup_steps,
        timed_steps=args.peer_steps, maddpg_path=args.peer_maddpg_path,
        torch_threads=args.peer_torch_threads)
    if args.peers:
        check(args.peers, settings)
    return settings


def check(names: list[str], settings: PeerSettings) -> None:
    """Raises :class:`PeerUnavailable` (one line) unless every peer in ``names`` can run
    at ``settings``."""
    if settings.timed_steps < 1 or settings.warmup_steps < 0 or settings.torch_threads < 1:
        raise PeerUnavailable("--peer-steps and --peer-torch-threads must be >= 1 and "
                              "--peer-warmup-steps >= 0")
    for name in names:
        if name == "maddpg_torch":
            _check_maddpg_torch(settings)
        missing = [m for m in PEERS[name].modules_needed if not _importable(m)]
        if missing:
            raise PeerUnavailable(f"--peers {name} needs the 'peers' extra ({', '.join(missing)} "
                                  f"not importable): {PEERS_EXTRA}")


def _check_maddpg_torch(settings: PeerSettings) -> None:
    path = settings.maddpg_path
    if path is None:
        raise PeerUnavailable(f"--peers maddpg_torch needs --peer-maddpg-path DIR, a checkout "
                              f"of {MADDPG_TORCH_URL} (git clone {MADDPG_TORCH_URL})")
    if not (Path(path) / "MADDPG.py").is_file():
        raise PeerUnavailable(f"--peer-maddpg-path {path} has no MADDPG.py: it must be a "
                              f"checkout of {MADDPG_TORCH_URL}")
    if settings.hidden_sizes != (64, 64):
        raise PeerUnavailable("--peers maddpg_torch has fixed 2x64 hidden layers; leave "
                              f"--hidden-sizes at 64 64 (got {settings.hidden_sizes})")


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


@contextlib.contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """torch's intra-op thread count set to ``count`` for the block, then restored."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def measure(names: list[str], env: str, agents: int,
            settings: PeerSettings) -> dict[str, PeerResult]:
    """Times each peer in ``names`` that runs ``env`` at ``agents`` agents (predators for
    simple_tag), printing one line per peer."""
    results = {}
    for name in names:
        peer = PEERS[name]
        if env not in peer.envs:
            print(f"  peer {name}: {env} not compared (runs {', '.join(peer.envs)})", flush=True)
            continue
        result = importlib.import_module(peer.module).time_peer(env, agents, settings)
        result = result._replace(details={**result.details,
                                          "load_average": list(os.getloadavg())})
        results[name] = result
        print(f"  peer {name:<13}{result.env_steps_per_s:>11,.0f} env steps/s over "
              f"{result.timed_steps:,} steps ({result.updates} updates); setup "
              f"{result.setup_s:.1f} s, warm-up {result.warmup_s:.1f} s", flush=True)
    return results


def compare(record: dict[str, Any], results: dict[str, PeerResult]) -> dict[str, dict[str, Any]]:
    """The record's ``peers`` entry: per peer its measurement and ``ratio``, our env steps/s
    per seed over the peer's."""
    entries = {}
    for name, result in results.items():
        entries[name] = {
            "peer_env_steps_per_s": result.env_steps_per_s,
            "ratio": record["env_steps_per_s_per_seed"] / result.env_steps_per_s,
            "peer_setup_s": result.setup_s, "peer_warmup_s": result.warmup_s,
            "peer_timed_s": result.timed_s, "peer_timed_steps": result.timed_steps,
            "peer_updates": result.updates, **{f"peer_{k}": v for k, v in result.details.items()}}
    return entries


def summary_lines(records: list[dict[str, Any]]) -> list[str]:
    """One line per record and peer: ours per seed, the peer, and the ratio."""
    lines = []
    for r in records:
        for name, entry in r.get("peers", {}).items():
            lines.append(f"{r['env']:<14}{r['num_agents']:>4}{r['seeds']:>6}{r['learners']:>11}"
                         f"  {name:<13}{r['env_steps_per_s_per_seed']:>11,.0f}"
                         f"{entry['peer_env_steps_per_s']:>11,.0f}{entry['ratio']:>8.1f}x")
    return lines
