"""The ``acceptance_*`` settings a project's ``addopts`` gives, read as pytest reads them.

pytest prepends the configuration file's ``addopts`` to every run's arguments, so an honest
``pytest --acceptance spec.md`` honours ``-o acceptance_timeout=1`` or
``--acceptance-unticked fail`` written there. The gate's run reads only an ini of the settings
pinned at /implement (gate.py ``write_ini``): what addopts decides must be folded into those
settings, or /implement must refuse. ``effective_settings`` does that:

- ``-o k=v`` in each of argparse's spellings (``-o k=v``, ``-ok=v``, ``-qo k=v``,
  ``--override-ini=k=v``, ``--override-ini k=v``): the last one of a key wins over the file's
  key, as in pytest;
- an ``--acceptance-x`` option that has an ini twin ``acceptance_x`` (``APPLIED``) wins over
  both, as the plugin reads ``getoption(...) or getini(...)``;
- options that change no criterion's outcome (``IGNORED``) are left out; any other
  ``--acceptance*`` option is an ``AddoptsError`` naming it: the gate never runs on settings
  it could not reproduce.

Everything else in addopts (``--cov``, ``-p x``, ``-x``) is left out on purpose: the gate's
run loads only its own plugins, whatever the project's configuration asks for.
``PYTEST_ADDOPTS`` is no project setting: the hooks start the gate with a clean environment.

Standard library only: the gate's probe imports it in the project's interpreter.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

# Options given in addopts that the gate applies as the ini key they stand for (the plugin
# reads the option first, then the key): option -> (key, what a valid value is, or None).
APPLIED: dict[str, tuple[str, tuple[str, ...] | type | None]] = {
    "--acceptance-format": ("acceptance_format", None),
    "--acceptance-agent": ("acceptance_agent", ("claude", "command", "none")),
    "--acceptance-agent-command": ("acceptance_agent_command", None),
    "--acceptance-claude": ("acceptance_claude", None),
    "--acceptance-max-cost": ("acceptance_max_cost", float),
    "--acceptance-votes": ("acceptance_votes", int),
    "--acceptance-model": ("acceptance_model", None),
    "--acceptance-wave": ("acceptance_wave", int),
    "--acceptance-base": ("acceptance_base", None),
    "--acceptance-unticked": ("acceptance_unticked", ("list", "fail")),
}
# Options that decide no criterion's outcome in the gate's run: which specs a plain
# `pytest` collects (the gate verifies the flow's spec), outputs and their deltas, the
# signer of a sign-off, the log agents get as context, and the agent cache (the gate never
# reuses a pass).
IGNORED = frozenset(
    {
        "--acceptance",
        "--acceptance-html",
        "--acceptance-previous",
        "--acceptance-by",
        "--acceptance-note",
        "--acceptance-log",
        "--acceptance-cache",
    }
)
FLAGS = frozenset({"--acceptance-cache"})  # options that take no value
OPTIONAL_VALUE = frozenset({"--acceptance"})  # nargs="?"
OVERRIDE_LONG = "--override-ini"
# pytest's short options that take no value (a cluster goes on after them) and those that
# take one (the rest of the cluster is the value). A cluster with any other letter before
# an `o` cannot be read for sure and is refused.
SHORT_FLAGS = frozenset("vqsxl")
SHORT_WITH_VALUE = frozenset("kmcprWn")
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")  # argparse takes it as a value


class AddoptsError(ValueError):
    """The configuration's addopts cannot be reproduced by the gate's run."""


def effective_settings(
    keys: Mapping[str, str], addopts: str | Sequence[str] | None, source: str
) -> dict[str, str]:
    """The ``acceptance_*`` settings of a run whose configuration file (``source``, named in
    errors) holds ``keys`` and ``addopts`` (pytest's raw value: a string, or a TOML list)."""
    overrides: dict[str, str] = {}
    options: dict[str, str] = {}
    for option, value in _acceptance_words(_words(addopts, source), source):
        if option == OVERRIDE_LONG:
            key, _, setting = value.partition("=")
            if key.startswith("acceptance_"):
                overrides[key] = setting
        elif option in APPLIED:
            key, valid = APPLIED[option]
            if value:  # an empty value: the plugin falls back to the ini key
                options[key] = _checked(option, value, valid, source)
    return {**keys, **overrides, **options}


def _words(addopts: str | Sequence[str] | None, source: str) -> list[str]:
    if addopts is None:
        return []
    if not isinstance(addopts, str):
        return [str(word) for word in addopts]
    try:
        return shlex.split(addopts)  # as pytest's "args" ini type does
    except ValueError as error:
        raise AddoptsError(f"{source}: addopts cannot be split into words ({error})") from None


def _acceptance_words(words: list[str], source: str) -> list[tuple[str, str]]:
    """(option, value) for every -o and --acceptance* option of ``words``, in order."""
    found: list[tuple[str, str]] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":  # the rest are positional arguments
            break
        if word.startswith("--"):
            option, value, index = _long(word, words, index, source)
        elif word.startswith("-") and len(word) > 1 and not _NEGATIVE_NUMBER.match(word):
            option, value, index = _short(word, words, index, source)
        else:
            continue
        if option:
            found.append((option, value))
    return found


def _long(word: str, words: list[str], index: int, source: str) -> tuple[str, str, int]:
    option, equals, value = word.partition("=")
    if option == OVERRIDE_LONG:
        if not equals:
            value, index = _value(option, words, index, source)
        return option, _override(value, source), index
    if not option.startswith("--acceptance"):
        return "", "", index  # not ours: the gate's run does not load what it configures
    if option not in APPLIED and option not in IGNORED:
        raise AddoptsError(
            f"{source}: addopts gives {option}, which the gate's run cannot reproduce: "
            "remove it from addopts (pass it on the command line when you need it)"
        )
    if option in FLAGS:
        if equals:
            raise AddoptsError(f"{source}: addopts gives {word}: {option} takes no value")
        return option, "", index
    if not equals and option in OPTIONAL_VALUE:
        return option, "", index
    if not equals:
        value, index = _value(option, words, index, source)
    return option, value, index


def _short(word: str, words: list[str], index: int, source: str) -> tuple[str, str, int]:
    """An argparse cluster of short options: flags, then at most one option with a value."""
    for position, letter in enumerate(word[1:], start=1):
        if letter == "o":
            value = word[position + 1 :]
            if not value:
                value, index = _value("-o", words, index, source)
            return OVERRIDE_LONG, _override(value, source), index
        if letter in SHORT_WITH_VALUE:
            return "", "", index  # the rest of the word is that option's value
        if letter not in SHORT_FLAGS:
            if "o" in word[position:]:
                raise AddoptsError(
                    f"{source}: addopts word {word!r} cannot be read for sure: write "
                    "-o apart (-o key=value)"
                )
            return "", "", index
    return "", "", index


def _value(option: str, words: list[str], index: int, source: str) -> tuple[str, int]:
    """The next word as the option's value, as argparse takes it."""
    if index < len(words) and (
        not words[index].startswith("-") or _NEGATIVE_NUMBER.match(words[index])
    ):
        return words[index], index + 1
    raise AddoptsError(f"{source}: addopts gives {option} without its value")


def _override(value: str, source: str) -> str:
    if "=" not in value:
        raise AddoptsError(
            f"{source}: addopts gives -o {value!r}: pytest expects -o key=value (and refuses "
            "every run)"
        )
    return value


def _checked(option: str, value: str, valid: tuple[str, ...] | type | None, source: str) -> str:
    """``value`` when pytest's parser takes it for ``option``; AddoptsError otherwise (every
    honest run would stop on a usage error)."""
    if isinstance(valid, tuple):
        if value not in valid:
            raise AddoptsError(
                f"{source}: addopts gives {option} {value!r}: use one of {', '.join(valid)}"
            )
        return value
    if valid is not None:
        try:
            valid(value)
        except ValueError:
            raise AddoptsError(
                f"{source}: addopts gives {option} {value!r}: not a number"
            ) from None
    return value


def ini_text(settings: Mapping[str, str] | Sequence[tuple[str, str]]) -> str:
    """The configuration file of the gate's run for `settings` (key, value): a multi-line
    value continues on indented lines, as pytest reads an ini file."""
    lines = ["[pytest]"]
    for key, value in settings.items() if isinstance(settings, Mapping) else settings:
        first, *rest = str(value).splitlines() or [""]
        lines.append(f"{key} = {first}")
        lines += [f"    {line}" for line in rest]
    return "\n".join(lines) + "\n"
