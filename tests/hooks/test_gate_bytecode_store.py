"""The gate's bytecode folders kept across flows (pytest_acceptance/gate/gate_bytecode.py):
reused only while every stat key in them is the one recorded at their build, named by what
they were built from, built by one process at a time and moved into place whole. In-process,
with a real compile by this interpreter; the attacks through the hooks are in
attacks/test_bytecode.py."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.kept_digests import carried

from pytest_acceptance.gate import gate_bytecode, gate_runtime
from pytest_acceptance.gate.gate_process import clean_env


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(tmp_path / "state"))
    return tmp_path / "state" / gate_bytecode.STORE


@pytest.fixture
def sources(tmp_path: Path) -> gate_bytecode.Sources:
    module = tmp_path / "lib" / "helper.py"
    module.parent.mkdir()
    module.write_text("VALUE = 1\n")
    return gate_bytecode.Sources((str(module),), ())


def built(sources: gate_bytecode.Sources) -> gate_bytecode.Folder:
    return gate_bytecode.criteria_ready(sys.executable, sources, {})


def test_a_folder_is_reused_while_untouched(store: Path, sources: gate_bytecode.Sources) -> None:
    """Control: the next flow's run reads the folder the last one built, not a new build."""
    first = built(sources)
    assert first.untouched() and list(first.path.rglob("*.pyc"))
    again = built(sources)
    assert again == first
    assert again.path.stat().st_ctime_ns == first.path.stat().st_ctime_ns


@pytest.mark.parametrize("change", ["rewritten", "added", "added_and_removed"])
def test_a_folder_changed_since_its_build_is_built_afresh(
    store: Path, sources: gate_bytecode.Sources, change: str
) -> None:
    """A .pyc rewritten, a file added, or added and removed again (the folder's ctime moves)
    between two flows: the next run gets a new build, never the changed folder."""
    first = built(sources)
    compiled = next(first.path.rglob("*.pyc"))
    if change == "rewritten":
        compiled.write_bytes(b"forged")
    else:
        planted = compiled.parent / "planted.cpython-311.pyc"
        planted.write_bytes(b"forged")
        if change == "added_and_removed":
            planted.unlink()
    assert not first.untouched()
    again = built(sources)
    assert again.untouched() and again.keys != first.keys
    assert b"forged" not in [path.read_bytes() for path in again.path.rglob("*.pyc")]


def test_other_sources_get_a_folder_of_their_own(
    store: Path, sources: gate_bytecode.Sources, tmp_path: Path
) -> None:
    """Two projects' criteria import different modules: each keeps its folder, so two flows
    running at once never rebuild the folder the other's run reads."""
    other_module = tmp_path / "lib" / "other.py"
    other_module.write_text("OTHER = 2\n")
    one = built(sources)
    other = built(gate_bytecode.Sources((str(other_module),), ()))
    assert one.path != other.path
    assert one.untouched() and other.untouched()


