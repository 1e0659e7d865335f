"""Render a scripted (or random) rollout of a scenario to a GIF and a PNG of one frame.

``jaxmarl-accel render --env simple_tag --out results/render`` writes
``results/render/simple_tag.gif`` and ``results/render/simple_tag.png``; ``--env``,
``--env-kwargs`` and ``--agents`` mean what they mean for ``jaxmarl-accel run``. The rollout is
:func:`jaxmarl_accel.envs.rollout.rollout` (its states before each step are the frames);
each env draws itself (``env.render``: :mod:`jaxmarl_accel.envs.mpe.render` for the MPE
scenarios, :mod:`jaxmarl_accel.envs.render_grid` for the stag hunt); a scenario without a
renderer is refused in one line.
"""

from __future__ import annotations

import json
import os

import jax

from jaxmarl_accel.cli import flags
from jaxmarl_accel.cli.scenario_flags import scenario_kwargs
from jaxmarl_accel.envs import SCENARIOS, make
from jaxmarl_accel.envs.policies import random_policy, scripted_policy
from jaxmarl_accel.envs.render import render_rollout
from jaxmarl_accel.envs.rollout import rollout
from jaxmarl_accel.runs.figures import write_gif, write_png

_POLICIES = {"scripted": scripted_policy, "random": random_policy}


def render_to_files(
    scenario: str, out_dir: str, steps: int = 25, policy: str = "scripted", seed: int = 0,
    pixels: int = 400, png_step: int | None = None, **scenario_kwargs,
) -> tuple[str, str]:
    """Rolls out ``scenario`` and writes ``<out_dir>/<scenario>.gif`` and ``.png``.

    Returns:
      The paths of the GIF and of the PNG (frame ``png_step``, default the middle one).
    """
    if policy not in _POLICIES:
        raise ValueError(f"policy must be 'scripted' or 'random', got {policy!r}")
    env, params = make(scenario, **scenario_kwargs)
    run = jax.jit(rollout, static_argnums=(0, 2, 4))
    states = run(env, params, _POLICIES[policy](env), jax.random.PRNGKey(seed), steps).states
    frames = render_rollout(env, states, params, pixels=pixels)
    gif = os.path.join(out_dir, f"{scenario}.gif")
    png = os.path.join(out_dir, f"{scenario}.png")
    write_gif(gif, frames)
    write_png(png, frames[steps // 2 if png_step is None else png_step])
    return gif, png


def drawable_scenarios() -> tuple[str, ...]:
    """The scenarios whose env brings a renderer (``env.render``), at default arguments."""
    return tuple(name for name in SCENARIOS if make(name)[0].render is not None)


def main(argv: list[str] | None = None, prog: str = "jaxmarl-accel render") -> int:
    """The ``render`` command: parse ``argv``, write the GIF and PNG, return the exit code
    (bad flags: one line on stderr naming the flag, exit status 2)."""
    parser = flags.Parser(prog=prog, description=flags.plain_description(__doc__ or ""))
    parser.add_argument("--env", "--scenario", dest="scenario", default="simple_tag",
                        choices=SCENARIOS, metavar="ENV",
                        help=f"registry name of the scenario, one of {', '.join(SCENARIOS)} "
                             "(--scenario is the same flag; default: simple_tag)")
    parser.add_argument("--env-kwargs", type=flags.parse_key_values, default=(),
                        help="scenario keyword arguments as for jaxmarl-accel run, e.g. "
                             "'num_prey=2,num_obstacles=0'")
    parser.add_argument("--agents", type=flags.parse_int, default=None,
                        help="number of agents, as for jaxmarl-accel run (default: the "
                             "scenario's own)")
    parser.add_argument("--kwargs", default="{}",
                        help='scenario keyword arguments as a JSON object, e.g. '
                             '\'{"num_predators": 6}\', merged with --env-kwargs (default: {})')
    parser.add_argument("--policy", default="scripted", choices=tuple(_POLICIES),
                        help="who acts: the scripted policy or uniform random actions "
                             "(default: scripted)")
    parser.add_argument("--steps", type=flags.parse_int, default=25,
                        help="frames to draw, >= 1 (default: 25)")
    parser.add_argument("--seed", type=flags.parse_int, default=0,
                        help="PRNG seed of the rollout (default: 0)")
    parser.add_argument("--pixels", type=flags.parse_int, default=400,
                        help="image width and height, >= 1 (default: 400)")
    parser.add_argument("--out", default="results/render",
                        help="output folder (default: results/render)")
    args = parser.parse_args(argv)
    for flag, value, least in (("--steps", args.steps, 1), ("--pixels", args.pixels, 1),
                               ("--agents", args.agents, 1)):
        if value is not None and value < least:
            parser.error(f"{flag} must be >= {least}, got {value}")
    try:
        kwargs = json.loads(args.kwargs)
    except json.JSONDecodeError as error:
        parser.error(f"--kwargs is not JSON ({error.msg} at character {error.pos}): "
                     f"{args.kwargs!r}")
    if not isinstance(kwargs, dict):
        parser.error(f"--kwargs must be a JSON object of keyword arguments, got {args.kwargs!r}")
    try:
        flags.check_scenario_keywords("--kwargs", args.scenario, kwargs)
        kwargs = dict(scenario_kwargs(args.scenario, args.env_kwargs, args.agents), **kwargs)
    except ValueError as error:
        parser.error(str(error))
    try:
        env = make(args.scenario, **kwargs)[0]
    except (ValueError, TypeError) as error:
        source = "--kwargs" if args.kwargs.strip() not in ("", "{}") else "--env-kwargs"
        parser.error(f"{source}: {str(error).splitlines()[0]}")
    if env.render is None:
        parser.error(f"--env: {args.scenario} has no renderer; scenarios that can be "
                     f"drawn: {', '.join(drawable_scenarios())}")
    gif, png = render_to_files(args.scenario, args.out, args.steps, args.policy, args.seed,
                               args.pixels, **kwargs)
    print(f"wrote {gif} and {png}")
    return 0

