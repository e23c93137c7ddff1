"""The evidence trail: fragments of the results, reports and deltas on the controller, and
CI annotations. A pytest plugin module (listed in ``plugin.pytest_plugins``); its
hookimpls are registered only when ``--acceptance`` is used.

- ``FragmentWriter`` (the controller, or the only process) appends one fragment per
  criterion result to its spec's evidence file as it arrives, wherever the criterion ran
  (fragments.py).
- ``EvidenceReporter`` (the controller, or the only process) clears the specs' evidence
  before anything runs, assembles ``report.json`` / ``report.md`` per spec from its
  evidence file, read once, when the verdict is decided (report.py), prints gaps and deltas after
  the verdict, and on GitHub Actions one ``::error`` annotation per failed criterion.
  Evidence that cannot be assembled fails a verdict that would otherwise pass.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the stage modules load only with --acceptance
    from pytest_acceptance.evidence.fragments import EvidenceLog
    from pytest_acceptance.evidence.report import Previous
    from pytest_acceptance.model import Criterion, Result, Spec
    from pytest_acceptance.verdict.decision import RunFacts, Verdict

LIST_LIMIT = 10  # ids per line in the terminal
_PYTEST_OWN = (2, 3, 4, 5)  # pytest's exit codes for a run that went wrong as a whole
BASELINE = "baseline.json"  # the last complete report of a spec: what deltas compare with


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acceptance")
    group.addoption(
        "--acceptance-previous",
        action="append",
        default=[],
        metavar="REPORT",
        help="compute the deltas against this report.json (repeatable, one per spec) "
        "instead of the spec's last report under .acceptance/specs/",
    )


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("acceptance", None):
        return
    from pytest_acceptance.options import spec_paths

    if hasattr(config, "workerinput"):  # the controller writes the evidence
        return
    specs = spec_paths(config)
    config.pluginmanager.register(FragmentWriter(config), "acceptance-fragments")
    reporter = EvidenceReporter(config, specs, _previous_paths(config))
    config.pluginmanager.register(reporter, "acceptance-evidence")


def _previous_paths(config: pytest.Config) -> list[Path]:
    paths = []
    for given in config.getoption("acceptance_previous") or ():
        path = (config.invocation_params.dir / given).resolve()
        if not path.is_file():
            raise pytest.UsageError(
                f"--acceptance-previous {given}: no such file; name a report.json written "
                "by an earlier run (.acceptance/specs/<spec>/report.json)"
            )
        paths.append(path)
    return paths


class FragmentWriter:
    """Appends the fragment of each criterion to its spec's evidence file as the result
    arrives on the controller (or the only process): the one writer of evidence, wherever
    the criterion ran. An xdist worker, maybe on another machine, sends its results back in
    its test reports (``pytest_acceptance_result``); nothing it writes to its own disk
    counts.

    Each spec's file is opened once and each fragment is one write of a line, done at once:
    a run killed later still leaves it on disk. A fragment lost is found missing by the
    assembly, which then fails the run loudly, with the cause recorded here.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rootdir = config.rootpath
        self.errors: list[str] = []  # fragments that could not be written, and why
        self.specs: dict[Path, tuple[EvidenceLog, dict[str, int]]] = {}

    @pytest.hookimpl
    def pytest_acceptance_result(
        self, config: pytest.Config, criterion: Criterion, result: Result
    ) -> None:
        self.write(criterion, result)

    def pytest_unconfigure(self) -> None:
        for log, _ in self.specs.values():
            log.close()

    def write(self, criterion: Criterion, result: Result) -> None:
        from pytest_acceptance.evidence.fragments import build_fragment
        from pytest_acceptance.model import SpecError

        # A fragment that cannot be written (disk full, permissions, a spec edited into
        # something else mid-run) is found missing by the assembly on the controller.
        try:
            log, indexes = self.spec_facts(criterion.location.path)
            index = indexes[criterion.id]
            log.append(build_fragment(criterion, index, result, self.rootdir))
        except (OSError, SpecError, KeyError, ValueError) as error:  # ValueError: no UTF-8
            self.failed(criterion.id, error)

    def failed(self, criterion_id: str, error: BaseException) -> None:
        from pytest_acceptance.store import describe_os_error

        reason = describe_os_error(error) if isinstance(error, OSError) else repr(error)
        self.errors.append(f"could not write the evidence fragment of {criterion_id}: {reason}")

    def spec_facts(self, spec_path: Path) -> tuple[EvidenceLog, dict[str, int]]:
        """The spec's evidence file (opened once) and each criterion's index."""
        if spec_path not in self.specs:
            from pytest_acceptance.collect import spec_of_run
            from pytest_acceptance.evidence.fragments import EvidenceLog, evidence_path, prepare_dir

            spec = spec_of_run(self.config, spec_path)
            indexes = {c.id: i for i, c in enumerate(spec.criteria)}
            prepare_dir(self.rootdir, spec_path)
            self.specs[spec_path] = (EvidenceLog(evidence_path(self.rootdir, spec_path)), indexes)
        return self.specs[spec_path]


