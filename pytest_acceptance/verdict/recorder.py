"""The record stage: on the controller, gather every criterion's result into the verdict.

Registered only on the process that prints the summary (the xdist controller, or the only
process). It knows which criteria were selected (what collection kept after every
deselection, ``--lf`` and ``--sw`` included, or what the xdist workers collected), takes
each result from the test reports (results travel from workers as the report attribute
``acceptance``), hands each to the evidence trail as it arrives (the hook
``pytest_acceptance_result``), and at session end decides, writes
``.acceptance/verdict.json`` and sets the exit code. A selected criterion that never
reported is ``not_run`` (unknown), never a pass; ``-x`` under xdist (which pytest calls an
interruption) ends with the same exit code as without it; a run stopped by Ctrl-C or a stop
signal is ``interrupted`` and keeps what finished.

``RunStart`` covers the time before: from the plugin's first hook it has removed the last
verdict, and a run interrupted before its session began (pytest then never ends one)
still leaves an ``interrupted`` verdict.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from pytest_acceptance.collect import CriterionItem, spec_of_run
from pytest_acceptance.model import Criterion, Result, Spec, SpecError, Status
from pytest_acceptance.options import SHARDS_TREE, VERDICT_DECIDED
from pytest_acceptance.run.guard import STOPPED_BY, VANISHED
from pytest_acceptance.store import (
    describe_os_error,
    forget_verdict,
    output_dir,
    verdict_path,
    write_json_atomic,
)
from pytest_acceptance.text import display_path
from pytest_acceptance.tree.fingerprint import recorded_fingerprint
from pytest_acceptance.tree.hostile import file_digest
from pytest_acceptance.verdict.decision import (
    ExitCode,
    Outcome,
    RunFacts,
    Scope,
    Verdict,
    VerdictStatus,
    decide,
    for_the_gate,
    render,
    send_verdict,
    to_json,
)
from pytest_acceptance.verdict.matrix import Row
from pytest_acceptance.verdict.matrix import build as build_matrix

# pytest exit codes that mean "the run itself went wrong": kept as they are.
_PYTEST_OWN = {
    pytest.ExitCode.INTERRUPTED,
    pytest.ExitCode.INTERNAL_ERROR,
    pytest.ExitCode.USAGE_ERROR,
    pytest.ExitCode.NO_TESTS_COLLECTED,
}
# How a run stopped before its session began reads the verdict's fingerprints.
_NO_FINGERPRINT = "unavailable: the run was interrupted before it took one"


class Recorder:
    def __init__(self, config: pytest.Config, spec_paths: list[Path]) -> None:
        self.config = config
        self.rootdir = config.rootpath
        self.specs = _load_specs(config, spec_paths)
        self.selected: list[str] = []  # node ids of selected criteria, in collection order
        self.criteria: dict[str, Criterion] = {}
        self.results: dict[str, Result] = {}  # each criterion's results, combined
        self.runs: dict[str, Runs] = {}  # node id -> every run of it that reported
        self.written: set[str] = set()  # node ids whose evidence was sent to the trail
        self.collection_errors: list[str] = []
        self.other_failures: list[str] = []
        self.unknown: list[str] = []  # node ids of criteria the controller's spec lacks
        self.awaiting: list[str] = []  # node ids of tasks whose cited criteria had not reported
        self.verdict: Verdict | None = None
        self.write_error: str | None = None
        self.failures = 0  # failed reports, as -x/--maxfail count them
        self.started_at = time.time()
        self.merged_tree = config.stash.get(SHARDS_TREE, None)
        self.fingerprint = self.merged_tree or recorded_fingerprint(self.rootdir)
        # "" for a spec that cannot be read: collection reports that.
        self.spec_digests = {spec.path: file_digest(spec.path) or "" for spec in self.specs}
        self.shard = shard_of(config)  # "" unless a sharding plugin splits the run

    # -- what was selected -------------------------------------------------------------

    @pytest.hookimpl(trylast=True)  # after pytest's "collected N items" and --co's tree
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """What runs, once every plugin has deselected (``-k``, ``-m``, ``--lf``, ``--sw``)."""
        for item in session.items:
            if isinstance(item, CriterionItem):
                self._select(item.nodeid, item.criterion)
        if not self._on_workers():
            self._say_selected()

    def _on_workers(self) -> bool:
        return bool(getattr(self.config.option, "numprocesses", None)) or bool(
            getattr(self.config.option, "tx", None)
        )

    def _say_selected(self) -> None:
        """One line of what was collected and selected: what ``--co`` users and agents plan
        from."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and reporter.verbosity >= -1:
            selected = list(self.criteria.values())
            reporter.write_line(collection_line(self.specs, selected, self.rootdir))

    @pytest.hookimpl(optionalhook=True)  # xdist may be absent (-p no:xdist)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Map the workers' node ids back to criteria, by the spec file each one names."""
        if self.selected:  # every worker collects the same items
            return
        self._map_worker_ids(ids)
        self._say_selected()

    def _map_worker_ids(self, ids: list[str]) -> None:
        by_spec = {spec.path: {c.id: c for c in spec.criteria} for spec in self.specs}
        resolved: dict[str, Path] = {}  # one realpath per file, not per node id
        for nodeid in ids:
            file_part, _, name = nodeid.rpartition("::")
            if file_part not in resolved:
                resolved[file_part] = (self.rootdir / file_part).resolve()
            criteria = by_spec.get(resolved[file_part])
            if criteria is None:
                continue  # a test outside the specs
            if name in criteria:
                self._select(nodeid, criteria[name])
            else:
                self.unknown.append(nodeid)

    def _select(self, nodeid: str, criterion: Criterion) -> None:
        if nodeid not in self.criteria:
            self.selected.append(nodeid)
            self.criteria[nodeid] = criterion

    # -- what happened ---------------------------------------------------------------------

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collection_errors.append(report.longreprtext.strip())

    @pytest.hookimpl(tryfirst=True)  # a settled task's report is what the terminal shows
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "acceptance", None)
        self.failures += report.failed
        if report.nodeid not in self.criteria and data is None:
            if report.failed:
                self.other_failures.append(report.nodeid)
            return
        runs = self.runs.setdefault(report.nodeid, Runs())
        if not runs.take(report, data):
            return
        self.results[report.nodeid] = runs.result()
        if data is not None:
            self._settle_on_arrival(report)
        # Its evidence: each result as it arrives, combined; an error without a result of
        # its own is one only once something of the criterion was written.
        if (criterion := self.criteria.get(report.nodeid)) is not None and (
            data is not None or report.nodeid in self.written
        ):
            self.written.add(report.nodeid)
            self.config.hook.pytest_acceptance_result(
                config=self.config, criterion=criterion, result=self.results[report.nodeid]
            )

    # -- tasks that cite requirements -------------------------------------------------------

    def _settle_on_arrival(self, report: pytest.TestReport) -> None:
        """Decide a ticked task's cited requirements now if their criteria have reported
        (the terminal line then tells the truth), else at the end of the run."""
        criterion = self.criteria.get(report.nodeid)
        if criterion is None or criterion.task is None or not criterion.task.decided_later:
            return
        settled = self._settle(report.nodeid, final=False)
        if settled is None:
            self.awaiting.append(report.nodeid)
            awaited = [*criterion.task.cites, *criterion.task.subtasks]
            report.acceptance["extra"]["awaits"] = awaited
            return
        self.results[report.nodeid] = settled
        report.acceptance = settled.to_dict()  # type: ignore[attr-defined]
        if not settled.status.passed and report.passed:
            from pytest_acceptance.collect import describe_failure

            report.outcome = "failed"
            report.longrepr = describe_failure(criterion, settled, self.rootdir)

    def _settle(self, nodeid: str, final: bool) -> Result | None:
        from pytest_acceptance.verdict.tasks import settle

        keys = {nodeid: (c.location.path.resolve(), c.id) for nodeid, c in self.criteria.items()}
        selected = {keys[n]: c for n, c in self.criteria.items()}
        results = {keys[n]: r for n, r in self.results.items() if n in keys}
        own = self.results[nodeid]
        criterion = self.criteria[nodeid]
        return settle(criterion, own, self.specs, selected, results, final, self.rootdir)

    def _settle_at_end(self) -> None:
        for nodeid in self.awaiting:
            if nodeid in self.results:
                self.results[nodeid] = self._settle(nodeid, final=True) or self.results[nodeid]

    # -- the verdict -----------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.config.option.collectonly:
            return
        stopped = self._stopped_early(session)
        if stopped and exitstatus == pytest.ExitCode.INTERRUPTED:
            exitstatus = pytest.ExitCode.TESTS_FAILED  # xdist's -x, --sw: a stop at a failure
        if self._empty_shard(exitstatus):
            exitstatus = pytest.ExitCode.OK
        if self._stopped_by_collection_errors():
            exitstatus = pytest.ExitCode.INTERRUPTED
        why = stopped or _stop_reason(session) or self._interruption(exitstatus)
        not_run = _not_run(why)
        self._settle_at_end()
        outcomes = [
            Outcome(self.criteria[nodeid], self.results.get(nodeid) or not_run)
            for nodeid in self._in_spec_order()
        ]
        problems = self._problems(exitstatus)
        scope = Scope(sum(len(spec.criteria) for spec in self.specs), why)
        matrix = build_matrix(self.specs, [(o.criterion, o.result) for o in outcomes])
        interrupted = self._interrupted(exitstatus)
        verdict = _decide(outcomes, problems, exitstatus, scope, matrix, interrupted)
        if not outcomes and not problems and self._empty_shard(exitstatus):
            verdict = verdict.with_status(VerdictStatus.PASS, ExitCode.PASS)
        facts = self._facts()
        # Later stages (the evidence trail) may find problems that forbid a pass.
        found = self.config.hook.pytest_acceptance_verdict(
            config=self.config, verdict=verdict, facts=facts
        )
        if more := [problem for problems_of in found for problem in problems_of or ()]:
            verdict = _decide(outcomes, problems + more, exitstatus, scope, matrix, interrupted)
        written = self._write(verdict, facts)
        if written is not None:  # nowhere to record it: the verdict cannot stand as it is
            problems = [*problems, *more, written]
            verdict = _decide(outcomes, problems, exitstatus, scope, matrix, interrupted)
            if verdict.exit_code in (0, 10):
                verdict = verdict.with_status(VerdictStatus.ERROR, 11)
        self.verdict = verdict
        session.exitstatus = verdict.exit_code
        from pytest_acceptance.verdict.junit import add_properties

        add_properties(self.config, verdict, facts)

    def _write(self, verdict: Verdict, facts: RunFacts) -> str | None:
        """Write verdict.json; on failure, the problem to report (never an exception)."""
        self.write_error = record(self.config, verdict, facts)
        return self.write_error

    def _empty_shard(self, exitstatus: int) -> bool:
        """A CI shard to which the sharding plugin gave none of the spec's criteria: its
        verdict is a pass of nothing (the merge checks every criterion ran in some shard),
        not pytest's "no tests ran" (5) nor the error of a run that selected nothing."""
        return (
            bool(self.shard)
            and not self.selected
            and not self.collection_errors
            and exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
            and any(spec.criteria for spec in self.specs)
        )

    def _stopped_by_collection_errors(self) -> bool:
        """A spec that failed to collect ends the run with pytest's 2, as without workers:
        under xdist the controller collects nothing itself, and pytest's own exit code
        would depend on the number of workers."""
        return bool(self.collection_errors) and not self.config.getoption(
            "continue_on_collection_errors", False
        )

    def _interrupted(self, exitstatus: int) -> bool:
        """Ctrl-C, a stop signal or ``pytest.exit``: not -x (handled above), not a spec that
        failed to collect (pytest's exit code 2 too, but an error)."""
        return exitstatus == pytest.ExitCode.INTERRUPTED and not self.collection_errors

    def _interruption(self, exitstatus: int) -> str:
        if not self._interrupted(exitstatus):
            return ""
        stopped = self.config.stash.get(STOPPED_BY, None)
        return f"the run was interrupted by {stopped}" if stopped else "the run was interrupted"

    def _in_spec_order(self) -> list[str]:
        """The selected node ids in spec order, whatever order they ran in (--ff, --nf,
        xdist), so the verdict reads the same."""
        specs = {spec.path: number for number, spec in enumerate(self.specs)}
        resolved: dict[Path, int] = {}

        def place(nodeid: str) -> tuple[int, int]:
            location = self.criteria[nodeid].location
            if location.path not in resolved:
                resolved[location.path] = specs.get(location.path.resolve(), len(specs))
            return resolved[location.path], location.line

        return sorted(self.selected, key=place)

    def _stopped_early(self, session: pytest.Session) -> str:
        """Why the run stopped at a failure ("" when it did not): -x/--maxfail, or a plugin
        that stops there (--sw), which pytest ends as an interruption."""
        if not self.failures or self.collection_errors:
            return ""
        maxfail = self.config.getoption("maxfail", 0) or 0
        if maxfail and self.failures >= maxfail:
            return f"the run stopped after {self.failures} failure(s): -x/--maxfail"
        stop = session.shouldstop
        if isinstance(stop, str) and stop and STOPPED_BY not in self.config.stash:
            return f"the run stopped at a failure: {stop}"
        return ""

    def _problems(self, exitstatus: int) -> list[str]:
        problems = [f"collection error: {error}" for error in self.collection_errors]
        if exitstatus == pytest.ExitCode.INTERRUPTED and not self.collection_errors:
            stopped = self.config.stash.get(STOPPED_BY, None)
            by = f" by {stopped}" if stopped else ""
            problems.append(f"the run was interrupted{by} before every criterion reported")
        for directory in self.config.stash.get(VANISHED, ()):
            problems.append(
                f"{directory} was deleted during the run (a criterion removed it?); it was "
                "recreated empty to record this verdict"
            )
        if self.other_failures:
            problems.append(
                f"{len(self.other_failures)} test(s) outside the spec failed: "
                + ", ".join(self.other_failures[:5])
            )
        if self.unknown:
            problems.append(
                f"{', '.join(self.unknown[:5])} collected by the workers but not in the spec "
                "as read when the run started: was the spec edited during the run? run again"
            )
        return problems

    def _facts(self) -> RunFacts:
        return RunFacts(
            rootdir=self.rootdir,
            started_at=self.started_at,
            finished_at=time.time(),
            fingerprint=self.fingerprint,
            fingerprint_after=self.merged_tree or recorded_fingerprint(self.rootdir),
            specs=tuple(self._spec_facts()),
            pid=os.getpid(),
            args=tuple(self.config.invocation_params.args),
            extra={"shard": self.shard or None},
        )

    def _spec_facts(self) -> list[dict[str, Any]]:
        given = Counter(c.location.path for c in self.criteria.values())
        selected_per_spec: Counter[Path] = Counter()
        for path, count in given.items():  # one realpath per spec, not per criterion
            selected_per_spec[path.resolve()] += count
        return [
            {
                "path": str(spec.path),
                "criteria_total": len(spec.criteria),
                "selected": selected_per_spec.get(spec.path, 0),
                # What a merge of CI shards checks (verdict/merge.py): where the spec lies
                # in the project, and its version.
                "relative": display_path(spec.path, self.rootdir),
                "sha256": self.spec_digests.get(spec.path, ""),
            }
            for spec in self.specs
        ]

    # -- the human-readable verdict ------------------------------------------------------------

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.verdict is None:
            return
        if self.verdict.status is not VerdictStatus.MANUAL:
            # Manual criteria are surfaced only once every automated one passes.
            terminalreporter.stats.pop("manual", None)
        terminalreporter.section("acceptance verdict")
        from pytest_acceptance.verdict.rootdir_warning import rootdir_warning

        quiet, warning = terminalreporter.verbosity < 0, rootdir_warning(self.config)
        terminalreporter.write(render(self.verdict, self.rootdir, quiet=quiet, warning=warning))
        verdict = self.verdict
        status = f"verdict: {verdict.status.value.upper()} (exit code {verdict.exit_code})"
        if self.write_error is not None:
            terminalreporter.write_line(f"{status}; {self.write_error}", red=True)
            return
        written = display_path(verdict_path(self.rootdir), self.rootdir)
        terminalreporter.write_line(f"{status}, written to {written}")


