"""Gate runs of one tree at the same instant: each reports its own true reason.

Closed by ``pytest_acceptance/gate/gate_lock.py``: a gate run holds an exclusive ``flock``
named by the tree's real path for its whole run, so a second run waits, then reads the
flow's state as the first left it (its bytecode folders, stored results and counts) and
decides on its own run. The lock dies with its holder. Real hooks from hooks.json, started
together from threads released by one barrier, on real repositories."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hook_transcripts import (
    PLUGIN,
    TranscriptBuilder,
    ask_gate,
    make_fail,
    make_pass,
    pinned_flow,
    pretool_payload,
    run_hook,
    stop_payload,
    witnessed_project,
)

from pytest_acceptance.gate import gate_lock
from pytest_acceptance.gate.flow_state import STATE_VERSION, Flow
from pytest_acceptance.gate.gate_runtime import GateError

FAILING = "these criteria fail in the gate's own verification run: AC-1 "
CONCURRENT_REASONS = ("bytecode folder changed", "changed during the gate's run")


def done_flow(repo: Path, spec: Path) -> TranscriptBuilder:
    builder = TranscriptBuilder(repo)
    builder.implement("specs/feature.md")
    make_pass(repo)
    builder.verify(spec)
    builder.done()
    return builder


def at_once(*calls: Callable[[], object]) -> list[object]:
    """Each call in a thread of its own, all released at the same instant."""
    barrier = threading.Barrier(len(calls))
    answers: list[object] = [None] * len(calls)

    def one(index: int) -> None:
        barrier.wait()
        answers[index] = calls[index]()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=900)
    return answers


def two_stops(builder: TranscriptBuilder, repo: Path, tmp_path: Path) -> list[object]:
    transcript = builder.write(tmp_path / "session.jsonl")
    payload = stop_payload(transcript, repo)
    return at_once(lambda: run_hook("Stop", payload), lambda: run_hook("Stop", payload))


def test_two_stops_at_once_on_a_failing_tree_each_name_the_failing_criterion(
    tmp_path: Path,
) -> None:
    """AC-1 runs pytest: the /done the gate let through witnessed the modules it imports, so
    the next gate run compiles the criteria's bytecode folder afresh for them. Two Stop
    hooks started together on a failing tree each run the gate: neither rebuilds that
    folder under the other, and both name the failing criterion."""
    repo = witnessed_project(tmp_path)
    builder = pinned_flow(repo)
    make_pass(repo)
    builder.verify(repo / "specs" / "feature.md")
    allowed = ask_gate(builder, repo, tmp_path, "done")
    assert not allowed.denied, allowed.deny_reason
    builder.done()
    make_fail(repo)
    for answer in two_stops(builder, repo, tmp_path):
        assert answer.blocked, answer.stdout  # type: ignore[attr-defined]
        reason = answer.reason  # type: ignore[attr-defined]
        assert FAILING in reason, reason
        assert not any(words in reason for words in CONCURRENT_REASONS), reason


def test_control_two_stops_at_once_on_a_passing_tree_both_let_the_session_stop(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    builder = done_flow(repo, spec)
    for answer in two_stops(builder, repo, tmp_path):
        assert not answer.blocked, answer.reason  # type: ignore[attr-defined]


def test_a_stop_and_a_done_at_once_each_refuse_for_the_failing_criterion(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    """Another pair: the Stop hook after /done and the PreToolUse gate of a second /done,
    started together on a failing tree: both give the failing criterion."""
    builder = done_flow(repo, spec)
    make_fail(repo)
    transcript = builder.write(tmp_path / "session.jsonl")
    stop = stop_payload(transcript, repo)
    done = pretool_payload(transcript, repo, f"{PLUGIN}:done")
    stopped, asked = at_once(lambda: run_hook("Stop", stop), lambda: run_hook("PreToolUse", done))
    assert stopped.blocked and FAILING in stopped.reason, stopped.reason  # type: ignore[attr-defined]
    assert asked.denied and "AC-1 works (failed" in asked.deny_reason, asked.stdout  # type: ignore[attr-defined]


def test_a_lock_left_by_a_killed_holder_never_wedges_the_gate(
    repo: Path, spec: Path, tmp_path: Path
) -> None:
    """A process holding the tree's gate lock is killed: the next stop runs at once and
    gives the true reason, not a wait."""
    builder = done_flow(repo, spec)
    make_fail(repo)
    path = gate_lock.lock_path(str(repo))
    path.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with open(path) as probe:  # held now: a try without waiting is refused
        try:
            fcntl.flock(probe.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            raise AssertionError("the holder does not hold the lock")
        except BlockingIOError:
            pass
    holder.kill()
    holder.wait()
    started = time.monotonic()
    (answer,) = at_once(
        lambda: run_hook("Stop", stop_payload(builder.write(tmp_path / "s.jsonl"), repo))
    )
    assert answer.blocked and FAILING in answer.reason, answer.reason  # type: ignore[attr-defined]
    assert time.monotonic() - started < 600


HOLD = """
import fcntl, sys, time
handle = open(sys.argv[1], "a+")
fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""


# --- the lock itself, in-process ---------------------------------------------------------


def flow_of(folder: Path, repo: Path) -> Flow:
    folder.mkdir(parents=True)
    data = {"session_id": "s-1", "repo": str(repo), "version": STATE_VERSION}
    (folder / "flow.json").write_text(json.dumps(data))
    return Flow(folder, data)


def test_a_second_run_waits_for_the_first_then_reads_what_it_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs of one flow: the second enters only once the first has left, and then
    works from the modules and counts the first saved, not from what it loaded before."""
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path / "state"))
    first = flow_of(tmp_path / "flow", tmp_path)
    second = Flow(first.folder, dict(first.data))
    order: list[str] = []
    entered = threading.Event()

    def run_first() -> None:
        with gate_lock.held(first, time.monotonic() + 60):
            entered.set()
            time.sleep(0.5)
            first.data.update(criteria_modules={"plain": ["m.py"]}, gate_runs=1)
            first.save()
            order.append("first left")

    thread = threading.Thread(target=run_first)
    thread.start()
    assert entered.wait(30)
    with gate_lock.held(second, time.monotonic() + 60):
        order.append("second entered")
        assert second.data.get("criteria_modules") == {"plain": ["m.py"]}
        assert second.gate_runs == 1
    thread.join()
    assert order == ["first left", "second entered"]


def test_a_run_that_cannot_get_the_lock_in_time_says_who_holds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path / "state"))
    flow = flow_of(tmp_path / "flow", tmp_path)
    path = gate_lock.lock_path(str(tmp_path))
    path.parent.mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_NAMED, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with (
            pytest.raises(
                GateError, match=f"another gate run of this working tree \\(pid {holder.pid}\\)"
            ),
            gate_lock.held(flow, time.monotonic() + 0.5),
        ):
            raise AssertionError("entered a held lock")
    finally:
        holder.kill()
        holder.wait()
    with gate_lock.held(flow, time.monotonic() + 5):  # the kernel released it with the holder
        pass


HOLD_NAMED = """
import fcntl, os, sys, time
handle = open(sys.argv[1], "a+")
fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
handle.seek(0); handle.truncate(); handle.write(f"pid {os.getpid()}\\n"); handle.flush()
print("held", flush=True)
time.sleep(600)
"""
