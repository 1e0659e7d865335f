"""Command-line flags generated from the frozen config dataclasses.

Every field of :class:`~jaxmarl_accel.config.TrainConfig` and
:class:`~jaxmarl_accel.algos.ActorCriticConfig` becomes a ``--flag`` whose help text is the
field's entry in the class docstring, so flags and documentation never drift apart.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import math
import os
import re
import textwrap
import typing
from typing import Any


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the description's line breaks and never breaks a line inside a flag name
    (``--eval-`` / ``every``)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on stderr,
    ``<prog>: error: <message>; see --help``, with exit status 2 (no usage block), and
    whose help is formatted by :class:`HelpFormatter`.

    ``fields`` lists the config fields the command made flags of (:func:`flag_message`
    writes them as those flags in error messages).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.fields: list[str] = []

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"{self.prog}: error: {message}; see --help\n")


def plain_text(text: str) -> str:
    """``text`` without Sphinx markup: ``:role:`~a.b.c``` becomes ``c`` (``a.b.c`` without
    the tilde) and double backquotes are dropped."""
    text = re.sub(r":\w+:`~[\w.]*?(\w+)`", r"\1", text)
    text = re.sub(r":\w+:`([^`]+)`", r"\1", text)
    return text.replace("``", "")


def plain_description(doc: str, width: int = 88) -> str:
    """A module docstring as a command's ``--help`` description: :func:`plain_text`, each
    paragraph refilled to ``width`` columns except indented ones (examples)."""
    paragraphs = plain_text(doc).strip().split("\n\n")
    return "\n\n".join(
        p if p.startswith(" ") else textwrap.fill(" ".join(p.split()), width,
                                                  break_on_hyphens=False)
        for p in paragraphs)


def field_docs(cls: type) -> dict[str, str]:
    """Map field name -> description from a Google-style ``Attributes:`` docstring section."""
    doc = inspect.getdoc(cls) or ""
    docs: dict[str, str] = {}
    section = doc.split("Attributes:", 1)[1] if "Attributes:" in doc else ""
    current = None
    for line in section.splitlines():
        match = re.match(r"^\s{0,4}(\w+(?:,\s*\w+)*):\s*(.*)$", line)
        if match and not line.startswith(" " * 6):
            current = [name.strip() for name in match.group(1).split(",")]
            for name in current:
                docs[name] = match.group(2).strip()
        elif current and line.strip():
            for name in current:
                docs[name] += " " + line.strip()
    return docs


def parse_int(text: str) -> int:
    """An integer flag value, also written as ``1e6``, ``1_000_000`` or ``1,000,000``."""
    cleaned = text.strip().replace(",", "").replace("_", "")
    try:
        return int(cleaned)
    except ValueError:
        pass
    try:
        value = float(cleaned)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not value.is_integer():
        raise argparse.ArgumentTypeError(f"expected an integer such as 1000000 or 1e6, got "
                                         f"{text!r}")
    return int(value)


def parse_int_items(text: str) -> list[int]:
    """The integers of one value of a list flag: ``64`` or ``64,64`` (a comma separates
    items here, never thousands: ``--hidden-sizes 64,64`` is two layers of 64 units)."""
    items = [item for item in text.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"expected integers such as 64 or 64,64, got {text!r}")
    return [parse_int(item) for item in items]


class _ExtendItems(argparse.Action):
    """``nargs="+"`` of :func:`parse_int_items` values flattened into one list, so that
    ``--hidden-sizes 64 64`` and ``--hidden-sizes 64,64`` give the same ``[64, 64]``."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, [item for value in values for item in value])


def _parse_bool(text: str) -> bool:
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _optional(convert: Any) -> Any:
    def parse(text: str) -> Any:
        return None if text.lower() == "none" else convert(text)

    parse.__name__ = getattr(convert, "__name__", "value")
    return parse


