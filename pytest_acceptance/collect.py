"""The collect stage: a spec file becomes one pytest item per criterion.

Shaped like pytest's "non-python tests" example: ``SpecFile.collect`` parses and yields
``CriterionItem``s; an item's ``runtest`` hands the criterion to the runner of its method
(the ``pytest_acceptance_run`` hook) and keeps the ``Result`` for the recorder.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_acceptance.model import (
    Budget,
    Criterion,
    Method,
    Result,
    RunContext,
    Spec,
    SpecError,
    Status,
    listed_errors,
    raise_all,
)
from pytest_acceptance.options import origin_of, read_ini, spec_origins
from pytest_acceptance.run.conditions import ConditionError, NaturalLanguage, parse_condition
from pytest_acceptance.spec.cache import parse_spec_cached
from pytest_acceptance.store import optional_dir
from pytest_acceptance.text import display_path, spec_location
from pytest_acceptance.verdict.decision import message_beyond_issues

if TYPE_CHECKING:
    from pytest_acceptance.spec.formats import FormatChoice

_parsed: dict[tuple[Path, int, int, bytes, Path | None], Spec] = {}
# The order criterion items were made in: the spec order a shuffle of the items is undone to.
_made = itertools.count()


def load_spec(path: Path, rootdir: Path, origin: Path | None = None) -> Spec:
    """Parse once per process (the controller and the collector may both need it), and
    across runs keep the parsed spec keyed by its bytes, as Python keeps bytecode: a large
    spec is not re-parsed by every run and every xdist worker. ``origin``: the project's
    spec that ``path`` is a copy of (the gate verifies a pinned copy), whose reading it is:
    the format and the BDD runner are decided where the origin lies, so the copy gives the
    criteria the origin gives (only their locations name the copy)."""
    from pytest_acceptance.spec.formats import active

    choice = active()  # the run's formats (plugin.spec_paths activates them)
    stat = path.stat()
    key = (path.resolve(), stat.st_mtime_ns, stat.st_size, choice.key, origin)
    if key not in _parsed:
        _parsed[key] = _read(path, rootdir, origin, choice)
    return _parsed[key]


def spec_of_run(config: pytest.Config, path: Path) -> Spec:
    """``load_spec`` of one of the run's specs, read as its origin when it is a copy."""
    return load_spec(path, config.rootpath, origin_of(config, path))


def _read(path: Path, rootdir: Path, origin: Path | None, choice: FormatChoice) -> Spec:
    from pytest_acceptance.spec.bdd import bound  # the project's BDD runner, if any

    if origin is not None:  # never from or into the parse cache: it is keyed by its path
        from pytest_acceptance.spec.load import parse_spec_as, relocated

        spec = parse_spec_as(path, origin, choice.formats, choice.forced)
        return relocated(bound(spec, rootdir), origin, path)
    # The Claude Code gate's own run sets ACCEPTANCE_PARSE_CACHE=0: no pickle is loaded
    # from the agent-writable .acceptance/.
    gate_run = os.environ.get("ACCEPTANCE_PARSE_CACHE") == "0"
    cache = None if gate_run else optional_dir(rootdir, "parse-cache")
    return bound(parse_spec_cached(path, cache, choice), rootdir)


class SpecFile(pytest.File):
    def collect(self) -> Iterator[CriterionItem]:
        spec = spec_of_run(self.config, self.path)
        errors: list[SpecError] = []
        for criterion in spec.criteria:
            try:
                _check_pass_condition(criterion)
            except SpecError as error:
                errors.append(error)
        raise_all(errors)  # every malformed condition of the spec at once
        for criterion in spec.criteria:
            yield CriterionItem.from_parent(self, name=criterion.id, criterion=criterion)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, SpecError):  # every problem of the spec, one a line
            rootdir = self.config.rootpath
            return "\n".join(
                listed_errors(
                    excinfo.value.errors,
                    lambda error: (
                        f"{display_path(error.path, rootdir)}:{error.line}: {error.message}"
                    ),
                )
            )
        return super().repr_failure(excinfo)


def _check_pass_condition(criterion: Criterion) -> None:
    """A malformed vocabulary phrase is a spec error, found before anything runs."""
    if criterion.method is not Method.BASH:
        return
    try:
        parse_condition(criterion.pass_condition)
    except ConditionError as error:
        line = criterion.verification_line or criterion.location.line
        raise SpecError(criterion.location.path, line, f"{criterion.id}: {error}") from None


def _name_the_cut(result: Result, budget: Budget) -> Result:
    """A criterion its budget ran out on says who cut it, whatever its runner said."""
    if result.status.passed or budget.left() or budget.source in result.message:
        return result
    message = f"{result.message} (cut by {budget.source})"
    return dataclasses.replace(result, message=message)


class CriterionFailed(Exception):
    """Raised by ``runtest`` when a criterion did not pass; carries its result."""

    def __init__(self, result: Result) -> None:
        super().__init__(result.status.value)
        self.result = result


