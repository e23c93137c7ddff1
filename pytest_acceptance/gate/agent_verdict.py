"""The agent's own evidence: the verdict its `pytest --acceptance` run wrote, and where.

Advice only: before /done, the Stop hook reads it to say what is next. It is never what a
flow ends on -- the gate's own run is (gate.py).

Standard library only, like every hook module.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pytest_acceptance.gate.hook_io import HookInputError, project_top
from pytest_acceptance.gate.transcript import ImplementFlow, format_epoch

VERDICT_RELATIVE = Path(".acceptance") / "verdict.json"


def unique_paths(paths: Iterable[Path | None]) -> list[Path]:
    seen: list[Path] = []
    for path in paths:
        if path is not None and path not in seen:
            seen.append(path)
    return seen


class AgentVerdict:
    """One `.acceptance/verdict.json` (schema "pytest-acceptance/verdict", version 1)."""

    __slots__ = ("data", "path")

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    @classmethod
    def load(cls, path: Path) -> AgentVerdict:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise HookInputError(f"{path}: unreadable verdict ({error})") from None
        if not isinstance(data, dict) or data.get("schema") != "pytest-acceptance/verdict":
            raise HookInputError(f"{path}: not a pytest-acceptance verdict (no schema field)")
        if data.get("version") != 1:
            raise HookInputError(f"{path}: verdict version {data.get('version')!r}, expected 1")
        if not isinstance(data.get("finished_at_epoch"), (int, float)):
            raise HookInputError(f"{path}: verdict has no numeric finished_at_epoch")
        return cls(path, data)

    @property
    def finished(self) -> float:
        return float(self.data["finished_at_epoch"])

    @property
    def status(self) -> str:
        return str(self.data.get("status"))

    @property
    def complete(self) -> bool:
        return self.data.get("complete") is True

    @property
    def rootdir(self) -> str:
        rootdir = self.data.get("rootdir")
        return rootdir if isinstance(rootdir, str) and rootdir else str(self.path.parent.parent)

    @property
    def fingerprints(self) -> set[str]:
        values = (self.data.get("fingerprint"), self.data.get("fingerprint_after"))
        return {value for value in values if isinstance(value, str) and value}

    def covers(self, spec: Path) -> bool:
        """Whether this run verified `spec`, or tried to: a spec that failed to collect is not
        in "specs" but named (file:line) in the run's collection errors."""
        return any(_same_path(item.get("path"), spec) for item in self._dicts("specs")) or bool(
            self.collection_errors(spec)
        )

    def spec_entry(self, spec: Path) -> dict[str, Any]:
        return next((s for s in self._dicts("specs") if _same_path(s.get("path"), spec)), {})

    def not_passing(self, spec: Path) -> list[dict[str, Any]]:
        """The criteria of `spec` whose status is neither passed nor flaky."""
        return [
            item
            for item in self._dicts("criteria")
            if _same_path(item.get("spec"), spec) and item.get("status") not in ("passed", "flaky")
        ]

    def collection_errors(self, spec: Path) -> list[str]:
        """The run's collection errors about `spec`: entries of "collection_errors" and the
        "collection error: <spec>:<line>: ..." lines among its "problems"."""
        errors = [
            str(item.get("message", "collection error"))
            for item in self._dicts("collection_errors")
            if _same_path(item.get("spec"), spec)
        ]
        names = {str(spec)}
        relative = os.path.relpath(spec, os.path.realpath(self.rootdir))
        if not relative.startswith(".."):
            names.add(Path(relative).as_posix())
        mention = re.compile(
            "(?:^|[\\s/])(?:" + "|".join(re.escape(name) for name in names) + "):\\d+:"
        )
        problems = self.data.get("problems")
        for problem in problems if isinstance(problems, list) else ():
            text = problem if isinstance(problem, str) else ""
            if text.startswith("collection error") and mention.search(text):
                errors.append(text)
        return errors

    def _dicts(self, key: str) -> list[dict[str, Any]]:
        value = self.data.get(key)
        return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def find_verdict(spec: Path, roots: Iterable[Path]) -> tuple[AgentVerdict | None, list[str]]:
    """The newest verdict under `<root>/.acceptance/` that covers `spec`, and every problem
    met on the way (unreadable files, verdicts of other specs), for the block reason."""
    found: list[AgentVerdict] = []
    problems: list[str] = []
    for root in unique_paths(roots):
        path = root / VERDICT_RELATIVE
        if not path.is_file():
            continue
        try:
            verdict = AgentVerdict.load(path)
        except HookInputError as error:
            problems.append(str(error))
            continue
        if verdict.covers(spec):
            found.append(verdict)
        else:
            problems.append(f"{path} is the verdict of another run (it does not cover {spec})")
    return (max(found, key=lambda verdict: verdict.finished) if found else None), problems


def evidence_roots(cwd: str | None, flow: ImplementFlow, spec: Path, repo: Path) -> list[Path]:
    """Where a verdict may be: the session's cwd, the flow's cwd, the spec's folder and the
    repository pinned at /implement (pytest's rootdir is usually one of them). Git runs only
    for a spec outside that repository, to add the spec's own repository."""
    folders = (Path(folder) for folder in (cwd, flow.implement.cwd, str(spec.parent)) if folder)
    roots: list[Path | None] = [*folders, repo]
    if not _inside(spec, repo):
        roots.append(project_top(spec.parent))
    return unique_paths(roots)


def _inside(path: Path, folder: Path) -> bool:
    inner, outer = os.path.realpath(path), os.path.realpath(folder)
    return inner == outer or inner.startswith(outer.rstrip(os.sep) + os.sep)


def _same_path(value: object, spec: Path) -> bool:
    return isinstance(value, str) and bool(value) and Path(os.path.realpath(value)) == spec


def missing_verdict(
    flow: ImplementFlow, spec: Path, verdict: AgentVerdict | None, problems: list[str]
) -> str | None:
    """Why no verification run of `spec` from within the flow exists; None when one does."""
    if verdict is None:
        seen = f" ({'; '.join(problems)})" if problems else ""
        return (
            f"No verification run of {spec} was found{seen}. Run /pytest-acceptance:verify: it "
            f"runs `pytest --acceptance {spec}`, which writes .acceptance/verdict.json."
        )
    if flow.started_at is None or verdict.finished <= flow.started_at:
        return (
            f"The last verification of {spec} ({verdict.path}) finished at "
            f"{format_epoch(verdict.finished)}, before this /implement flow started at "
            f"{format_epoch(flow.started_at)}. Run /pytest-acceptance:verify again."
        )
    return None