def _flag_kwargs(annotation: Any, default: Any) -> dict[str, Any] | None:
    """argparse keywords for a field of type ``annotation``; None for unsupported types."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is tuple and args and args[-1] is Ellipsis:
        if typing.get_origin(args[0]) is tuple:  # (name, value) pairs: "a=1,b=2"
            return {"type": parse_key_values, "metavar": "NAME=VALUE[,...]"}
        if args[0] is int:
            return {"type": parse_int_items, "nargs": "+", "action": _ExtendItems}
        return {"type": args[0], "nargs": "+"}
    optional = type(None) in args
    base = next((a for a in args if a is not type(None)), annotation) if args else annotation
    convert = {bool: _parse_bool, int: parse_int, float: float, str: str}.get(base)
    if convert is None:
        return None
    kwargs: dict[str, Any] = {"type": _optional(convert) if optional else convert}
    if base is bool:
        kwargs["metavar"] = "{true,false,none}" if optional else "{true,false}"
    return kwargs


def add_dataclass_flags(parser: argparse.ArgumentParser, cls: type, *, skip: tuple[str, ...] = (),
                        only: tuple[str, ...] | None = None,
                        choices: dict[str, tuple[str, ...]] | None = None,
                        defaults: dict[str, Any] | None = None,
                        aliases: dict[str, tuple[str, ...]] | None = None,
                        shown_defaults: dict[str, str] | None = None) -> list[str]:
    """Add one ``--field-name`` flag per scalar or tuple field of ``cls``.

    ``Optional`` fields accept ``none``; ``tuple[int, ...]`` fields take several values
    (``64 64`` or ``64,64``).
    ``only`` keeps just those fields, ``skip`` leaves some out, ``defaults`` replaces a
    field's default for this command, ``shown_defaults`` the text the help gives as the
    default (when the command resolves it later), ``aliases`` adds other spellings.
    Returns the field names that became flags.
    """
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    fields = [field for field in dataclasses.fields(cls)
              if field.name not in skip and (only is None or field.name in only)
              and field.default is not dataclasses.MISSING
              and _flag_kwargs(hints.get(field.name), field.default) is not None]
    compound = [field.name for field in fields if "_" in field.name]
    names = []
    for field in fields:
        kwargs = _flag_kwargs(hints.get(field.name), field.default)
        default = (defaults or {}).get(field.name, field.default)
        flags = ["--" + field.name.replace("_", "-"), *(aliases or {}).get(field.name, ())]
        help_text = flag_message(plain_text(docs.get(field.name, field.name.replace("_", " "))),
                                 compound)
        shown = (" ".join(map(str, default)) if isinstance(default, tuple) and default
                 else "none" if default == () else default)
        shown = str(shown).lower() if isinstance(shown, bool) or shown is None else shown
        shown = (shown_defaults or {}).get(field.name, shown)
        parser.add_argument(*flags, dest=field.name, default=default,
                            choices=(choices or {}).get(field.name),
                            help=f"{help_text} (default: {shown})", **kwargs)
        names.append(field.name)
    return names


def flag_message(message: str, fields: typing.Iterable[str]) -> str:
    """``message`` (a config validation error) with each of ``fields`` written as its flag:
    ``total_env_steps (60000) must ...`` becomes ``--total-env-steps (60000) must ...``.
    Names with an underscore are replaced wherever they stand as words; one-word names only
    before ``must`` or a parenthesis, or starting the message before a colon or a quoted
    value (``env: ...``, ``sampler 'uniform': ...``), so that the word in prose stays."""
    for name in sorted(fields, key=len, reverse=True):
        flag = "--" + name.replace("_", "-")
        if "_" in name:
            message = re.sub(rf"(?<![\w.-]){name}(?!\w)", flag, message)
        else:
            message = re.sub(rf"(^|(?<=[\s(])){name}(?= must| \()|^{name}(?=:| ')", flag, message)
    return message


def train_choices() -> dict[str, tuple[str, ...]]:
    """The valid values of the ``TrainConfig`` fields and of every registered learner
    family's config fields that name a registry entry or a mode (the families' own
    ``Family.choices``)."""
    from jaxmarl_accel.algos.registry import algo_names, families
    from jaxmarl_accel.buffers import sampler_names
    from jaxmarl_accel.config import (
        INDEX_SHARING,
        LAYOUTS,
        NEXT_OBS,
        PREY_MODES,
        REPLAY_OBS,
    )
    from jaxmarl_accel.envs import ENV_NAMES

    choices: dict[str, tuple[str, ...]] = {
        "env": ENV_NAMES, "sampler": sampler_names(), "layout": tuple(LAYOUTS),
        "index_sharing": tuple(INDEX_SHARING), "prey": PREY_MODES, "algo": algo_names(),
        "replay_next_obs": NEXT_OBS, "replay_obs": REPLAY_OBS}
    for family in families().values():
        choices.update(family.choices)
    return choices


def train_config_from_args(args: argparse.Namespace, **fixed: Any) -> Any:
    """The ``TrainConfig`` of the parsed flags (fields without a flag keep their defaults;
    ``fixed`` sets fields the command decides itself); ``ActorCriticConfig`` likewise."""
    from jaxmarl_accel.algos.registry import family_of
    from jaxmarl_accel.config import TrainConfig

    values = {**dataclass_values(TrainConfig, args), **fixed}
    algo = values.get("algo", TrainConfig.algo)
    family = family_of(algo)
    check_family_flags(args, family, algo)
    learner = learner_classes()[family]
    return TrainConfig(**values, learner=learner(**dataclass_values(learner, args)))


def learner_classes() -> dict[str, type]:
    """Each registered learner family's hyperparameter class, by family name."""
    from jaxmarl_accel.algos.registry import families

    return {name: family.config_type for name, family in families().items()}


