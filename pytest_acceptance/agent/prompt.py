"""What an agent is asked (the prompt) and what it must answer (the verdict contract).

The prompt is bounded part by part so a huge description or log can never blow up a
command line, and it is built from the spec, the implementation log and paths only:
never from environment variables. The answer is validated strictly: a verdict that is
not exactly a pass or a fail with actionable issues is rejected, never half accepted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_acceptance.model import Criterion, Issue, one_line
from pytest_acceptance.run.conditions import NaturalLanguage, parse_condition
from pytest_acceptance.text import display_path

# Bump when the wording changes what an agent is asked: cached verdicts then go stale.
PROMPT_VERSION = 1

DESCRIPTION_LIMIT = 4_000
CHECKS_LIMIT = 8_000
CONDITION_LIMIT = 2_000
LOG_TAIL_LIMIT = 12_000
EVIDENCE_LIMIT = 12_000
FIELD_LIMIT = 300
ANSWER_FIELD_LIMIT = 2_000
ANSWER_ISSUES_LIMIT = 50
# An answer within the contract is at most ~300 KB (50 issues of 3 bounded fields); more
# is refused before decoding, as is nesting deeper than any answer needs (json recurses).
ANSWER_TEXT_LIMIT = 1_000_000
ANSWER_DEPTH_LIMIT = 32
# One command-line argument may hold at most 128 KiB on Linux (MAX_ARG_STRLEN), and the
# Claude backend passes the prompt as one: the whole prompt stays well under, in bytes.
PROMPT_BYTES_LIMIT = 100_000

# file:line, or file:line-line; the path may hold anything but must not be empty.
LOCATION_PATTERN = r"^.*[^\s:].*:[1-9][0-9]*(-[1-9][0-9]*)?$"
_LOCATION = re.compile(LOCATION_PATTERN)

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["pass", "fail"]},
        "summary": {"type": "string"},
        "issues": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "pattern": LOCATION_PATTERN},
                    "expected": {"type": "string"},
                    "actual": {"type": "string"},
                },
                "required": ["location", "expected", "actual"],
            },
        },
    },
    "required": ["status", "summary", "issues"],
}

ANSWER_CONTRACT = """\
## Your answer
Your final answer is one JSON object and nothing else:
{"status": "pass" | "fail", "summary": "<one or two sentences>",
 "issues": [{"location": "<path>:<line>", "expected": "<what should be there>",
             "actual": "<what is there>"}]}
- "pass" only when every check holds in the files as they are on disk now; when you cannot
  confirm a check, the answer is "fail".
- A "fail" lists at least one issue; a "pass" lists none.
- Each location is a file path relative to the project root, a colon and a 1-based line
  number (e.g. src/app.py:42); point at the line to change, or the line where the missing
  thing belongs.
"""


class MalformedVerdict(ValueError):
    """The agent's answer does not follow the verdict contract; the message says how."""


@dataclass(frozen=True)
class JudgeVerdict:
    """One judge's answer for one criterion, as the contract allows it."""

    passed: bool
    summary: str
    issues: tuple[Issue, ...]


def check_prompt(
    criterion: Criterion, rootdir: Path, role: str | None, log: LogExcerpt | None
) -> str:
    """The prompt for a ``method: subagent`` criterion: check the tree against it."""
    parts = [
        _preamble(rootdir, role),
        _criterion_block(criterion, rootdir),
        _log_block(log) if log else "",
        ANSWER_CONTRACT,
    ]
    return _fit("\n".join(part for part in parts if part))


def judge_prompt(criterion: Criterion, rootdir: Path, role: str | None, evidence: str) -> str:
    """The prompt for a bash criterion whose pass condition asks for a judge: the judge
    reads the words after ``judge:``."""
    asked = parse_condition(criterion.pass_condition)
    text = asked.text if isinstance(asked, NaturalLanguage) else criterion.pass_condition
    condition = _bounded(text or "", CONDITION_LIMIT)
    spec_line = f"{display_path(criterion.location.path, rootdir)}:{criterion.location.line}"
    parts = [
        _preamble(rootdir, role),
        _criterion_block(criterion, rootdir),
        "## What to judge\n"
        "The command of this criterion has been run. Decide whether its result meets the\n"
        f"pass condition: {condition}\n"
        "Judge from the evidence below (you may read files to understand it). When the\n"
        "problem lies in the command's output rather than in a file, use the criterion's\n"
        f"own line as the location: {spec_line}\n",
        "## Evidence (command, exit code, output)\n" + _fenced(_tail(evidence, EVIDENCE_LIMIT)),
        ANSWER_CONTRACT,
    ]
    return _fit("\n".join(parts))


@dataclass(frozen=True)
class LogExcerpt:
    path: Path
    text: str  # the tail, at most LOG_TAIL_LIMIT characters
    truncated: bool


