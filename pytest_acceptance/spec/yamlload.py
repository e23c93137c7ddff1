"""The verification block of a criterion: loading by YAML 1.2 core rules, then key validation.

A flat block (``key: scalar`` lines, nearly all of them) is read by ``flat_yaml``, which
needs no YAML parser; any other goes to PyYAML through ``yaml12``, imported only then. Both
type plain scalars by the YAML 1.2 core schema (``pass_condition: no`` and
``timeout: 1:30`` stay text), and both answer the same for a flat block; every problem is
``yaml12``'s, since the flat reader declines whatever it is unsure of.

``criterion_fields`` then checks the keys of each method and their types, and says what to
write instead of what it found.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from typing import Any

from pytest_acceptance.model import Method, Priority
from pytest_acceptance.spec import flat_yaml

MAX_TEXT = 500  # characters of a value quoted in a message


class YamlProblem(Exception):
    """The block is not valid YAML. ``line`` is 0-based within the block's text."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(line, problem)
        self.line = line
        self.problem = problem


def load_block(text: str) -> Any:
    """Parse one YAML document (``YamlProblem`` when it is not valid YAML or too big)."""
    flat = flat_yaml.read_flat(text)
    if flat is not None:
        return flat
    from pytest_acceptance.spec.yaml12 import load_yaml  # PyYAML: only for a block that needs it

    return load_yaml(text)


def key_lines(text: str) -> dict[str, int]:
    """The 0-based line of each top-level key of a valid block (for error messages only)."""
    from pytest_acceptance.spec.yaml12 import key_lines as lines_of_keys

    return lines_of_keys(text)


def bounded(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown(value: Any) -> str:
    """``repr`` of a scalar, cut to a short excerpt; a collection by its kind only (its
    repr may be nested past the recursion limit, or an alias bomb's expansion)."""
    if isinstance(value, (list, dict, set, tuple)):
        return _kind(value)
    if isinstance(value, str):
        return repr(bounded(value, 200))
    return bounded(repr(value), 200)


# --- Keys of a verification block ------------------------------------------------------------

_COMMON_KEYS = ("method", "timeout", "retries", "priority")
_METHOD_KEYS = {
    Method.BASH: (*_COMMON_KEYS, "command", "pass_condition", "cwd"),
    Method.SUBAGENT: (*_COMMON_KEYS, "agent", "checks", "model", "votes"),
    Method.MANUAL: (*_COMMON_KEYS, "checks"),
}
_METHODS = "bash, subagent or manual"
# A task criterion comes from a task list, never from a verification block.
_YAML_METHODS = {m.value: m for m in _METHOD_KEYS}
_DURATION = re.compile(
    r"(?P<amount>[0-9]+(?:\.[0-9]+)?)\s*"
    r"(?P<unit>s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?)?\Z",
    re.IGNORECASE,
)
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600}
MAX_TIMEOUT = 7 * 24 * 3600.0  # a week: beyond it a number is a typo, and time APIs overflow
MAX_RETRIES = 100
MAX_VOTES = 15  # judges of one agent check, all at once
MAX_FIELD_CHARS = 10_000  # pass_condition, agent, model, one check
# A command is one argv entry of `bash -c`: Linux refuses one over 128 KiB (MAX_ARG_STRLEN).
_TEXT_LIMITS = {"command": 100_000}
_PRIORITIES = {p.value: p for p in Priority}


class FieldError(Exception):
    """A verification block value is wrong. ``key`` is None for the block as a whole."""

    def __init__(self, key: str | None, message: str) -> None:
        super().__init__(key, message)
        self.key = key
        self.message = message

    def __str__(self) -> str:
        return self.message


def criterion_fields(data: Any) -> dict[str, Any]:
    """Validate a loaded verification block into keyword arguments of ``Criterion``."""
    if not isinstance(data, dict):
        raise FieldError(
            None,
            f"the verification block is {_kind(data)}, not a mapping: write key: value lines "
            "starting with method: bash | subagent | manual",
        )
    method = _method(data)
    _reject_unknown_keys(data, method)
    if method is Method.BASH and "command" not in data:
        raise FieldError("method", 'method bash needs a "command": add command: "<shell command>"')
    checks = data.get("checks")
    return {
        "method": method,
        "command": _optional_text(data, "command"),
        "pass_condition": _optional_text(data, "pass_condition"),
        "timeout": None if data.get("timeout") is None else _timeout(data["timeout"]),
        "retries": None if data.get("retries") is None else _retries(data["retries"]),
        "agent": _optional_text(data, "agent"),
        "checks": () if checks is None else _checks(checks),
        "model": _optional_text(data, "model"),
        "priority": Priority.MUST if data.get("priority") is None else _priority(data["priority"]),
        "cwd": _cwd(data),
        "votes": None if data.get("votes") is None else _votes(data["votes"]),
    }


def _method(data: dict[Any, Any]) -> Method:
    if "method" not in data:
        raise FieldError(
            None, 'the verification block has no "method": add method: bash | subagent | manual'
        )
    value = data["method"]
    if not isinstance(value, str):
        raise FieldError("method", f'"method" must be {_METHODS}, found {_kind(value)}')
    method = _YAML_METHODS.get(value.strip().lower())
    if method is None:
        hint = _did_you_mean(value.strip().lower(), list(_YAML_METHODS))
        raise FieldError("method", f"unknown method {shown(value)}: use {_METHODS}{hint}")
    return method