def shared_learner_fields() -> tuple[str, ...]:
    """Fields that more than one learner family has (``gamma``, ``grad_clip``,
    ``hidden_sizes``, ``lr``): one flag each, which sets the chosen family's."""
    counts: dict[str, int] = {}
    for cls in learner_classes().values():
        for name in _dataclass_defaults(cls):
            counts[name] = counts.get(name, 0) + 1
    return tuple(name for name, count in counts.items() if count > 1)


UNSET: Any = type("Unset", (), {"__repr__": lambda self: "UNSET"})()
"""Default of the flags whose default depends on the learner family: left out of the
parsed values, so the family's default
(:func:`jaxmarl_accel.algos.registry.family_defaults`) or the dataclass's applies."""

def family_members(family: str) -> str:
    """The registered learners of ``family``, comma-separated (from the registry)."""
    from jaxmarl_accel.algos import registry

    return ", ".join(registry.family_members(family))


def family_name(family: str) -> str:
    """``"the value-based family (qmix, vdn, ...)"``: a family and its registered learners."""
    from jaxmarl_accel.algos.registry import families

    return f"the {families()[family].title} family ({family_members(family)})"


def _dataclass_defaults(cls: type) -> dict[str, Any]:
    return {f.name: f.default for f in dataclasses.fields(cls)
            if f.default is not dataclasses.MISSING}


def family_flag_defaults() -> tuple[dict[str, Any], dict[str, str]]:
    """``(defaults, shown_defaults)`` for :func:`add_dataclass_flags`: the TrainConfig fields
    whose default depends on the learner family and the fields several families share start
    as :data:`UNSET`; their help shows each family's default."""
    from jaxmarl_accel.algos import registry
    from jaxmarl_accel.algos.registry import DEFAULT_SAMPLER

    classes = learner_classes()
    replay_defaults = {name: family.replay_defaults
                       for name, family in registry.families().items()}
    first = next(iter(classes))  # its defaults are shown plain, the other families' named

    def shown_per_family(values: dict[str, Any], skip_equal: bool = True) -> str:
        plain = _shown(values[first]) if first in values else None
        named = [f"{_shown(value)} for the {family.replace('_', '-')} family"
                 for family, value in values.items()
                 if family != first and not (skip_equal and _shown(value) == plain)]
        return "; ".join(([plain] if plain is not None else []) + named)

    shown = {name: shown_per_family({family: values[name]
                                     for family, values in replay_defaults.items()})
             for name in registry.REPLAY_DEFAULTED}
    for name in shared_learner_fields():
        shown[name] = shown_per_family({family: getattr(cls, name) for family, cls
                                        in classes.items() if hasattr(cls, name)}, False)
    shown["sampler"] = f"{DEFAULT_SAMPLER}; " + ", ".join(
        f"{spec.sampler} for {name}" for name in registry.registered_algos()
        if (spec := registry.algo_spec(name)).sampler is not None)
    return {name: UNSET for name in shown}, shown


def _shown(value: Any) -> str:
    """A default as the help shows it (tuples as space-separated values)."""
    return " ".join(map(str, value)) if isinstance(value, tuple) else str(value)


def check_family_flags(args: argparse.Namespace, family: str, algo: str) -> None:
    """``ValueError`` (one line, naming the flag) when a flag of another learner family
    was changed from its default: ``--actor-lr`` means nothing to QMIX, ``--clip-eps``
    nothing to MADDPG."""
    classes = learner_classes()
    own_fields = set(_dataclass_defaults(classes[family]))
    for other_family, other in classes.items():
        for name, default in _dataclass_defaults(other).items():
            if other_family == family or name in own_fields or not hasattr(args, name):
                continue
            value = getattr(args, name)
            value = tuple(value) if isinstance(value, list) else value
            if value is not UNSET and value != default:
                users = " and ".join(family_name(f) for f, cls in classes.items()
                                     if name in _dataclass_defaults(cls))
                raise ValueError(f"--{name.replace('_', '-')} applies to {users}; algo "
                                 f"{algo!r} does not use it")


