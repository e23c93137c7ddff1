"""The gate's own verification run: the only evidence /done and /escalate are accepted on.

Nothing the agent writes in the project is evidence. The gate runs `pytest --acceptance`
itself, on the spec as pinned at /implement (the copy in the plugin's state, never the
project's file), with:

- the interpreter pinned at /implement (gate_runtime.py), under ``-I`` (no PYTHONPATH, no
  cwd on sys.path), its whole environment pinned file by file (tree/closure.py) and checked
  before every run: any file of it added, removed or changed blocks;
- an environment built from scratch (PATH, HOME, LANG/LC_*, TZ, USER and the ANTHROPIC_*
  credentials an agent criterion needs; a fresh TMPDIR; no BASH_ENV, ENV, PYTEST_PLUGINS,
  PYTHONPATH, ...; PYTEST_ADDOPTS only ``-p no:cacheprovider``), plugin autoload off, only
  pytest-acceptance and xdist loaded, ``--noconftest``, no parse cache from ``.acceptance/``;
- ``-c`` an ini file the gate writes, holding only the ``acceptance_*`` settings of the
  project's configuration as it was at /implement (never ``acceptance_cache``);
- ``--rootdir`` the repository pinned at /implement, and the run's cwd;
- ``--acceptance-signoffs`` the sign-offs file as pinned at /implement (a sign-off written
  during the flow never counts);
- the verdict read from a pipe the gate hands to pytest (``--acceptance-verdict-fd``), not
  from ``.acceptance/verdict.json``, believed only in its exact shape (verdict_check.py:
  any same-user process can open that pipe through /proc), and /done needs pytest's own
  exit code 0;
- no ``__pycache__`` read by the run or the Pythons its criteria start (a forged .pyc): they
  read only bytecode the gate compiled and witnessed unchanged (gate_bytecode.py);
- the tree fingerprint taken by the gate before and after the run, equal;
- a criterion whose command is one pytest run witnessed by a reporter of the gate's own
  (witness.py): it passes only when that pytest's session finished and the tests pinned
  for it at /implement passed, whatever its exit code;
- a deadline below the hook's timeout: a run that cannot finish is killed (its whole
  process group) and blocks with the reason.

Trustworthy results are stored in the plugin's state under a fingerprint of every file of
the project (``reuse_key``). Only the Stop hook reuses one, and only the result of the run
that let /done or /escalate through (flow_state.result_for), when nothing of the session
could have acted since that run started (concurrent_work.py: no tool call since, no
background task, no subagent) and the project's files, read by content at the stop (no
stat keys), are unchanged. /done and /escalate are always judged on a fresh run.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import signal
import stat
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from pytest_acceptance.gate import apart, gate_bytecode, gate_env, gate_lock, witness
from pytest_acceptance.gate.flow_state import SIGNOFF_FILE, Flow
from pytest_acceptance.gate.gate_result import MAX_PROBLEMS, CriterionOutcome, GateResult
from pytest_acceptance.gate.gate_runtime import (
    GateError,
    clean_env,
    never_pinned,
    probe,
)
from pytest_acceptance.gate.hook_io import env_int
from pytest_acceptance.gate.interpreter_paths import private_pycache
from pytest_acceptance.gate.pinned_collection import Collection, Criterion, DamagedCollection
from pytest_acceptance.gate.pins import (
    criterion_integrity,
    gate_environment,
    path_and_home,
    table,
    witnessed_criteria,
)
from pytest_acceptance.gate.pins.base import PinError
from pytest_acceptance.gate.pytest_addopts import ini_text
from pytest_acceptance.gate.verdict_check import parse as parse_verdict
from pytest_acceptance.tree import folders as roles
from pytest_acceptance.tree.hostile import file_digest

Record = TypeVar("Record")
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
DEFAULT_DEADLINE = 600  # seconds for one gate run; the hooks' timeout in hooks.json is 900
PROBE_TIMEOUT = 120
VERIFY = "/pytest-acceptance:verify"
DONE = "/pytest-acceptance:done"
ESCALATE = "/pytest-acceptance:escalate"
LISTED = 10  # criteria named in one reason; the rest are counted


def deadline_seconds() -> int:
    return max(5, env_int("ACCEPTANCE_GATE_DEADLINE", DEFAULT_DEADLINE))


# --- the run ------------------------------------------------------------------------------------


def write_ini(flow: Flow) -> Path:
    """The run's only configuration: the pinned acceptance_* settings."""
    path = flow.folder / "gate.ini"
    path.write_text(ini_text(_collection(flow).settings), encoding="utf-8")
    return path