def read_log_tail(path: Path) -> LogExcerpt:
    """The end of the implementation log (recent attempts matter most). Raises OSError."""
    with path.open("rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        start = max(0, size - LOG_TAIL_LIMIT * 4)  # up to 4 bytes per character
        handle.seek(start)
        text = handle.read().decode("utf-8", errors="replace")
    truncated = start > 0 or len(text) > LOG_TAIL_LIMIT
    return LogExcerpt(path, text[-LOG_TAIL_LIMIT:], truncated)


def parse_verdict(answer: Any) -> JudgeVerdict:
    """Validate an answer object against the contract; raise MalformedVerdict if it breaks it."""
    if not isinstance(answer, dict):
        raise MalformedVerdict(f"the answer is {type(answer).__name__}, not a JSON object")
    status = answer.get("status")
    if status not in ("pass", "fail"):
        raise MalformedVerdict(f'"status" is {status!r}, expected "pass" or "fail"')
    summary = answer.get("summary")
    if not isinstance(summary, str):
        raise MalformedVerdict('"summary" is missing or not a string')
    raw_issues = answer.get("issues")
    if not isinstance(raw_issues, list):
        raise MalformedVerdict('"issues" is missing or not a list')
    issues = tuple(_parse_issue(index, item) for index, item in enumerate(raw_issues))
    if status == "fail" and not issues:
        raise MalformedVerdict('"fail" without any issue: a failure must say where and why')
    if status == "pass" and issues:
        raise MalformedVerdict(f'"pass" with {len(issues)} issue(s): the answer contradicts itself')
    return JudgeVerdict(status == "pass", _bounded(summary.strip(), ANSWER_FIELD_LIMIT), issues)


def parse_verdict_text(text: str) -> JudgeVerdict:
    """Validate an answer printed as text: the whole of it must be one JSON object."""
    stripped = text.strip()
    if not stripped:
        raise MalformedVerdict("the agent printed nothing")
    return parse_verdict(load_answer(stripped))


def load_answer(text: str) -> Any:
    """Strict JSON: one value, no duplicate key (``{"status": "fail", ..., "status": "pass"}``
    must not pass by the last key winning), no NaN/Infinity, bounded size, depth and
    numbers. Anything else is a MalformedVerdict, never another exception."""
    if len(text) > ANSWER_TEXT_LIMIT:
        raise MalformedVerdict(
            f"the answer has {len(text)} characters (at most {ANSWER_TEXT_LIMIT})"
        )
    depth = _json_depth(text)
    if depth > ANSWER_DEPTH_LIMIT:
        raise MalformedVerdict(
            f"the answer nests {depth} levels deep (at most {ANSWER_DEPTH_LIMIT})"
        )
    try:
        return json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_constant=_no_constant,
            parse_int=_bounded_int,
        )
    except MalformedVerdict:
        raise
    except json.JSONDecodeError as error:
        raise MalformedVerdict(
            f"the output is not one JSON object ({error.msg} at line {error.lineno}); "
            f"it starts with {one_line(text, 120)!r}"
        ) from None
    except (ValueError, RecursionError) as error:
        raise MalformedVerdict(
            f"the answer is not valid JSON: {one_line(str(error), 200)}"
        ) from None


_JSON_SPECIAL = re.compile(r'[\[\]{}"\\]')


def _json_depth(text: str) -> int:
    """The deepest nesting of ``text`` read as JSON, in one pass over its brackets, quotes
    and backslashes (a regex for strings would rescan from each stray quote), stopping
    past the limit. For the valid prefix json.loads walks, this is json's own reading."""
    depth = deepest = 0
    in_string = False
    escaped = -1  # the position a backslash escapes
    for special in _JSON_SPECIAL.finditer(text):
        char, at = special[0], special.start()
        if in_string:
            if at == escaped:
                continue
            if char == "\\":
                escaped = at + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
            if deepest > ANSWER_DEPTH_LIMIT:
                break
        elif char in "]}":
            depth -= 1
    return deepest


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise MalformedVerdict(f"the answer repeats the key {one_line(key, 60)!r}")
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise MalformedVerdict(f"the answer holds {name}, which is not JSON")


def _bounded_int(digits: str) -> int:
    if len(digits) > 30:
        raise MalformedVerdict(f"the answer holds a number of {len(digits)} digits")
    return int(digits)


def _parse_issue(index: int, item: Any) -> Issue:
    where = f"issues[{index}]"
    if index >= ANSWER_ISSUES_LIMIT:
        raise MalformedVerdict(f"more than {ANSWER_ISSUES_LIMIT} issues")
    if not isinstance(item, dict):
        raise MalformedVerdict(f"{where} is not an object")
    values = {}
    for key in ("location", "expected", "actual"):
        value = item.get(key)
        if not isinstance(value, str) or not value.strip():
            raise MalformedVerdict(f'{where}."{key}" is missing, empty or not a string')
        values[key] = _bounded(value.strip(), ANSWER_FIELD_LIMIT)
    if not _LOCATION.match(values["location"]):
        raise MalformedVerdict(
            f'{where}."location" is {values["location"]!r}, expected file:line (e.g. src/app.py:42)'
        )
    return Issue(values["location"], values["expected"], values["actual"])


