"""A witnessed run: what a criterion's own pytest says about the tests it ran.

A bash criterion whose command is one pytest run (``pytest …``, ``py.test …``,
``python -m pytest …``, ``python3.12 -m pytest …``, with any options and leading
``NAME=value`` assignments) is *witnessed* in the gate's run. Its exit code alone could be
a run cut short: ``os._exit(0)`` in a new test or conftest, tests deselected or skipped by
something planted. So the gate has the criterion's pytest load a reporter of its own
(witness_plugin.py, copied into a private folder of the run, never taken from the project
or the environment), which writes what pytest did into another private folder.

The tests the pin knows, for a witnessed criterion, are the node ids its command's pytest
selects when /implement starts: the gate runs the command then with ``--collect-only`` and
the same reporter, in the same clean environment as its run. Tests that a module which did
not import then would have held, and tests added later, are not pinned: new tests stay
free (their failures still fail the command).

Under the gate, a witnessed criterion passes only when its pass condition holds and the
witness says that its last pytest session reached ``pytest_sessionfinish``, that a test
passed in it, and that every pinned node id ended passed (skipped or xfailed is accepted
only for a test that carried a skip, skipif or xfail mark at /implement; a pinned
parametrized id that is gone is matched by as many ids of the same test, all passed).

What pytest itself treats as test code outside the collected files is pinned by content:
a project module its assertion rewriting loaded in that collection (an assertion helper the
project registered with ``pytest.register_assert_rewrite``, a module named in
``pytest_plugins``). One changed or gone since fails the criterion, whatever the change.

New test files run in the same process as the pinned tests: whatever they do when pytest
imports them or runs them (a metaclass, a decorator, a test that patches the code under test
and never restores it) can make a pinned test pass that would fail. So when a criterion's
session collected tests from files that held no pinned test, the gate runs that criterion
again with the reporter collecting the pinned tests' files only (``only`` in
:func:`prepare`), and the pinned tests must pass there too: judged in a process no new test
file ran in, whatever the new files do.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import hashlib
import json
import os
import re
import secrets
import signal
import subprocess
import time
import zipfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from pytest_acceptance.gate import apart, gate_bytecode, pinned_tests
from pytest_acceptance.gate.criteria_env import (
    CRITERIA_ENV_PREFIX,
    CRITERIA_PYCACHE_VARIABLE,
    criteria_env,
)
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.gate_result import CriterionOutcome
from pytest_acceptance.gate.interpreter_paths import private_pycache
from pytest_acceptance.gate.pinned_collection import Criterion
from pytest_acceptance.gate.pinned_tests import PinnedTests, file_of
from pytest_acceptance.gate.pins import shadowed_names
from pytest_acceptance.gate.pins.base import PinError
from pytest_acceptance.gate.pins.witnessed_criteria import WitnessedCriteria
from pytest_acceptance.tree import folders as roles
from pytest_acceptance.tree import imports, shell
from pytest_acceptance.tree.closure import in_environment
from pytest_acceptance.tree.hostile import file_digest, open_regular, read_regular_or_none

# The reporter's module name: this, "=", a token made fresh for each run, "/witness". No
# folder on an import path can hold a module of that name (a file's name has no "/"), no
# distribution's entry point can be called so ("=" ends an entry point's name, and pytest
# looks a `-p` name up among entry points first), and no archive the project holds can know
# the token: only the run's own archive (PLUGIN_ARCHIVE) has it.
PLUGIN_PACKAGE = "_pytest_acceptance_witness"
PLUGIN_ARCHIVE = "witness.zip"
PLUGIN_VARIABLE = "ACCEPTANCE_WITNESS_PLUGIN"  # the module name, for criteria_pytest
PLUGIN_STAT_VARIABLE = "ACCEPTANCE_WITNESS_PLUGIN_STAT"  # the archive as written, for untouched
RECORDS_VARIABLE = "ACCEPTANCE_WITNESS_RECORDS"  # witness_plugin.RECORDS_VARIABLE
PIN_BUDGET = 25.0  # seconds for collecting every witnessed criterion at /implement
PIN_WORKERS = 4
RECORD_LIMIT = 64 << 20  # bytes read from one session's records
LISTED = 5  # tests named in one reason
MODULES_LIMIT = 20000  # module sources kept, of each kind
SOURCES_FOLDER = "pinned-sources"  # in the flow's folder: pinned test files' content, by sha256
SOURCE_LIMIT = 8 << 20  # bytes of one test file kept
# Why a criterion's tests are not pinned: the collection at /implement changed what the
# gate reads (its reporter's archive, or the bytecode folder it ran with) while it ran.
UNTRUSTED = "its collection at /implement wrote where the gate's witness reads"
MODULES_KEY = "criteria_modules"  # in flow.json: {"plain": [...], "rewritten": [...]}
DISTRIBUTIONS_VARIABLE = "ACCEPTANCE_WITNESS_DISTRIBUTIONS"  # witness_plugin.DISTRIBUTIONS_VARIABLE
ONLY_VARIABLE = "ACCEPTANCE_WITNESS_ONLY"  # witness_plugin.ONLY_VARIABLE
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?$")
_PYTHON_ARGUMENT_FLAGS = ("-X", "-W")
_SHELL = set(";&|<>()`\n")
_SETTLED = ("skipped", "xfailed", "xpassed")
_CARRIERS = ("PYTHONPATH", "PYTEST_ADDOPTS")  # what makes a criterion's pytest load it


def pytest_command(command: str) -> bool:
    """Whether a criterion's command is one pytest run the witness can watch: one simple
    command (tree/shell.py reads it), under wrappers that pass the environment on
    (``timeout 60``, ``nice``; not ``sudo``, nor an ``env`` with options), that runs
    pytest. Anything else is left to its exit code."""
    try:
        words = shell.words(command)
    except shell.UnreadableCommand:
        return False
    if not words or any(set(word) & _SHELL for word in words):
        return False
    read = shell.unwrap(words)
    if read.redirections or not all(_passes_environment(wrapper) for wrapper in read.wrappers):
        return False
    for assignment in read.assignments:
        name, value = assignment.split("=", 1)
        if name in _CARRIERS and f"${name}" not in value and f"${{{name}" not in value:
            return False  # it replaces what loads the reporter: the run could not be watched
    if read.program in ("pytest", "py.test"):
        return True
    return _PYTHON.match(read.program) is not None and _runs_pytest_module(list(read.argv[1:]))


def _runs_pytest_module(words: list[str]) -> bool:
    """``[flags] -m pytest``; not under -I or -E, which would not find the reporter."""
    flags = [
        word
        for index, word in enumerate(words)
        if index == 0 or words[index - 1] not in _PYTHON_ARGUMENT_FLAGS
    ]
    for word in flags:
        if word.startswith("-m") or not word.startswith("-"):
            break
        if word.startswith(("-I", "-E")) or (
            not word.startswith(("--", "-X", "-W")) and set(word[1:]) & {"I", "E"}
        ):
            return False
    return shell.python_module(tuple(words)) == "pytest"


def _passes_environment(wrapper: tuple[str, ...]) -> bool:
    name = os.path.basename(wrapper[0])
    if name == "env":
        return all(not word.startswith("-") for word in wrapper[1:])
    return name in shell.TRANSPARENT


def witnessed_criteria(flow: Flow) -> list[Criterion]:
    collection = flow.collection
    return [
        criterion
        for criterion in (collection.criteria if collection is not None else ())
        if criterion.method == "bash" and pytest_command(criterion.command or "")
    ]


# --- the reporter, in a private folder ----------------------------------------------------------


def prepare(
    folder: str,
    distributions: Sequence[str] | None = None,
    only: Mapping[str, str | None] | None = None,
) -> dict[str, str]:
    """Copy the reporter into `folder` (a private folder of the run) and make its records
    folder there; the variables that make a criterion's pytest load it (for clean_env).
    With the `flow` (the gate's run, not the pin), the distributions a criterion's pytest
    sees are those it saw at /implement, unchanged (witness_plugin.py). With `only`
    (paths relative to the rootdir), a criterion's pytest collects no other file, and runs
    a file that changed since /implement as it was then (its value: the path of that
    content, "" when it was not kept)."""
    records = os.path.join(folder, "witness-records")
    os.makedirs(records, mode=0o700)
    module = f"{PLUGIN_PACKAGE}={secrets.token_hex(16)}/witness"
    archive = _write_archive(os.path.join(folder, "witness-plugin"), module)
    env = {
        RECORDS_VARIABLE: records,
        CRITERIA_ENV_PREFIX + "PYTHONPATH": archive,
        PLUGIN_VARIABLE: module,
        PLUGIN_STAT_VARIABLE: _stat_key(archive),
    }
    if distributions is not None:
        listing = os.path.join(folder, "witness-distributions.txt")
        Path(listing).write_text("".join(f"{path}\n" for path in distributions), "utf-8")
        env[DISTRIBUTIONS_VARIABLE] = listing
    if only is not None:
        listing = os.path.join(folder, "witness-only.txt")
        lines = (path if only[path] is None else f"{path}\t{only[path]}" for path in sorted(only))
        Path(listing).write_text("".join(f"{line}\n" for line in lines), "utf-8")
        env[ONLY_VARIABLE] = listing
    return env


def _write_archive(folder: str, module: str) -> str:
    """The reporter's source, as `module`, in a zip archive of its own in `folder` (read-only
    to the run: apart.command's `read_only`); the archive's path."""
    os.makedirs(folder, mode=0o700)
    archive = os.path.join(folder, PLUGIN_ARCHIVE)
    source = Path(__file__).with_name("witness_plugin.py").read_bytes()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as bundle:
        bundle.writestr(zipfile.ZipInfo(module + ".py", (1980, 1, 1, 0, 0, 0)), source)
    os.chmod(archive, 0o400)
    return archive


def _stat_key(archive: str) -> str:
    """The archive and its folder as they are: a write, a replacement or a removal, even one
    undone since, changes a ctime, which no process can set back."""
    keys = []
    for path in (os.path.dirname(archive), archive):
        try:
            found = os.lstat(path)
        except OSError:
            return "missing"
        keys.append(f"{found.st_dev}:{found.st_ino}:{found.st_size}:{found.st_mtime_ns}")
        keys.append(str(found.st_ctime_ns))
    return ":".join(keys)


def plugin_folder(env: Mapping[str, str]) -> str:
    """The folder of the reporter's archive that :func:`prepare` made: the run may not write it."""
    return os.path.dirname(env[CRITERIA_ENV_PREFIX + "PYTHONPATH"])


def untouched(env: Mapping[str, str]) -> bool:
    """Whether the reporter's archive is the one :func:`prepare` wrote, never written since."""
    archive = env[CRITERIA_ENV_PREFIX + "PYTHONPATH"]
    return _stat_key(archive) == env[PLUGIN_STAT_VARIABLE]


def criteria_pytest(env: Mapping[str, str], collect_only: bool = False) -> dict[str, str]:
    """How a criterion's pytest starts under the gate: the PYTEST_ADDOPTS of `env` (the
    gate's, with :func:`prepare`'s variables) and the reporter, by the module name only the
    run's archive holds; and the installed plugins load, as in the user's own run
    (pytest-xdist for a `-n 2`, pytest-django, pytest-asyncio). Only the gate's own pytest
    loads nothing it does not name; the plugins a criterion loads are files of the
    interpreter's pinned closure, so one added or changed since /implement blocks before the
    run."""
    base = env.get("PYTEST_ADDOPTS", "")
    addopts = f"{base} -p {env[PLUGIN_VARIABLE]}".strip()
    if collect_only:
        addopts += " --collect-only"
    return {
        CRITERIA_ENV_PREFIX + "PYTEST_ADDOPTS": addopts,
        CRITERIA_ENV_PREFIX + "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "",
    }


# --- what the reporter wrote --------------------------------------------------------------------


class Session:
    """One pytest session as the reporter recorded it."""

    def __init__(self, criterion: str) -> None:
        self.criterion = criterion
        self.collected: list[str] | None = None
        self.marked: list[str] = []
        self.plain: list[str] = []  # modules imported the ordinary way, by source file
        self.rewritten: list[str] = []  # modules pytest rewrote the asserts of
        self.distributions: list[str] = []  # those it saw (witness_plugin.distribution_key)
        self.registered: list[str] = []  # sources of the modules marked as test code
        self.folders: list[str] = []  # the marked packages' folders
        self.missed: list[str] = []  # "module<TAB>importer": top-level imports none found
        # "module<TAB>location<TAB>importer": imported from the project for code outside it
        # (None: a process of the gate's run did not say)
        self.outside: list[str] | None = None
        self.worker_outside: list[list[str] | None] = []  # the same, of each xdist worker
        self.finished = False
        self.tests: dict[str, str] = {}
        self.files: list[str] = []  # files it collected (its xdist workers' included)
        self.root = ""  # its rootdir, which `files` are relative to
        self.unsubstituted: list[str] = []  # changed pinned files not run as pinned
        self.worker = False  # an xdist worker's record: its collected files, only
        self.python = ""  # the interpreter it ran under (sys.executable)
        self.prefix = ""  # and its environment (sys.prefix)


def sessions(records: str) -> dict[str, Session]:
    """The last session each criterion started (its last attempt), by criterion id."""
    latest: dict[str, Session] = {}
    try:
        names = sorted(os.listdir(records), key=_started_at)
    except OSError:
        return latest
    for name in names:
        session = _read(os.path.join(records, name))
        if session is None:
            continue
        owner = latest.get(session.criterion)
        if not session.worker:
            latest[session.criterion] = session
        elif owner is not None:  # a worker starts after the session that started it
            owner.files += session.files
            owner.unsubstituted += session.unsubstituted
            owner.worker_outside.append(session.outside)
    return latest


def _started_at(name: str) -> int:
    head = name.split("-", 1)[0]
    return int(head) if head.isdigit() else -1


def _read(path: str) -> Session | None:
    try:  # a file the project's code could have planted there: a FIFO never blocks
        with os.fdopen(open_regular(path), "rb") as stream:
            data = stream.read(RECORD_LIMIT)
    except OSError:
        return None
    session: Session | None = None
    for line in data.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a torn last line: the session did not finish writing
        if not isinstance(record, dict):
            continue
        event = record.get("event")
        if event in ("start", "worker") and session is None:
            session = Session(str(record.get("criterion") or ""))
            session.worker = event == "worker"
            session.python = str(record.get("python") or "")
            session.prefix = str(record.get("prefix") or "")
        elif session is not None and event == "collected":
            session.files = _strings(record.get("files"))
            session.unsubstituted = _strings(record.get("unsubstituted"))
            if not session.worker:
                session.root = str(record.get("root") or "")
                session.collected = _strings(record.get("ids"))
                session.marked = _strings(record.get("marked"))
        elif session is not None and event == "outside":
            session.outside = _strings(record.get("imports"))
        elif session is not None and session.worker:
            continue  # a worker records its collected files, and what the project stood in for
        elif session is not None and event == "modules":
            session.plain = _strings(record.get("plain"))
            session.rewritten = _strings(record.get("rewritten"))
            session.distributions = _strings(record.get("distributions"))
            session.registered = _strings(record.get("registered"))
            session.folders = _strings(record.get("folders"))
            session.missed = _strings(record.get("missed"))
        elif session is not None and event == "finish" and isinstance(record.get("tests"), dict):
            session.finished = True
            session.tests = {str(k): str(v) for k, v in record["tests"].items()}
    return session


def _strings(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


# --- the pin, at /implement ---------------------------------------------------------------------


def pin(flow: Flow, python: str, clean_env: Any) -> dict[str, Session]:
    """Record, for each witnessed criterion, the node ids its pytest selects now; the
    sessions of that collection (what they saw is the table's pin, pins/witnessed_criteria:
    a collection that fails leaves that pin failed, which refuses every run)."""
    criteria = witnessed_criteria(flow)
    pinned: dict[str, PinnedTests] = {}
    found: dict[str, Session] = {}
    if criteria:
        # The criteria's bytecode the project's last gate run read (or, for a project new
        # to the gate, the last one of any), exactly as built: the collection reads it
        # (writing off) and the flow's modules start from the project's own sources.
        own = gate_bytecode.latest_criteria(python, flow.repo)
        kept = own or gate_bytecode.latest_criteria(python)
        with private_pycache() as folder:
            env = clean_env(python, folder)
            if kept is not None:
                env[CRITERIA_PYCACHE_VARIABLE] = str(kept[0].path)
            env.update(prepare(folder))
            env.update(criteria_pytest(env, collect_only=True))
            deadline_at = time.monotonic() + PIN_BUDGET
            with concurrent.futures.ThreadPoolExecutor(PIN_WORKERS) as pool:
                for item in criteria:
                    pool.submit(_collect, flow, item, env, folder, deadline_at)
            # A reporter or a bytecode folder written over during the collection: nothing it
            # recorded is the gate's.
            trusted = untouched(env) and (kept is None or kept[0].untouched())
            found = sessions(env[RECORDS_VARIABLE]) if trusted else {}
        for item in criteria:
            session = found.get(item.id)
            taken = _pinned_tests(session, flow.repo) if trusted else PinnedTests(note=UNTRUSTED)
            pinned[item.id] = taken
            _keep_sources(flow, session, taken)
        if own is not None:
            flow.data[MODULES_KEY] = own[1].to_json()
        learn_modules(flow, found.values())
    pinned_tests.write(flow.folder, pinned)
    return found


def learn_modules(flow: Flow, found: Iterable[Session]) -> bool:
    """Add the environment's modules these sessions imported to what the gate compiles once
    for its criteria (gate_bytecode.py); whether any was new. Only paths outside the project:
    the sessions ran the project's code, so their lists are names of files to compile, never
    code to trust (the gate's bytecode is used only while its source hashes the same)."""
    known = known_modules(flow)
    sessions = list(found)

    def grown(before: tuple[str, ...], kind: str) -> tuple[str, ...]:
        seen = _outside(flow.repo, [path for s in sessions for path in getattr(s, kind)])
        return tuple(sorted(set(before) | seen)[:MODULES_LIMIT])

    learnt = gate_bytecode.Sources(grown(known.plain, "plain"), grown(known.rewritten, "rewritten"))
    flow.data[MODULES_KEY] = learnt.to_json()
    return len(learnt.plain) > len(known.plain) or len(learnt.rewritten) > len(known.rewritten)


def known_modules(flow: Flow) -> gate_bytecode.Sources:
    """The environment's modules the flow's criteria imported so far (nothing when the record
    is absent or not exactly one: then they are compiled afresh where imported)."""
    # Read in its exact shape; a damaged record reads as nothing known: it only names files
    # to compile ahead, never code to trust, so the cost is speed, never a decision.
    return gate_bytecode.Sources.from_json(flow.data.get(MODULES_KEY)) or gate_bytecode.NOTHING


def missed_by_environment(flow: Flow, found: Mapping[str, Session]) -> set[str]:
    """The top-level modules the environment's code asks for, found or not: those asked for
    in the pin's collection that no finder found (an optional import: pytest-randomly's
    ``numpy``), and every one named in the source of a module of the environment the
    collection imported (start-up code's too, which ran before any witness: the standard
    library's ``copy`` asks for ``org``, ``subprocess`` for ``msvcrt``, and such an import
    runs code even when it then fails). The project gaining one since would have the
    environment import the project's code instead, so such a name counts among those a new
    project module must not take (pins/shadowed_names.py). A module the project's own code
    asked for (a TDD test importing code not written yet) stays free to appear."""
    inside = os.path.realpath(flow.repo) + os.sep
    names = set()
    sources = set()
    for session in found.values():
        for line in session.missed[:MODULES_LIMIT]:
            name, _, importer = line.partition("\t")
            real = os.path.realpath(importer) if os.path.isabs(importer) else ""
            if not real.startswith(inside) or in_environment(real):
                names.add(name)
        for path in (*session.plain, *session.rewritten):
            real = os.path.realpath(path)
            if not os.path.isfile(real):
                continue  # the witness's own copy, gone with the run's private folder
            if not real.startswith(inside) or in_environment(real):
                sources.add(path)
    try:
        return names | imports.asked_names(sorted(sources))
    except OSError as error:
        why = f"cannot read the environment's code the criteria imported: {error}"
        raise PinError(why) from None


def _outside(repo: str, paths: list[str]) -> set[str]:
    inside = os.path.realpath(repo) + os.sep
    found = set()
    for path in paths[:MODULES_LIMIT]:
        if not os.path.isabs(path) or not os.path.isfile(path):
            continue  # e.g. the reporter's own copy, gone with the run's private folder
        if not os.path.realpath(path).startswith(inside):
            found.add(path)
    return found


def _collect(
    flow: Flow, item: Criterion, env: dict[str, str], folder: str, deadline_at: float
) -> None:
    """Run one criterion's command as its collection (`env`: the gate's, with the reporter;
    `folder`: the collection's private folder, where its records and temporary files go)."""
    command = apart.command(
        ["bash", "-c", item.command or ""],
        flow,
        writable=[folder],
        read_only=[plugin_folder(env)],
        pinning=True,
    )
    env = {**criteria_env(env), "PYTEST_ACCEPTANCE_CRITERION": item.id}
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        process = subprocess.Popen(
            command,
            cwd=_run_folder(flow, item),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            process.wait(timeout=max(0.1, deadline_at - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        finally:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _run_folder(flow: Flow, item: Criterion) -> str:
    """Where the gate's run starts the command: its cwd (relative to the spec's folder), or
    the repository."""
    if not item.cwd or flow.spec_path is None:
        return flow.repo
    return os.path.normpath(os.path.join(os.path.dirname(flow.spec_path), item.cwd))


def _pinned_tests(session: Session | None, repo: str) -> PinnedTests:
    if session is None or not session.finished or session.collected is None:
        return PinnedTests(note="its pytest did not finish collecting")
    # Sorted: a set, in whatever order the run collected it (pytest-randomly shuffles).
    return PinnedTests(
        ids=tuple(sorted(session.collected)),
        marked=frozenset(session.marked),
        files=_digests(session.root, session.files),
        test_code=_test_code(session, repo),
        test_code_folders=_test_code_folders(session, repo),
    )


def _test_code(session: Session, repo: str) -> tuple[tuple[str, str], ...]:
    """The project's modules pytest treats as test code in `session` (those it rewrote, and
    every module marked for rewriting, imported or not), other than the files it collected
    and conftest files (criterion integrity pins those, and a collected file may gain
    tests): (real path, sha256) each."""
    inside = os.path.realpath(repo) + os.sep
    collected = {os.path.realpath(os.path.join(session.root, path)) for path in session.files}
    found = {}
    for path in [*session.rewritten, *session.registered][: 2 * MODULES_LIMIT]:
        real = os.path.realpath(path)
        if not real.startswith(inside) or real in collected:
            continue
        if os.path.basename(real) == "conftest.py":
            continue
        digest = file_digest(real, follow=False)
        if digest is not None:
            found[real] = digest
    return tuple(sorted(found.items()))


def _test_code_folders(session: Session, repo: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The folders of the project's packages marked as test code, each with the ``.py``
    files it holds: a module added to one would be test code nobody pinned (a new
    ``values/`` package beside ``values.py``)."""
    inside = os.path.realpath(repo) + os.sep
    folders = {real for real in map(os.path.realpath, session.folders) if real.startswith(inside)}
    return tuple((folder, tuple(sorted(_python_sources(folder)))) for folder in sorted(folders))


def _keep_sources(flow: Flow, session: Session | None, pin: PinnedTests) -> None:
    """Keep, in the flow's folder, the content of each file holding a pinned test: the run
    with pinned files only runs a file changed since as it is now kept."""
    holding = {file_of(ident) for ident in pin.ids}
    folder = flow.folder / SOURCES_FOLDER
    for path, digest in pin.files:
        if session is None or path not in holding or not digest:
            continue
        content = read_regular_or_none(os.path.join(session.root, path), SOURCE_LIMIT)
        if content is not None and hashlib.sha256(content).hexdigest() == digest:
            folder.mkdir(mode=0o700, exist_ok=True)
            (folder / digest).write_bytes(content)


def pinned_sources(flow: Flow, found: dict[str, Session]) -> dict[str, str | None]:
    """The files holding pinned tests, for the run with pinned files only: each with None
    when it is as pinned, else the path of its content at /implement ("" when not kept)."""
    root = next((s.root for s in found.values() if s.root), flow.repo)
    pins = pinned_tests.read(flow.folder) or {}
    only: dict[str, str | None] = {}
    for pin in pins.values():
        holding = {file_of(ident) for ident in pin.ids}
        for path, digest in pin.files:
            if path not in holding:
                continue
            if file_digest(os.path.join(root, path), follow=False) == digest:
                only[path] = None
            else:
                kept = flow.folder / SOURCES_FOLDER / digest
                intact = bool(digest) and file_digest(kept, follow=False) == digest
                only[path] = str(kept) if intact else ""  # "": refused, never run as is
        for path in holding - {path for path, _ in pin.files}:
            only.setdefault(path, None)  # a file of an older pin, without its content
    return only


def _digests(root: str, files: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """(path relative to `root`, sha256) of each file ("" when it cannot be read)."""
    return tuple(
        (path, file_digest(os.path.join(root, path), follow=False) or "")
        for path in sorted(set(files))
    )


def _changed_test_code(pinned: PinnedTests) -> list[str]:
    """Pinned test code changed or gone, and modules added to its packages."""
    changed = [path for path, sha in pinned.test_code if file_digest(path, follow=False) != sha]
    for folder, held in pinned.test_code_folders:
        changed += sorted(set(_python_sources(folder)) - set(held))
    return changed


def _python_sources(folder: str) -> list[str]:
    found = []
    for here, folders, files in os.walk(folder):
        folders[:] = [f for f in folders if f != roles.BYTECODE]
        found += [os.path.realpath(os.path.join(here, f)) for f in files if f.endswith(".py")]
        if len(found) > MODULES_LIMIT:
            break
    return found


# --- the judgement, at the gate -----------------------------------------------------------------


def joined(
    flow: Flow,
    pinned: WitnessedCriteria,
    criteria: tuple[CriterionOutcome, ...],
    found: dict[str, Session],
) -> tuple[str, ...]:
    """The witnessed criteria that passed with pinned tests and whose session collected a
    file (or ran a test of one) that no criterion's pytest collected at /implement with the
    content it has now: the ones to run again with the pinned files only."""
    witnessed = set(pinned.criteria)
    pins = pinned_tests.read(flow.folder) or {}
    known = {entry for pin in pins.values() for entry in pin.files if entry[1]}
    chosen = []
    for criterion in criteria:
        pin = pins.get(criterion.id)
        session = found.get(criterion.id)
        if criterion.id not in witnessed or criterion.status != "passed" or session is None:
            continue
        if pin is None or not pin.ids:
            continue
        ran = [*(session.collected or []), *session.tests]
        touched = {*session.files, *map(file_of, ran)}
        if not set(_digests(session.root, touched)) <= known:
            chosen.append(criterion.id)
    return tuple(chosen)


def judge(
    flow: Flow,
    pinned: WitnessedCriteria,
    criteria: tuple[CriterionOutcome, ...],
    found: dict[str, Session],
    alone: dict[str, Session | None] | None = None,
) -> tuple[CriterionOutcome, ...]:
    """`criteria`, each witnessed criterion that passed by its exit code but not by the
    witness turned into a failure. `alone`: for each criterion :func:`joined` chose, its
    session in the run with the pinned files only (None: it reported none); there too every
    pinned test must pass."""
    witnessed = set(pinned.criteria)
    if not witnessed:
        return criteria
    pins = pinned_tests.read(flow.folder)
    environments = pinned_environments(flow.prefix, pinned)
    try:
        modules: frozenset[str] | None = frozenset(shadowed_names.read(flow).project_modules)
    except PinError:
        modules = None
    judged = _Judged(witnessed, pins, found, alone or {}, environments, flow.repo, modules)
    return tuple(_judged(criterion, judged) for criterion in criteria)


@dataclasses.dataclass(frozen=True)
class _Judged:
    """What the witness judges the criteria of one gate run by."""

    witnessed: set[str]
    pins: dict[str, PinnedTests] | None
    found: dict[str, Session]
    alone: dict[str, Session | None]
    environments: frozenset[str]
    repo: str
    modules: frozenset[str] | None  # the project's at /implement (None: unreadable)


def pinned_environments(gate_prefix: str, pinned: WitnessedCriteria) -> frozenset[str]:
    """The environments (sys.prefix, resolved) pinned at /implement: the gate's own (when
    its probe named one) and each one a criterion's pytest ran in then."""
    prefixes = [prefix for prefix, _ in pinned.interpreters]
    prefixes += [gate_prefix] if gate_prefix else []
    return frozenset(os.path.realpath(prefix) for prefix in prefixes)


def _judged(criterion: CriterionOutcome, judged: _Judged) -> CriterionOutcome:
    if criterion.id not in judged.witnessed or criterion.status != "passed":
        return criterion
    pin = judged.pins.get(criterion.id) if judged.pins is not None else None
    session = judged.found.get(criterion.id)
    if pin is None:
        problem: str | None = "the tests pinned for it at /implement cannot be read"
    else:
        problem = refusal(pin, session) or _unpinned(session, judged.environments)
        problem = problem or stood_in(session, judged.repo, judged.modules, judged.environments)
    alone = judged.alone
    if problem is None and pin is not None and criterion.id in alone:
        problem = (
            refusal(pin, alone[criterion.id])
            or _unpinned(alone[criterion.id], judged.environments)
            or _unsubstituted(alone[criterion.id])
            or stood_in(alone[criterion.id], judged.repo, judged.modules, judged.environments)
        )
        if problem is not None:
            problem = f"run again without the test files added since /implement, {problem}"
    if problem is None:
        return dataclasses.replace(criterion, witnessed=True)
    return dataclasses.replace(
        criterion, witnessed=False, status="failed", message=f"not witnessed: {problem}"
    )


def _unpinned(session: Session | None, environments: frozenset[str]) -> str | None:
    """Why a session's environment is not one pinned at /implement (None when it is)."""
    if session is None:
        return None
    if session.prefix and os.path.realpath(session.prefix) in environments:
        return None
    return (
        f"its pytest ran under {session.python or 'an unnamed interpreter'} (environment "
        f"{session.prefix or 'unknown'}), which no criterion ran under at /implement: its "
        "files were never pinned. Run the criteria as pinned, or /pytest-acceptance:escalate "
        "for a human decision"
    )


def stood_in(
    session: Session | None,
    repo: str,
    modules: frozenset[str] | None,
    environments: frozenset[str],
) -> str | None:
    """Why a project module new since /implement may have stood in for one the environment
    lacks (None when none did): code outside the project asked for it, at start-up or
    later, in the pytest or any of its xdist workers (witness_plugin._Importers). The files
    pytest collected itself, conftest files and their packages are the project's tests;
    the `environments` pinned at /implement (a .venv inside the project) are no module of
    it."""
    if session is None:
        return None
    reports = [session.outside, *session.worker_outside]
    if modules is None or any(report is None for report in reports):
        return (
            "its pytest did not say which of the project's modules code outside the project "
            "imported (a process of it ended before pytest's end, or /implement's record of "
            "the project's modules cannot be read). Run it again, or /pytest-acceptance:"
            "escalate for a human decision"
        )
    tests = _collected_files(session, repo)
    found = sorted(
        {
            f"{relative}: new since /implement, and imported for {importer or 'start-up code'}"
            for report in reports
            for relative, importer in _outside_imports(report or [], repo, environments)
            if _new_module(relative, modules, tests)
        }
    )
    if not found:
        return None
    return (
        f"{'; '.join(found[:LISTED])}, code outside the project, in place of a module the "
        "environment lacks. Remove it, or /pytest-acceptance:escalate for a human decision"
    )


def _outside_imports(
    report: list[str], repo: str, environments: frozenset[str]
) -> list[tuple[str, str]]:
    """(its path in the project, the file that asked for it) of each reported import found
    in the project, by the path the import found it at (a link is the project's, wherever
    it leads) or else by where that path leads, and not through an import path entry of a
    pinned environment (a .venv inside the project)."""
    pinned = tuple(os.path.join(prefix, "") for prefix in environments)
    found = []
    for line in report:
        _, _, rest = line.partition("\t")
        where, _, importer = rest.partition("\t")
        if not os.path.isabs(where):
            continue
        entry = os.path.dirname(where)
        if os.path.basename(where) == "__init__.py":
            entry = os.path.dirname(entry)
        if os.path.join(os.path.realpath(entry), "").startswith(pinned):
            continue
        relative = _in_project(where, repo) or _in_project(os.path.realpath(where), repo)
        if relative is not None:
            found.append((relative, importer))
    return found


def _in_project(path: str, repo: str) -> str | None:
    for root in (os.path.abspath(repo), os.path.realpath(repo)):
        if path.startswith(os.path.join(root, "")):
            return os.path.relpath(path, root)
    return None


def _new_module(relative: str, modules: frozenset[str], tests: frozenset[str]) -> bool:
    if relative in modules or relative in tests or os.path.basename(relative) == "conftest.py":
        return False
    folder = os.path.dirname(relative) if os.path.basename(relative) == "__init__.py" else relative
    inside = folder + os.sep
    if any(test.startswith(inside) for test in tests):
        return False  # a package of the tests pytest collected
    return not any(module.startswith(inside) for module in modules)


def _collected_files(session: Session, repo: str) -> frozenset[str]:
    root = os.path.realpath(session.root or repo)
    project = os.path.realpath(repo)
    return frozenset(
        os.path.relpath(os.path.join(root, node.split("::", 1)[0]), project)
        for node in session.files
    )


def _unsubstituted(session: Session | None) -> str | None:
    missed = sorted(set(session.unsubstituted)) if session is not None else []
    if not missed:
        return None
    return (
        f"{', '.join(missed[:LISTED])}: changed since /implement, and its pytest could not run "
        "it as it was then (pytest's assertion rewriting off, or its content not kept). "
        "Restore it, or /pytest-acceptance:escalate for a human decision"
    )


def refusal(pinned: PinnedTests, session: Session | None) -> str | None:
    """Why the witness does not confirm a pass (None when it does)."""
    if pinned.note == UNTRUSTED:
        return (
            f"{UNTRUSTED}, so no test of it is pinned. Start a new /implement, or "
            "/pytest-acceptance:escalate for a human decision"
        )
    if session is None:
        return "its pytest reported no session to the gate's witness (it did not start)"
    if not session.finished:
        return (
            "its pytest session never finished (os._exit, a kill or a crash cut it short "
            "before pytest_sessionfinish)"
        )
    if "passed" not in session.tests.values():
        return "no test passed in its pytest session"
    changed = _changed_test_code(pinned)
    if changed:
        return (
            f"{', '.join(changed[:LISTED])}: test code its pytest loaded at /implement (pytest "
            "rewrote its assertions) changed since. Restore it, or /pytest-acceptance:escalate "
            "for a human decision"
        )
    bad = _not_passed(pinned.ids, pinned.marked, session)
    if not bad:
        return None
    named = ", ".join(bad[:LISTED]) + (
        f" and {len(bad) - LISTED} more" if len(bad) > LISTED else ""
    )
    return (
        f"tests pinned at /implement did not pass: {named}. Restore what keeps them from "
        "running, or /pytest-acceptance:escalate for a human decision"
    )


def _not_passed(ids: tuple[str, ...], marked: frozenset[str], session: Session) -> list[str]:
    bad = []
    for ident in ids:
        outcome = session.tests.get(ident)
        if outcome == "passed" or (ident in marked and outcome in _SETTLED):
            continue
        if outcome is None and _renamed_case(ident, ids, session.tests):
            continue
        bad.append(f"{ident} ({outcome or 'not run'})")
    return bad


def _renamed_case(ident: str, ids: tuple[str, ...], tests: dict[str, str]) -> bool:
    """A parametrized case whose id changed (ids made from values): as many cases of the
    same test as were pinned, every one passed."""
    if not ident.endswith("]") or "[" not in ident:
        return False
    stem = ident[: ident.index("[") + 1]
    pinned = sum(1 for other in ids if other.startswith(stem))
    now = [outcome for name, outcome in tests.items() if name.startswith(stem)]
    return len(now) >= pinned and all(outcome == "passed" for outcome in now)
