"""The collect stage: a spec file becomes one pytest item per criterion.

Shaped like pytest's "non-python tests" example: ``SpecFile.collect`` parses and yields
``CriterionItem``s; an item's ``runtest`` hands the criterion to the runner of its method
(the ``pytest_acceptance_run`` hook) and keeps the ``Result`` for the recorder.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_acceptance.conditions import ConditionError, parse_condition
from pytest_acceptance.model import Criterion, Method, Result, RunContext, Spec, SpecError, Status
from pytest_acceptance.spec_cache import parse_spec_cached
from pytest_acceptance.store import output_dir
from pytest_acceptance.verdict import display_path, spec_location

_parsed: dict[tuple[Path, int, int], Spec] = {}


def load_spec(path: Path, rootdir: Path) -> Spec:
    """Parse once per process (the controller and the collector may both need it), and
    across runs keep the parsed spec keyed by its bytes, as Python keeps bytecode: a large
    spec is not re-parsed by every run and every xdist worker."""
    stat = path.stat()
    key = (path.resolve(), stat.st_mtime_ns, stat.st_size)
    if key not in _parsed:
        _parsed[key] = parse_spec_cached(path, output_dir(rootdir) / "parse-cache")
    return _parsed[key]


class SpecFile(pytest.File):
    def collect(self) -> Iterator[CriterionItem]:
        spec = load_spec(self.path, self.config.rootpath)
        for criterion in spec.criteria:
            _check_pass_condition(criterion)
            yield CriterionItem.from_parent(self, name=criterion.id, criterion=criterion)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, SpecError):
            error = excinfo.value
            return f"{display_path(error.path, self.config.rootpath)}:{error.line}: {error.message}"
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
        self.add_marker(criterion.method.value)
        # junitxml writes these as <properties>: the CI gate sees id, title, method, priority.
        self.user_properties += [
            ("criterion", criterion.id),
            ("title", criterion.title),
            ("method", criterion.method.value),
            ("priority", criterion.priority.value),
        ]

    def runtest(self) -> None:
        if self.criterion.method is Method.MANUAL:
            self.result = Result(Status.MANUAL, attempts=0, message="needs a human")
            pytest.skip(f"manual criterion {self.criterion.id}: needs a human, never run")
        self.result = self._run()
        if not self.result.status.passed:
            raise CriterionFailed(self.result)

    def _run(self) -> Result:
        context = run_context(self.config)
        result: Result | None = self.ihook.pytest_acceptance_run(
            criterion=self.criterion, context=context
        )
        if result is None:
            method = self.criterion.method.value
            return Result(Status.ERROR, message=f"no runner handles method {method!r}")
        return result

    def repr_failure(  # type: ignore[override]
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> str | Any:
        if isinstance(excinfo.value, CriterionFailed):
            return describe_failure(self.criterion, excinfo.value.result, self.config.rootpath)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.criterion.location.line - 1, f"{self.name}: {self.criterion.title}"


def describe_failure(criterion: Criterion, result: Result, rootdir: Path) -> str:
    lines = [
        f"{criterion.id}: {criterion.title} — {result.status.value}",
        f"Method: {criterion.method_detail}",
        f"Spec: {spec_location(criterion, rootdir)}",
    ]
    for issue in result.issues:
        lines += [f"Location: {issue.location}", f"Expected: {issue.expected}"]
        lines += [f"Actual: {issue.actual}"]
    if result.message:
        lines.append(result.message)
    if result.output:
        lines += ["", "Output (last lines):", result.output.rstrip()]
    return "\n".join(lines)


def run_context(config: pytest.Config) -> RunContext:
    cached: RunContext | None = getattr(config, "_acceptance_context", None)
    if cached is None:
        log = config.getoption("acceptance_log", default=None)
        cached = RunContext(
            rootdir=config.rootpath,
            default_timeout=float(config.getini("acceptance_timeout")),
            default_retries=int(config.getini("acceptance_retries")),
            log_path=Path(log).resolve() if log else None,
            hook=config.hook,
        )
        config._acceptance_context = cached  # type: ignore[attr-defined]
    return cached
