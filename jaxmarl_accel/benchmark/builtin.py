"""The built-in suites: ``jaxmarl-minimal`` (JaxMARL 0.2.0's minimal baseline set with our
learners), ``papers`` (the five papers' headline tasks) and ``smax`` (every SMAX map);
:func:`load_suite` finds a suite by name or reads a YAML file.

``jaxmarl-minimal`` is ``baselines/run_minimal_baseline_set.yaml`` of JaxMARL 0.2.0: MPE
spread / reference / tag with its ``ippo_ff, mappo_rnn, qmix_rnn, vdn_rnn, vdn_ff``; SMAX 2s3z,
3s5z_vs_3s6z, smacv2_10_units, 6h_vs_8z with ``ippo_rnn, mappo_rnn, qmix_rnn, vdn_rnn``;
Overcooked coord_ring with ``ippo_ff, vdn_cnn``; Hanabi 2p with ``ippo_ff, mappo_ff``; 10
seeds, 1e7 env steps a run, each task on JaxMARL's own env (``jaxmarl:<id>``) and each of its
learners replaced by ours: ``ippo_ff`` by ``ppo``, ``ippo_rnn`` by ``ppo --agent rnn``,
``mappo_rnn`` by ``mappo --agent rnn``, ``mappo_ff`` by ``mappo``, ``qmix_rnn`` by ``qmix``,
``vdn_rnn`` by ``vdn``, ``vdn_ff`` by ``vdn --agent mlp`` and ``vdn_cnn`` (no CNN agent here:
the adapter flattens Overcooked's grid) by ``vdn --agent mlp``. A learner that is not
registered stops the suite before it trains (``--only`` picks the others).

``papers`` holds the tasks behind the README's learning rows, at the budgets of their
records: papers 000-002's 3-agent spread (MADDPG, MATD3, MASAC; 1.5M env steps, 8 seeds),
paper 004's 8-agent stag hunt at punishment 0 and -1.5 (QMIX, VDN, IQL, MAC-PO, AccMER,
weighted QMIX; 1.05M) and paper 003's continuous Tag of 2 taggers and 10 runners (PPO, A2C;
1.6M). ``smax`` is every map of JaxMARL's ``MAP_NAME_TO_SCENARIO`` (heuristic enemy, the
keywords of JaxMARL's SMAX baselines) with QMIX, VDN, recurrent PPO and MAPPO, 1e7 env
steps and 10 seeds, as ``jaxmarl-minimal``.
"""

from __future__ import annotations

import os

from jaxmarl_accel.benchmark.suites import Learner, Suite, SuiteFactory, Task, suite_from

JAXMARL_STEPS = 10_000_000
JAXMARL_SEEDS = 10
SMAX_KWARGS = (("see_enemy_actions", True), ("walls_cause_death", True),
               ("attack_mode", "closest"))
"""The ``ENV_KWARGS`` of JaxMARL's SMAX baselines (``ql_rnn_smax.yaml``)."""

JAXMARL_LEARNERS = (
    Learner("ppo", "ppo", jaxmarl="ippo_ff"),
    Learner("ppo_rnn", "ppo", (("agent", "rnn"),), jaxmarl="ippo_rnn"),
    Learner("mappo_rnn", "mappo", (("agent", "rnn"),), jaxmarl="mappo_rnn"),
    Learner("mappo", "mappo", jaxmarl="mappo_ff"),
    Learner("qmix", "qmix", jaxmarl="qmix_rnn"),
    Learner("vdn", "vdn", jaxmarl="vdn_rnn"),
    Learner("vdn_mlp", "vdn", (("agent", "mlp"),), jaxmarl="vdn_ff"),
)
"""Our learners in place of JaxMARL's (``jaxmarl``: the baseline each stands for; on
Overcooked ``vdn_mlp`` stands for ``vdn_cnn``, :func:`jaxmarl_minimal`)."""

MPE_LEARNERS = ("ppo", "mappo_rnn", "qmix", "vdn", "vdn_mlp")
SMAX_LEARNERS = ("ppo_rnn", "mappo_rnn", "qmix", "vdn")


def smax_task(map_name: str, steps: int = JAXMARL_STEPS) -> Task:
    """The SMAX map ``map_name`` against the heuristic enemy (win rate: the ``won`` counter)."""
    return Task(map_name, "jaxmarl:HeuristicEnemySMAX", steps,
                kwargs=(("scenario", map_name), *SMAX_KWARGS), learners=SMAX_LEARNERS,
                jaxmarl=f"smax:{map_name}")


