"""Agent calls that run beside others in one process go through a helper process of their
own: it answers what the agent printed, and kills what the agent left, on its timeout or
when the run stops it."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from support.processes import kill_all, wait_gone

from pytest_acceptance.agent.isolated import (
    StartError,
    close_helpers,
    run_in_helper,
    stop_helpers,
)

ANSWER = '{"status": "pass", "summary": "ok", "issues": []}'


def recorded(path: Path) -> list[int]:
    deadline = time.monotonic() + 10
    while not (path.exists() and path.read_text().strip()):
        assert time.monotonic() < deadline, f"{path} was never written"
        time.sleep(0.02)
    return [int(word) for word in path.read_text().split()]


def test_the_helper_answers_what_the_agent_printed_with_its_stdin_and_environment(
    tmp_path: Path,
) -> None:
    script = 'cat > got-stdin; echo "$JUDGED"; echo oops >&2; exit 3'
    finished = run_in_helper(["sh", "-c", script], b"the prompt", tmp_path, 30, {"JUDGED": "AC-1"})
    assert (finished.stdout, finished.stderr, finished.code) == ("AC-1\n", "oops\n", 3)
    assert (tmp_path / "got-stdin").read_text() == "the prompt"


def test_a_helper_kills_an_agent_that_overruns_its_timeout_with_its_children(
    tmp_path: Path,
) -> None:
    script = "set -m; sleep 300 & echo $! > child-pid; sleep 300"
    finished = run_in_helper(["bash", "-c", script], None, tmp_path, 1)
    pids = recorded(tmp_path / "child-pid")
    survivors = wait_gone(pids, 5)
    kill_all(survivors)
    assert finished.code is None
    assert survivors == []


def test_stopping_the_helpers_kills_their_agents_and_leaves_nothing(tmp_path: Path) -> None:
    script = f"echo $$ > agent-pid; sleep 300; echo '{ANSWER}'"
    done: list[object] = []

    def call() -> None:
        try:
            done.append(run_in_helper(["sh", "-c", script], None, tmp_path, 300))
        except StartError as error:
            done.append(error)

    caller = threading.Thread(target=call)
    caller.start()
    pids = recorded(tmp_path / "agent-pid")
    stop_helpers()
    caller.join(30)
    survivors = wait_gone(pids, 5)
    kill_all(survivors)
    assert not caller.is_alive() and survivors == []
    assert done and "its helper process failed: exit 143" in str(done[0])  # SIGTERM


def test_a_kept_helper_serves_its_threads_next_call_and_ends_with_close_helpers(
    tmp_path: Path,
) -> None:
    def helper_pid(keep: bool) -> str:
        return run_in_helper(["sh", "-c", "echo $PPID"], None, tmp_path, 30, keep=keep).stdout

    kept = [helper_pid(keep=True), helper_pid(keep=True)]
    fresh = [helper_pid(keep=False), helper_pid(keep=False)]
    close_helpers()
    assert kept[0] == kept[1]  # one helper process for both calls
    assert fresh[0] != fresh[1]
    assert wait_gone([int(kept[0])], 5) == []  # it exits once its input ends
