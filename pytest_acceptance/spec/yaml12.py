"""YAML 1.2 core loading through PyYAML: what ``spec.yamlload`` hands a block that is not
flat (``spec.flat_yaml`` reads those), and the line of each key for error messages.

PyYAML resolves plain scalars by YAML 1.1 rules: ``2026-01-17`` becomes a date, ``no`` and
``on`` become booleans, ``1:30`` becomes 90. A spec author who writes ``pass_condition: no``
or ``timeout: 1:30`` means the text, so this loader keeps the safe constructors but resolves
plain scalars by the YAML 1.2 core schema (``flat_yaml``): null, true/false, decimal/octal
(0o)/hex (0x) ints and floats; everything else stays a string. Duplicate keys are an error,
because a silently overridden ``command:`` could turn a failing check into a passing one.

The block is hostile input, so loading is bounded before libyaml builds anything: nesting
deeper than ``MAX_DEPTH`` (libyaml's composer recurses in C and crashes the process on
~25,000 levels), aliases that expand to more than ``MAX_NODES`` values (a few hundred bytes
can otherwise stand for billions), numbers longer than ``flat_yaml.MAX_NUMBER_DIGITS`` and explicit
tags on the wrong kind of content all end as a ``YamlProblem`` with a line. Messages quote
values through ``shown``, which never renders more than a short excerpt.

Importing PyYAML costs more than reading a few hundred flat blocks: only a block that needs
it, a message that needs a key's line, or the sign-off file imports this module.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from pytest_acceptance.spec.flat_yaml import BOOL, FLOAT, INT, NULL, float_value, int_value
from pytest_acceptance.spec.yamlload import YamlProblem, bounded, shown


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

MAX_DEPTH = 64  # nested collections; a verification block needs 3
MAX_NODES = 10_000  # values after alias expansion
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
    return int_value(str(loader.construct_scalar(node)))


def _construct_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    return float_value(str(loader.construct_scalar(node)))


def _register() -> None:
    resolve = Yaml12Loader.add_implicit_resolver
    resolve("tag:yaml.org,2002:null", NULL, ["~", "n", "N", ""])
    resolve("tag:yaml.org,2002:bool", BOOL, None)
    resolve("tag:yaml.org,2002:int", INT, list("-+0123456789"))
    resolve("tag:yaml.org,2002:float", FLOAT, list("-+.0123456789"))
    resolve("tag:yaml.org,2002:merge", re.compile(r"<<\Z"), ["<"])
    Yaml12Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)
    Yaml12Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)


_register()


def load_yaml(text: str) -> Any:
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
        raise YamlProblem(0, bounded(str(exc))) from None
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
    return bounded(" ".join(part for part in parts if part) or "invalid YAML")


def _tag(tag: str) -> str:
    return bounded(tag.replace("tag:yaml.org,2002:", "!!"), 100)


def _problem(exc: BaseException) -> str:
    return bounded(str(exc) or type(exc).__name__)
