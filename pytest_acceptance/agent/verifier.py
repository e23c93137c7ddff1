"""Agent-judged criteria: ``method: subagent`` and natural-language pass conditions.

A pytest plugin module (listed in ``plugin.pytest_plugins``). It adds the agent options,
makes xdist run agent checks in waves when the user chose no ``-n``, and implements
``pytest_acceptance_run`` (subagent criteria) and ``pytest_acceptance_judge`` (the pass
condition of a bash criterion, judged from its evidence) through one backend:
the Claude Code CLI or a configured command. Every way of not getting a valid verdict
ends as an error that says why and what to do; never as a pass.
"""

from __future__ import annotations

import contextlib
import hashlib
import shlex
import shutil
import tempfile
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pytest

from pytest_acceptance.model import Criterion, Method, Result, RunContext, SpecError, Status
from pytest_acceptance.run.no_agent import no_agent_advice, no_agent_message
from pytest_acceptance.verdict.decision import in_agent_session

# pytest loads this module in every run of every project that has the plugin installed:
# the agent machinery below is imported inside the functions, only with --acceptance.
if TYPE_CHECKING:
    from pytest_acceptance.agent.backends import (
        AgentDefinition,
        Backend,
        Dispatch,
        DispatchError,
    )
    from pytest_acceptance.agent.prompt import Verdict

DEFAULT_WAVE = 5
DISPATCHES = 2  # a crash, a timeout or an off-contract answer is re-dispatched once
AGENT_CHOICES = ("claude", "command", "none")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("acceptance")
    group.addoption(
        "--acceptance-agent",
        choices=AGENT_CHOICES,
        help="who judges agent criteria: the Claude Code CLI (default when `claude` is on "
        "PATH), a command (default when one is configured), or none. ini: acceptance_agent",
    )
    parser.addini("acceptance_agent", "claude | command | none (default: detect)", default="")
    group.addoption(
        "--acceptance-agent-command",
        metavar="CMD",
        help="judge agent criteria with CMD: it reads the prompt on stdin and prints the "
        "verdict JSON on stdout. ini: acceptance_agent_command",
    )
    parser.addini("acceptance_agent_command", "command backend (shell words)", default="")
    group.addoption("--acceptance-model", metavar="MODEL", help="default model of agent checks")
    parser.addini("acceptance_model", "default model of agent checks", default="")
    group.addoption(
        "--acceptance-wave",
        type=int,
        metavar="N",
        help=f"at most N agent checks at once (default {DEFAULT_WAVE}); without -n, "
        "xdist starts that many workers. ini: acceptance_wave",
    )
    parser.addini(
        "acceptance_wave", "at most N agent checks at once", type="int", default=DEFAULT_WAVE
    )
    group.addoption(
        "--acceptance-log",
        metavar="PATH",
        help="the implementation log (/tmp/implement-log-*.md); agents get its tail as context",
    )
    group.addoption(
        "--acceptance-cache",
        action="store_true",
        default=False,
        help="reuse an agent's pass while the criterion, the agent configuration and the "
        "working tree are unchanged (.acceptance/cache). ini: acceptance_cache",
    )
    parser.addini("acceptance_cache", "reuse agent passes on an unchanged tree", type="bool")