def dataclass_values(cls: type, namespace: argparse.Namespace) -> dict[str, Any]:
    """The parsed values of ``cls``'s flags, lists turned back into tuples."""
    values = {}
    for field in dataclasses.fields(cls):
        if field.name != "learner" and hasattr(namespace, field.name):
            value = getattr(namespace, field.name)
            if value is not UNSET:
                values[field.name] = tuple(value) if isinstance(value, list) else value
    return values


def parse_key_values(text: str) -> tuple[tuple[str, Any], ...]:
    """Parse ``"a=1,b=0.5,c=name"`` into sorted ``(name, value)`` pairs with typed values."""
    if not text:
        return ()
    pairs = []
    for item in text.split(","):
        if "=" not in item:
            raise argparse.ArgumentTypeError(f"expected name=value, got {item!r}")
        name, raw = (part.strip() for part in item.split("=", 1))
        value: Any = raw
        for convert in (int, float, _parse_bool):
            try:
                value = convert(raw)
                break
            except (ValueError, argparse.ArgumentTypeError):
                continue
        pairs.append((name, value))
    return tuple(sorted(pairs))


def check_scenario_keywords(flag: str, env: str, names: typing.Iterable[str]) -> tuple[str, ...]:
    """The keywords scenario ``env``'s ``make`` takes; a one-line ValueError naming ``flag``
    when ``names`` holds one it does not take (``--env-kwargs``, render's ``--kwargs``). For
    a JaxMARL env that needs arguments to be built none is checked and ``()`` is returned."""
    from jaxmarl_accel.envs import scenario_keywords

    keywords = scenario_keywords(env)
    unknown = [] if keywords is None else [name for name in names if name not in keywords]
    if unknown:
        raise ValueError(f"{flag}: {env} takes no {', '.join(unknown)}; its keywords are "
                         f"{', '.join(keywords)}")
    return keywords or ()


def add_compile_cache_flag(parser: Any) -> None:
    """``--compile-cache DIR`` on ``parser`` (an ``ArgumentParser`` or an argument group);
    the command applies it with :func:`use_compile_cache` before it compiles anything."""
    parser.add_argument("--compile-cache", metavar="DIR", default=None,
                        help="JAX's persistent compilation cache folder: a command whose "
                             "programs were compiled before, with the same settings, seed "
                             "count and jaxlib (a --resume, a repeated run, an evaluation of "
                             "the same run), loads them from DIR instead of compiling again "
                             "(the same as setting JAX_COMPILATION_CACHE_DIR; default: that "
                             "variable's folder, or no cache)")


CPU_DEVICES_FLAG = "--xla_force_host_platform_device_count"
"""XLA's flag that splits the host CPU into several devices."""


def split_cpu(count: int) -> None:
    """Make XLA's CPU backend ``count`` devices (``--cpu-devices``), before it starts: each
    runs its own programs on its own thread, so seeds sharded over them (``--devices auto``)
    run side by side on a multi-core CPU. ``ValueError`` (one line) for a count below 1, or
    one that ``XLA_FLAGS`` already sets otherwise; 1 changes nothing."""
    if count < 1:
        raise ValueError(f"--cpu-devices must be >= 1, got {count}")
    current = os.environ.get("XLA_FLAGS", "")
    given = re.search(rf"{CPU_DEVICES_FLAG}=(\d+)", current)
    if given is not None:
        if int(given.group(1)) != count and count != 1:
            raise ValueError(f"--cpu-devices {count} but XLA_FLAGS sets "
                             f"{CPU_DEVICES_FLAG}={given.group(1)}; give one of them")
        return
    if count > 1:
        os.environ["XLA_FLAGS"] = f"{current} {CPU_DEVICES_FLAG}={count}".strip()


def use_compile_cache(folder: str) -> None:
    """Point JAX's persistent compilation cache at ``folder`` (created if missing): every
    program this process compiles afterwards is stored there and, when an identical one
    (the same computation, compiler options and jaxlib) was stored before, loaded instead
    of compiled. Tracing and lowering still run, to compute the cache key. ``ValueError``
    (one line, naming the flag) when the folder cannot be created."""
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as error:
        raise ValueError(f"--compile-cache {folder}: not a folder this process can create "
                         f"({error.strerror})") from None
    jax.config.update("jax_compilation_cache_dir", os.path.abspath(folder))
    compilation_cache.reset_cache()  # takes effect even after this process compiled before
