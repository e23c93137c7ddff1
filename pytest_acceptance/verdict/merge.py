"""One verdict from CI shards: ``pytest --acceptance-merge DIR…``.

Each shard (a CI job running some of the criteria: pytest-split, pytest-shard, node ids,
``-k``) leaves its ``.acceptance/verdict.json``: the criteria it selected with their
results, the tree's fingerprint, and each spec's place in the project and sha256
(verdict/recorder.py). The merge run, in a checkout of the same tree, reads every
shard's verdict and refuses, naming the reason, when the shards

- ran on different trees (fingerprints), or on different versions of a spec (or another
  version than the checkout's),
- ran different specs,
- do not cover every criterion of every spec.

A criterion that ran in several shards has each shard's result: they combine by the one
rule of verdict/combine.py (any failed result fails it), and the merged verdict counts them.

Otherwise it is an ``--acceptance`` run of those specs in which each criterion's result is
the shard's (``ShardReplay``, the first runner asked) instead of a new run: the verdict,
the evidence, the report, JUnit (``--junitxml``), HTML (``--acceptance-html``) and the
step summary come out exactly as from one local run. A shard's run-level problems (a
collection error, an interruption, evidence that could not be assembled) forbid the
merged verdict a pass, as they forbade the shard's.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_acceptance.collect import load_spec
from pytest_acceptance.model import Criterion, Issue, Result, RunContext, SpecError, Status
from pytest_acceptance.options import SHARDS_TREE, spec_paths
from pytest_acceptance.store import OUTPUT_DIR, VERDICT_FILE, forget_verdict
from pytest_acceptance.text import display_path
from pytest_acceptance.tree.hostile import file_digest
from pytest_acceptance.verdict.combine import combined
from pytest_acceptance.verdict.decision import SCHEMA, SCHEMA_VERSION

Key = tuple[str, str]  # (the spec's path relative to the rootdir, criterion id)
_STATUSES = {status.value for status in Status}


class MergeRefused(Exception):
    """The shards cannot make one verdict; ``str()`` gives every reason."""


@dataclass(frozen=True)
class Shard:
    """One shard's verdict, as the merge needs it."""

    source: str  # the directory as given on the command line
    fingerprint: str
    specs: dict[str, str]  # relative spec path -> sha256 of the spec the shard ran
    results: dict[Key, Result]  # the criteria it selected
    problems: tuple[str, ...]


def begin_merge(config: pytest.Config) -> None:
    """Read and check the shards, then make this run an ``--acceptance`` run of their specs
    whose criteria take the shards' results. A refusal is a usage error naming why."""
    if config.getoption("acceptance", None):
        raise pytest.UsageError(
            "--acceptance-merge takes the specs from the shards' verdicts: leave out --acceptance"
        )
    rootdir = config.rootpath
    base = config.invocation_params.dir
    given: list[str] = config.getoption("acceptance_merge")
    try:
        shards = [read_shard(base / directory, directory) for directory in given]
    finally:  # whatever comes of this merge, the last verdict here is not its verdict
        forget_verdict(rootdir)
    try:
        refuse(_tree_reasons(shards) + _spec_reasons(shards, rootdir))
        config.option.acceptance = [str(rootdir / relative) for relative in shards[0].specs]
        spec_paths(config)  # the formats of this run, before a spec is read
        results = check(shards, rootdir)
    except MergeRefused as refused:
        raise pytest.UsageError(f"--acceptance-merge refused: {refused}") from None
    config.stash[SHARDS_TREE] = shards[0].fingerprint
    config.option.acceptance_agent = "none"  # the shards judged: no agent starts ahead here
    config.pluginmanager.register(ShardReplay(results, shards), "acceptance-merge")


def read_shard(directory: Path, given: str) -> Shard:
    """The shard's verdict: ``DIR/verdict.json``, or ``DIR/.acceptance/verdict.json``."""
    path = directory / VERDICT_FILE
    if not path.is_file():
        path = directory / OUTPUT_DIR / VERDICT_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise _unusable(given, "holds no verdict.json (nor .acceptance/verdict.json)") from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise _unusable(given, f"its verdict.json cannot be read ({error})") from None
    try:
        return _shard(data, given)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise _unusable(
            given, f"its verdict.json is not one this version writes ({error!r})"
        ) from None


def _unusable(given: str, why: str) -> pytest.UsageError:
    return pytest.UsageError(f"--acceptance-merge {given}: {why}")


def _shard(data: dict[str, Any], given: str) -> Shard:
    if (data["schema"], data["version"]) != (SCHEMA, SCHEMA_VERSION):
        raise ValueError(f"schema {data['schema']!r} version {data['version']!r}")
    by_path = {spec["path"]: spec["relative"] for spec in data["specs"]}
    results = {}
    for entry in data["criteria"]:
        results[(by_path[entry["spec"]], entry["id"])] = _result(entry)
    return Shard(
        source=given,
        fingerprint=str(data["fingerprint"]),
        specs={spec["relative"]: str(spec["sha256"]) for spec in data["specs"]},
        results=results,
        problems=tuple(str(problem) for problem in data["problems"]),
    )