def collection_line(specs: list[Spec], selected: list[Criterion], rootdir: Path) -> str:
    """``acceptance: 3 of 4 criteria of spec.md selected (2 bash, 1 manual; 3 MUST)``."""
    from pytest_acceptance.verdict.decision import plural

    total = sum(len(spec.criteria) for spec in specs)
    names = ", ".join(display_path(spec.path, rootdir) for spec in specs[:5])
    names += f" and {len(specs) - 5} more" if len(specs) > 5 else ""
    methods = Counter(c.method.value for c in selected)
    priorities = Counter(c.priority.value for c in selected)
    kinds = ", ".join(f"{n} {m}" for m, n in methods.most_common())
    kinds += "; " + ", ".join(f"{n} {p}" for p, n in priorities.most_common()) if kinds else ""
    count = f"{len(selected)} of {plural(total, 'criterion')}"
    line = f"acceptance: {count} of {names or 'no spec'} selected"
    return f"{line} ({kinds})" if kinds else line


def _load_specs(config: pytest.Config, paths: list[Path]) -> list[Spec]:
    specs = []
    for path in paths:
        try:
            spec = spec_of_run(config, path)
        except (SpecError, OSError):
            continue  # collection reports it, with file:line
        specs.append(Spec(path.resolve(), spec.criteria, spec.title, spec.requirements))
    return specs