class EvidenceReporter:
    """Controller side: clear, assemble, print, annotate."""

    def __init__(self, config: pytest.Config, specs: list[Path], previous: list[Path]) -> None:
        from pytest_acceptance.evidence.fragments import clear_evidence

        self.config = config
        self.rootdir = config.rootpath
        self.specs = specs
        self.previous_paths = previous
        self.verdict: Verdict | None = None
        self.reports: list[tuple[Path, dict[str, Any]]] = []  # (report.md, report)
        self.problems: list[str] = []
        self.loaded = _load_specs(config, specs)  # as the workers will see them
        self.locks: list[Any] = []
        if not config.option.collectonly:  # before any worker starts
            from pytest_acceptance.options import lock_timeout, spec_origins

            # A copy verified for the spec it stands for (the Claude Code gate's) waits for
            # a run of that spec: their commands share the project.
            stands_for = dict(spec_origins(config))
            locked = [stands_for.get(spec, stands_for.get(spec.resolve(), spec)) for spec in specs]
            self.locks = _lock_specs(self.rootdir, locked, lock_timeout(config))
            for spec in specs:
                clear_evidence(self.rootdir, spec)

    def pytest_unconfigure(self) -> None:
        for handle in self.locks:
            with contextlib.suppress(OSError):
                handle.close()

    @pytest.hookimpl
    def pytest_acceptance_verdict(
        self, config: pytest.Config, verdict: Verdict, facts: RunFacts
    ) -> list[str]:
        """Assemble the reports; returns the evidence problems, which the recorder folds
        into the verdict (evidence that cannot be assembled never lets it pass)."""
        self.verdict = verdict
        if _incomplete(verdict):  # internal or usage error, nothing collected or a spec that
            return []  # failed to: such a run must not become the baseline of the next deltas
        writer = config.pluginmanager.get_plugin("acceptance-fragments")
        if writer is not None:
            self.problems += writer.errors[:LIST_LIMIT]
        by_spec = _outcomes_by_spec(verdict)
        for spec_path in self.specs:
            if spec_path in by_spec:
                try:
                    self._assemble(spec_path, by_spec[spec_path], facts.fingerprint)
                except OSError as error:
                    self.problems.append(_could_not_write_report(spec_path, error))
        facts.extra["reports"] = [str(path.with_suffix(".json")) for path, _ in self.reports]
        return [f"evidence: {problem}" for problem in self.problems]

    def _assemble(self, spec_path: Path, results: dict[str, Result], fingerprint: str) -> None:
        from pytest_acceptance.collect import spec_of_run
        from pytest_acceptance.evidence.fragments import FragmentError, prepare_dir
        from pytest_acceptance.evidence.report import (
            Expected,
            assemble,
            render_markdown,
            report_json,
            requirement_rows,
        )
        from pytest_acceptance.tree.hostile import write_atomic

        spec = self.loaded.get(spec_path) or spec_of_run(self.config, spec_path)
        expected = [
            Expected(index, criterion, results[criterion.id])
            for index, criterion in enumerate(spec.criteria)
            if criterion.id in results
        ]
        unknown = sorted(set(results) - {criterion.id for criterion in spec.criteria})
        if unknown:
            self.problems.append(
                f"{spec_path.name}: {', '.join(unknown)} ran but the spec as read at the start "
                "of the run has no such criterion: was the spec edited during the run?"
            )
        directory = prepare_dir(self.rootdir, spec_path)
        try:
            report = assemble(
                spec, expected, self.rootdir, self._previous(spec, directory), fingerprint
            )
            report["requirements"] = requirement_rows(self.verdict, spec_path, self.rootdir)
        except FragmentError as error:
            self.problems.append(str(error))
            return
        self.problems += [f"{spec_path.name}: {problem}" for problem in report["problems"]]
        data = report_json(report)
        write_atomic(directory / "report.json", data)
        write_atomic(directory / "report.md", render_markdown(report))
        if report["complete"]:  # a partial run (-k, -m, --lf, node ids, -x) never is one
            write_atomic(directory / BASELINE, data)
        self.reports.append((directory / "report.md", report))

    def _previous(self, spec: Spec, directory: Path) -> Previous | None:
        from pytest_acceptance.evidence.report import Previous
        from pytest_acceptance.text import display_path
        from pytest_acceptance.tree.hostile import write_atomic

        if self.previous_paths:
            named = [_load_previous(path, self.rootdir) for path in self.previous_paths]
            wanted = display_path(spec.path, self.rootdir)
            for previous in named:
                if previous.report is not None and previous.report.get("spec") == wanted:
                    return previous
            if len(named) == 1 and len(self.specs) == 1:
                return named[0]
            sources = ", ".join(p.source for p in named)
            return Previous(sources, None, f"none of them is a report of {wanted}")
        last = directory / BASELINE  # the last complete report
        if not last.is_file():
            return None
        kept = directory / "report.previous.json"  # the baseline, kept beside the new report
        with contextlib.suppress(OSError):
            write_atomic(kept, last.read_text(encoding="utf-8", errors="replace"))
        return _load_previous(kept if kept.is_file() else last, self.rootdir)

    # -- terminal --------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)  # after the recorder's "## Verification Results"
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.verdict is None:
            return
        terminalreporter.section("acceptance evidence")
        if _incomplete(self.verdict):
            terminalreporter.write_line(
                f"no report written: the run did not complete (exit code "
                f"{self.verdict.exit_code}); the last report stays the baseline for deltas"
            )
        for markdown, report in self.reports:
            for line in summary_lines(report, _shown(markdown, self.rootdir)):
                terminalreporter.write_line(line)
        for problem in self.problems:
            terminalreporter.write_line(f"EVIDENCE ERROR: {problem}", red=True)
        if self.problems:
            terminalreporter.write_line(
                "the verdict cannot pass while its evidence is incomplete: fix the cause above "
                "and run again (exit code 11 unless criteria failed)"
            )
        if os.environ.get("GITHUB_ACTIONS") == "true":
            for line in github_annotations(self.verdict, self.rootdir, self.problems):
                terminalreporter.write_line(line)