def fingerprint(repo: str, deadline_at: float, hashes: Path | None = None) -> str:
    """The tree fingerprint, taken by the gate within the deadline; GateError when it cannot
    be taken (a failing git, a FIFO, too slow). `hashes`: the flow's hash cache file, in the
    plugin's state (files whose stat data, ctime included, are unchanged are not read again)."""
    try:
        from pytest_acceptance.tree.fingerprint import tree_fingerprint
        from pytest_acceptance.tree.hash_cache import HashCache

        cache = None if hashes is None else HashCache(hashes)
        timeout = max(1.0, deadline_at - time.monotonic())
        return tree_fingerprint(repo, timeout=timeout, cache=cache)
    except Exception as error:  # an unusable fingerprint must never pass as "unchanged"
        raise GateError(f"cannot fingerprint the working tree {repo} ({error})") from None


def run(
    flow: Flow, deadline_at: float, reuse: bool = True, checks_intact: bool = False
) -> GateResult:
    """The gate's verification run of the pinned spec on the current tree (or the result it
    already stored for this tree, when `reuse`). Raises GateError when no trustworthy result
    comes out. One run of a tree at a time (gate_lock.py). `checks_intact`: the caller found
    no criterion integrity finding just before (/done's preconditions), so none is taken
    as there before the run: any the run leaves refuses it."""
    with gate_lock.held(flow, deadline_at):
        return _run(flow, deadline_at, reuse, checks_intact)


def _run(flow: Flow, deadline_at: float, reuse: bool, checks_intact: bool) -> GateResult:
    missing_pin = never_pinned(flow)
    if missing_pin is not None:
        raise GateError(missing_pin)
    changed = pinned_changes(flow, table.before_run)
    if changed:
        raise GateError(
            f"what the gate pinned at /implement changed since (its Python environment, "
            f"its tools, the inputs acceptance_reads declares, the project's pytest "
            f"configuration): {', '.join(changed[:5])}. Restore it (reinstall the packages, "
            "put the file back), or start a new /implement so the gate pins it again."
        )
    watched = _pinned(witnessed_criteria.read, flow)
    purge_bytecode_caches(flow.repo)
    before = fingerprint(flow.repo, deadline_at, flow.hashes_file)
    # A reuse is decided on the files' content: a stat key can be kept across an edit (a
    # write through a shared mapping leaves no new ctime).
    key = reuse_key(flow, deadline_at, by_content=reuse)
    stored = flow.result_for(key) if reuse and key is not None else None
    if stored is not None:
        return stored
    started = time.time()
    intact = checks_intact or not watched.criteria
    checks_before = set() if intact else set(integrity_findings(flow))
    with private_pycache() as pycache:
        witness_env = witness.prepare(pycache, watched.distributions)
        verdict, returncode, tail = _pytest(flow, deadline_at, pycache, witness_env)
        witnessed = witness.sessions(witness_env[witness.RECORDS_VARIABLE])
    result = _result(flow, verdict, returncode, tail, before, before)
    after = fingerprint(flow.repo, deadline_at, flow.hashes_file)
    joined = witness.joined(flow, watched, result.criteria, witnessed)
    if joined:
        _refuse_what_the_run_planted(flow, checks_before)
    alone = _pinned_alone(
        flow, deadline_at, watched, joined, witness.pinned_sources(flow, witnessed)
    )
    left = pinned_changes(flow, table.after_run)
    if left:  # a criterion's code wrote where a later criterion's process would import it
        raise GateError(
            f"the gate's run changed the environment it runs in: {', '.join(left[:5])}. "
            "Code a criterion runs may not write there; restore it and start a new /implement"
        )
    if joined and after == before:  # each run must leave the tree as it found it
        after = fingerprint(flow.repo, deadline_at, flow.hashes_file)
    result = result.replace(
        fingerprint_after=after,
        criteria=witness.judge(flow, watched, result.criteria, witnessed, alone),
        duration=round(time.time() - started, 3),
    )
    trustworthy = run_problem(result) is None
    if trustworthy:  # what the next run's criteria need compiled
        witness.learn_modules(flow, witnessed.values())
    flow.count_run(result)
    if key is not None and trustworthy and reuse_key(flow, deadline_at) == key:
        flow.store_result(result, key)
    return result


