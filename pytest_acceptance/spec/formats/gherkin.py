"""Gherkin ``.feature`` files: each scenario a criterion named by its name.

- ``Scenario: Withdraw within the balance`` is criterion ``Withdraw-within-the-balance``
  (unsafe characters as ``-``); its steps (``Given``/``When``/``Then``/``And``/``But``/``*``,
  with doc strings and tables) are what is checked, the ``Background`` is context;
- each example row of a ``Scenario Outline`` (``Scenario Template``) is a criterion of its
  own: ``<name>.1``, ``<name>.2``, ... over all its ``Examples`` tables, titled with the
  row's values, its steps with the ``<placeholders>`` filled in;
- tags (``@smoke``) of the feature, rule, scenario and examples are the criterion's tags,
  markers of its item (``-m smoke``); category: the feature (and rule) name; location: the
  scenario's line, or the example row's.

A scenario is a requirement of the spec, verified by its criterion (an outline: by its
rows). Who runs a scenario is decided where the spec is collected (``spec.bdd``): the
project's pytest-bdd or behave when it has one, else an agent judging the steps. English
keywords only; a ``# language:`` other than ``en`` is an error naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pytest_acceptance.model import Method, Scenario, Spec, SpecError, one_line
from pytest_acceptance.spec.formats.common import Builder, safe_id
from pytest_acceptance.spec.formats.document import Document

_FEATURE = re.compile(r"(?:Feature|Ability|Business Need)\s*:\s*(?P<name>.*)")
_RULE = re.compile(r"Rule\s*:\s*(?P<name>.*)")
_BACKGROUND = re.compile(r"Background\s*:\s*(?P<name>.*)")
_SCENARIO = re.compile(
    r"(?P<kind>Scenario Outline|Scenario Template|Scenario|Example)\s*:\s*(?P<name>.*)"
)
_EXAMPLES = re.compile(r"(?:Examples|Scenarios)\s*:\s*(?P<name>.*)")
_STEP = re.compile(r"(?:Given|When|Then|And|But)\b\s*|\*\s+")
_LANGUAGE = re.compile(r"#\s*language\s*:\s*(?P<code>\S+)", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"<(?P<name>[^<>\n]+)>")
_DOC_STRING = ('"""', "```")
AGENT_HOW = "agent: no pytest-bdd or behave in the project runs this scenario"
SHAPE = 'a Gherkin "Feature:" with "Scenario:" or "Scenario Outline:" blocks of steps'


def is_feature(text: str) -> bool:
    """The first line that is not blank, a comment or tags opens a feature (or a
    ``# language:`` header says the file is Gherkin)."""
    for line in text.split("\n"):
        stripped = line.strip()
        if _LANGUAGE.match(stripped):
            return True
        if not stripped or stripped.startswith(("#", "@")):
            continue
        return _FEATURE.match(stripped) is not None
    return False


@dataclass
class _Scenario:
    name: str
    line: int
    outline: bool
    tags: tuple[str, ...]
    steps: list[str] = field(default_factory=list)
    examples: list[tuple[int, dict[str, str], tuple[str, ...]]] = field(default_factory=list)
    header: list[str] | None = None  # of the Examples table being read
    example_tags: tuple[str, ...] = ()


@dataclass
class _Reader:
    path: Path
    feature: str = ""
    feature_tags: tuple[str, ...] = ()
    rule: str = ""
    rule_tags: tuple[str, ...] = ()
    background: list[str] = field(default_factory=list)
    pending_tags: tuple[str, ...] = ()
    scenario: _Scenario | None = None
    in_background: bool = False
    scenarios: list[tuple[_Scenario, str, tuple[str, ...], str]] = field(default_factory=list)
    doc_string: str | None = None  # the delimiter of an open doc string


class GherkinFormat:
    name = "gherkin"

    def detect(self, text: str) -> float:
        return 1.0 if is_feature(text) else 0.0

    def parse(self, text: str, path: Path) -> Spec:
        reader = _Reader(path)
        # Lines end at "\n" only, as spec lines are counted everywhere (not at "\x85").
        for number, line in enumerate(text.split("\n"), 1):
            _read_line(reader, number, line)
        _close(reader)
        builder = Builder(path, Document(""))
        for scenario, category, tags, context in reader.scenarios:
            _add(builder, scenario, category, tags, context)
        return builder.spec(SHAPE, title=reader.feature)


