"""BenchMARL's MADDPG on VMAS ``simple_spread``, timed through its own ``Experiment``.

Settings: VMAS ``simple_spread`` with ``n_agents`` = N and ``max_steps`` = 25, ``num_envs``
vectorized envs, ``max(num_envs, update_every)`` frames (env steps) collected per iteration
and one update per ``update_every`` of them, batch ``batch_size``, replay ``buffer_capacity``,
per-agent actor and critic networks (``share_policy_params`` and ``share_param_critic``
False) of our hidden widths with ReLU, our learning rate, gamma, tau (its ``polyak_tau``)
and gradient-norm clip. BenchMARL's MADDPG acts in VMAS's continuous action space (it has
no discrete one); evaluation, loggers, checkpoints and its progress bar are off.

Timing: a callback stamps the end of each iteration's collection. Random actions fill the
replay with one batch (``off_policy_init_random_frames``, BenchMARL updating from the first
iteration as it does), then ``warmup_steps`` and ``timed_steps`` frames follow; the timed
window runs from the stamp after the warm-up to the stamp ``timed_steps`` frames later, so it
holds whole iterations of updates and collection.
"""

from __future__ import annotations

import contextlib
import io
import logging
import tempfile
import time
import warnings
from collections.abc import Iterator
from typing import Any

import benchmarl
import torch
from benchmarl.algorithms import MaddpgConfig
from benchmarl.environments import VmasTask
from benchmarl.experiment import Callback, Experiment, ExperimentConfig
from benchmarl.models.mlp import MlpConfig
from torch import nn

from experiments.bench.peers import PeerResult, PeerSettings, torch_threads


class CollectionStamps(Callback):
    """Records ``time.perf_counter()`` after each iteration's collection and at each update."""

    def __init__(self) -> None:
        super().__init__()
        self.stamps: list[float] = []
        self.updates: list[float] = []

    def on_batch_collected(self, batch: Any) -> None:
        self.stamps.append(time.perf_counter())

    def on_train_step(self, batch: Any, group: str) -> None:
        self.updates.append(time.perf_counter())


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """No progress bar (written to stderr), warnings or torchrl info lines in the block."""
    torchrl_logger = logging.getLogger("torchrl")
    level = torchrl_logger.level
    torchrl_logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        torchrl_logger.setLevel(level)


def experiment_config(settings: PeerSettings, frames_per_iter: int, iters: int,
                      random_frames: int, folder: str) -> ExperimentConfig:
    """BenchMARL's default experiment config with our settings and ``iters`` iterations."""
    config = ExperimentConfig.get_from_yaml()
    for name, value in {
        "sampling_device": "cpu", "train_device": "cpu", "buffer_device": "cpu",
        "share_policy_params": False, "prefer_continuous_actions": True,
        "gamma": settings.gamma, "lr": settings.actor_lr, "polyak_tau": settings.tau,
        "soft_target_update": True, "clip_grad_norm": True, "clip_grad_val": settings.grad_clip,
        "max_n_iters": None, "max_n_frames": frames_per_iter * iters,
        "off_policy_collected_frames_per_batch": frames_per_iter,
        "off_policy_n_envs_per_worker": settings.num_envs,
        "off_policy_n_optimizer_steps": frames_per_iter // settings.update_every,
        "off_policy_train_batch_size": settings.batch_size,
        "off_policy_memory_size": settings.buffer_capacity,
        "off_policy_init_random_frames": random_frames,
        "evaluation": False, "render": False, "loggers": [], "create_json": False,
        "save_folder": folder, "checkpoint_interval": 0, "checkpoint_at_end": False,
    }.items():
        setattr(config, name, value)
    return config


def time_peer(env: str, agents: int, settings: PeerSettings) -> PeerResult:
    """Builds BenchMARL's MADDPG experiment on VMAS ``simple_spread`` with ``agents`` agents,
    runs it and times ``settings.timed_steps`` frames after the warm-up."""
    if env != "simple_spread":
        raise ValueError(f"benchmarl runs simple_spread, not {env!r}")
    frames_per_iter = max(settings.num_envs, settings.update_every)
    if frames_per_iter % settings.num_envs or frames_per_iter % settings.update_every:
        raise ValueError("num_envs and update_every must divide one another")
    random_iters, warm_iters, timed_iters = settings.rounds(frames_per_iter)
    stamps = CollectionStamps()
    model = MlpConfig(num_cells=list(settings.hidden_sizes), activation_class=nn.ReLU,
                      layer_class=nn.Linear)
    algorithm = MaddpgConfig.get_from_yaml()
    algorithm.share_param_critic = False
    task = VmasTask.SIMPLE_SPREAD.get_from_yaml()
    task.config.update(n_agents=agents, max_steps=settings.episode_length)
    with (tempfile.TemporaryDirectory() as folder, quiet(),
          torch_threads(settings.torch_threads)):
        config = experiment_config(settings, frames_per_iter,
                                   random_iters + warm_iters + timed_iters + 1,
                                   random_iters * frames_per_iter, folder)
        start = time.perf_counter()
        experiment = Experiment(task=task, algorithm_config=algorithm, model_config=model,
                                critic_model_config=model, seed=settings.seed, config=config,
                                callbacks=[stamps])
        setup_s = time.perf_counter() - start
        start = time.perf_counter()
        experiment.run()
    first = random_iters + warm_iters
    begin, end = stamps.stamps[first], stamps.stamps[first + timed_iters]
    timed_s = end - begin
    timed_steps = timed_iters * frames_per_iter
    details = {"env": "vmas simple_spread", "agents_total": agents,
               "num_envs": settings.num_envs, "actions": "continuous",
               "torch_threads": settings.torch_threads, "benchmarl_version": benchmarl.__version__,
               "torch_version": torch.__version__}
    return PeerResult(env_steps_per_s=timed_steps / timed_s, setup_s=setup_s,
                      warmup_s=begin - start, timed_s=timed_s, timed_steps=timed_steps,
                      updates=sum(begin < t < end for t in stamps.updates), details=details)