def _refuse_what_the_run_planted(flow: Flow, before: set[str]) -> None:
    """The pinned-only run judges the pinned tests where no new test file ran; it must not
    load what the first run wrote among the checks (a conftest the ignore rules hide from
    the tree fingerprint, a test configuration). What criterion integrity reports now and did
    not before the run was planted by the run itself: the second run is never started."""
    planted = [finding for finding in integrity_findings(flow) if finding not in before]
    if planted:
        raise GateError(
            f"the gate's own run changed the checks its next run would load: "
            f"{' '.join(planted[:LISTED])} Code a criterion runs may not write test files "
            "or test configuration; remove what it wrote and call /done again"
        )


def pinned_changes(flow: Flow, check: Callable[[Flow], list[str]]) -> list[str]:
    """What changed of the pinned inputs (pins/table.py); a pin absent, damaged or failed
    at /implement refuses the run."""
    try:
        return check(flow)
    except PinError as error:
        raise GateError(str(error)) from None


def _pinned_alone(
    flow: Flow,
    deadline_at: float,
    watched: witnessed_criteria.WitnessedCriteria,
    criteria: tuple[str, ...],
    only: dict[str, str | None],
) -> dict[str, witness.Session | None]:
    """The `criteria` run again, their pytest collecting only the files that held pinned
    tests (`only`: witness.pinned_sources), each as it was at /implement: each criterion's
    session there (None when it reported none, or the run's channel was not trusted).
    Nothing when no criterion is given."""
    if not criteria:
        return {}
    with private_pycache() as pycache:
        env = witness.prepare(pycache, watched.distributions, only=only)
        verdict, _, _ = _pytest(flow, deadline_at, pycache, env, criteria)
        found = witness.sessions(env[witness.RECORDS_VARIABLE])
    trusted = not isinstance(verdict, str)
    return {criterion: found.get(criterion) if trusted else None for criterion in criteria}


def purge_bytecode_caches(repo: str) -> None:
    """Every ``__pycache__`` folder in the project goes before the gate's run. A Python that
    ignores PYTHONPYCACHEPREFIX (``-E``, ``-I``) would read them, and a ``.pyc`` is code run
    without its source, written by whoever wrote it last. Python writes them again; nothing
    else reads them. Links are not followed: nothing outside the project is touched."""
    for folder, folders, _ in os.walk(repo):
        folders[:] = [name for name in folders if name not in roles.NO_PROJECT_BYTECODE]
        if roles.BYTECODE in folders:
            folders.remove(roles.BYTECODE)
            shutil.rmtree(os.path.join(folder, roles.BYTECODE), ignore_errors=True)


def reuse_key(flow: Flow, deadline_at: float, by_content: bool = False) -> str | None:
    """What a stored result is filed under: every file under the project, ignored and
    volatile ones too (a stored pass must not stand in for a run after a git-ignored helper,
    a module in .pytest_cache or a symlink's target changed); None when it cannot be taken
    (then nothing is reused or stored, and the gate simply runs). `by_content`: every file
    read again, none taken from the hash cache by its stat key."""
    try:
        from pytest_acceptance.tree.fingerprint import everything_fingerprint
        from pytest_acceptance.tree.hash_cache import HashCache

        cache = None if by_content else HashCache(Path(f"{flow.hashes_file}.all"))
        timeout = max(1.0, deadline_at - time.monotonic())
        return everything_fingerprint(flow.repo, timeout=timeout, cache=cache)
    except Exception:  # too large or unreadable: never reuse, never fail the gate for it
        return None