def _preamble(rootdir: Path, role: str | None) -> str:
    lines = [
        "You are verifying one acceptance criterion of a software project against its",
        "current working tree. The files on disk are the truth; logs and git history only",
        "help you find your way. Do not modify anything: read, search and judge.",
    ]
    if role:
        lines.append(f"Your role for this check: {_bounded(role, FIELD_LIMIT)}.")
    lines.append(f"\nProject root (look here; locations are relative to it): {rootdir}\n")
    return "\n".join(lines)


def _criterion_block(criterion: Criterion, rootdir: Path) -> str:
    spec = display_path(criterion.location.path, rootdir)
    lines = [f"## Criterion {criterion.id}: {_bounded(criterion.title, FIELD_LIMIT)}"]
    lines.append(f"Defined in: {spec}:{criterion.location.line}")
    if criterion.category:
        lines.append(f"Category: {_bounded(criterion.category, FIELD_LIMIT)}")
    if criterion.description:
        lines.append("Description:\n" + _bounded(criterion.description, DESCRIPTION_LIMIT))
    if criterion.command:
        lines.append("Command: " + _bounded(criterion.command, CONDITION_LIMIT))
    if criterion.checks:
        checks = "\n".join(f"- {_bounded(check, FIELD_LIMIT * 2)}" for check in criterion.checks)
        lines.append("Checks (every one must hold for a pass):\n" + _bounded(checks, CHECKS_LIMIT))
    return "\n".join(lines) + "\n"


def _log_block(log: LogExcerpt) -> str:
    extent = f"its last {LOG_TAIL_LIMIT} characters" if log.truncated else "all of it"
    return (
        f"## Implementation log ({log.path}, {extent})\n"
        "What the implementer says was tried; context for your search, not proof.\n"
        + _fenced(log.text)
    )


def _fit(prompt: str) -> str:
    """Cut from the middle (log or evidence) when multi-byte text makes the prompt too big:
    the criterion at the head and the answer contract at the tail always stay."""
    data = prompt.encode()
    if len(data) <= PROMPT_BYTES_LIMIT:
        return prompt
    keep = PROMPT_BYTES_LIMIT // 2 - 50
    head = data[:keep].decode(errors="ignore")
    tail = data[-keep:].decode(errors="ignore")
    return f"{head}\n[… {len(data) - 2 * keep} bytes cut …]\n{tail}"


def _fenced(text: str) -> str:
    # A fence longer than any backtick run inside, so quoted text cannot close it early.
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text.rstrip()}\n{fence}\n"


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 15] + " …[truncated]"


def _tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else "[truncated]… " + text[-(limit - 13) :]


# --- what the judge claims, checked against the project ------------------------------------

_CLAIMED = re.compile(r"(?P<path>.+):(?P<first>[1-9][0-9]*)(?:-(?P<last>[1-9][0-9]*))?")
_LINE_COUNT_LIMIT = 64 * 1024 * 1024  # bytes read to count a file's lines; past it, trusted


def checked_issues(issues: tuple[Issue, ...], rootdir: Path, spec_line: str) -> tuple[Issue, ...]:
    """The judge's issues, each location checked: a ``file:line`` that is no line of a file
    in the project (``nowhere.py:99``, a line past the end, a path outside the project)
    is shown as the judge's claim, in the issue's text, and the issue is placed at the
    criterion's own spec line, a place that exists."""
    return tuple(_checked(issue, rootdir, spec_line) for issue in issues)


def _checked(issue: Issue, rootdir: Path, spec_line: str) -> Issue:
    if issue.location == spec_line or _is_a_line_of_the_project(issue.location, rootdir):
        return issue
    claim = f"(the judge's claim: {issue.location}, which is not a line of a file in the project)"
    return Issue(spec_line, issue.expected, f"{issue.actual} {claim}")


def _is_a_line_of_the_project(location: str, rootdir: Path) -> bool:
    match = _CLAIMED.fullmatch(location)
    if match is None:
        return False
    root = rootdir.resolve()
    try:
        path = (root / match["path"]).resolve()
        inside = path.is_relative_to(root) and path.is_file()
    except (OSError, ValueError):  # a NUL byte, a name too long, a loop
        return False
    last = int(match["last"] or match["first"])
    return inside and last <= _line_count(path) + 1  # +1: where a missing line belongs


def _line_count(path: Path) -> int:
    lines, ends_open = 0, False
    try:
        with path.open("rb") as file:
            read = 0
            while chunk := file.read(1024 * 1024):
                lines += chunk.count(b"\n")
                ends_open = not chunk.endswith(b"\n")
                read += len(chunk)
                if read > _LINE_COUNT_LIMIT:
                    return 1 << 62
    except OSError:
        return 0
    return lines + ends_open
