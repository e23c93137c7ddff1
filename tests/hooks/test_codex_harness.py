"""The Responses API stand-in the Codex tests drive the real CLI with: it serves on
127.0.0.1 only, answers in order with the smallest stream the CLI accepts, records what it
cannot answer, and stops by itself when idle, so it never outlives a test run."""

from __future__ import annotations

import json
import urllib.request

from support.codex_harness import ResponsesStandIn, say, shell, sse_events


def _post(url: str, body: dict[str, object]) -> str:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return str(answer.read().decode())


def test_it_answers_in_order_on_loopback_only() -> None:
    with ResponsesStandIn([shell("echo hi"), say("done")]) as api:
        assert api.base_url.startswith("http://127.0.0.1:")
        first = _post(f"{api.base_url}/responses", {"input": [], "stream": True})
        second = _post(f"{api.base_url}/responses", {"input": [], "stream": True})
        assert '"name": "exec_command"' in first and "response.completed" in first
        assert '"output_text"' in second
        _post(f"{api.base_url}/responses", {"input": []})  # one more than scripted
        assert api.remaining == 0 and len(api.requests) == 3
        assert api.errors and "exhausted" in api.errors[0]


def test_the_stream_ends_with_one_completed_response() -> None:
    events = list(sse_events((say("a"), say("b"))))
    assert [e["type"] for e in events] == [
        "response.output_item.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert events[-1]["response"]["usage"]["total_tokens"] > 0


def test_it_stops_by_itself_when_idle() -> None:
    api = ResponsesStandIn([], idle_timeout=0.5).start()
    assert api.wait_stopped(10)