def shard_of(config: pytest.Config) -> str:
    """How a sharding plugin splits this run, in its own options (``pytest-split --splits 3
    --group 2``, ``pytest-shard --num-shards 4 --shard-id 0``), or "" when none does."""
    splits, group = config.getoption("splits", None), config.getoption("group", None)
    if splits and group:
        return f"pytest-split --splits {splits} --group {group}"
    shards = config.getoption("num_shards", None)
    if isinstance(shards, int) and shards > 1:
        return f"pytest-shard --num-shards {shards} --shard-id {config.getoption('shard_id', 0)}"
    return ""


def _decide(
    outcomes: list[Outcome],
    problems: list[str],
    exitstatus: int,
    scope: Scope,
    matrix: tuple[Row, ...] = (),
    interrupted: bool = False,
) -> Verdict:
    verdict = dataclasses.replace(decide(outcomes, problems, scope), requirements=matrix)
    if exitstatus in _PYTEST_OWN:  # the run itself went wrong: keep pytest's code
        status = VerdictStatus.INTERRUPTED if interrupted else VerdictStatus.ERROR
        return verdict.with_status(status, int(exitstatus))
    return verdict


def record(config: pytest.Config, verdict: Verdict, facts: RunFacts) -> str | None:
    """Send the verdict to ``--acceptance-verdict-fd`` and write verdict.json; on failure,
    the problem to report (never an exception)."""
    config.stash[VERDICT_DECIDED] = True
    target = verdict_path(facts.rootdir)
    data = to_json(verdict, facts)
    gate_fd = getattr(config.known_args_namespace, "acceptance_verdict_fd", None)
    send_verdict(gate_fd, for_the_gate(data))
    try:
        output_dir(facts.rootdir)  # made with its .gitignore, or OSError saying why not
        write_json_atomic(target, data)
    except (OSError, RecursionError, ValueError) as error:
        return f"could not write {display_path(target, facts.rootdir)}: {describe_os_error(error)}"
    return None