def _read_line(reader: _Reader, number: int, line: str) -> None:
    stripped = line.strip()
    if reader.doc_string is not None:
        if stripped.startswith(reader.doc_string):
            reader.doc_string = None
        else:
            _step_text(reader, "  " + stripped)
        return
    if stripped.startswith(_DOC_STRING):
        reader.doc_string = stripped[:3]
        return
    if not stripped:
        return
    if stripped.startswith("#"):
        language = _LANGUAGE.match(stripped)
        if language and language["code"].lower() not in ("en", "en-us", "en-gb"):
            raise SpecError(
                reader.path,
                number,
                f"the feature is written in language {language['code']!r}: pytest-acceptance "
                "reads English Gherkin keywords only",
            )
        return
    if stripped.startswith("@"):
        reader.pending_tags += tuple(
            t[1:] for t in stripped.split("#", 1)[0].split() if t.startswith("@") and len(t) > 1
        )
        return
    _keyword_line(reader, number, stripped)


def _keyword_line(reader: _Reader, number: int, stripped: str) -> None:
    tags, reader.pending_tags = reader.pending_tags, ()
    if found := _FEATURE.match(stripped):
        reader.feature, reader.feature_tags = found["name"].strip(), tags
    elif found := _RULE.match(stripped):
        _close(reader)
        reader.rule, reader.rule_tags, reader.background = found["name"].strip(), tags, []
    elif _BACKGROUND.match(stripped):
        _close(reader)
        reader.in_background = True
    elif found := _SCENARIO.match(stripped):
        _close(reader)
        outline = found["kind"] in ("Scenario Outline", "Scenario Template")
        reader.scenario = _Scenario(found["name"].strip(), number, outline, tags)
    elif _EXAMPLES.match(stripped) and reader.scenario is not None:
        reader.scenario.header, reader.scenario.example_tags = [], tags
    elif stripped.startswith("|"):
        _table_row(reader, number, stripped)
    elif _STEP.match(stripped):
        _step(reader, stripped)
    # anything else is free description text


def _step(reader: _Reader, stripped: str) -> None:
    if reader.in_background:
        reader.background.append(stripped)
    elif reader.scenario is not None:
        reader.scenario.steps.append(stripped)


def _step_text(reader: _Reader, text: str) -> None:
    if reader.in_background and reader.background:
        reader.background[-1] += "\n" + text
    elif reader.scenario is not None and reader.scenario.steps:
        reader.scenario.steps[-1] += "\n" + text


def _table_row(reader: _Reader, number: int, stripped: str) -> None:
    cells = [cell.strip() for cell in stripped.strip("|").split("|")]
    scenario = reader.scenario
    if scenario is not None and scenario.header is not None:
        if not scenario.header:
            scenario.header = cells
        else:
            values = dict(zip(scenario.header, cells, strict=False))
            scenario.examples.append((number, values, scenario.example_tags))
        return
    _step_text(reader, "  " + stripped)  # a step's data table


def _close(reader: _Reader) -> None:
    reader.in_background = False
    if reader.scenario is None:
        return
    category = " — ".join(part for part in (reader.feature, reader.rule) if part)
    tags = reader.feature_tags + reader.rule_tags + reader.scenario.tags
    context = "Background:\n" + "\n".join(reader.background) if reader.background else ""
    reader.scenarios.append((reader.scenario, category, tags, context))
    reader.scenario = None


def _add(
    builder: Builder, scenario: _Scenario, category: str, tags: tuple[str, ...], context: str
) -> None:
    name = scenario.name or f"Scenario at line {scenario.line}"
    base = safe_id(name) or f"Scenario-{scenario.line}"
    requirement = builder.requirement(base, name, scenario.line)
    if not scenario.outline:
        _criterion(
            builder,
            base,
            scenario.line,
            name,
            scenario.steps,
            category,
            tags,
            context,
            Scenario(name, scenario.line),
            requirement,
        )
        return
    if not scenario.examples:
        builder.error(scenario.line, f"scenario outline {name!r} has no Examples rows")
        return
    for index, (line, values, example_tags) in enumerate(scenario.examples, 1):
        shown = ", ".join(f"{k}={v}" for k, v in values.items())
        steps = [_fill(step, values) for step in scenario.steps]
        _criterion(
            builder,
            f"{base}.{index}",
            line,
            f"{name} ({shown})",
            steps,
            category,
            tags + example_tags,
            context,
            Scenario(name, scenario.line, index, line),
            requirement,
        )


def _criterion(
    builder: Builder,
    ident: str,
    line: int,
    title: str,
    steps: list[str],
    category: str,
    tags: tuple[str, ...],
    context: str,
    scenario: Scenario,
    requirement: str,
) -> None:
    checks = tuple(steps) or (title,)
    builder.add(
        ident,
        line,
        title=one_line(title, 100),
        text=f"Scenario: {title}",
        steps=steps,
        context=context,
        category=category,
        fields={"method": Method.SUBAGENT, "checks": checks},
        how=AGENT_HOW,
        requirement=requirement,
        extra={"tags": tuple(dict.fromkeys(tags)), "scenario": scenario},
    )


def _fill(step: str, values: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values.get(m["name"], m[0]), step)


FORMAT = GherkinFormat()