def summary_lines(report: dict[str, Any], where: str) -> list[str]:
    from pytest_acceptance.evidence.report import GAP_MEANING, resolution_words

    lines = [f"{report['spec']}: report {where}"]
    gaps = report["gaps"]
    if any(gaps.values()):
        lines.append(
            "  gaps: "
            + "; ".join(
                f"{len(ids)} {gap} ({GAP_MEANING[gap]}): {_ids(ids, counted=False)}"
                for gap, ids in gaps.items()
                if ids
            )
        )
    previous = report["previous"]
    if previous is not None and not previous["usable"]:
        lines.append(f"  no deltas: previous report {previous['source']}: {previous['reason']}")
    elif report["resolutions"] is not None:
        moved = [
            f"{resolution_words(kind)} {_ids(ids)}"
            for kind, ids in report["resolutions"].items()
            if ids and kind != "unchanged"
        ]
        moved += [f"removed {_ids([r['id'] for r in report['removed']])}"] * bool(report["removed"])
        lines.append("  since the previous report: " + ("; ".join(moved) or "no change"))
    return lines


def _ids(ids: list[str], counted: bool = True) -> str:
    shown = ", ".join(ids[:LIST_LIMIT])
    more = f", … (+{len(ids) - LIST_LIMIT})" if len(ids) > LIST_LIMIT else ""
    return f"{len(ids)} ({shown}{more})" if counted else f"{shown}{more}"