class RunStart:
    """Registered on every process of an ``--acceptance`` run by the plugin's first hook."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.started_at = time.time()
        self.keyboard_interrupt = False
        forget_verdict(config.rootpath)  # from here on, a run that stops leaves no old verdict

    def pytest_keyboard_interrupt(self) -> None:
        self.keyboard_interrupt = True

    @pytest.hookimpl(trylast=True)
    def pytest_unconfigure(self, config: pytest.Config) -> None:
        """pytest ends a session only once it began: a Ctrl-C in ``pytest_configure`` or
        ``pytest_sessionstart`` (loading specs, waiting for another run, starting workers)
        leaves the recorder without a verdict to decide."""
        if self.keyboard_interrupt and not config.stash.get(VERDICT_DECIDED, False):
            self.interrupted("while pytest was starting")

    def interrupted(self, when: str) -> None:
        """Record an ``interrupted`` verdict of a run in which no criterion ran, and say so."""
        known = self.config.known_args_namespace
        if hasattr(self.config, "workerinput") or getattr(known, "collectonly", False):
            return  # the controller records the run; --collect-only records none
        problem = f"the run was interrupted {when}: no criterion ran"
        verdict = Verdict(VerdictStatus.INTERRUPTED, ExitCode.INTERRUPTED, (), (problem,))
        facts = RunFacts(
            rootdir=self.config.rootpath,
            started_at=self.started_at,
            finished_at=time.time(),
            fingerprint=_NO_FINGERPRINT,
            fingerprint_after=_NO_FINGERPRINT,
            specs=(),
            pid=os.getpid(),
            args=tuple(self.config.invocation_params.args),
        )
        failed = record(self.config, verdict, facts)
        written = f"verdict: INTERRUPTED (exit code 2), written to {verdict_path(facts.rootdir)}"
        sys.stderr.write(f"acceptance: {problem}; {failed or written}\n")
        sys.stderr.flush()


@dataclasses.dataclass
class _Run:
    """One pytest run of a criterion's item on one process: its setup, call and teardown
    reports, and pytest-rerunfailures' reruns of it (attempts of the same result)."""

    source: str  # the xdist worker ("" in a run without workers)
    result: Result | None = None
    rerun: bool = False  # its last report was a rerun: the next run of it continues it


