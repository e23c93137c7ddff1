"""Agent-judged criteria: ``method: subagent`` and natural-language pass conditions.

Registered for a run with ``--acceptance`` by settings.py, which holds the agent options.
It implements ``pytest_acceptance_run`` (subagent criteria) and ``pytest_acceptance_judge``
(the pass condition of a bash criterion, judged from its evidence) through one backend: the
Claude Code CLI or a configured command. Every way of not getting a valid verdict
ends as an error that says why and what to do; never as a pass.

Each agent criterion records what it cost (``Result.extra["usage"]``: calls, cost, tokens,
turns, time); ``--acceptance-max-cost`` bounds the run's spending (budget.py);
``acceptance_votes`` asks several judges and lets the majority decide, marking the
criterion unstable when they disagree. A run that only selects agent criteria starts no
xdist worker: this process runs their checks a wave at a time (workers.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import tempfile
import threading
import time
from collections.abc import Generator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import pytest

from pytest_acceptance.agent.prompt import checked_issues
from pytest_acceptance.agent.settings import AgentSettings
from pytest_acceptance.model import Criterion, Issue, Method, Result, RunContext, Status
from pytest_acceptance.run.no_agent import no_agent_advice, no_agent_message
from pytest_acceptance.text import spec_location
from pytest_acceptance.verdict.decision import in_agent_session

# The backends and the budget are imported when a criterion needs an agent.
if TYPE_CHECKING:
    from pytest_acceptance.agent.backends import (
        AgentDefinition,
        Backend,
        Dispatch,
        DispatchError,
        Usage,
    )
    from pytest_acceptance.agent.budget import Budget
    from pytest_acceptance.agent.prompt import JudgeVerdict

DISPATCHES = 2  # a crash, a timeout or an off-contract answer is re-dispatched once
BUDGET_KEY = "acceptance_budget"  # workerinput: the ledger of the run's budget


class AgentVerifier:
    """The hookimpls, bound to one resolved configuration."""

    def __init__(self, settings: AgentSettings, config: pytest.Config | None = None) -> None:
        self.settings = settings
        self.config = config  # None: called as a library, outside a pytest run
        self.budget = _budget(settings, config)
        self.pool: ThreadPoolExecutor | None = None  # checks started ahead of their items
        self.started: dict[Criterion, Future[Result]] = {}
        self.stopping = threading.Event()  # the run ended: start no agent call any more
        self.login_lock = threading.Lock()
        self.login: str | None = None  # the sentence saying the judge has no key or login
        self.login_checked = False

    # -- the run's budget, shared with the workers ---------------------------------------

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        if self.budget is not None:
            node.workerinput[BUDGET_KEY] = str(self.budget.path)

    def pytest_unconfigure(self) -> None:
        if self.budget is not None and not hasattr(self.config, "workerinput"):
            self.budget.remove()

    @pytest.hookimpl(wrapper=True, tryfirst=True)  # the outermost: its line comes last
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, None, None]:
        result = yield
        from pytest_acceptance.verdict.decision import agent_line, agent_totals

        recorder = (
            self.config.pluginmanager.get_plugin("acceptance-recorder") if self.config else None
        )
        verdict = getattr(recorder, "verdict", None)
        totals = agent_totals(verdict.outcomes) if verdict is not None else None
        if totals is not None:
            budget = f" (budget ${self.budget.limit:g})" if self.budget is not None else ""
            terminalreporter.write_line(f"agents: {agent_line(totals)}{budget}")
        return result

    # -- the way out, before anything runs ----------------------------------------------

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Criteria an agent must judge, and no agent: one line before the first criterion
        runs, so nobody waits for a run whose end is known. The fix itself is said once, in
        the verdict, above its list."""
        if hasattr(session.config, "workerinput"):
            return
        judged = [item.name for item in session.items if _needs_a_judge(item)]
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if not judged or reporter is None:
            return
        if self.settings.backend is not None:
            no_login = self.login_problem()
            if no_login is not None:
                reporter.write_line(f"acceptance: {no_login}.", yellow=True)
            return
        named = ", ".join(judged[:6]) + (" …" if len(judged) > 6 else "")
        reporter.write_line(
            f"acceptance: no agent to judge {len(judged)} criteri"
            f"{'a' if len(judged) > 1 else 'on'} ({named}); they will be errors. How to "
            "configure one opens the acceptance verdict.",
            yellow=True,
        )

    def login_problem(self) -> str | None:
        """Whether the judge can log in, asked of the CLI once per process before its first
        call (``claude auth status``, offline): one sentence when it cannot."""
        from pytest_acceptance.agent.backends import ClaudeBackend

        backend = self.settings.backend
        if not isinstance(backend, ClaudeBackend):
            return None
        with self.login_lock:
            if not self.login_checked:
                self.login = backend.login_problem()
                self.login_checked = True
        return self.login

    def _lost_login(self, sentence: str) -> None:
        """The API refused the key mid-run: no further call is made."""
        with self.login_lock:
            self.login, self.login_checked = sentence, True

    # -- waves in this process -----------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, Any]:
        self._start_ahead(session.items)
        try:
            return (yield)
        finally:
            self._stop_ahead()

    def _start_ahead(self, items: list[pytest.Item]) -> None:
        """When this process runs every item and no bash criterion is among them, start
        the agent checks now, a wave at a time, in item order: each item then waits for
        its own. (A bash command's containment owns every process that starts while it
        runs, so agent checks never run beside one in the same process.)"""
        from pytest_acceptance.collect import CriterionItem, run_context

        if self.config is None or self.settings.backend is None:
            return
        if hasattr(self.config, "workerinput"):
            return  # xdist decides which items a worker runs, one at a time
        criteria = [item.criterion for item in items if isinstance(item, CriterionItem)]
        if any(c.method is Method.BASH for c in criteria):
            return
        agents = [c for c in criteria if c.method is Method.SUBAGENT]
        if len(agents) < 2:
            return
        context = run_context(self.config)
        self.pool = ThreadPoolExecutor(self.settings.wave, thread_name_prefix="acceptance-agent")
        for criterion in agents:
            self.started[criterion] = self.pool.submit(
                self.verify, criterion, context, None, isolated=True
            )

    def _stop_ahead(self) -> None:
        """The run ended (or stopped: -x, Ctrl-C): checks not started never start, and the
        helpers of running ones are stopped, killing their agents."""
        if self.pool is None:
            return
        from pytest_acceptance.agent.isolated import close_helpers, stop_helpers

        self.stopping.set()
        self.pool.shutdown(wait=False, cancel_futures=True)
        # (A future cancelled above is done(), though wait() would never see it end.)
        while pending := [f for f in self.started.values() if not f.done()]:
            stop_helpers()  # a call that started just now is stopped on the next round
            wait(pending, timeout=0.1)
        close_helpers()  # the pool threads' helpers, kept between their checks
        self.pool.shutdown(wait=True)
        self.pool = None
        self.started.clear()

    # -- the hooks -----------------------------------------------------------------------

    @pytest.hookimpl
    def pytest_acceptance_run(self, criterion: Criterion, context: RunContext) -> Result | None:
        if criterion.method is not Method.SUBAGENT:
            return None
        ahead = self.started.pop(criterion, None)
        if ahead is not None:
            return ahead.result()
        return self.verify(criterion, context, None)

    @pytest.hookimpl
    def pytest_acceptance_judge(
        self, criterion: Criterion, context: RunContext, evidence: str
    ) -> Result | None:
        return self.verify(criterion, context, evidence)

    def verify(
        self,
        criterion: Criterion,
        context: RunContext,
        evidence: str | None,
        isolated: bool = False,
    ) -> Result:
        """One criterion (evidence None) or one pass condition (evidence given), judged."""
        started = time.monotonic()
        try:
            result = self._verify(criterion, context, evidence, isolated)
        except _Unverifiable as problem:
            result = Result(Status.ERROR, attempts=0, message=str(problem), extra=problem.extra)
        duration = time.monotonic() - started
        if "usage" in result.extra:
            usage = {**result.extra["usage"], "duration": round(duration, 3)}
            result = replace(result, extra={**result.extra, "usage": usage})
        return replace(result, duration=duration)

    def _verify(
        self, criterion: Criterion, context: RunContext, evidence: str | None, isolated: bool
    ) -> Result:
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
            env=judge_environment(criterion, model, evidence),
            isolated=isolated or _votes(criterion, self.settings) > 1,
            keep_helper=isolated and _votes(criterion, self.settings) == 1,  # a pool thread
            run_cgroup=_run_cgroup(self.config),
        )
        if not self.settings.cache:
            return self._judge(backend, request, criterion, extra)
        return self._cached(backend, request, criterion, extra, evidence)

    def _cached(
        self,
        backend: Backend,
        request: Dispatch,
        criterion: Criterion,
        extra: dict[str, Any],
        evidence: str | None,
    ) -> Result:
        from pytest_acceptance.agent.prompt import PROMPT_VERSION
        from pytest_acceptance.agent.verdict_cache import VerdictCache, cache_key, judged_tree
        from pytest_acceptance.tree.file_hash import FingerprintError

        cache = VerdictCache(request.cwd)
        configuration = {
            **backend.identity(),
            "model": request.model,
            "agent_digest": request.agent.digest if request.agent else None,
            "prompt_version": PROMPT_VERSION,
            "votes": _votes(criterion, self.settings),
            "evidence": hashlib.sha256(evidence.encode()).hexdigest() if evidence else None,
        }
        key = cache_key(criterion, configuration)
        specs = self._spec_files(criterion)
        try:
            before = judged_tree(request.cwd, specs)
        except FingerprintError:  # an unknown tree: no cached pass can describe it
            return self._judge(backend, request, criterion, extra)
        hit = cache.lookup(key, before)
        if hit is not None:
            message = f"{hit.message} (cached pass: criterion, agent and tree unchanged)"
            usage = {**_spending(_no_usage(), 0), "cached": True}
            extra = {**extra, "cached": True, "dispatches": 0, "usage": usage}
            return replace(hit, message=message, extra=extra)
        result = self._judge(backend, request, criterion, extra)
        if _same_tree(request.cwd, specs, before):  # the verdict describes one tree
            cache.store(key, before, result)
        return result

    def _spec_files(self, criterion: Criterion) -> list[Path]:
        """The run's spec files: their text is in each criterion's key, not in the tree's
        fingerprint (editing one criterion invalidates its own cached pass only)."""
        from pytest_acceptance.options import spec_paths

        run = spec_paths(self.config) if self.config is not None else []
        return [criterion.location.path, *run]

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

    def _judge(
        self, backend: Backend, request: Dispatch, criterion: Criterion, extra: dict[str, Any]
    ) -> Result:
        """``votes`` independent judgements at once (each in its wave slot); one result."""
        no_login = self.login_problem()  # before the first call: no call can succeed
        if no_login is not None:
            extra = {**extra, "advice": no_login}
            return Result(Status.ERROR, 0, message=_no_login_message(criterion), extra=extra)
        count = _votes(criterion, self.settings)
        if count == 1:
            judgements = [self._judgement(backend, request)]
        else:
            with ThreadPoolExecutor(count, thread_name_prefix="acceptance-vote") as voters:
                judgements = list(
                    voters.map(lambda _: self._judgement(backend, request), range(count))
                )
        result = _result(criterion, request, judgements, extra)
        if not result.issues:
            return result
        spec_line = spec_location(criterion, request.cwd)
        return replace(result, issues=checked_issues(result.issues, request.cwd, spec_line))

    def _judgement(self, backend: Backend, request: Dispatch) -> Judgement:
        """One judge: dispatched, and once more after an unusable answer."""
        from pytest_acceptance.agent.backends import DispatchError
        from pytest_acceptance.agent.budget import BudgetExhausted

        judgement = Judgement()
        with wave_slot(request.cwd, self.settings.wave):
            for _attempt in range(DISPATCHES):
                if self.stopping.is_set():  # (no item waits for this answer any more)
                    judgement.failures.append(DispatchError("the run stopped first"))
                    return judgement
                try:
                    share = self.budget.reserve() if self.budget is not None else None
                except BudgetExhausted as exhausted:
                    judgement.budget = f"budget exhausted: {exhausted}"
                    return judgement
                asked = request
                if share is not None:
                    env = {**request.env, "PYTEST_ACCEPTANCE_MAX_COST_USD": f"{share:.6f}"}
                    asked = replace(request, max_cost=share, env=env)
                judgement.calls += 1
                try:
                    answer = backend.dispatch(asked)
                except DispatchError as failure:
                    self._settle(share, failure.usage)
                    judgement.usage += failure.usage
                    judgement.failures.append(failure)
                    if failure.budget:
                        judgement.budget = f"budget exhausted: {failure}"
                        return judgement
                    if failure.no_login:  # the same on every call: none is made again
                        self._lost_login(str(failure))
                        return judgement
                    continue
                self._settle(share, answer.usage)
                judgement.usage += answer.usage
                judgement.verdict = answer.verdict
                return judgement
        return judgement

    def _settle(self, share: float | None, usage: Usage) -> None:
        if self.budget is not None and share is not None:
            self.budget.settle(share, usage.cost_usd)