@pytest.hookimpl(wrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Generator[None, Any, Any]:
    # Before xdist turns numprocesses into workers (a wrapper runs before every tryfirst).
    _default_to_waves(config)
    return (yield)


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("acceptance", None):
        return
    settings = resolve_settings(config)
    config.pluginmanager.register(AgentVerifier(settings), "acceptance-agent")


@dataclass(frozen=True)
class AgentSettings:
    backend: Backend | None
    unavailable: str  # why there is no backend
    model: str | None
    wave: int
    cache: bool
    log_path: Path | None


def resolve_settings(config: pytest.Config) -> AgentSettings:
    """The agent configuration from options and ini; pytest.UsageError on a bad value."""
    from pytest_acceptance.options import ini_value

    backend, unavailable = _resolve_backend(config)
    model = config.getoption("acceptance_model") or str(
        ini_value(config, "acceptance_model", "a model's name")
    )
    cache = bool(
        config.getoption("acceptance_cache")
        or ini_value(config, "acceptance_cache", "true or false")
    )
    return AgentSettings(
        backend, unavailable, model.strip() or None, wave_size(config), cache, _log_path(config)
    )


def wave_size(config: pytest.Config) -> int:
    from pytest_acceptance.options import ini_number

    wanted = "a whole number of at least 1"
    value = config.getoption("acceptance_wave", None)
    source = "--acceptance-wave"
    if value is None:  # a TOML number or a string, read as pytest's ini type allows
        value, source = ini_number(config, "acceptance_wave", int, wanted), "ini acceptance_wave"
    if value < 1:
        raise pytest.UsageError(f"{source} = {value!r}: give {wanted}")
    return int(value)


def _resolve_backend(config: pytest.Config) -> tuple[Backend | None, str]:
    from pytest_acceptance.options import ini_value

    choices = ", ".join(AGENT_CHOICES)
    choice = config.getoption("acceptance_agent") or str(
        ini_value(config, "acceptance_agent", f"one of {choices}")
    )
    choice = choice.strip()
    if choice not in ("", *AGENT_CHOICES):
        raise pytest.UsageError(
            f"ini acceptance_agent = {choice!r}: use one of {', '.join(AGENT_CHOICES)}"
        )
    command, source = config.getoption("acceptance_agent_command"), "--acceptance-agent-command"
    if not command:
        command = str(ini_value(config, "acceptance_agent_command", "a command line"))
        source = "ini acceptance_agent_command ="
    from pytest_acceptance.agent.backends import ClaudeBackend, CommandBackend

    if choice == "none":
        return None, "the agent is switched off (acceptance_agent = none)"
    if choice == "command" or (not choice and command.strip()):
        return CommandBackend(_command_words(command, source)), ""
    executable = shutil.which("claude")
    if executable is None:
        return None, "`claude` is not on PATH and no agent command is configured"
    return ClaudeBackend(executable), ""


def _command_words(command: str, source: str) -> list[str]:
    try:
        words = shlex.split(command)
    except ValueError as error:
        raise pytest.UsageError(f"{source} {command!r}: {error}") from None
    if not words:
        raise pytest.UsageError(
            "acceptance_agent = command needs the command: --acceptance-agent-command CMD "
            "or acceptance_agent_command = CMD in the pytest ini section"
        )
    return words


def _log_path(config: pytest.Config) -> Path | None:
    value = config.getoption("acceptance_log")
    if not value:
        return None
    path = Path(value).expanduser().resolve()
    if not path.is_file():
        raise pytest.UsageError(
            f"--acceptance-log {value}: no such file; pass the implementation log "
            "(/tmp/implement-log-*.md) or leave the option out"
        )
    return path


class AgentVerifier:
    """The hookimpls, bound to one resolved configuration."""

    def __init__(self, settings: AgentSettings) -> None:
        self.settings = settings

    @pytest.hookimpl
    def pytest_acceptance_run(self, criterion: Criterion, context: RunContext) -> Result | None:
        if criterion.method is not Method.SUBAGENT:
            return None
        return self.verify(criterion, context, None)

    @pytest.hookimpl
    def pytest_acceptance_judge(
        self, criterion: Criterion, context: RunContext, evidence: str
    ) -> Result | None:
        return self.verify(criterion, context, evidence)

    def verify(self, criterion: Criterion, context: RunContext, evidence: str | None) -> Result:
        """One criterion (evidence None) or one pass condition (evidence given), judged."""
        started = time.monotonic()
        try:
            result = self._verify(criterion, context, evidence)
        except _Unverifiable as problem:
            result = Result(Status.ERROR, attempts=0, message=str(problem), extra=problem.extra)
        return replace(result, duration=time.monotonic() - started)

    def _verify(self, criterion: Criterion, context: RunContext, evidence: str | None) -> Result:
        from pytest_acceptance.agent.backends import Dispatch

        backend = self.settings.backend
        if backend is None:
            advice = {"advice": no_agent_advice(self.settings.unavailable)}
            raise _Unverifiable(no_agent_message(criterion, evidence), advice)
        rootdir = Path(context.rootdir)
        agent = _project_agent(rootdir, criterion)
        model = criterion.model or (agent.model if agent else None) or self.settings.model
        extra = _describe(backend, criterion, agent, model, rootdir)
        request = Dispatch(
            prompt=self._prompt(criterion, context, agent, evidence),
            cwd=rootdir,
            timeout=context.capped(criterion.timeout or context.default_timeout)[0],
            model=model,
            agent=agent,
        )
        if not self.settings.cache:
            return self._dispatch(backend, request, criterion, extra)
        return self._cached(backend, request, criterion, extra, evidence)

    def _cached(
        self,
        backend: Backend,
        request: Dispatch,
        criterion: Criterion,
        extra: dict[str, Any],
        evidence: str | None,
    ) -> Result:
        from pytest_acceptance.agent.cache import VerdictCache, cache_key
        from pytest_acceptance.agent.prompt import PROMPT_VERSION
        from pytest_acceptance.tree.file_hash import FingerprintError
        from pytest_acceptance.tree.fingerprint import tree_fingerprint

        cache = VerdictCache(request.cwd)
        configuration = {
            **backend.identity(),
            "model": request.model,
            "agent_digest": request.agent.digest if request.agent else None,
            "prompt_version": PROMPT_VERSION,
            "evidence": hashlib.sha256(evidence.encode()).hexdigest() if evidence else None,
        }
        key = cache_key(criterion, configuration)
        try:
            before = tree_fingerprint(request.cwd)
        except FingerprintError:  # an unknown tree: no cached pass can describe it
            return self._dispatch(backend, request, criterion, extra)
        hit = cache.lookup(key, before)
        if hit is not None:
            message = f"{hit.message} (cached pass: criterion, agent and tree unchanged)"
            return replace(hit, message=message, extra={**extra, "cached": True, "dispatches": 0})
        result = self._dispatch(backend, request, criterion, extra)
        if _same_tree(request.cwd, before):  # the verdict describes one tree
            cache.store(key, before, result)
        return result

    def _prompt(
        self,
        criterion: Criterion,
        context: RunContext,
        agent: AgentDefinition | None,
        evidence: str | None,
    ) -> str:
        from pytest_acceptance.agent.prompt import check_prompt, judge_prompt, read_log_tail

        rootdir = Path(context.rootdir)
        role = criterion.agent if criterion.agent and agent is None else None
        if evidence is not None:
            return judge_prompt(criterion, rootdir, role, evidence)
        log_path = context.log_path or self.settings.log_path
        log = None
        if log_path is not None:
            try:
                log = read_log_tail(Path(log_path))
            except OSError as error:
                raise _Unverifiable(
                    f"the implementation log {log_path} cannot be read ({error.strerror}): "
                    "pass an existing file with --acceptance-log, or leave the option out"
                ) from None
        return check_prompt(criterion, rootdir, role, log)

    def _dispatch(
        self, backend: Backend, request: Dispatch, criterion: Criterion, extra: dict[str, Any]
    ) -> Result:
        from pytest_acceptance.agent.backends import DispatchError

        failures: list[DispatchError] = []
        with wave_slot(request.cwd, self.settings.wave):
            for attempt in range(1, DISPATCHES + 1):
                try:
                    verdict = backend.dispatch(request)
                except DispatchError as failure:
                    failures.append(failure)
                    continue
                return _verdict_result(verdict, attempt, failures, extra)
        return _dispatch_error(criterion, request, failures, extra)


class _Unverifiable(Exception):
    def __init__(self, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.extra = extra or {}


def _project_agent(rootdir: Path, criterion: Criterion) -> AgentDefinition | None:
    from pytest_acceptance.agent.backends import AgentDefinitionError, load_project_agent

    if not criterion.agent:
        return None
    try:
        return load_project_agent(rootdir, criterion.agent)
    except (AgentDefinitionError, OSError) as error:
        raise _Unverifiable(f"agent {criterion.agent!r} of {criterion.id}: {error}") from None


def _describe(
    backend: Backend,
    criterion: Criterion,
    agent: AgentDefinition | None,
    model: str | None,
    rootdir: Path,
) -> dict[str, Any]:
    project_agent = None
    if agent is not None:
        project_agent = agent.path.relative_to(rootdir).as_posix()
    return {
        "backend": backend.name,
        "agent": criterion.agent,
        "project_agent": project_agent,
        "model": model,
        "cached": False,
    }


def _verdict_result(
    verdict: Verdict, attempt: int, failures: list[DispatchError], extra: dict[str, Any]
) -> Result:
    extra = {**extra, "dispatches": attempt, "summary": verdict.summary}
    message = verdict.summary
    if failures:  # never hidden: the first answer was unusable
        extra["dispatch_errors"] = [str(failure) for failure in failures]
        message = f"{message} (re-dispatched after: {failures[-1]})".strip()
    status = Status.PASSED if verdict.passed else Status.FAILED
    return Result(status, attempts=attempt, issues=verdict.issues, message=message, extra=extra)


def _dispatch_error(
    criterion: Criterion, request: Dispatch, failures: list[DispatchError], extra: dict[str, Any]
) -> Result:
    reasons = "; ".join(f"{index}) {failure}" for index, failure in enumerate(failures, 1))
    if all("timed out" in str(failure) for failure in failures):
        advice = (
            f"raise `timeout:` of {criterion.id} (now {request.timeout:g} s) or make the "
            "check smaller"
        )
    else:
        # The reader is the agent inside Claude Code, else a person at a terminal.
        again = "call /verify again" if in_agent_session() else "run the same pytest command again"
        advice = f"fix the agent setup (see the output below), then {again}"
    message = (
        f"no valid verdict from the agent in {len(failures)} dispatches: {reasons}. Next: {advice}."
    )
    extra = {**extra, "dispatches": len(failures), "dispatch_errors": [str(f) for f in failures]}
    output = failures[-1].output if failures else ""
    return Result(Status.ERROR, attempts=len(failures), output=output, message=message, extra=extra)


@contextlib.contextmanager
def wave_slot(rootdir: Path, size: int) -> Iterator[None]:
    """Hold one of ``size`` slots shared by every process verifying this root.

    Without -n the wave size is the number of xdist workers and a slot is always free;
    with more workers (or several runs at once) this keeps agent checks to a wave.
    """
    digest = hashlib.sha256(str(Path(rootdir).resolve()).encode()).hexdigest()[:16]
    directory = Path(tempfile.gettempdir()) / f"pytest-acceptance-wave-{digest}"
    handle = _acquire_slot(directory, size)
    try:
        yield
    finally:
        if handle is not None:
            handle.close()  # closing the file releases its lock


def _acquire_slot(directory: Path, size: int) -> IO[str] | None:
    try:
        import fcntl  # POSIX only: elsewhere the worker count is the only bound

        directory.mkdir(exist_ok=True)
    except (ImportError, OSError):
        return None  # no shared place to coordinate: the worker count is the only bound
    while True:
        for index in range(size):
            try:
                handle = (directory / f"slot-{index}.lock").open("a")
            except OSError:
                return None
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            return handle
        time.sleep(0.05)


def _default_to_waves(config: pytest.Config) -> None:
    """Without -n, run on ``wave`` xdist workers when the specs hold agent criteria."""
    option = config.option
    if not config.getoption("acceptance", None) or not config.pluginmanager.hasplugin("xdist"):
        return
    if getattr(option, "numprocesses", None) is not None or hasattr(config, "workerinput"):
        return  # the user chose (-n, including -n 0), or this is a worker
    if option.collectonly or getattr(option, "usepdb", False):
        return
    if getattr(option, "dist", "no") != "no" or getattr(option, "tx", None):
        return  # the user configured distribution their own way
    from pytest_acceptance.options import spec_paths  # directories, globs, ini specs

    try:
        paths = spec_paths(config)
    except pytest.UsageError:
        return  # pytest_configure reports it
    agents, automated = _count_criteria(paths, config.rootpath)
    if agents == 0:
        return
    try:
        size = wave_size(config)
    except pytest.UsageError:
        return  # pytest_configure reports it
    option.numprocesses = min(size, automated)
    option.dist = "load"


def _count_criteria(paths: list[Path], rootdir: Path) -> tuple[int, int]:
    """(subagent criteria, automated criteria) in the specs that parse."""
    from pytest_acceptance.collect import load_spec  # cached: collection reuses the parse

    agents = automated = 0
    for path in paths:
        if not path.is_file():
            continue
        try:
            spec = load_spec(path, rootdir)
        except (SpecError, OSError):
            continue  # collection reports it
        agents += sum(1 for c in spec.criteria if c.method is Method.SUBAGENT)
        automated += sum(1 for c in spec.criteria if c.automated)
    return agents, automated


def _same_tree(root: Path | str, before: str) -> bool:
    from pytest_acceptance.tree.file_hash import FingerprintError
    from pytest_acceptance.tree.fingerprint import tree_fingerprint

    try:
        return tree_fingerprint(root) == before
    except FingerprintError:
        return False