def _reject_unknown_keys(data: dict[Any, Any], method: Method) -> None:
    known = _METHOD_KEYS[method]
    for key in data:
        if key in known:
            continue
        owners = [m.value for m, keys in _METHOD_KEYS.items() if key in keys]
        elsewhere = f' ("{key}" belongs to method {" / ".join(owners)})' if owners else ""
        raise FieldError(
            bounded(str(key), 200),
            f"unknown key {shown(key)} for method {method.value}{elsewhere}: known keys are "
            f"{', '.join(known)}{_did_you_mean(str(key), known)}",
        )


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    if len(word) > 40:  # no spelling of a known word; and keeps difflib cheap
        return ""
    close = difflib.get_close_matches(word, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _optional_text(data: dict[Any, Any], key: str) -> str | None:
    value = data.get(key)
    if value is None:
        if key in data and key == "command":
            raise FieldError(key, '"command" is empty: write the shell command to run')
        return None
    if not isinstance(value, str):
        raise FieldError(
            key,
            f'"{key}" must be a string, found {_kind(value)}: quote it, '
            f'e.g. {key}: "{_example(value)}"',
        )
    if not value.strip():
        raise FieldError(key, f'"{key}" is empty: write a value or remove the key')
    limit = _TEXT_LIMITS.get(key, MAX_FIELD_CHARS)
    if len(value) > limit:
        raise FieldError(key, f'"{key}" has {len(value)} characters, more than {limit}')
    return value


def _cwd(data: dict[Any, Any]) -> str | None:
    """A folder relative to the spec's folder: an absolute one would tie the spec to one
    machine."""
    value = _optional_text(data, "cwd")
    if value is None:
        return None
    if value.startswith(("/", "~")) or "\0" in value:
        raise FieldError(
            "cwd",
            f'"cwd" must be a folder relative to the spec\'s folder (".", "..", "app"), '
            f"found {shown(value)}",
        )
    return value


def _example(value: Any) -> str:
    if isinstance(value, (bool, int, float)) and len(shown(value)) < 40:
        return str(value).lower() if isinstance(value, bool) else str(value)
    return "..."


DURATION_EXAMPLES = '"90s", "5m", "2 min", "1h"'


def parse_duration(text: str) -> float | None:
    """Seconds in ``90``, ``90s``, ``5m``, ``2 min``, ``1.5 hours``; None for anything else.
    A spec's ``timeout:`` and the ini durations (options.py) read the same units."""
    match = _DURATION.match(text.strip())
    if match is None:
        return None
    unit = (match["unit"] or "s")[0].lower()
    return float(match["amount"]) * _UNIT_SECONDS[unit]


def _timeout(value: Any) -> float:
    wanted = f"a positive number of seconds or a duration like {DURATION_EXAMPLES}"
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise FieldError("timeout", f'"timeout" must be {wanted}, found {_kind(value)}')
    if isinstance(value, str):
        seconds = parse_duration(value)
        if seconds is None:
            raise FieldError("timeout", f'"timeout" must be {wanted}, found {shown(value)}')
        value = seconds
    if not (0 < value <= MAX_TIMEOUT):  # also refuses nan, inf and 1e306
        raise FieldError(
            "timeout", f'"timeout" must be {wanted}, at most {MAX_TIMEOUT:g}, found {shown(value)}'
        )
    return float(value)


def _retries(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RETRIES:
        found = shown(value) if isinstance(value, int) and not isinstance(value, bool) else ""
        raise FieldError(
            "retries",
            f'"retries" must be a whole number >= 0 (at most {MAX_RETRIES}), '
            f"found {found or _kind(value)}",
        )
    return value


def _votes(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_VOTES:
        found = shown(value) if isinstance(value, int) and not isinstance(value, bool) else ""
        raise FieldError(
            "votes",
            f'"votes" must be a whole number of judges >= 1 (at most {MAX_VOTES}), '
            f"found {found or _kind(value)}",
        )
    return value


def _priority(value: Any) -> Priority:
    wanted = "MUST, SHOULD, COULD or WONT"
    if not isinstance(value, str):
        raise FieldError("priority", f'"priority" must be {wanted}, found {_kind(value)}')
    normal = value.strip().upper().replace("'", "").replace("\u2019", "")
    if normal not in _PRIORITIES:
        hint = _did_you_mean(normal, _PRIORITIES)
        raise FieldError("priority", f"unknown priority {shown(value)}: use {wanted}{hint}")
    return _PRIORITIES[normal]


def _checks(value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list):
        raise FieldError("checks", f'"checks" must be a list of strings, found {_kind(value)}')
    for number, item in enumerate(items, start=1):
        if not isinstance(item, str):
            raise FieldError(
                "checks",
                f'"checks" must be a list of strings, but check {number} is {_kind(item)}: '
                "quote it",
            )
        if not item.strip():
            raise FieldError("checks", f"check {number} is empty: write what to check")
        if len(item) > MAX_FIELD_CHARS:
            raise FieldError(
                "checks", f"check {number} is longer than {MAX_FIELD_CHARS} characters"
            )
    return tuple(items)


def _kind(value: Any) -> str:
    """How a spec author would name the type of ``value``."""
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({shown(value)})"
    if isinstance(value, str):
        return f"a string ({shown(value)})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (set, tuple)):
        return f"a {type(value).__name__}"
    return f"a {type(value).__name__} ({shown(value)})"