def _pytest(
    flow: Flow,
    deadline_at: float,
    pycache: str,
    witness_env: dict[str, str],
    only: tuple[str, ...] = (),
) -> tuple[dict[str, Any] | str | None, int, str]:
    """(the verdict, or why the channel is not trusted, or None), pytest's exit code, the
    log's tail. `pycache`, a fresh folder, holds the run's temporary files and the witness.
    `only`: the criteria to run (default: every one), logged apart from the full run.
    The gate's pytest and workers, and the Pythons the criteria start, read only bytecode
    the gate compiled and witnessed unchanged (gate_bytecode.py), with writing off: the
    project's own code is compiled afresh in every process."""
    python = _collection(flow).python
    packages = _pinned(gate_environment.read, flow).package_digests(flow)
    try:
        bytecode = gate_bytecode.ready(python, packages, clean_env(python))
    except (gate_bytecode.BytecodeError, OSError) as error:
        raise GateError(f"the gate's bytecode: {error}") from None
    criteria_bytecode = _criteria_bytecode(flow, python)
    path_environment = _pinned(path_and_home.read, flow)
    reader, writer = os.pipe()
    # -B: -I ignores PYTHONDONTWRITEBYTECODE, and the gate's bytecode must stay as recorded.
    command = [python, "-I", "-B", "-X", f"pycache_prefix={bytecode.path}", "-m", "pytest"]
    command += ["--acceptance"]
    command += [str(flow.spec_copy)]
    command += [f"{flow.spec_copy}::{criterion}" for criterion in only]
    command += ["--rootdir", flow.repo, "-c", str(write_ini(flow)), "--noconftest"]
    command += ["-p", "no:cacheprovider", "-p", "pytest_acceptance.plugin", "-p", "xdist.plugin"]
    command += ["--acceptance-verdict-fd", str(writer), "-q", "--color=no"]
    # The agent's own /verify may hold the spec's lock: wait for it with half of what is left.
    waiting = max(0, int((deadline_at - time.monotonic()) / 2))
    command += ["-o", f"acceptance_lock_timeout={waiting}"]
    # Only the sign-offs pinned at /implement count (a missing file: none); the spec copy
    # stands for the project's spec, whose path the sign-offs (and cwd: keys) name.
    command += ["--acceptance-signoffs", str(flow.config_folder / SIGNOFF_FILE)]
    if flow.spec_path is not None:
        command += ["--acceptance-spec-origin", flow.spec_path]
    log_path = flow.folder / ("gate-run-pinned-only.log" if only else "gate-run.log")
    chunks: list[bytes] = []
    try:
        with open(log_path, "wb") as log:
            words = apart.command(
                command, flow, writable=[pycache], read_only=[witness.plugin_folder(witness_env)]
            )
            # A wrapper may ignore SIGTERM while it waits for the run (unshare does): it
            # gets SIGKILL, and ends the run's namespace with it.
            on_hook_death = signal.SIGKILL if words[0] != command[0] else signal.SIGTERM
            process = subprocess.Popen(
                words,
                cwd=flow.repo,
                env=gate_env.apply(
                    _run_env(
                        python,
                        pycache,
                        str(bytecode.path),
                        str(criteria_bytecode.path),
                        witness_env,
                    ),
                    path_environment,
                    flow,
                    python,
                    pycache,
                ),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(writer,),
                start_new_session=True,
                preexec_fn=functools.partial(_die_with, os.getpid(), on_hook_death),
            )
            os.close(writer)
            writer = -1
            try:
                drain = threading.Thread(target=_drain, args=(reader, chunks), daemon=True)
                drain.start()
                returncode = _wait(process, deadline_at)
                drain.join(timeout=max(0.1, min(10.0, deadline_at - time.monotonic())))
            finally:  # also when the hook's own deadline interrupts the wait
                _kill_group(process)
    except OSError as error:
        raise GateError(f"the gate could not start `{python} -m pytest` ({error})") from None
    finally:
        if writer >= 0:
            os.close(writer)
    tail = _tail(log_path)
    if not witness.untouched(witness_env):
        return "the archive of the gate's witness changed during its run", returncode, tail
    if not bytecode.untouched():
        return "the gate's own bytecode folder changed during its run", returncode, tail
    if not criteria_bytecode.untouched():
        return "the criteria's bytecode folder changed during the gate's run", returncode, tail
    pinned = _collection(flow)
    verdict, untrusted = parse_verdict(b"".join(chunks), pinned.ids, pinned.criteria)
    return (untrusted if untrusted is not None else verdict), returncode, tail


