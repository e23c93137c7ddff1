"""The verification block of a criterion: YAML 1.2 core loading, then key validation.

PyYAML resolves plain scalars by YAML 1.1 rules: ``2026-01-17`` becomes a date, ``no`` and
``on`` become booleans, ``1:30`` becomes 90. A spec author who writes ``pass_condition: no``
or ``timeout: 1:30`` means the text, so this loader keeps the safe constructors but resolves
plain scalars by the YAML 1.2 core schema: null, true/false, decimal/octal (0o)/hex (0x)
ints and floats; everything else stays a string. Duplicate keys are an error, because a
silently overridden ``command:`` could turn a failing check into a passing one.

The block is hostile input, so loading is bounded before libyaml builds anything: nesting
deeper than ``MAX_DEPTH`` (libyaml's composer recurses in C and crashes the process on
~25,000 levels), aliases that expand to more than ``MAX_NODES`` values (a few hundred bytes
can otherwise stand for billions), numbers longer than ``MAX_NUMBER_DIGITS`` and explicit
tags on the wrong kind of content all end as a ``YamlProblem`` with a line. Messages quote
values through ``shown``, which never renders more than a short excerpt.

``criterion_fields`` then checks the keys of each method and their types, and says what to
write instead of what it found.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable
from typing import Any

import yaml

from pytest_acceptance.model import Method, Priority


def _fast_loader() -> type[yaml.SafeLoader]:
    """libyaml's safe loader, unless it is missing or stale.

    libyaml's parser builds nodes from the ``yaml.nodes`` classes of the first ``import yaml``.
    When ``yaml`` is imported again in the same process (pytester's in-process runs drop
    modules between runs), those classes are no longer the resolver's, and every node
    resolves to tag None. The pure-Python parser is always consistent, just slower.
    """
    libyaml = getattr(yaml, "_yaml", None)
    if getattr(libyaml, "ScalarNode", None) is yaml.nodes.ScalarNode:
        return yaml.CSafeLoader  # type: ignore[return-value]  # libyaml's, same interface
    return yaml.SafeLoader


_BaseLoader = _fast_loader()

_INT = re.compile(r"[-+]?[0-9]+\Z|0o[0-7]+\Z|0x[0-9a-fA-F]+\Z")
_FLOAT = re.compile(
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z"
    r"|[-+]?\.(?:inf|Inf|INF)\Z|\.(?:nan|NaN|NAN)\Z"
)


MAX_DEPTH = 64  # nested collections; a verification block needs 3
MAX_NODES = 10_000  # values after alias expansion
MAX_NUMBER_DIGITS = 100
MAX_TEXT = 500  # characters of a value quoted in a message
# Each nesting level needs one of these: a flow opener, a block sequence or complex-key
# entry, or a mapping colon. Fewer of them than MAX_DEPTH cannot nest deeper.
_NESTING_INDICATORS = "[{-?:"
# What PyYAML's constructors raise on content that does not fit an explicit tag
# (found by tests/fuzz: ``!!timestamp`` on an empty value raises AttributeError).
_CONSTRUCTION_ERRORS = (ValueError, TypeError, KeyError, IndexError, OverflowError, AttributeError)


class Yaml12Loader(_BaseLoader):  # type: ignore[misc,valid-type]
    """Safe loader (libyaml's when available) with YAML 1.2 core implicit typing."""

    yaml_implicit_resolvers: dict[Any, list[tuple[str, re.Pattern[str]]]] = {}  # noqa: RUF012

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """A value the constructor cannot build (``!!int abc``, ``!!timestamp 2001-13-45``)
        is a YAML problem at its node, not a ValueError from deep inside PyYAML."""
        try:
            return super().construct_object(node, deep=deep)
        except yaml.YAMLError:
            raise
        except _CONSTRUCTION_ERRORS as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {_tag(node.tag)} value: {_problem(exc)}", node.start_mark
            ) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                if key_node.value in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {shown(key_node.value)}", key_node.start_mark
                    )
                seen.add(key_node.value)
        return dict(super().construct_mapping(node, deep=deep))


def _construct_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if len(text) > MAX_NUMBER_DIGITS:
        raise ValueError(f"a number of {len(text)} digits (at most {MAX_NUMBER_DIGITS})")
    if text.startswith(("0o", "0x")):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text)


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    text = str(loader.construct_scalar(node)).lower()
    if len(text) > MAX_NUMBER_DIGITS:
        raise ValueError(f"a number of {len(text)} characters (at most {MAX_NUMBER_DIGITS})")
    if text.endswith(".inf"):
        return -math.inf if text.startswith("-") else math.inf
    if text == ".nan":
        return math.nan
    return float(text)