class CriterionItem(pytest.Item):
    def __init__(self, *, criterion: Criterion, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.criterion = criterion
        self.result: Result | None = None
        self.runs: list[Result] = []  # each run in this session (pytest-rerunfailures reruns)
        self.collected_as = next(_made)
        self.add_marker(shared_mark(self.config, criterion.method.value))
        # -m must, -m "not wont"
        self.add_marker(shared_mark(self.config, criterion.priority.value.lower()))
        if criterion.category:
            self.add_marker(
                shared_mark(self.config, category_marker(self.config, criterion.category))
            )
        for tag in criterion.tags:  # Gherkin @tags: -m smoke
            self.add_marker(shared_mark(self.config, category_marker(self.config, tag, "tagged")))
        for label in allure_labels(self.config, criterion):
            self.add_marker(label)
        # -k matches words of the title and the category (substrings, as pytest does).
        self.extra_keyword_matches.update(w for w in (criterion.title, criterion.category) if w)
        # junitxml writes these as <properties>: the CI gate sees id, title, method, priority.
        self.user_properties += [
            ("criterion", criterion.id),
            ("title", criterion.title),
            ("method", criterion.method.value),
            ("priority", criterion.priority.value),
        ]

    def runtest(self) -> None:
        if self.criterion.method is Method.MANUAL:
            from pytest_acceptance.verdict.signoff import manual_result

            self.result = manual_result(self.criterion, self.config)
            if self.result.status is Status.PASSED:  # a person signed off its current text
                facts = self.result.extra["sign_off"]
                self.user_properties += [("signed_off_by", facts["by"])]
                self.user_properties += [("signed_off_at", facts["at"])]
                return
            pytest.skip(f"manual criterion {self.criterion.id}: {self.result.message}")
        from pytest_acceptance.run.pytest_tools import runs_result

        if getattr(self, "execution_count", 1) <= 1:
            # Not a rerun of pytest-rerunfailures (which counts them on the item): the
            # item runs again (a repeating plugin), which is a result of its own.
            self.runs = []
        self.runs.append(self._run())
        self.result = runs_result(self.runs)
        self.user_properties += agent_properties(self.result)  # JUnit <properties>
        if self.result.status is Status.UNTICKED:  # listed, neither a pass nor a failure
            pytest.skip(f"task {self.criterion.id} is not ticked: {self.result.message}")
        if not self.result.status.passed:
            raise CriterionFailed(self.result)

    def _run(self) -> Result:
        from pytest_acceptance.run.pytest_tools import budget_of

        context = run_context(self.config)
        budget = budget_of(self)
        if budget is not None:
            context = dataclasses.replace(context, budget=budget)
        result: Result | None = self.ihook.pytest_acceptance_run(
            criterion=self.criterion, context=context
        )
        if result is None:
            method = self.criterion.method.value
            return Result(Status.ERROR, message=f"no runner handles method {method!r}")
        return result if budget is None else _name_the_cut(result, budget)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        if isinstance(excinfo.value, CriterionFailed):
            return describe_failure(self.criterion, excinfo.value.result, self.config.rootpath)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        # progress.py reads the title back from this domain, also on an xdist controller:
        # -v lines read "spec.md::AC-1 Title [bash] PASSED".
        return self.path, self.criterion.location.line - 1, f"{self.name}: {self._label()}"

    def __repr__(self) -> str:  # the --collect-only tree
        return f"<{type(self).__name__} {self.name} {self._label()}>"

    def _label(self) -> str:
        """The title and how the criterion is verified: the format's reason when it chose
        the method from the author's words (``[bash: `make lint`, exit code 0, as the prose
        states]``), else who judges (``[bash]``, ``[agent]``, ...)."""
        return f"{self.criterion.title} [{self.criterion.how or who_judges(self.criterion)}]"


_ALLURE_LABELS = pytest.StashKey[dict[tuple[str, str], pytest.MarkDecorator]]()
# MoSCoW as Allure's severities.
_SEVERITY = {"MUST": "critical", "SHOULD": "normal", "COULD": "minor", "WONT": "trivial"}


def allure_labels(config: pytest.Config, criterion: Criterion) -> list[pytest.MarkDecorator]:
    """The labels allure-pytest reads from its ``allure_label`` marker, without importing
    allure: the category as the feature, the priority as the severity, the Gherkin tags as
    tags. One mark per label for the whole run (thousands of items share them)."""
    wanted = [("severity", _SEVERITY[criterion.priority.value])]
    wanted += [("feature", criterion.category)] if criterion.category else []
    wanted += [("tag", tag) for tag in criterion.tags]
    made = config.stash.setdefault(_ALLURE_LABELS, {})
    for label_type, value in wanted:
        if (label_type, value) not in made:
            made[label_type, value] = pytest.mark.allure_label(value, label_type=label_type)
    return [made[key] for key in wanted]


def who_judges(criterion: Criterion) -> str:
    """How a criterion is verified, in a word: ``bash`` (its command and condition),
    ``bash, agent-judged`` (a pass condition that asks for a judge, ``judge: ...``, which
    an agent judges from the command's output), ``agent`` or ``manual``."""
    if criterion.method is Method.BASH:
        try:
            judged = isinstance(parse_condition(criterion.pass_condition), NaturalLanguage)
        except ConditionError:
            judged = False  # a collection error names it
        return "bash, agent-judged" if judged else "bash"
    return "agent" if criterion.method is Method.SUBAGENT else criterion.method.value


_MARKS = pytest.StashKey[dict[str, pytest.MarkDecorator]]()  # marker name -> its one mark
_CATEGORY_MARKERS = pytest.StashKey[dict[str, str]]()  # category -> its marker
_TAKEN_MARKERS = pytest.StashKey[frozenset[str]]()  # markers that are not ours to take
_RUN_CONTEXT = pytest.StashKey["RunContext"]()


def shared_mark(config: pytest.Config, name: str) -> pytest.MarkDecorator:
    """One mark per marker name for every item of the run: a mark is immutable, and
    thousands of items would otherwise each hold their own copies (and look the name up
    among the registered markers each time)."""
    marks = config.stash.get(_MARKS, None)
    if marks is None:
        marks = config.stash[_MARKS] = {}
    if name not in marks:
        marks[name] = getattr(pytest.mark, name)
    return marks[name]


def category_marker(config: pytest.Config, category: str, kind: str = "category") -> str:
    """The marker of a category (or of a Gherkin tag, ``kind`` "tagged"): its slug (``Stop
    Hook`` → ``stop_hook``), registered so ``--strict-markers`` projects work. A slug that
    is already a marker of pytest or of another plugin (``skip``, ``timeout``, ...) would
    change how the item runs, so it becomes ``category_<slug>``."""
    known = config.stash.get(_CATEGORY_MARKERS, None)
    if known is None:
        known = config.stash[_CATEGORY_MARKERS] = {}
        registered = {line.split(":")[0].split("(")[0].strip() for line in config.getini("markers")}
        config.stash[_TAKEN_MARKERS] = frozenset(registered) | _BUILTIN_MARKERS
    if category not in known:
        slug = "_".join(re.findall(r"[a-z0-9]+", category.lower())) or "uncategorized"
        # A tag is the author's marker: the project may register it itself (pytest-bdd's
        # tags are markers); only markers that change how an item runs are avoided.
        taken = frozenset(_ACTING_MARKERS) if kind == "tagged" else config.stash[_TAKEN_MARKERS]
        name = f"category_{slug}" if slug in taken else slug
        what = "of category" if kind == "category" else kind
        config.addinivalue_line("markers", f"{name}: acceptance criteria {what} {category!r}")
        known[category] = name
    return known[category]


# Markers that change how an item runs: a tag never becomes one of them.
_ACTING_MARKERS = frozenset(
    {"skip", "skipif", "xfail", "parametrize", "usefixtures", "filterwarnings", "tryfirst"}
    | {"trylast", "timeout", "xdist_group", "flaky", "asyncio", "order", "dependency"}
)
# Markers pytest reads itself, registered or not.
_BUILTIN_MARKERS = frozenset(
    {
        "skip",
        "skipif",
        "xfail",
        "parametrize",
        "usefixtures",
        "filterwarnings",
        "tryfirst",
        "trylast",
    }
)


def describe_failure(criterion: Criterion, result: Result, rootdir: Path) -> str:
    lines = [
        f"{criterion.id}: {criterion.title} — {result.status.value}",
        f"Method: {criterion.method_detail}",
        f"Spec: {spec_location(criterion, rootdir)}",
    ]
    for issue in result.issues:
        lines += [f"Location: {issue.location}", f"Expected: {issue.expected}"]
        lines += [f"Actual: {issue.actual}"]
    if message := message_beyond_issues(result.message, result.issues):
        lines.append(message)
    if result.output:
        lines += ["", "Output (last lines):", result.output.rstrip()]
    return "\n".join(lines)


def agent_properties(result: Result) -> list[tuple[str, object]]:
    """An agent criterion's cost and stability, as JUnit properties."""
    usage = result.extra.get("usage")
    if not isinstance(usage, dict):
        return []
    names = ("cost_usd", "input_tokens", "output_tokens", "turns", "calls", "cached")
    properties: list[tuple[str, object]] = [(f"agent_{n}", usage.get(n, 0)) for n in names]
    properties.append(("agent_duration", usage.get("duration", 0.0)))
    if result.extra.get("unstable"):
        properties.append(("unstable", "true"))
    return properties


def run_context(config: pytest.Config) -> RunContext:
    cached = config.stash.get(_RUN_CONTEXT, None)
    if cached is None:
        log = config.getoption("acceptance_log", default=None)
        timeout, retries = read_ini(config)
        cached = RunContext(
            rootdir=config.rootpath,
            default_timeout=timeout,
            default_retries=retries,
            log_path=Path(log).resolve() if log else None,
            hook=config.hook,
            spec_origins=spec_origins(config),
        )
        config.stash[_RUN_CONTEXT] = cached
    return cached