def test_a_folder_moved_whole_with_its_record_keeps_its_keys(
    store: Path, sources: gate_bytecode.Sources, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paths in a record are relative to its folder: the state moved elsewhere (a new
    $CLAUDE_PLUGIN_DATA) reuses the folder rather than compiling again."""
    first = built(sources)
    moved = tmp_path / "moved"
    moved.mkdir()
    store.rename(moved / gate_bytecode.STORE)
    monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(moved))
    again = built(sources)
    assert again.keys == first.keys
    assert again.path == moved / gate_bytecode.STORE / first.path.name


def test_a_cli_session_inside_a_test_carries_the_kept_folders_on_and_back(
    store: Path, sources: gate_bytecode.Sources, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tests carry the kept folders from test to test (support/kept_digests.py), and a
    test that drives an agent CLI carries them a second time, into the CLI's own plugin
    state: that session reuses them rather than compiling again, and they come back."""
    first = built(sources)
    kept = tmp_path / "kept"
    kept.mkdir()
    store.rename(kept / gate_bytecode.STORE)
    own, cli = tmp_path / "test-state", tmp_path / "cli-home-state"
    with carried(kept, own), carried(kept, cli):
        monkeypatch.setenv("CLAUDE_PLUGIN_DATA", str(cli))
        again = built(sources)
        assert again.path == cli / gate_bytecode.STORE / first.path.name, "built afresh"
        assert again.keys == first.keys
    assert (kept / gate_bytecode.STORE / first.path.name).is_dir(), "not given back"


def test_two_runs_building_at_once_build_once(
    store: Path, sources: gate_bytecode.Sources, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two gate processes asking for the same folder at once: one builds, the other waits
    and reuses it, so neither replaces the folder the other's run reads."""
    builds: list[int] = []
    real_build = gate_bytecode.build_criteria

    def slow_build(*args: object, **kwargs: object) -> None:
        builds.append(threading.get_ident())
        time.sleep(0.3)
        real_build(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(gate_bytecode, "build_criteria", slow_build)
    found: list[gate_bytecode.Folder] = []
    threads = [threading.Thread(target=lambda: found.append(built(sources))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(builds) == 1
    assert found[0] == found[1] and found[0].untouched()


def test_half_builds_and_folders_unused_for_weeks_are_removed(
    store: Path, sources: gate_bytecode.Sources, tmp_path: Path
) -> None:
    """A build whose process died leaves a hidden folder; a folder no run asked for in 14
    days is stale: both go at the next build, a folder in use stays."""
    kept = built(sources)
    record = kept.path.with_name(kept.path.name + ".json")
    old = time.time() - 15 * 86400
    os.utime(record, (old, old))
    half = store / f".{gate_bytecode.CRITERIA}-0123.half"
    half.mkdir()
    other_module = tmp_path / "lib" / "other.py"
    other_module.write_text("OTHER = 2\n")
    fresh = built(gate_bytecode.Sources((str(other_module),), ()))
    assert not half.exists()
    assert not kept.path.exists() and not record.exists()
    assert fresh.untouched()
    assert built(gate_bytecode.Sources((str(other_module),), ())) == fresh


def test_a_changed_folder_is_removed_with_its_record(
    store: Path, sources: gate_bytecode.Sources, tmp_path: Path
) -> None:
    """What a test carries to the next, and what a user's state keeps: never a folder
    changed since its build (a file planted and left there), only folders as recorded."""
    changed = built(sources)
    (changed.path / "planted.pyc").write_bytes(b"forged")
    other_module = tmp_path / "lib" / "other.py"
    other_module.write_text("OTHER = 2\n")
    kept = built(gate_bytecode.Sources((str(other_module),), ()))
    gate_bytecode.remove_changed(store)
    assert not changed.path.exists()
    assert not changed.path.with_name(changed.path.name + ".json").exists()
    assert kept.untouched()


def test_the_probe_at_implement_reads_the_folder_the_last_gate_run_read(
    store: Path, tmp_path: Path
) -> None:
    """Before the pin, the probe reads the gate's own folder its interpreter's last run read,
    while it is exactly as built, and answers as it does compiling afresh; once the folder
    changed, or the pointer to it names anything else, it compiles afresh."""
    spec = tmp_path / "spec.md"
    spec.write_text("# Spec\n\n## AC-1: works\n\n```bash\ntrue\n```\n")
    config = tmp_path / "config"
    config.mkdir()
    assert gate_bytecode.latest(sys.executable) is None
    fresh = gate_runtime.probe(sys.executable, spec, config, 120)
    folder = gate_bytecode.ready(sys.executable, {"pytest": "digest"}, clean_env(sys.executable))
    assert gate_bytecode.latest(sys.executable) == folder
    assert gate_runtime.probe(sys.executable, spec, config, 120) == fresh
    assert folder.untouched(), "the probe wrote into the kept folder"
    next(folder.path.rglob("*.pyc")).write_bytes(b"forged")
    assert gate_bytecode.latest(sys.executable) is None
    assert gate_runtime.probe(sys.executable, spec, config, 120) == fresh


@pytest.mark.parametrize("pointer", ["../../elsewhere", "gate-" + "0" * 31, "", "\xff"])
def test_a_pointer_naming_anything_but_a_kept_folder_is_no_folder(
    store: Path, pointer: str
) -> None:
    store.mkdir(parents=True)
    gate_bytecode._pointer(sys.executable).write_text(pointer, errors="surrogateescape")
    assert gate_bytecode.latest(sys.executable) is None


def test_the_next_pin_of_a_project_starts_from_its_last_criteria_folder(
    store: Path, sources: gate_bytecode.Sources
) -> None:
    """The pin at /implement collects with the criteria's folder the project's last gate
    run read, and the flow's modules start from what it was built from, so the flow's first
    run reads that folder rather than compiling again; a project new to the gate collects
    with the last folder of any project, its modules its own."""
    folder = gate_bytecode.criteria_ready(sys.executable, sources, {}, "/work/project")
    assert gate_bytecode.latest_criteria(sys.executable, "/work/project") == (folder, sources)
    assert gate_bytecode.latest_criteria(sys.executable, "/work/other") is None
    assert gate_bytecode.latest_criteria(sys.executable) == (folder, sources)  # any project's
    assert gate_bytecode.latest_criteria("/usr/bin/python3", "/work/project") is None
    next(folder.path.rglob("*.pyc")).write_bytes(b"forged")
    assert gate_bytecode.latest_criteria(sys.executable, "/work/project") is None


@pytest.mark.parametrize(
    "pointer",
    [
        {"folder": "criteria-" + "0" * 32, "sources": {"plain": [], "rewritten": []}},
        {"folder": "../gate", "sources": {"plain": [], "rewritten": []}},
        {"sources": {"plain": [], "rewritten": []}},
        {"folder": "criteria-" + "0" * 32, "sources": {"plain": [1], "rewritten": []}},
        {"folder": "criteria-" + "0" * 32, "sources": {"plain": []}},
        [],
    ],
    ids=["another-folder", "a-path", "no-folder", "not-names", "a-kind-missing", "not-a-record"],
)
def test_a_criteria_pointer_that_does_not_name_its_own_build_is_none(
    store: Path, sources: gate_bytecode.Sources, pointer: object
) -> None:
    """The pointer pairs a folder with what it was built from: any other shape, or a folder
    named for other sources, is no folder."""
    gate_bytecode.criteria_ready(sys.executable, sources, {}, "/work/project")
    gate_bytecode._criteria_pointer(sys.executable, "/work/project").write_text(json.dumps(pointer))
    assert gate_bytecode.latest_criteria(sys.executable, "/work/project") is None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=10,
)


@given(st.dictionaries(st.sampled_from(["plain", "rewritten", "other"]), json_values) | json_values)
def test_any_json_reads_back_as_sources_or_none_and_never_raises(value: object) -> None:
    """What the flow and a pointer hold of the sources is read only in its exact shape."""
    sources = gate_bytecode.Sources.from_json(value)
    if sources is not None:
        assert isinstance(value, dict) and set(value) == {"plain", "rewritten"}
        assert all(isinstance(path, str) for path in (*sources.plain, *sources.rewritten))
        assert gate_bytecode.Sources.from_json(sources.to_json()) == sources


def test_a_kept_folder_replaced_by_a_link_is_never_read_through_it(
    store: Path, sources: gate_bytecode.Sources, tmp_path: Path
) -> None:
    """A link in place of a kept folder, to a copy with a record written for it through the
    link: the folder's keys are taken without following it, so it is built afresh."""
    first = built(sources)
    elsewhere = tmp_path / "elsewhere"
    first.path.rename(elsewhere)
    first.path.symlink_to(elsewhere)
    record = first.path.with_name(first.path.name + ".json")
    through_the_link = gate_bytecode.keys(elsewhere) | {".": gate_bytecode._key(str(first.path))}
    record.write_text(json.dumps(through_the_link))
    again = built(sources)
    assert not again.path.is_symlink() and again.untouched()
