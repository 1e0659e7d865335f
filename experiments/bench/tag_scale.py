"""A2C and PPO at 1,000 agents (paper 003, Sec. 5): rollout and end-to-end throughput, memory.

For every env (``--envs``: WarpDrive's ``tag_continuous`` and ``tag_gridworld``, MPE's
``simple_tag``), learner (``--algos``) and env count E (``--num-envs``) one child process
builds the run of 1 seed with ``N = --agents`` agents (Tag: ``N // 10`` taggers as in
WarpDrive's 10:100 config, k = 10 nearest observed; gridworld: ``N - 1`` taggers and one
runner; MPE tag: ``N`` predators, ``k_nearest`` 8), rollouts of ``--rollout-length`` T
steps and value normalization, and measures:

* rollout: the learner's exploration policy stepping the E envs T times in one compiled
  ``lax.scan`` (:func:`~jaxmarl_accel.trainer.rounds.rollout.make_collect`, no update): env steps/s
  = E T / seconds, agent steps/s = N times that;
* end to end: one whole round (that rollout, then the update: A2C one gradient step, PPO
  ``epochs x minibatches``), state donated, the loop paper 003 counts as "training
  iterations per second": env steps/s (and agent steps/s) trained;
* memory: the round's compiled arguments and temporaries (XLA's memory analysis), the
  run's estimated peak (:func:`~jaxmarl_accel.runs.memory.estimate_peak`) and the child's
  measured peak resident memory (``ru_maxrss`` of the process, imports included). A
  configuration whose estimate exceeds the available memory is refused after compiling,
  before its round allocates (``refused``), as the command line refuses a run; one the
  kernel kills for memory anyway is recorded as ``killed``.

Each timing is the median of ``--repeats`` calls after a warm-up call; compile seconds
apart. Records carry the load average: compare figures taken on a quiet machine. There is no
side-by-side peer here: WarpDrive's trainer needs CUDA (its CPU envs are compared in
``bench warpdrive``).

Usage: ``python -m experiments.bench tag_scale --json docs/results/bench/tag_scale.json``;
quick: ``--agents 50 --num-envs 1 --rollout-length 10 --repeats 1``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from typing import Any

from experiments.bench.memory import run_measured

ENVS = ("tag_continuous", "tag_gridworld", "simple_tag")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The bench's flags."""
    parser.add_argument("--json", default=None, help="write the records to this JSON file")
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=ENVS,
                        help="environments (default: all three)")
    parser.add_argument("--algos", nargs="+", default=["a2c", "ppo"], choices=["a2c", "ppo"],
                        help="learners (default: a2c ppo)")
    parser.add_argument("--agents", type=int, default=1000, help="agents N (default: 1000)")
    parser.add_argument("--num-envs", nargs="+", type=int, default=[1, 4, 16],
                        help="env counts E, each a configuration (default: 1 4 16)")
    parser.add_argument("--rollout-length", type=int, default=100,
                        help="env steps T per rollout (default: 100)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed calls after the warm-up, the median is kept (default: 3)")
    parser.add_argument("--append", action="store_true",
                        help="keep the records of other envs already in --json (those of "
                             "--envs are measured again)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)


def env_kwargs(env: str, agents: int) -> dict[str, Any]:
    """``make`` keywords of ``env`` at ``agents`` agents (module docstring)."""
    if env == "tag_continuous":
        taggers = max(1, agents // 10)
        return {"num_taggers": taggers, "num_runners": agents - taggers,
                "num_other_agents_observed": min(10, agents - 1)}
    if env == "tag_gridworld":
        return {"num_taggers": agents - 1}
    return {"num_predators": agents, "k_nearest": 8}


def median_seconds(fn: Any, state: Any, repeats: int) -> tuple[Any, float]:
    """Call ``fn(state) -> (state, ...)`` once to warm up, then ``repeats`` times:
    ``(state, median seconds per call)``."""
    import jax

    state = jax.block_until_ready(fn(state))[0]
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        state = jax.block_until_ready(fn(state))[0]
        times.append(time.perf_counter() - start)
    return state, statistics.median(times)


def measure(spec: dict[str, Any]) -> dict[str, Any]:
    """One configuration, in this process (the child's work)."""
    import jax

    from jaxmarl_accel.algos.on_policy import OnPolicyConfig
    from jaxmarl_accel.config import TrainConfig
    from jaxmarl_accel.runs.memory import available_bytes, compiled_temp_bytes, estimate_peak
    from jaxmarl_accel.trainer.rounds.rollout import make_collect, make_rollout_round
    from jaxmarl_accel.trainer.train import make_trainer

    steps = spec["num_envs"] * spec["rollout_length"]
    config = TrainConfig(env=spec["env"], env_kwargs=tuple(sorted(spec["env_kwargs"].items())),
                         algo=spec["algo"], num_envs=spec["num_envs"], total_env_steps=steps,
                         eval_every=steps, eval_episodes=1,
                         learner=OnPolicyConfig(rollout_length=spec["rollout_length"],
                                                         normalize_value=True))
    trainer = make_trainer(config)
    state = jax.jit(trainer.init)(jax.random.PRNGKey(0))
    state_bytes = sum(leaf.nbytes for leaf in jax.tree.leaves(state))
    collect = make_collect(config, trainer.env, trainer.env_params, trainer.algo)
    run_round = make_rollout_round(config, trainer.env, trainer.env_params, trainer.algo).run
    start = time.perf_counter()
    rollout = jax.jit(lambda s: collect(s)[:1], donate_argnums=0).lower(state).compile()
    whole = jax.jit(lambda s: run_round(s, jax.numpy.int32(0)),
                    donate_argnums=0).lower(state).compile()
    compile_s = time.perf_counter() - start
    temp = compiled_temp_bytes(whole)
    n = trainer.env.spec.num_agents
    estimate = estimate_peak(state_bytes, temp_bytes=temp)
    record = {**spec, "num_agents": n, "state_bytes": state_bytes, "round_temp_bytes": temp,
              "estimated_peak_bytes": estimate, "compile_s": compile_s,
              "available_bytes": available_bytes()[0]}
    if estimate > record["available_bytes"]:  # refused before the round allocates anything
        return {**record, "refused": True}
    state, rollout_s = median_seconds(rollout, state, spec["repeats"])
    state, round_s = median_seconds(whole, state, spec["repeats"])
    return {**record, "refused": False, "rollout_s": rollout_s, "round_s": round_s,
            "rollout_env_steps_per_s": steps / rollout_s,
            "rollout_agent_steps_per_s": n * steps / rollout_s,
            "end_to_end_env_steps_per_s": steps / round_s,
            "end_to_end_agent_steps_per_s": n * steps / round_s,
            "update_share": 1.0 - rollout_s / round_s}


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    """:func:`measure` in a fresh process; adds that process's peak resident bytes."""
    code, text, log, peak = run_measured(["-m", "experiments.bench", "tag_scale", "--child",
                                          json.dumps(spec)])
    if code == -9:  # the kernel's out-of-memory killer: the estimate let it through
        return {**spec, "killed": True, "peak_rss_bytes": peak,
                "error": "killed by SIGKILL (out of memory)"}
    if code:
        raise RuntimeError(f"{spec}: the child exited {code}:\n{log[-2000:]}")
    return {**json.loads(text.strip().splitlines()[-1]), "peak_rss_bytes": peak}


def main(args: argparse.Namespace) -> None:
    if args.child:
        print(json.dumps(measure(json.loads(args.child))))
        return
    import jax

    print(f"{'env':<15}{'algo':>5}{'N':>6}{'E':>4}{'rollout env st/s':>18}{'end-to-end':>12}"
          f"{'agent st/s':>12}{'compile s':>10}{'state MiB':>10}{'temp MiB':>9}"
          f"{'peak GiB':>9}{'load':>6}", flush=True)
    records = []
    if args.append and args.json and os.path.exists(args.json):
        with open(args.json) as handle:
            records = [r for r in json.load(handle) if r["env"] not in args.envs]
    for env in args.envs:
        for algo in args.algos:
            for num_envs in args.num_envs:
                load = list(os.getloadavg())
                spec = {"env": env, "algo": algo, "num_envs": num_envs,
                        "rollout_length": args.rollout_length, "repeats": args.repeats,
                        "env_kwargs": env_kwargs(env, args.agents)}
                r = run_child(spec)
                records.append(r)
                r.update(load_average_start=load, load_average_end=list(os.getloadavg()),
                         cpu_count=os.cpu_count(), device=str(jax.devices()[0]),
                         jax=jax.__version__, python=platform.python_version())
                if r.get("refused") or r.get("killed"):
                    why = ("refused: estimated peak "
                           f"{r['estimated_peak_bytes'] / 2**30:.1f} GiB > available "
                           f"{r['available_bytes'] / 2**30:.1f} GiB" if r.get("refused")
                           else r["error"])
                    print(f"{env:<15}{algo:>5}{args.agents:>6}{num_envs:>4}  {why}", flush=True)
                    write(args.json, records)
                    continue
                print(f"{env:<15}{algo:>5}{r['num_agents']:>6}{num_envs:>4}"
                      f"{r['rollout_env_steps_per_s']:>18,.0f}"
                      f"{r['end_to_end_env_steps_per_s']:>12,.0f}"
                      f"{r['end_to_end_agent_steps_per_s']:>12,.0f}{r['compile_s']:>10.1f}"
                      f"{r['state_bytes'] / 2**20:>10.1f}{r['round_temp_bytes'] / 2**20:>9.1f}"
                      f"{r['peak_rss_bytes'] / 2**30:>9.2f}"
                      f"{r['load_average_end'][0]:>6.2f}", flush=True)
                write(args.json, records)


def write(path: str | None, records: list[dict[str, Any]]) -> None:
    """The records so far, as JSON at ``path`` (when given)."""
    if path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as handle:
            json.dump(records, handle, indent=1)