def _shown(path: Path, rootdir: Path) -> str:
    from pytest_acceptance.text import display_path

    return display_path(path, rootdir)


def _load_previous(path: Path, rootdir: Path) -> Previous:
    """``report.load_previous``; a report nested too deeply to read means no deltas."""
    from pytest_acceptance.evidence.report import Previous, load_previous
    from pytest_acceptance.text import display_path

    try:
        return load_previous(path, rootdir)
    except RecursionError:
        return Previous(display_path(path, rootdir), None, "it is nested too deeply to read")


def _incomplete(verdict: Verdict) -> bool:
    """pytest's own exit codes for a run that went wrong as a whole; an interrupted run
    keeps the evidence of what finished (its report is partial, never a baseline)."""
    from pytest_acceptance.verdict.decision import VerdictStatus

    return verdict.exit_code in _PYTEST_OWN and verdict.status is not VerdictStatus.INTERRUPTED


def _lock_specs(rootdir: Path, specs: list[Path], wait: float) -> list[Any]:
    """One lock per spec, held for the run: a second run of the same spec in the same
    project would clear and rewrite the evidence this one is writing (and compute its
    deltas against a half-written report), so it waits for the first, saying so, up to
    ``wait`` seconds; then it is refused with a usage error."""
    from pytest_acceptance.evidence.fragments import spec_dir
    from pytest_acceptance.store import OUTPUT_DIR, RunLocked, lock_run, output_dir
    from pytest_acceptance.text import display_path

    locks = []
    with contextlib.suppress(OSError):  # .acceptance with its .gitignore first
        output_dir(rootdir)
    deadline = time.monotonic() + wait  # one bound for all the specs of the run
    try:
        for spec in sorted(specs):  # in one order in every run: two runs never wait in a ring
            lock = rootdir / OUTPUT_DIR / "locks" / f"{spec_dir(rootdir, spec).name}.lock"
            waiting = _Waiting()
            left = max(deadline - time.monotonic(), 0.0)
            handle = lock_run(lock, display_path(spec, rootdir), left, waiting.start)
            waiting.end()
            if handle is not None:
                locks.append(handle)
    except RunLocked as error:
        for handle in locks:
            handle.close()
        raise pytest.UsageError(str(error)) from None
    return locks


class _Waiting:
    """Says on stderr that this run waits for another one, and when the wait is over (the
    terminal reporter does not exist yet while plugins are configured)."""

    def __init__(self) -> None:
        self.since: float | None = None

    def start(self, message: str) -> None:
        self.since = time.monotonic()
        _say(f"acceptance: {message}")

    def end(self) -> None:
        if self.since is not None:
            _say(
                f"acceptance: the other run finished; this one runs now (waited "
                f"{time.monotonic() - self.since:.0f} s)"
            )