@dataclass
class Judgement:
    """What one judge answered: a valid verdict, or why not; and what it cost."""

    verdict: JudgeVerdict | None = None
    failures: list[DispatchError] = field(default_factory=list)
    usage: Usage = field(default_factory=lambda: _no_usage())
    calls: int = 0
    budget: str = ""  # why the budget stopped this judge

    @property
    def attempts(self) -> int:
        return self.calls


def _votes(criterion: Criterion, settings: AgentSettings) -> int:
    """The criterion's ``votes:``, else the run's ``acceptance_votes``."""
    return criterion.votes or settings.votes


def _budget(settings: AgentSettings, config: pytest.Config | None) -> Budget | None:
    if settings.max_cost is None:
        return None
    from pytest_acceptance.agent.budget import Budget

    given = (getattr(config, "workerinput", None) or {}).get(BUDGET_KEY)
    if given:
        return Budget(Path(given), settings.max_cost, settings.wave)
    return Budget.create(settings.max_cost, settings.wave)


def _run_cgroup(config: pytest.Config | None) -> Path | None:
    if config is None:
        return None
    guard = config.pluginmanager.get_plugin("acceptance-guard")
    cgroup = getattr(guard, "run_cgroup", None)
    return cgroup if isinstance(cgroup, Path) else None