def _result(entry: dict[str, Any]) -> Result:
    """A criterion's result as the shard's verdict.json holds it (decision.py
    ``_criterion_json``)."""
    if entry["status"] not in _STATUSES:
        raise ValueError(f"status {entry['status']!r}")
    extra: dict[str, Any] = {"unstable": bool(entry.get("unstable"))}
    if isinstance(entry.get("usage"), dict):
        extra["usage"] = entry["usage"]
    if isinstance(entry.get("votes"), dict):
        extra["votes"] = entry["votes"]
    if "sign_off" in entry:
        extra["sign_off"] = {
            "state": entry["sign_off"],
            "by": entry.get("signed_off_by", ""),
            "at": entry.get("signed_off_at", ""),
            "note": entry.get("sign_off_note", ""),
        }
    return Result(
        status=Status(entry["status"]),
        attempts=int(entry["attempts"]),
        duration=float(entry["duration"]),
        issues=tuple(Issue.from_dict(issue) for issue in entry["issues"]),
        output=str(entry["output"]),
        message=str(entry["message"]),
        extra=extra,
        results=max(1, int(entry.get("results", 1))),
    )


def refuse(reasons: list[str]) -> None:
    if reasons:
        raise MergeRefused("; ".join(reasons))


def check(shards: list[Shard], rootdir: Path) -> dict[Key, Result]:
    """Every criterion's one result, from shards of one tree and one version of each spec
    (the results of a criterion several shards ran, combined); MergeRefused with every
    reason they do not make one verdict."""
    ran: dict[Key, list[tuple[str, Result]]] = defaultdict(list)
    for shard in shards:
        for key, result in shard.results.items():
            ran[key].append((shard.source, result))
    refuse(_coverage_reasons(shards[0].specs, set(ran), rootdir))
    return {
        key: combined([result for _, result in each], [source for source, _ in each])
        for key, each in ran.items()
    }


def _tree_reasons(shards: list[Shard]) -> list[str]:
    unknown = [s.source for s in shards if s.fingerprint.startswith("unavailable")]
    if unknown:
        return [f"{', '.join(unknown)} recorded no fingerprint of their tree"]
    trees = {shard.fingerprint for shard in shards}
    if len(trees) == 1:
        return []
    listed = ", ".join(f"{s.source} {s.fingerprint[:20]}…" for s in shards)
    return [f"the shards ran on different trees (fingerprints {listed})"]


def _spec_reasons(shards: list[Shard], rootdir: Path) -> list[str]:
    first = shards[0]
    reasons = [
        f"{shard.source} ran the specs {sorted(shard.specs)}, {first.source} {sorted(first.specs)}"
        for shard in shards[1:]
        if set(shard.specs) != set(first.specs)
    ]
    for relative in first.specs:
        versions = {shard.specs.get(relative, "") for shard in shards}
        if len(versions) > 1:
            reasons.append(f"the shards ran different versions of {relative}")
            continue
        here = file_digest(rootdir / relative)
        if here != first.specs[relative]:
            state = "is missing" if here is None else "differs from the one the shards ran"
            reasons.append(f"{relative} in this checkout ({rootdir}) {state}")
    return reasons


def _coverage_reasons(specs: dict[str, str], ran: set[Key], rootdir: Path) -> list[str]:
    reasons = []
    for relative in specs:
        try:
            spec = load_spec(rootdir / relative, rootdir)
        except (SpecError, OSError) as error:
            reasons.append(f"{relative} cannot be read here: {error}")
            continue
        missing = [c.id for c in spec.criteria if (relative, c.id) not in ran]
        if missing:
            more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
            shown = ", ".join(missing[:10]) + more
            reasons.append(f"no shard ran {shown} of {relative} ({len(missing)} missing)")
    return reasons


class ShardReplay:
    """The first runner asked: a criterion's result is the one its shard recorded."""

    def __init__(self, results: dict[Key, Result], shards: list[Shard]) -> None:
        self.results = results
        self.problems = [f"shard {s.source}: {problem}" for s in shards for problem in s.problems]

    @pytest.hookimpl(tryfirst=True)
    def pytest_acceptance_run(self, criterion: Criterion, context: RunContext) -> Result:
        key = (display_path(criterion.location.path, context.rootdir), criterion.id)
        found = self.results.get(key)
        if found is None:  # the coverage check makes this unreachable; never a pass
            return Result(Status.ERROR, attempts=0, message="no shard ran this criterion")
        return found

    @pytest.hookimpl
    def pytest_acceptance_verdict(self) -> list[str]:
        return self.problems