def _say(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _could_not_write_report(spec_path: Path, error: OSError) -> str:
    from pytest_acceptance.store import describe_os_error

    return f"could not write the report of {spec_path.name}: {describe_os_error(error)}"


def _load_specs(config: pytest.Config, paths: list[Path]) -> dict[Path, Spec]:
    from pytest_acceptance.collect import spec_of_run
    from pytest_acceptance.model import SpecError

    loaded = {}
    for path in paths:
        with contextlib.suppress(SpecError, OSError):  # collection reports it, with file:line
            loaded[path] = spec_of_run(config, path)
    return loaded


def _outcomes_by_spec(verdict: Verdict) -> dict[Path, dict[str, Result]]:
    grouped: dict[Path, dict[str, Result]] = {}
    resolved: dict[Path, Path] = {}  # resolving is a few syscalls: once per spec
    for outcome in verdict.outcomes:
        given = outcome.criterion.location.path
        if given not in resolved:
            resolved[given] = given.resolve()
        path = resolved[given]
        grouped.setdefault(path, {})[outcome.criterion.id] = outcome.result
    return grouped


# --- GitHub Actions annotations ---------------------------------------------------------------


def github_annotations(verdict: Verdict, rootdir: Path, problems: list[str]) -> list[str]:
    """One workflow command per failed or unverifiable criterion, at its spec line
    (``::error`` for a MUST, ``::warning`` for SHOULD, COULD and WONT), one ``::error`` per
    run-level problem (no file), and a ``::notice`` when the run was partial."""
    from pytest_acceptance.model import Priority, Status
    from pytest_acceptance.verdict.decision import scope_lines

    lines = []
    for outcome in verdict.of(Status.FAILED, Status.ERROR):
        criterion, result = outcome.criterion, outcome.result
        where = {
            "file": repository_path(criterion.location.path, rootdir),
            "line": str(criterion.location.line),
            "title": criterion.id,
        }
        properties = ",".join(f"{key}={escape_property(value)}" for key, value in where.items())
        level = "error" if criterion.priority is Priority.MUST else "warning"
        text = escape_data(_annotation_text(criterion, result))
        lines.append(f"::{level} {properties}::{text}")
    for problem in (*verdict.problems, *problems):
        lines.append(f"::error title=pytest-acceptance::{escape_data(problem)}")
    for line in filter(None, scope_lines(verdict)):
        lines.append(f"::notice title=pytest-acceptance::{escape_data(line)}")
    return lines


def repository_path(path: Path, rootdir: Path) -> str:
    """``path`` relative to the repository's root (``repository_root``), where GitHub
    attaches an annotation; relative to the rootdir when the root does not hold it."""
    from pytest_acceptance.text import display_path

    with contextlib.suppress(ValueError, OSError):
        return path.resolve().relative_to(repository_root(rootdir).resolve()).as_posix()
    return display_path(path, rootdir)


def repository_root(rootdir: Path) -> Path:
    """``$GITHUB_WORKSPACE`` when it holds the rootdir, else the folder holding ``.git`` at
    or above the rootdir, else the rootdir."""
    workspace = os.environ.get("GITHUB_WORKSPACE", "").strip()
    real = rootdir.resolve()
    if workspace and real.is_relative_to(Path(workspace).resolve()):
        return Path(workspace)
    return next((folder for folder in (real, *real.parents) if (folder / ".git").exists()), real)


def _annotation_text(criterion: Criterion, result: Result) -> str:
    """Each sentence once: a message that restates an issue adds only what it says beyond."""
    from pytest_acceptance.verdict.decision import message_beyond_issues

    lines = [f"{criterion.title}: {result.status.value} ({criterion.priority.value})"]
    lines += [
        f"{issue.location}: expected {issue.expected}; actual {issue.actual}"
        for issue in result.issues
    ]
    if message := message_beyond_issues(result.message, result.issues):
        lines.append(message)
    return "\n".join(lines)


def escape_data(text: str) -> str:
    """GitHub's workflow-command escaping of a message (actions/toolkit ``escapeData``)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """... and of a property value (``escapeProperty``): also ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")