def judge_environment(
    criterion: Criterion, model: str | None, evidence: str | None
) -> dict[str, str]:
    """What a judge is told about what it judges, beside the prompt (a command judge may
    route by model, or log per criterion)."""
    values = {
        "PYTEST_ACCEPTANCE_CRITERION": criterion.id,
        "PYTEST_ACCEPTANCE_TITLE": criterion.title,
        "PYTEST_ACCEPTANCE_SPEC": str(criterion.location.path.resolve()),
        "PYTEST_ACCEPTANCE_SPEC_LINE": str(criterion.location.line),
        "PYTEST_ACCEPTANCE_PRIORITY": criterion.priority.value,
        "PYTEST_ACCEPTANCE_MODEL": model or "",
        "PYTEST_ACCEPTANCE_AGENT": criterion.agent or "",
        "PYTEST_ACCEPTANCE_JUDGING": "condition" if evidence is not None else "criterion",
    }
    return {name: value.replace("\0", "") for name, value in values.items()}


def _no_login_message(criterion: Criterion) -> str:
    return (
        f"no verdict for {criterion.id}: the judge has no key or login (the fix opens the verdict)"
    )


def _needs_a_judge(item: pytest.Item) -> bool:
    from pytest_acceptance.collect import CriterionItem, who_judges

    return isinstance(item, CriterionItem) and who_judges(item.criterion) in (
        "agent",
        "bash, agent-judged",
    )


