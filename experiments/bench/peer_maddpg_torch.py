"""The PyTorch MADDPG of github.com/Git-123-Hub/maddpg-pettingzoo-pytorch, timed on mpe2.

Its ``MADDPG`` class (``MADDPG.py``, with ``Agent.py`` and ``Buffer.py`` beside it) is imported
from the checkout given by ``--peer-maddpg-path`` and driven as its ``main.py`` drives it: one
env, ``select_action`` (which also logs every action to its log file), ``add`` to the
per-agent buffers, and every ``update_every`` env steps ``learn`` (each agent samples all
agents' buffers and updates its critic and actor) then ``update_target``. Its networks are
2x64 ReLU MLPs with Adam, gradient norms clipped at 0.5 and the 1e-3 logit penalty, as in the
MADDPG papers; the learning rates, gamma, tau, batch size, replay capacity and update
schedule are ours (its defaults where they match the papers).

Adaptations, all on our side: the envs are mpe2's ``simple_spread_v3`` (``N`` = N) and
``simple_tag_v3`` (``num_adversaries`` = N, one prey, two obstacles) with 25-step episodes
instead of PettingZoo 1.18's ``pettingzoo.mpe`` v2 envs; ``reset`` returns
``(observations, infos)`` and ``step`` five values, whose ``terminations or truncations``
is the ``done`` that PettingZoo 1.18 returned; random actions are passed to ``add`` as
Python ints (gymnasium's ``Discrete.sample`` gives NumPy integers, which its ``add`` would
not turn into one-hot rows). Random actions fill the replay up to one batch (its
``random_steps``, 5e4 in its ``main.py``, would only lengthen the warm-up).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from experiments.bench.peers import PeerResult, PeerSettings, torch_threads

PEER_MODULES = ("MADDPG", "Agent", "Buffer")  # its top-level module names


@contextlib.contextmanager
def peer_class(path: str) -> Iterator[type]:
    """Its ``MADDPG`` class imported from the checkout at ``path``; its modules leave
    ``sys.modules`` and ``path`` leaves ``sys.path`` afterwards."""
    for name in PEER_MODULES:
        sys.modules.pop(name, None)
    sys.path.insert(0, path)
    try:
        yield importlib.import_module("MADDPG").MADDPG
    finally:
        sys.path.remove(path)
        for name in PEER_MODULES:
            sys.modules.pop(name, None)


@contextlib.contextmanager
def root_logger_restored() -> Iterator[None]:
    """Undoes what its ``setup_logger`` does to the root logger (a file handler, level INFO)."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    try:
        yield
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(level)


def make_env(env: str, agents: int, episode_length: int) -> Any:
    """mpe2's parallel env for our scenario ``env`` with ``agents`` (predators for tag)."""
    if env == "simple_spread":
        from mpe2 import simple_spread_v3

        return simple_spread_v3.parallel_env(N=agents, max_cycles=episode_length)
    if env == "simple_tag":
        from mpe2 import simple_tag_v3

        return simple_tag_v3.parallel_env(num_adversaries=agents, num_good=1, num_obstacles=2,
                                          max_cycles=episode_length)
    raise ValueError(f"maddpg_torch runs simple_spread and simple_tag, not {env!r}")


class Loop:
    """Its ``main.py`` training loop, one env step at a time, with a global step count."""

    def __init__(self, env: Any, maddpg: Any, settings: PeerSettings):
        self.env, self.maddpg, self.settings = env, maddpg, settings
        self.obs, _ = env.reset(seed=settings.seed)
        self.step_count = 0

    def run(self, steps: int, learn: bool) -> int:
        """``steps`` env steps (random actions unless ``learn``); returns the updates made."""
        env, settings, updates = self.env, self.settings, 0
        for _ in range(steps):
            if not env.agents:  # the episode ended: mpe2 removes the agents
                self.obs, _ = env.reset()
            self.step_count += 1
            if learn:
                action = self.maddpg.select_action(self.obs)
            else:
                action = {a: int(env.action_space(a).sample()) for a in env.agents}
            next_obs, reward, terminated, truncated, _ = env.step(action)
            done = {a: terminated[a] or truncated[a] for a in next_obs}
            self.maddpg.add(self.obs, action, reward, next_obs, done)
            if learn and self.step_count % settings.update_every == 0:
                self.maddpg.learn(settings.batch_size, settings.gamma)
                self.maddpg.update_target(settings.tau)
                updates += 1
            self.obs = next_obs
        return updates


def time_peer(env: str, agents: int, settings: PeerSettings) -> PeerResult:
    """Builds its MADDPG on ``env`` with ``agents`` agents (predators for simple_tag), fills
    the replay, warms up with learning and times ``settings.timed_steps`` env steps."""
    if settings.maddpg_path is None:
        raise ValueError("maddpg_torch needs settings.maddpg_path, a checkout of its repository")
    rounds = settings.rounds(settings.update_every)
    with (peer_class(settings.maddpg_path) as maddpg_class,
          tempfile.TemporaryDirectory() as res_dir, root_logger_restored(),
          torch_threads(settings.torch_threads)):
        start = time.perf_counter()
        torch.manual_seed(settings.seed)
        np.random.seed(settings.seed)  # its buffers sample with NumPy's global generator
        mpe = make_env(env, agents, settings.episode_length)
        mpe.reset(seed=settings.seed)
        dim_info = {a: [mpe.observation_space(a).shape[0], mpe.action_space(a).n]
                    for a in mpe.agents}
        maddpg = maddpg_class(dim_info, settings.buffer_capacity, settings.batch_size,
                              settings.actor_lr, settings.critic_lr, res_dir)
        loop = Loop(mpe, maddpg, settings)
        setup_s = time.perf_counter() - start
        start = time.perf_counter()
        loop.run(rounds.fill * settings.update_every, learn=False)
        loop.run(rounds.warmup * settings.update_every, learn=True)
        warmup_s = time.perf_counter() - start
        timed_steps = rounds.timed * settings.update_every
        start = time.perf_counter()
        updates = loop.run(timed_steps, learn=True)
        timed_s = time.perf_counter() - start
        mpe.close()
    details = {"env": f"mpe2 {env}_v3", "agents_total": len(dim_info), "num_envs": 1,
               "actions": "discrete", "torch_threads": settings.torch_threads,
               "torch_version": torch.__version__}
    return PeerResult(env_steps_per_s=timed_steps / timed_s, setup_s=setup_s, warmup_s=warmup_s,
                      timed_s=timed_s, timed_steps=timed_steps, updates=updates, details=details)
