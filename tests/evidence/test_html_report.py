"""The HTML report (--acceptance-html): one self-contained file that a real headless browser
(Chromium from Debian's packages, installed by .ci/run; elsewhere those tests skip without
it) renders offline, and that no
criterion text or output can break out of (hypothesis, checked with html.parser)."""

from __future__ import annotations

import re
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.runs import BASE
from support.specs import bash, manual, spec
from support.tools import require_tool

from pytest_acceptance.evidence.html import render_html
from pytest_acceptance.model import Criterion, Issue, Location, Method, Priority, Result, Status
from pytest_acceptance.verdict.decision import Outcome, Scope, decide

ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "p", "main",
    "section", "ul", "li", "a", "table", "thead", "tbody", "tr", "th", "td", "span", "code",
    "details", "summary", "dl", "dt", "dd", "pre",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {"lang", "charset", "http-equiv", "content", "name", "class", "id", "open"}
HOSTILE = [
    "<script>alert(1)</script>", "</pre><script>x()</script>", "</style><img src=x>",
    '"><img src=x onerror=alert(1)>', "' onmouseover='x", "<!--", "-->", "]]>", "&lt;b&gt;",
    "\x1b[31mred\x1b[0m", "\x1b]8;;http://evil/\x07link\x1b]8;;\x07", "\x00", "\x07", "\x7f",
    "\x9b", "\ud800", "<a href=http://evil>x</a>", "<iframe src=//evil>", "\r\n",
]  # fmt: skip


class TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []
        self.comments: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def handle_comment(self, data: str) -> None:
        self.comments.append(data)


def parse(page: str) -> TagCollector:
    collector = TagCollector()
    collector.feed(page)
    collector.close()
    return collector


hostile_text = st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=20)), max_size=6).map(
    "".join
)


def outcome(ident: str, title: str, status: Status, words: str, path: Path) -> Outcome:
    criterion = Criterion(
        id=ident,
        title=title,
        method=Method.BASH,
        location=Location(path, 3),
        description=words,
        category=words,
        command=words or "true",
        checks=(words,),
        priority=Priority.SHOULD,
    )
    issue = Issue(words, words, words)
    result = Result(status, issues=(issue,), output=words, message=words)
    return Outcome(criterion, result)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(title=hostile_text, words=hostile_text, status=st.sampled_from(list(Status)))
def test_no_criterion_text_or_output_breaks_out_of_the_html(
    tmp_path: Path, title: str, words: str, status: Status
) -> None:
    path = tmp_path / "spec.md"
    outcomes = [
        outcome("AC-1", title, status, words, path),
        outcome("AC-2", words, status, "", path),
    ]
    report = {
        "spec": "spec.md", "title": words, "criteria_total": 3, "selected": 2, "not_run": 0,
        "complete": False, "gaps": {"high": ["AC-1"], "medium": [], "low": []},
        "previous": {"source": words, "usable": True, "reason": words},
        "resolutions": {"fixed": ["AC-2"]}, "removed": [{"id": words, "previous_status": words}],
        "criteria": [{"id": "AC-1", "gap": words, "resolution": words, "previous_status": words}],
    }  # fmt: skip
    verdict = decide(outcomes, [words] if words else [], Scope(3, words))
    page = render_html(verdict, [report], tmp_path, 1.0)
    page.encode("utf-8")  # no lone surrogate survives: the file is valid UTF-8
    parsed = parse(page)
    tags = {tag for tag, _ in parsed.tags}
    assert tags <= ALLOWED_TAGS, tags - ALLOWED_TAGS
    for tag, attributes in parsed.tags:
        for name, value in attributes:
            assert name in ALLOWED_ATTRIBUTES or (name == "href" and value.startswith("#c-")), (
                tag,
                name,
                value,
            )
    assert parsed.comments == []
    assert [tag for tag, _ in parsed.tags].count("style") == 1
    assert "\x1b" not in page and "\x00" not in page
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", page)


def test_the_text_of_a_criterion_reads_as_written_after_escaping(tmp_path: Path) -> None:
    words = '<script>alert("x")</script> & \x1b[1mbold\x1b[0m'
    path = tmp_path / "spec.md"
    verdict = decide([outcome("AC-1", words, Status.FAILED, words, path)])
    text = "".join(parse(render_html(verdict, [], tmp_path)).text)
    assert '<script>alert("x")</script> & bold' in text  # shown as text, escapes dropped


# --- in a real browser -------------------------------------------------------------------------


def chromium() -> str:
    """Chromium, or a skip (a failure under CI=true) where it is missing or does not run."""
    return require_tool("chromium", "chromium-browser", why="apt-get install -y chromium")


def browser(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    """Headless Chromium, offline: no background network, a throwaway profile."""
    command = [
        chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-extensions", "--hide-scrollbars", f"--user-data-dir={profile}", *args,
    ]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=True)


