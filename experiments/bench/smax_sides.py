"""The two sides of ``bench qmix_smax``, shared with :mod:`~.smax_rounds`: JaxMARL's
QLearning script on SMAX with its settings (:class:`Settings` from its ``ql_rnn_smax.yaml``,
its config for a run, the script loaded as the benchmark command's reference pairs load it,
:func:`jaxmarl_accel.benchmark.jaxmarl_scripts.load_baseline`), and one side's run compiled,
timed and scored (:func:`run_side`, with each side's greedy win rates)."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import jax
import numpy as np

from experiments.bench import qmix
from experiments.bench.timing import compile_program, timed_call
from jaxmarl_accel.benchmark.jaxmarl_scripts import SCRIPTS

ENV_ID = "HeuristicEnemySMAX"
BASELINES = {"qmix": "qmix_rnn", "vdn": "vdn_rnn", "macpo": "qmix_rnn"}
"""``--algo`` -> JaxMARL's baseline it runs beside: its own learner of that name, or (MAC-PO,
which JaxMARL lacks) the QMIX that MAC-PO's weights modify (paper 004, eq. 1)."""


def reference_script(algo: str) -> str:
    """The path of ``algo``'s JaxMARL script in a checkout (``baselines/QLearning/...``)."""
    return f"baselines/{SCRIPTS[BASELINES[algo], 'smax']}"


@dataclasses.dataclass(frozen=True)
class Settings:
    """JaxMARL's ``ql_rnn_smax.yaml`` values (read from the reference's files when given):
    each field is the upper-cased key (:data:`KEYS` where the names differ; ``eps_decay`` a
    fraction of the run, ``target_update_interval`` in rounds, ``rew_scale`` the reward's
    factor in the targets, ours ``ValueConfig.reward_scale``)."""

    num_envs: int = 16
    num_steps: int = 128
    buffer_size: int = 5000
    batch_size: int = 32
    hidden: int = 512
    mixer_embed: int = 64
    hypernet_hidden: int = 256
    lr: float = 5e-5
    gamma: float = 0.99
    max_grad_norm: float = 10.0
    target_update_interval: int = 10
    eps_start: float = 1.0
    eps_finish: float = 0.05
    eps_decay: float = 0.1
    learning_starts: int = 10_000
    test_num_envs: int = 512
    rew_scale: float = 10.0


KEYS = {"batch_size": "BUFFER_BATCH_SIZE", "hidden": "HIDDEN_SIZE",
        "mixer_embed": "MIXER_EMBEDDING_DIM", "hypernet_hidden": "MIXER_HYPERNET_HIDDEN_DIM"}


def settings_from(config: dict[str, Any]) -> Settings:
    """:class:`Settings` from JaxMARL's merged config dict."""
    return Settings(**{f.name: type(f.default)(config.get(KEYS.get(f.name, f.name.upper()),
                                                           f.default))
                       for f in dataclasses.fields(Settings)})


def reference_config(base: dict[str, Any], settings: Settings, map_name: str,
                     env_steps: int) -> dict[str, Any]:
    """JaxMARL's config: its own with ``settings``, the map, ``env_steps`` and one greedy
    test after the last update."""
    config = copy.deepcopy(base)
    config.update({KEYS.get(f.name, f.name.upper()): getattr(settings, f.name)
                   for f in dataclasses.fields(Settings)})
    config.update(TOTAL_TIMESTEPS=env_steps, MAP_NAME=map_name, ENV_NAME=ENV_ID,
                  TEST_DURING_TRAINING=True, TEST_INTERVAL=1.0, WANDB_MODE="disabled",
                  NUM_SEEDS=1)
    return config


def load_reference(src: str | None, algo: str = "qmix") -> tuple[Any, dict[str, Any]] | None:
    """The reference script of ``algo`` (:data:`BASELINES`) as a module and its own SMAX
    config; None when ``src`` is None (ours only); a ``src`` without the script is refused in
    one line (:func:`~.qmix.load_reference`)."""
    return qmix.load_reference(src, BASELINES[algo], "smax")


def run_side(name: str, train: Any, keys: jax.Array, steps_per_seed: int,
             win_rates_of: Any, updates_of: Any, vmapped: bool = False,
             real_steps_of: Any = None,
             options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The side's record: ``train`` compiled for one seed and called once per key, or with
    ``vmapped`` compiled once for all keys (one program of all seeds) and called once.

    Env steps per second are per program: ``steps_per_seed`` over one call's seconds (with
    ``vmapped``, every seed made that many steps in the same call). ``real_steps_of(out)``,
    where given, is each seed's count of env steps its episodes really took (our episode
    round runs ``T`` rows per episode and masks those after the episode's end); the real
    rate is then recorded beside the counted one. ``options``: the XLA compiler options of
    the side's program (ours: the library's; theirs: XLA's defaults)."""
    program_keys = keys if vmapped else keys[:1]
    compiled, lower_s, xla_s = compile_program(train, program_keys, options)
    calls = [keys] if vmapped else [keys[index:index + 1] for index in range(keys.shape[0])]
    seconds, wins, updates, real, real_rates = [], [], 0, [], []
    for call_keys in calls:
        elapsed, out = timed_call(compiled, call_keys)
        seconds.append(elapsed)
        wins.extend(win_rates_of(out))
        if real_steps_of is not None:
            real.extend(real_steps_of(out))
            real_rates.extend(r / elapsed for r in real[-call_keys.shape[0]:])
        updates = updates_of(out)
        print(f"  {name} seeds {len(wins) - call_keys.shape[0]}-{len(wins) - 1}: win rate "
              f"{', '.join(f'{w:.3f}' for w in wins[-call_keys.shape[0]:])}, "
              f"{steps_per_seed / elapsed:,.0f} env steps/s per seed "
              f"({call_keys.shape[0] * steps_per_seed / elapsed:,.0f} in all)", flush=True)
    q25, q50, q75 = np.percentile(wins, [25, 50, 75])
    extra = {f"{name}_real_env_steps_per_seed": real,
             f"{name}_real_steps_per_s_median": float(np.median(real_rates))} if real else {}
    if real:
        print(f"  {name}: env steps really taken per seed {', '.join(f'{r:,.0f}' for r in real)}"
              f" ({extra[f'{name}_real_steps_per_s_median']:,.0f} per s per seed)", flush=True)
    return extra | {f"{name}_compiler_options": dict(options or {}),
            f"{name}_compile_s": lower_s + xla_s, f"{name}_lower_s": lower_s,
            f"{name}_xla_compile_s": xla_s, f"{name}_env_steps_per_seed": steps_per_seed,
            f"{name}_updates_per_seed": updates, f"{name}_vmapped": vmapped,
            f"{name}_seconds": seconds, f"{name}_win_rate_per_seed": wins,
            f"{name}_win_rate_median": float(q50),
            f"{name}_win_rate_iqr": [float(q25), float(q75)],
            f"{name}_steps_per_s_median": steps_per_seed / float(np.median(seconds)),
            f"{name}_total_steps_per_s": len(wins) * steps_per_seed / float(np.sum(seconds))}


def our_win_rates(out: Any) -> list[float]:
    """Each seed's greedy win rate at the final evaluation of our program's output."""
    return [float(w) for w in np.asarray(out[1].eval_stats["won"])[:, -1]]


def reference_win_rates(out: Any) -> list[float]:
    """Each seed's greedy win rate at the last test of theirs."""
    return [float(w) for w in
            np.asarray(out["runner_state"][2]["returned_won_episode"]).reshape(-1)]
