"""Digests kept across /implements: the next pin reads a file again only when its stat key
changed, and whatever the kept file holds, a pin never takes a digest under another key."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_acceptance.gate import environment_digests
from pytest_acceptance.tree import closure

PYTHON = "/opt/python/bin/python3"


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "own-state"  # not the one tests/hooks/conftest.py seeds
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(folder))
    return folder


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the pin reads: closure's digest function, spied on (and still called).
    Files the test made count as settled at once (no clock-tick wait)."""
    seen: list[str] = []
    real = closure.file_digest

    def spy(path: str, *, follow: bool = True) -> str | None:
        seen.append(str(path))
        return real(path, follow=follow)

    monkeypatch.setattr(closure, "file_digest", spy)
    monkeypatch.setattr(closure, "RACY_SECONDS", 0.0)
    return seen


@pytest.fixture
def site(tmp_path: Path) -> closure.Places:
    folder = tmp_path / "site-packages"
    (folder / "lib").mkdir(parents=True)
    for name in ("a.py", "b.py", "lib/__init__.py"):
        (folder / name).write_text(f"# {name}\n")
    return closure.Places([str(folder)], [], [])


def pin_and_keep(places: closure.Places, python: str = PYTHON) -> closure.Pin:
    pinned = closure.pin(places, time.monotonic() + 60, environment_digests.known(python))
    environment_digests.keep(python, pinned)
    return pinned


def test_the_next_pin_reads_no_file_whose_stat_key_is_unchanged(
    site: closure.Places, reads: list[str]
) -> None:
    first = pin_and_keep(site)
    assert len(reads) == 3
    reads.clear()
    assert pin_and_keep(site) == first
    assert reads == []


def test_a_file_rewritten_between_pins_is_read_again_whatever_its_mtime(
    site: closure.Places, reads: list[str]
) -> None:
    """Same size, mtime put back: only the ctime moved, and that is enough."""
    first = pin_and_keep(site)
    target = Path(site.roots[0], "a.py")
    before = target.stat()
    target.write_text("# A.py\n")
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    reads.clear()
    second = pin_and_keep(site)
    assert reads == [str(target)]
    assert second[str(target)][1] != first[str(target)][1]


def test_a_kept_digest_under_a_key_the_file_no_longer_has_is_never_taken(
    site: closure.Places, reads: list[str]
) -> None:
    """A kept file someone wrote: an entry that names a key the file does not have now is
    read past, whatever digest it claims."""
    honest = pin_and_keep(site)
    target = str(Path(site.roots[0], "b.py"))
    forged = {path: list(entry) for path, entry in honest.items()}
    forged[target] = [forged[target][0] + "0", "0" * 64]
    environment_digests.kept_file(PYTHON).write_text(json.dumps(forged))
    reads.clear()
    assert pin_and_keep(site) == honest
    assert reads == [target]


def test_each_interpreter_keeps_its_own(site: closure.Places, reads: list[str]) -> None:
    pin_and_keep(site, PYTHON)
    reads.clear()
    pin_and_keep(site, "/another/python3")
    assert len(reads) == 3


def test_a_digest_taken_in_the_clock_tick_of_a_write_is_not_kept(
    site: closure.Places, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files written within the racy window (here, as wide as can be) have no trusted key."""
    monkeypatch.setattr(closure, "RACY_SECONDS", 1e9)
    pinned = pin_and_keep(site)
    assert all(entry[0] == "" for entry in pinned.values())
    assert environment_digests.known(PYTHON) == {}


@settings(max_examples=200, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    raw=st.one_of(
        st.binary(max_size=300),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(st.text(max_size=20), inner, max_size=4)
            ),
            max_leaves=12,
        ).map(lambda value: json.dumps(value).encode()),
    )
)
def test_whatever_the_kept_file_holds_known_gives_only_keyed_digests(raw: bytes) -> None:
    target = environment_digests.kept_file(PYTHON)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(raw)
    found = environment_digests.known(PYTHON)
    assert all(
        isinstance(path, str)
        and isinstance(entry, list)
        and len(entry) == 2
        and all(isinstance(part, str) and part for part in entry)
        for path, entry in found.items()
    )