def _pinned(read: Callable[[Flow], Record], flow: Flow) -> Record:
    try:
        return read(flow)
    except PinError as error:
        raise GateError(str(error)) from None


def _criteria_bytecode(flow: Flow, python: str) -> gate_bytecode.Folder:
    """The folder of bytecode the gate compiled for the modules its criteria's pytest imports
    from the environment (empty when the witness saw none, or when they cannot be compiled:
    then they compile afresh, slowly and safely). It always exists and is witnessed
    unchanged: a folder the criteria's Pythons read that one criterion could fill for the
    next unseen would be planted bytecode."""
    sources = witness.known_modules(flow)
    try:
        try:
            return gate_bytecode.criteria_ready(python, sources, clean_env(python), flow.repo)
        except gate_bytecode.BytecodeError:
            return gate_bytecode.criteria_ready(python, gate_bytecode.NOTHING, {})
    except (gate_bytecode.BytecodeError, OSError) as error:
        raise GateError(f"the criteria's bytecode: {error}") from None


def _run_env(
    python: str, pycache: str, bytecode: str, criteria_bytecode: str, witness_env: dict[str, str]
) -> dict[str, str]:
    """The clean environment, and what makes a criterion's pytest load the witness."""
    env = clean_env(python, pycache, bytecode, criteria_bytecode)
    env.update(witness_env)
    env.update(witness.criteria_pytest(env))
    return env


def _die_with(hook: int, how: signal.Signals) -> None:
    """In the run's first process, before it starts: when the hook that started it dies
    (Claude Code kills a hook at its timeout, with SIGTERM or SIGKILL), it gets `how`. The
    gate's pytest answers SIGTERM like Ctrl-C (it kills what the criteria started, stops its
    workers and ends, releasing the spec's run lock); a wrapper that set the run apart
    (apart.py) gets SIGKILL, and ends its pid namespace with every process in it (the
    kernel releases the lock). Linux only (prctl); elsewhere the hook's own handler kills the run's
    process group when it is given the chance."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, how, 0, 0, 0)
        if os.getppid() != hook:  # the hook died before prctl took effect
            os.kill(os.getpid(), how)


def _drain(reader: int, chunks: list[bytes]) -> None:
    try:
        while True:
            chunk = os.read(reader, 1 << 16)
            if not chunk:
                return
            chunks.append(chunk)
    finally:
        os.close(reader)


def _wait(process: subprocess.Popen[bytes], deadline_at: float) -> int:
    try:
        return process.wait(timeout=max(0.1, deadline_at - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise GateError(
            f"the gate's verification run did not finish within its deadline "
            f"(ACCEPTANCE_GATE_DEADLINE={deadline_seconds()} s) and was stopped. Make the "
            "criteria faster, or raise the deadline (and the hook timeout in hooks.json)."
        ) from None
    finally:
        _kill_group(process)


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """The run's whole process group goes: xdist workers, criteria and their children."""
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)