class Runs:
    """Every run of one criterion that reported, whatever process it ran in: each is one
    result, and ``result`` combines them by the one rule (verdict/combine.py)."""

    def __init__(self) -> None:
        self.runs: list[_Run] = []

    def __len__(self) -> int:
        return sum(run.result is not None for run in self.runs)

    def take(self, report: pytest.TestReport, data: dict[str, Any] | None) -> bool:
        """Fold the report in; whether it changed what the criterion's result is."""
        run = self._run_of(report)
        if report.outcome == "rerun":  # type: ignore[comparison-overlap]  # rerunfailures
            run.rerun = True
            run.result = Result.from_dict(data) if data is not None else _unverified(report)
            return True
        if data is not None:
            run.result = Result.from_dict(data)
            return True
        failed = report.failed or (report.skipped and report.when == "setup")
        if failed and (run.result is None or run.result.status.passed):
            run.result = _unverified(report)  # a setup, teardown or crash of this run
            return True
        return False

    def result(self) -> Result:
        from pytest_acceptance.verdict.combine import combined

        done = [run for run in self.runs if run.result is not None]
        return combined([run.result for run in done if run.result], [r.source for r in done])

    def _run_of(self, report: pytest.TestReport) -> _Run:
        source = _worker(report)
        current = next((run for run in reversed(self.runs) if run.source == source), None)
        if current is not None and current.rerun and report.when == "setup":
            current.rerun = False  # rerunfailures runs it again: the same result
            return current
        if current is None or report.when == "setup":
            current = _Run(source)
            self.runs.append(current)
        return current


def _worker(report: pytest.TestReport) -> str:
    """The xdist worker a report came from ("gw0"), "" in a run without workers."""
    node = getattr(report, "node", None)
    workerinput = getattr(node, "workerinput", None)
    if isinstance(workerinput, dict):
        return str(workerinput.get("workerid", ""))
    gateway = getattr(node, "gateway", None)
    return str(getattr(gateway, "id", "") or "")


def _unverified(report: pytest.TestReport) -> Result:
    reason = report.longreprtext.strip().splitlines()
    detail = reason[-1] if reason else report.outcome
    return Result(
        Status.ERROR,
        message=f"the criterion did not produce a result ({report.when}: {detail})",
        output=report.longreprtext[-4000:],
    )


def _stop_reason(session: pytest.Session) -> str:
    """What else stopped the session early (e.g. --stepwise), as pytest words it."""
    reason = session.shouldstop or session.shouldfail
    return f"the run stopped early: {reason}" if isinstance(reason, str) else ""


def _not_run(stopped: str) -> Result:
    """A selected criterion that never reported: unknown, never a pass."""
    why = stopped or "the run ended before it (a crashed worker, or an interruption)"
    return Result(Status.NOT_RUN, attempts=0, message=f"not run: {why}")
