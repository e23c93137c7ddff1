"""Running ``task`` criteria: a task list's claims checked against evidence.

Registered for a run with ``--acceptance`` by the plugin, which holds the task options. A
ticked task passes its own checks only when each piece of evidence it
names holds:

- its verify command passes (run by the bash runner, through the run hook);
- each file it names exists and changed since the base; each file it says it removes is
  gone and changed since the base. The base is ``--acceptance-base REF``, by default the
  merge base of HEAD with the default branch (``origin/HEAD``, else ``main``/``master``),
  or with HEAD's upstream when HEAD is on the default branch. What changed: ``git diff``
  against the base (the working tree, staged or not) and untracked files. Git runs as the
  working-tree fingerprint runs it: a clean environment, no fsmonitor, a ``git`` outside the
  project.

Otherwise it fails as a **phantom completion** naming what is missing, and so does a
ticked task that names no evidence at all. The requirements it
cites are checked on the controller, once their criteria have reported
(``pytest_acceptance.verdict.tasks``). An unticked task is listed (status ``unticked``),
never run; ``--acceptance-unticked fail`` fails it instead. Task items run after the other
criteria, so that the criteria a task cites have usually reported when it does.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_acceptance.model import Criterion, Issue, Method, Result, RunContext, Status, Task

GIT_TIMEOUT = 60.0  # seconds for one git command
_DEFAULT_BRANCHES = ("main", "master", "trunk", "develop")


def register(config: pytest.Config) -> None:
    """The task runner for this run; a bad ``acceptance_unticked`` is a usage error."""
    unticked = config.getoption("acceptance_unticked") or config.getini("acceptance_unticked")
    if unticked not in ("", "list", "fail"):
        raise pytest.UsageError(f"ini acceptance_unticked = {unticked!r}: give list or fail")
    base = config.getoption("acceptance_base") or config.getini("acceptance_base") or None
    config.pluginmanager.register(TaskRunner(base, unticked == "fail"), "acceptance-tasks")


class TaskRunner:
    def __init__(self, base: str | None, fail_unticked: bool) -> None:
        self.base = base
        self.fail_unticked = fail_unticked
        self.changes: dict[Path, Changes | TaskEvidenceError] = {}  # per rootdir, per run

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Tasks last (a stable sort: every xdist worker orders alike)."""
        items.sort(key=lambda item: _is_task(getattr(item, "criterion", None)))

    @pytest.hookimpl
    def pytest_acceptance_run(self, criterion: Criterion, context: RunContext) -> Result | None:
        if criterion.method is not Method.TASK:
            return None
        task = criterion.task or Task(ticked=False)
        if not task.ticked:
            return self._unticked(criterion)
        return check_task(criterion, task, context, lambda: self._changed(context.rootdir))

    def _changed(self, rootdir: Path) -> Changes:
        if rootdir not in self.changes:
            try:
                self.changes[rootdir] = changed_files(rootdir, self.base)
            except TaskEvidenceError as error:
                self.changes[rootdir] = error
        found = self.changes[rootdir]
        if isinstance(found, TaskEvidenceError):
            raise found
        return found

    def _unticked(self, criterion: Criterion) -> Result:
        if not self.fail_unticked:
            return Result(Status.UNTICKED, attempts=0, message="the task list does not claim it")
        issue = Issue(str(criterion.location), "the task ticked as done", "it is not ticked")
        return Result(
            Status.FAILED,
            issues=(issue,),
            message=f"task {criterion.id} is not done (--acceptance-unticked fail)",
        )


def _is_task(criterion: Criterion | None) -> bool:
    return criterion is not None and criterion.method is Method.TASK


def check_task(
    criterion: Criterion, task: Task, context: RunContext, changed: Callable[[], Changes]
) -> Result:
    """A ticked task's own evidence: its command and its files (``changed``: what changed
    since the base, or ``TaskEvidenceError``). A task that names none is a phantom."""
    if not task.evidence:
        return _no_evidence(criterion)
    issues: list[Issue] = []
    output = ""
    duration = 0.0
    if task.command:
        ran = _run_command(criterion, task.command, context)
        output, duration = ran.output, ran.duration
        if not ran.status.passed:
            issues.append(
                Issue(
                    str(criterion.location),
                    f"its verify command `{task.command}` passes",
                    ran.message or ran.status.value,
                )
            )
    checked = ""
    if task.files or task.removed:
        try:
            changes = changed()
        except TaskEvidenceError as error:
            return Result(Status.ERROR, message=f"cannot check task {criterion.id}: {error}")
        issues += _file_issues(context.rootdir, task, changes)
        checked = f" since {changes.base}"
    if issues:
        missing = "; ".join(issue.actual for issue in issues)
        message = f"phantom completion: task {criterion.id} is ticked, but {missing}"
        return Result(
            Status.FAILED, duration=duration, issues=tuple(issues), output=output, message=message
        )
    held = [f"`{task.command}` passes"] if task.command else []
    held += [f"{len(task.files) + len(task.removed)} named file(s) changed{checked}"] * bool(
        task.files or task.removed
    )
    extra = {"cites": list(task.cites)} if task.cites else {}
    message = "evidence holds: " + "; ".join(held) if held else "evidence: what it cites"
    return Result(Status.PASSED, duration=duration, output=output, message=message, extra=extra)


def _no_evidence(criterion: Criterion) -> Result:
    missing = "it names no verify command, no file and no requirement to check it by"
    expected = (
        "a **Verify**: `command`, the files it changes, or the requirements it meets "
        "(_Requirements: 1.2_, [US1])"
    )
    message = f"phantom completion: task {criterion.id} is ticked, but {missing}"
    # The way out is the same for every such task: the verdict says it once, naming them all,
    # instead of a block of the same sentences under each.
    advice = f"nothing shows these ticked tasks done: add {expected} to each, or untick it."
    return Result(Status.FAILED, message=message, extra={"advice": advice})