def _tail(path: Path, lines: int = 12) -> str:
    try:
        text = path.read_bytes()[-4000:].decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def _result(
    flow: Flow,
    verdict: dict[str, Any] | str | None,
    returncode: int,
    tail: str,
    before: str,
    after: str,
) -> GateResult:
    result = GateResult(
        fingerprint=before,
        fingerprint_after=after,
        at=time.time(),
        returncode=returncode,
        tail=tail,
        spec_sha256=flow.spec_sha256,
    )
    if verdict is None or isinstance(verdict, str):
        return result.replace(
            error=verdict
            or f"the gate's verification run produced no verdict (exit code {returncode})"
        )
    specs = [s for s in verdict.get("specs") or [] if isinstance(s, dict)]
    exit_code = verdict.get("exit_code")
    status = verdict.get("status")
    return result.replace(
        status=None if status is None else str(status),
        exit_code=exit_code if isinstance(exit_code, int) else None,
        complete=verdict.get("complete") is True,
        selected=sum(int(s.get("selected") or 0) for s in specs),
        criteria=tuple(
            CriterionOutcome.from_json(c)
            for c in verdict.get("criteria") or []
            if isinstance(c, dict)
        ),
        problems=tuple(str(p) for p in verdict.get("problems") or [])[:MAX_PROBLEMS],
    )


# --- judging a result -----------------------------------------------------------------------------


def run_problem(result: GateResult) -> str | None:
    """Why a result is not one the gate can judge on at all."""
    if result.error is not None:
        return f"{result.error}:\n{result.tail}"
    if result.exit_code != result.returncode:
        return (
            f"the gate's verification run exited {result.returncode} but its verdict "
            f"says {result.exit_code}: something interfered with the run"
        )
    # The gate's own fingerprints, before and after (the verdict's are computed inside the
    # run, by the installed package, whose version may differ from the plugin's).
    if result.fingerprint != result.fingerprint_after:
        return (
            "files changed while the gate's verification run was running (a criterion that "
            "writes into the tree, or another process): stop changing files, then "
            f"{DONE} again"
        )
    return None


def done_problem(flow: Flow, result: GateResult) -> str | None:
    """What keeps /done from being accepted on this result; None when every pinned
    criterion passed in a complete run of the pinned spec on this tree."""
    problem = run_problem(result)
    if problem is not None:
        return problem
    collection = flow.collection
    if collection is None:
        return never_pinned(flow)
    if collection.error:
        return (
            f"the spec as pinned at /implement cannot be collected ({collection.error})"
            f": {DONE} is not possible; call {ESCALATE} so a human fixes the spec"
        )
    by_id = result.by_id()
    pinned = collection.ids
    missing = [ident for ident in pinned if ident not in by_id]
    if missing or not result.complete:
        return (
            "the gate's run did not verify every criterion pinned at /implement (missing: "
            f"{', '.join(missing[:LISTED]) or 'none'}, complete: {result.complete})"
        )
    failing = [by_id[i] for i in pinned if by_id[i].status in ("failed", "error")]
    manual = [by_id[i] for i in pinned if by_id[i].status == "manual"]
    if failing:
        return (
            f"these criteria fail in the gate's own verification run: {named_criteria(failing)}. "
            f"Work on exactly those, run {VERIFY}, then {DONE} again"
        )
    if manual:
        return (
            f"the automated criteria pass but manual criteria remain: {named_criteria(manual)}. "
            f"{DONE} is not possible: call {ESCALATE} with them so a human checks them"
        )
    if result.status != "pass" or result.returncode != 0:
        return (
            f"the gate's verification run ended with status {result.status!r} (pytest "
            f"exit code {result.returncode}): " + "; ".join(result.problems)[:600]
        )
    return None


def escalate_problem(flow: Flow, result: GateResult) -> str | None:
    """/escalate needs a real run of the pinned spec (it selected criteria), any status."""
    collection = flow.collection
    if collection is not None and collection.error:
        return None  # the pinned spec itself is broken: that is a reason to escalate
    problem = run_problem(result)
    if problem is not None:
        return problem
    if not result.real_run:
        return (
            "the gate's verification run of the pinned spec selected no criterion, so there is "
            "no evidence to escalate with"
        )
    if done_problem(flow, result) is None:
        return (
            "every criterion pinned at /implement passes in the gate's own verification run "
            f"of this tree: there is nothing to escalate, call {DONE}"
        )
    return None


def named_criteria(items: list[CriterionOutcome]) -> str:
    """ "AC-3 title (failed: why); ..." for a block reason, the first LISTED of them."""
    named = [
        f"{c.id} {c.title} ({c.status}" + (f": {c.message[:160]}" if c.message else "") + ")"
        for c in items[:LISTED]
    ]
    more = f" and {len(items) - LISTED} more" if len(items) > LISTED else ""
    return "; ".join(named) + more