def _no_usage() -> Usage:
    from pytest_acceptance.agent.backends import Usage

    return Usage()


def _spending(usage: Usage, calls: int) -> dict[str, Any]:
    """``Result.extra["usage"]``: what judging one criterion cost (duration added later)."""
    return {
        "calls": calls,
        "cached": False,
        "cost_usd": round(usage.cost_usd, 6),
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "turns": usage.turns,
    }


def _result(
    criterion: Criterion, request: Dispatch, judgements: list[Judgement], extra: dict[str, Any]
) -> Result:
    usage = judgements[0].usage
    for judgement in judgements[1:]:
        usage += judgement.usage
    calls = sum(j.calls for j in judgements)
    extra = {**extra, "dispatches": calls, "usage": _spending(usage, calls)}
    if len(judgements) > 1:
        return _majority(criterion, request, judgements, extra)
    [judgement] = judgements
    if judgement.verdict is not None:
        return _verdict_result(judgement.verdict, calls, judgement.failures, extra)
    if judgement.budget:
        return _budget_error(criterion, judgement.budget, calls, judgement.failures, extra)
    return _dispatch_error(criterion, request, judgement.failures, extra)


def _budget_error(
    criterion: Criterion,
    why: str,
    calls: int,
    failures: list[DispatchError],
    extra: dict[str, Any],
) -> Result:
    message = (
        f"{why}; {criterion.id} was not judged. Next: raise --acceptance-max-cost "
        "(ini acceptance_max_cost), or select fewer criteria (-k, -m)."
    )
    extra = {**extra, "budget_exhausted": True}
    if failures:
        extra["dispatch_errors"] = [str(failure) for failure in failures]
    output = failures[-1].output if failures else ""
    return Result(Status.ERROR, attempts=calls, output=output, message=message, extra=extra)