def _run_command(criterion: Criterion, command: str, context: RunContext) -> Result:
    as_bash = dataclasses.replace(
        criterion, method=Method.BASH, command=command, pass_condition=None, task=None
    )
    ran: Result | None = context.hook.pytest_acceptance_run(criterion=as_bash, context=context)
    return ran or Result(Status.ERROR, message="no runner ran the verify command")


def _file_issues(rootdir: Path, task: Task, changes: Changes) -> list[Issue]:
    issues = []
    since = f"changed since {changes.base}"
    for name in task.files:
        relative = changes.relative(rootdir / name)
        if "/" not in name and not (rootdir / name).exists():
            # "schema.prisma" as a person says it: the changed file of that name, wherever
            if not changes.named(name):
                issues.append(Issue(name, since, f"no file named {name} has {since}"))
        elif not (rootdir / name).exists():
            issues.append(Issue(name, "the file exists", f"{name} does not exist"))
        elif not changes.touches(relative):
            issues.append(Issue(name, since, f"{name} has not {since}"))
    for name in task.removed:
        relative = changes.relative(rootdir / name)
        if (rootdir / name).exists():
            issues.append(Issue(name, "the file is removed", f"{name} still exists"))
        elif not changes.touches(relative):
            issues.append(
                Issue(name, f"removed since {changes.base}", f"{name} never existed there")
            )
    return issues


class TaskEvidenceError(Exception):
    """What changed cannot be known: no git, no base."""


@dataclasses.dataclass(frozen=True)
class Changes:
    """Paths (relative to the repository's top, ``/``-separated) changed since ``base``."""

    top: Path
    base: str
    paths: frozenset[str]

    def relative(self, path: Path) -> str:
        try:
            return Path(os.path.abspath(path)).relative_to(self.top).as_posix()
        except ValueError:
            return ""

    def named(self, name: str) -> list[str]:
        """The changed paths that still exist and whose file name is ``name``."""
        named = (p for p in sorted(self.paths) if p.rsplit("/", 1)[-1] == name)
        return [p for p in named if (self.top / p).exists()]

    def touches(self, relative: str) -> bool:
        """The path changed, or (a directory) a path below it did."""
        if not relative:
            return False
        inside = relative.rstrip("/") + "/"
        return relative.rstrip("/") in self.paths or any(p.startswith(inside) for p in self.paths)


def _changes(top: Path, base: str | None) -> Changes:
    ref = base or _default_base(top)
    diff = _git(
        top,
        "diff",
        "--name-only",
        "--no-renames",
        "--no-ext-diff",
        "--no-textconv",
        "-z",
        ref,
        "--",
    )
    untracked = _git(top, "ls-files", "--others", "--exclude-standard", "-z")
    paths = frozenset(p for p in (diff + untracked).split("\0") if p)
    shown = ref if base else f"{ref[:12]} (the merge base with the default branch)"
    return Changes(top, shown, paths)


def changed_files(rootdir: Path, base: str | None) -> Changes:
    """What changed since ``base`` (default: the merge base with the default branch) in the
    git repository holding ``rootdir``; ``TaskEvidenceError`` when that cannot be known."""
    from pytest_acceptance.tree import repository

    top = repository.top(os.path.abspath(rootdir))
    if top is None:
        raise TaskEvidenceError(
            f"{rootdir} is not in a git repository, so nothing tells which files changed"
        )
    return _changes(Path(top), base)


def _default_base(top: Path) -> str:
    """The merge base of HEAD with the default branch; on the default branch itself (or
    detached at its tip), the merge base with HEAD's upstream."""
    head = _git(top, "rev-parse", "--verify", "-q", "HEAD^{commit}").strip()
    branch = _git(top, "symbolic-ref", "-q", "HEAD", check=False).strip()
    defaults = _default_branches(top)
    on_default = branch in defaults or branch.removeprefix("refs/heads/") in _DEFAULT_BRANCHES
    if not on_default:
        for default in defaults:
            merge_base = _git(top, "merge-base", "HEAD", default, check=False).strip()
            if merge_base and (branch or merge_base != head):
                return merge_base
    upstream = _git(top, "merge-base", "HEAD", "@{upstream}", check=False).strip()
    if upstream and upstream != head:
        return upstream
    raise TaskEvidenceError(
        "HEAD is on the default branch with nothing to compare with, so nothing tells which "
        "files the work changed: name the commit the work started from with "
        "--acceptance-base REF"
    )


def _default_branches(top: Path) -> list[str]:
    found = []
    remote_head = _git(top, "symbolic-ref", "-q", "refs/remotes/origin/HEAD", check=False).strip()
    if remote_head:
        found.append(remote_head)
    for name in _DEFAULT_BRANCHES:
        if _git(top, "rev-parse", "--verify", "-q", f"refs/heads/{name}", check=False).strip():
            found.append(f"refs/heads/{name}")
    return found


def _git(top: Path, *args: str, check: bool = True) -> str:
    from pytest_acceptance.tree.file_hash import FingerprintError
    from pytest_acceptance.tree.fingerprint import _git_command, _git_env

    try:
        command = _git_command(os.fsencode(top), *args)
        done = subprocess.run(
            command,
            env=_git_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired, FingerprintError) as error:
        raise TaskEvidenceError(f"git could not run: {error}") from None
    if done.returncode != 0 and check:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise TaskEvidenceError(f"git {args[0]} failed: {why[-1] if why else done.returncode}")
    return done.stdout.decode(errors="surrogateescape") if done.returncode == 0 else ""