def judge(
    flow: Flow, skill: str, deadline_at: float, reuse: bool = True
) -> tuple[str | None, str | None]:
    """(why `skill` -- "done" or "escalate" -- is refused, or None; the tree fingerprint the
    decision was made on). Every reason names the way out. `reuse`: a result stored for the
    same tree fingerprint may stand in for a run."""
    if skill == "escalate" and never_pinned(flow) is not None:
        return None, None  # nothing can verify this flow: escalating is the way out
    try:
        if skill == "done":
            refusal = _done_preconditions(flow, deadline_at)
            if refusal is not None:
                return refusal, None
        result = run(flow, deadline_at, reuse, checks_intact=skill == "done")
    except GateError as error:
        return f"The gate cannot verify this tree: {error}", None
    check = done_problem if skill == "done" else escalate_problem
    problem = check(flow, result)
    if problem is not None:
        return f"The gate verified the spec pinned at /implement itself: {problem}.", None
    return None, result.fingerprint


def _done_preconditions(flow: Flow, deadline_at: float) -> str | None:
    changes = spec_changes(flow, deadline_at)
    if changes:
        return (
            f"The spec changed since /implement started: {'; '.join(changes[:LISTED])}. The "
            f"gate verifies the spec as it was pinned at /implement, and a changed spec "
            f"blocks {DONE}: restore {flow.spec_path} (e.g. `git checkout -- <spec>`), or "
            f"call {ESCALATE} so a human decides; a new spec needs a new /implement."
        )
    if never_pinned(flow) is not None:
        return None  # nothing was pinned, integrity neither: the run refuses, saying why
    findings = integrity_findings(flow)
    if findings:
        return "The checks a criterion runs were weakened since /implement started: " + " ".join(
            findings[:LISTED]
        )
    return None


# --- what changed since /implement ------------------------------------------------------------


def spec_changes(flow: Flow, deadline_at: float) -> list[str]:
    """How the project's spec differs from the pinned one (empty when it does not)."""
    path = flow.spec_path
    if path is None:
        return []
    try:
        status = os.lstat(path)
    except OSError:
        return [f"the spec {path} was deleted or moved since /implement started"]
    if stat.S_ISLNK(status.st_mode):
        return [f"the spec {path} was replaced by a symbolic link since /implement started"]
    digest = file_digest(path)
    if digest == flow.spec_sha256:
        return []
    if digest is None:
        return [f"the spec {path} is no longer a readable regular file"]
    pinned = _collection(flow)
    try:
        left = deadline_at - time.monotonic()
        report = probe(pinned.python, Path(path), flow.config_folder, left)
        current = Collection.from_probe(report, pinned.python)
    except (GateError, DamagedCollection):
        return [f"the spec {path} changed since /implement started"]
    return describe_changes(pinned.criteria, current.criteria, path)


def describe_changes(
    pinned: Sequence[Criterion], current: Sequence[Criterion], path: str
) -> list[str]:
    before = {c.id: c for c in pinned}
    after = {c.id: c for c in current}
    changes = [f"{ident} was removed" for ident in before if ident not in after]
    changes += [f"{ident} was added" for ident in after if ident not in before]
    for ident, old in before.items():
        new = after.get(ident)
        if new is None:
            continue
        changes += [f"{ident}'s {field.replace('_', ' ')} changed" for field in old.changes(new)]
    return changes or [f"the text of {path} changed (no criterion changed)"]


def _collection(flow: Flow) -> Collection:
    """The pinned collection; GateError when /implement pinned none (never_pinned says why)."""
    collection = flow.collection
    if collection is None:
        raise GateError(never_pinned(flow) or "nothing was pinned at /implement")
    return collection


def integrity_findings(flow: Flow) -> list[str]:
    """Checks the bash criteria run that the flow weakened (pins/criterion_integrity.py); a
    pin absent, damaged or failed refuses."""
    return _pinned(criterion_integrity.weakened, flow)