def _majority(
    criterion: Criterion, request: Dispatch, judgements: list[Judgement], extra: dict[str, Any]
) -> Result:
    """The majority of ``len(judgements)`` judges decides; a pass needs more than half of
    them to pass. Judges that disagree mark the criterion unstable, never hidden."""
    count = len(judgements)
    verdicts = [j.verdict for j in judgements if j.verdict is not None]
    passed = sum(v.passed for v in verdicts)
    failed = len(verdicts) - passed
    unstable = passed > 0 and failed > 0
    tally = f"{passed} of {count} judges passed"
    if failed:
        tally += f", {failed} failed"
    if count - len(verdicts):
        tally += f", {count - len(verdicts)} gave no valid verdict"
    votes = {
        "judges": count,
        "passed": passed,
        "failed": failed,
        "no_verdict": count - len(verdicts),
        "unstable": unstable,
        "answers": [_answer_record(j) for j in judgements],
    }
    extra = {**extra, "votes": votes, "unstable": unstable}
    attempts = sum(j.calls for j in judgements)
    note = f" ({tally}{'; unstable: the judges disagree' if unstable else ''})"
    if passed * 2 > count:
        summary = next(v.summary for v in verdicts if v.passed)
        return Result(Status.PASSED, attempts=attempts, message=summary + note, extra=extra)
    if failed:
        issues = _distinct(i for v in verdicts if not v.passed for i in v.issues)
        summary = next(v.summary for v in verdicts if not v.passed)
        return Result(
            Status.FAILED, attempts=attempts, issues=issues, message=summary + note, extra=extra
        )
    failures = [f for j in judgements for f in j.failures]
    budget = next((j.budget for j in judgements if j.budget), "")
    if budget:
        return _budget_error(criterion, budget, attempts, failures, extra)
    error = _dispatch_error(criterion, request, failures, extra)
    return replace(error, message=f"no majority: {tally}. {error.message}")


def _answer_record(judgement: Judgement) -> dict[str, Any]:
    verdict = judgement.verdict
    if verdict is None:
        why = judgement.budget or "; ".join(str(f) for f in judgement.failures)
        return {"status": "error", "summary": why, "issues": []}
    return {
        "status": "pass" if verdict.passed else "fail",
        "summary": verdict.summary,
        "issues": [issue.to_dict() for issue in verdict.issues],
    }


def _distinct(issues: Iterator[Issue] | Any) -> tuple[Issue, ...]:
    return tuple(dict.fromkeys(issues))


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
    verdict: JudgeVerdict, attempt: int, failures: list[DispatchError], extra: dict[str, Any]
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
    if failures and failures[-1].no_login:
        extra = {**extra, "dispatches": len(failures), "advice": str(failures[-1])}
        return Result(
            Status.ERROR, len(failures), message=_no_login_message(criterion), extra=extra
        )
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


def _same_tree(root: Path, specs: list[Path], before: str) -> bool:
    from pytest_acceptance.agent.verdict_cache import judged_tree
    from pytest_acceptance.tree.file_hash import FingerprintError

    try:
        return judged_tree(root, specs) == before
    except FingerprintError:
        return False