def _register() -> None:
    resolve = Yaml12Loader.add_implicit_resolver
    resolve("tag:yaml.org,2002:null", re.compile(r"(?:~|null|Null|NULL|)\Z"), ["~", "n", "N", ""])
    resolve("tag:yaml.org,2002:bool", re.compile(r"(?:true|True|TRUE|false|False|FALSE)\Z"), None)
    resolve("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
    resolve("tag:yaml.org,2002:float", _FLOAT, list("-+.0123456789"))
    resolve("tag:yaml.org,2002:merge", re.compile(r"<<\Z"), ["<"])
    Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
    Yaml12Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)


_register()


class YamlProblem(Exception):
    """The block is not valid YAML. ``line`` is 0-based within the block's text."""

    def __init__(self, line: int, problem: str) -> None:
        super().__init__(line, problem)
        self.line = line
        self.problem = problem


def load_block(text: str) -> Any:
    """Parse one YAML document (``YamlProblem`` when it is not valid YAML or too big)."""
    try:
        _check_depth(text)
        loader = Yaml12Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_nodes(node)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise YamlProblem(_text_line(text, mark.line) if mark else 0, _describe(exc)) from None
    except yaml.YAMLError as exc:
        raise YamlProblem(0, _bounded(str(exc))) from None
    except (*_CONSTRUCTION_ERRORS, RecursionError) as exc:
        raise YamlProblem(0, f"cannot read the block: {_problem(exc)}") from None


def _check_depth(text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH before libyaml composes it (its composer
    recurses in C). Most blocks have too few indicators to nest that deep at all; the
    others are scanned as events, which libyaml produces without recursion."""
    if sum(text.count(char) for char in _NESTING_INDICATORS) < MAX_DEPTH:
        return
    depth = 0
    for event in yaml.parse(text, Loader=Yaml12Loader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise yaml.MarkedYAMLError(
                    problem=f"nested more than {MAX_DEPTH} levels deep",
                    problem_mark=event.start_mark,  # type: ignore[arg-type]  # libyaml's mark
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


_COLLECTION_TAGS = {
    "tag:yaml.org,2002:map": yaml.MappingNode,
    "tag:yaml.org,2002:set": yaml.MappingNode,
    "tag:yaml.org,2002:seq": yaml.SequenceNode,
    "tag:yaml.org,2002:omap": yaml.SequenceNode,
    "tag:yaml.org,2002:pairs": yaml.SequenceNode,
}


def _check_nodes(root: yaml.Node) -> None:
    """Count the values aliases expand to (each shared node once, so a bomb is counted,
    never expanded) and refuse a collection tag on the wrong kind of node."""
    sizes: dict[int, int] = {}

    def size(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        wanted = _COLLECTION_TAGS.get(node.tag)
        if wanted is not None and not isinstance(node, wanted):
            kind = "mapping" if wanted is yaml.MappingNode else "sequence"
            raise yaml.constructor.ConstructorError(
                None, None, f"{_tag(node.tag)} needs a {kind}", node.start_mark
            )
        sizes[id(node)] = 1  # a node that contains itself counts once
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(key) + size(value) for key, value in node.value)
        if total > MAX_NODES:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"more than {MAX_NODES} values once aliases are expanded",
                node.start_mark,
            )
        sizes[id(node)] = total
        return total

    size(root)


def key_lines(text: str) -> dict[str, int]:
    """The 0-based line of each top-level key of a valid block (for error messages only)."""
    node = yaml.compose(text, Loader=Yaml12Loader)
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {
        str(key.value): _text_line(text, key.start_mark.line)
        for key, _ in node.value
        if isinstance(key, yaml.ScalarNode)
    }


_YAML_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")


def _text_line(text: str, yaml_line: int) -> int:
    """A YAML line number as a line of the file: YAML also breaks lines at U+0085, U+2028
    and U+2029, markdown only at newlines (found by tests/fuzz: a block of U+2028s put
    the error past the end of the file)."""
    if not any(char in text for char in "\x85\u2028\u2029\r"):
        return yaml_line
    newlines = 0
    for count, found in enumerate(_YAML_BREAK.finditer(text), start=1):
        if count > yaml_line:
            break
        newlines += "\n" in found[0]
    return newlines


def _describe(exc: yaml.MarkedYAMLError) -> str:
    parts = [exc.context or "", exc.problem or ""]
    return _bounded(" ".join(part for part in parts if part) or "invalid YAML")


def _tag(tag: str) -> str:
    return _bounded(tag.replace("tag:yaml.org,2002:", "!!"), 100)


def _problem(exc: BaseException) -> str:
    return _bounded(str(exc) or type(exc).__name__)


def _bounded(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown(value: Any) -> str:
    """``repr`` of a scalar, cut to a short excerpt; a collection by its kind only (its
    repr may be nested past the recursion limit, or an alias bomb's expansion)."""
    if isinstance(value, (list, dict, set, tuple)):
        return _kind(value)
    if isinstance(value, str):
        return repr(_bounded(value, 200))
    return _bounded(repr(value), 200)


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
            _bounded(str(key), 200),
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