def png_pixels(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB rows of an 8-bit RGB/RGBA PNG (what Chromium writes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks, offset = {}, 8
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        chunks[kind] = chunks.get(kind, b"") + data[offset + 8 : offset + 8 + length]
        offset += 12 + length
    width, height, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert depth == 8 and color in (2, 6)
    channels = 3 if color == 2 else 4
    raw, stride = zlib.decompress(chunks[b"IDAT"]), width * channels
    rows, previous = [], bytearray(stride)
    for y in range(height):
        kind, line = (
            raw[y * (stride + 1)],
            bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)]),
        )
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up, corner = previous[x], previous[x - channels] if x >= channels else 0
            line[x] = (line[x] + _predict(kind, left, up, corner)) & 0xFF
        rows.append(bytes(line[i] for i in range(stride) if i % channels < 3))
        previous = line
    return width, height, rows


def _predict(kind: int, left: int, up: int, corner: int) -> int:
    if kind == 0:
        return 0
    if kind == 1:
        return left
    if kind == 2:
        return up
    if kind == 3:
        return (left + up) // 2
    estimate = left + up - corner
    near = min((abs(estimate - left), 0), (abs(estimate - up), 1), (abs(estimate - corner), 2))
    return (left, up, corner)[near[1]]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run that writes the HTML report: a failure with hostile output, a pass, a
    manual criterion; then Chromium renders it offline."""
    root = tmp_path_factory.mktemp("html")
    (root / "spec.md").write_text(
        spec(
            bash("AC-1", "true", "Queues notifications"),
            bash(
                "AC-2",
                r"printf '<script>document.title=\"pwned\"</script>\n\033[31mred\033[0m\n'; exit 3",
                "Sends <b>bold</b> emails",
                retries=0,
            ),
            manual("AC-3", "Copy reads well", checks=["subject under 60 characters"]),
        )
    )
    (root / "pyproject.toml").write_text("")
    html = ["--acceptance-html", "out/r.html"]
    run = subprocess.run(
        [*BASE, "--acceptance", "spec.md", "-p", "no:xdist", *html],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    assert "HTML report written to out/r.html" in run.stdout  # relative to the rootdir
    return root / "out" / "r.html"


def test_the_report_is_one_file_without_scripts_or_outside_resources(rendered: Path) -> None:
    page = rendered.read_text(encoding="utf-8")
    parsed = parse(page)
    assert "script" not in {tag for tag, _ in parsed.tags}
    links = [value for _, attrs in parsed.tags for name, value in attrs if name in ("href", "src")]
    assert all(link.startswith("#c-") for link in links), links
    assert "default-src 'none'" in page  # the browser is told: nothing from anywhere else


def test_chromium_renders_every_criterion_with_its_status_and_output(
    rendered: Path, tmp_path: Path
) -> None:
    dom = browser("--dump-dom", rendered.as_uri(), profile=tmp_path / "profile").stdout
    assert "<title>Acceptance: FAIL</title>" in dom  # the hostile output did not run
    for expected in (
        "FAIL: 1 criterion failed",
        "Queues notifications",
        "Sends &lt;b&gt;bold&lt;/b&gt; emails",
        "Copy reads well",
        '<span class="badge failed">failed</span>',
        '<span class="badge manual">manual</span>',
        '&lt;script&gt;document.title="pwned"&lt;/script&gt;',
        "exit code 3",
    ):
        assert expected in dom, expected
    assert "\x1b" not in dom and "&lt;/script&gt;\nred</pre>" in dom  # colour codes dropped


def test_chromium_screenshot_shows_the_fail_banner_and_a_rendered_page(
    rendered: Path, tmp_path: Path
) -> None:
    shot = tmp_path / "report.png"
    browser(
        f"--screenshot={shot}", "--window-size=800,600", rendered.as_uri(), profile=tmp_path / "p"
    )
    width, height, rows = png_pixels(shot)
    assert (width, height) == (800, 600)
    banner = rows[10][30:33]  # top left: inside the red FAIL banner, styled by the inline CSS
    assert banner == bytes.fromhex("b3261e"), banner.hex()
    colours = {row[x : x + 3] for row in rows[::8] for x in range(0, width * 3, 24)}
    assert len(colours) > 20  # text, badges, tables: not a blank or uniform page


def test_a_partial_pass_does_not_look_verified(tmp_path: Path) -> None:
    path = tmp_path / "spec.md"
    passed = Outcome(outcome("AC-1", "t", Status.PASSED, "", path).criterion, Result(Status.PASSED))
    page = render_html(decide([passed], (), Scope(total=3)), [], tmp_path)
    assert '<header class="partial">' in page and "not a verification" in page
    assert '<header class="pass">' in render_html(decide([passed], (), Scope(1)), [], tmp_path)


def test_a_failure_is_shown_once_not_again_under_its_issue_table(tmp_path: Path) -> None:
    """A bash failure's message restates its one issue: the page shows the issue only;
    what the message adds (all attempts failed) stays."""
    criterion = outcome("AC-1", "t", Status.FAILED, "", tmp_path / "spec.md").criterion
    issue = Issue("app.py:3", "exit code 0", 'exit code 1; last output line: "boom"')
    message = f"expected {issue.expected}; found {issue.actual} (all 2 attempts failed)"
    failed = Outcome(criterion, Result(Status.FAILED, 2, issues=(issue,), message=message))
    page = render_html(decide([failed]), [], tmp_path)
    assert page.count("last output line") == 1
    assert "(all 2 attempts failed)" in page