def jaxmarl_minimal() -> Suite:
    """JaxMARL 0.2.0's minimal baseline set with our learners (module docstring)."""
    mpe = tuple(Task(name, f"jaxmarl:MPE_simple_{name}_v3", JAXMARL_STEPS,
                     learners=MPE_LEARNERS, jaxmarl=f"mpe:MPE_simple_{name}_v3")
                for name in ("spread", "reference", "tag"))
    smax = tuple(smax_task(m) for m in ("2s3z", "3s5z_vs_3s6z", "smacv2_10_units", "6h_vs_8z"))
    overcooked = Task("coord_ring", "jaxmarl:overcooked", JAXMARL_STEPS,
                      kwargs=(("layout", "coord_ring"),), learners=("ppo", "vdn_mlp"),
                      jaxmarl="overcooked:overcooked_coord_ring")
    hanabi = Task("hanabi_2p", "jaxmarl:hanabi", JAXMARL_STEPS, learners=("ppo", "mappo"),
                  jaxmarl="hanabi:hanabi_2p")
    return Suite("jaxmarl-minimal", (*mpe, *smax, overcooked, hanabi), JAXMARL_LEARNERS,
                 seeds=JAXMARL_SEEDS)


def papers() -> Suite:
    """The five papers' headline tasks at the budgets of the README's rows (module
    docstring); 8 seeds, each evaluation over 256 greedy episodes a seed."""
    eval_flags = (("eval-episodes", 256),)
    stag = (("agents", 8),)
    tag_lr = (("team-lr", {"tagger": 0.001, "runner": 0.005}),)
    tasks = (
        Task("spread3", "simple_spread", 1_500_000, flags=(("agents", 3), *eval_flags),
             learners=("maddpg", "matd3", "masac"), evaluations=30),
        Task("stag8", "stag_hunt", 1_050_000,
             kwargs=(("num_stags", 8), ("miscapture_punishment", 0.0)),
             flags=(*stag, *eval_flags), learners=("qmix", "vdn", "iql", "macpo", "accmer"),
             learner_flags=(("accmer", (("sampler-kwargs", {"decay": 1.0}),)),),
             evaluations=21),
        Task("stag8_fig3b", "stag_hunt", 1_050_000,
             kwargs=(("num_stags", 8), ("miscapture_punishment", -1.5)),
             flags=(*stag, *eval_flags, ("preset", "paper004-p1.5")),
             learners=("qmix", "vdn", "owqmix", "cwqmix", "macpo", "accmer"), evaluations=21),
        Task("tag_continuous", "tag_continuous", 1_600_000,
             kwargs=(("num_taggers", 2), ("num_runners", 10)), flags=(*eval_flags, *tag_lr),
             learners=("ppo", "a2c"), learner_flags=(("a2c", (("hidden-sizes", (256, 256)),)),),
             evaluations=25),
    )
    learners = tuple(Learner(name, name) for name in (
        "maddpg", "matd3", "masac", "qmix", "vdn", "iql", "owqmix", "cwqmix", "macpo",
        "accmer", "ppo", "a2c"))
    return Suite("papers", tasks, learners, seeds=8)


def smax() -> Suite:
    """Every SMAX map with QMIX, VDN, recurrent PPO and MAPPO (module docstring)."""
    from jaxmarl.environments.smax.smax_env import MAP_NAME_TO_SCENARIO

    return Suite("smax", tuple(smax_task(m) for m in MAP_NAME_TO_SCENARIO),
                 JAXMARL_LEARNERS, seeds=JAXMARL_SEEDS)


BUILT_IN: dict[str, SuiteFactory] = {"jaxmarl-minimal": jaxmarl_minimal, "papers": papers,
                                     "smax": smax}
"""Built-in suite name -> the function that builds it."""


def load_suite(name: str) -> Suite:
    """A built-in suite (:data:`BUILT_IN`) by name, or the suite of a YAML file."""
    if name in BUILT_IN:
        return BUILT_IN[name]()
    if not name.endswith((".yaml", ".yml")):
        raise ValueError(f"unknown suite {name!r}; built-in suites: {', '.join(BUILT_IN)}, "
                         "or a YAML file (.yaml)")
    if not os.path.isfile(name):
        raise ValueError(f"suite file {name!r} does not exist")
    import yaml  # a dependency of flax

    with open(name) as handle:
        try:
            record = yaml.safe_load(handle)
        except yaml.YAMLError as error:
            raise ValueError(f"{name}: not YAML ({str(error).splitlines()[0]})") from None
    stem = os.path.splitext(os.path.basename(name))[0]
    try:
        return suite_from(record, stem)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
