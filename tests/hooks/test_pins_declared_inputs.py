"""The inputs outside the project that its configuration declares (``acceptance_reads``),
pinned in-process: taken by real path and content at /implement, refused there when missing
or inside the project, any change since named before and after the gate's run, and shown
to the run read-only (pins/declared_inputs.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pinning import take_pins

from pytest_acceptance.gate import apart, isolation
from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pinned_collection import Collection
from pytest_acceptance.gate.pins import base, declared_inputs, table


def pinned(tmp_path: Path, reads: str) -> Flow:
    """A flow whose pinned configuration says ``acceptance_reads = <reads>``, pins taken."""
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    folder = tmp_path / "flow"
    folder.mkdir()
    settings = (("acceptance_reads", reads),)
    collection = Collection((), None, settings, sys.executable, sys.prefix).to_json()
    flow = Flow(folder, {"repo": str(repo), "collection": collection})
    take_pins(flow)
    return flow


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A folder beside the project: a configuration file and a helper package."""
    folder = tmp_path / "common"
    (folder / "lib").mkdir(parents=True)
    (folder / "config.txt").write_text("2\n")
    (folder / "lib" / "helper.py").write_text("OK = True\n")
    return folder


def test_declared_inputs_unchanged_are_shown_read_only_and_find_nothing(
    tmp_path: Path, shared: Path
) -> None:
    """Control: a folder by a path relative to the configuration's folder, a file by an
    absolute one; nothing changed, both among the paths the run sees read-only."""
    flow = pinned(tmp_path, f"\n../common/lib\n{shared / 'config.txt'}\n")
    assert table.before_run(flow) == [] and table.after_run(flow) == []
    shown = table.read_only(flow)
    assert str(shared / "lib") in shown and str(shared / "config.txt") in shown


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda shared: (shared / "config.txt").write_text("1\n"), "config.txt: changed"),
        (lambda shared: (shared / "lib" / "helper.py").unlink(), "helper.py: removed"),
        (lambda shared: (shared / "lib" / ".hidden.py").write_text(""), ".hidden.py: added"),
        (lambda shared: (shared / "lib" / "new").mkdir(), "new: added"),
    ],
    ids=["changed", "removed", "a hidden file added", "a folder added"],
)
def test_any_change_since_implement_is_named_before_and_after_the_run(
    tmp_path: Path, shared: Path, change: object, named: str
) -> None:
    flow = pinned(tmp_path, f"{shared}")
    change(shared)  # type: ignore[operator]
    for check in (table.before_run, table.after_run):
        found = check(flow)
        assert any(named in line and "acceptance_reads" in line for line in found), found


def test_a_declared_link_pointed_elsewhere_is_a_change(tmp_path: Path, shared: Path) -> None:
    """The path names another place than at /implement: refused, whatever that holds."""
    (tmp_path / "other").mkdir()
    link = tmp_path / "current"
    link.symlink_to(shared)
    flow = pinned(tmp_path, str(link))
    assert table.before_run(flow) == []
    link.unlink()
    link.symlink_to(tmp_path / "other")
    assert any("now names" in line for line in table.before_run(flow))


def test_home_is_expanded(tmp_path: Path, shared: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    flow = pinned(tmp_path, "~/common/config.txt")
    assert str(shared / "config.txt") in declared_inputs.read(flow).inputs[0].path


@pytest.mark.parametrize(
    ("reads", "why"),
    [
        ("../nowhere.txt", "does not exist"),
        ("src", "is inside the project"),
        (".", "is inside the project"),
        ("..", "holds the project"),
    ],
)
def test_a_declaration_the_pin_cannot_hold_refuses_every_run(
    tmp_path: Path, reads: str, why: str
) -> None:
    """Taken at /implement as the pin's failure, with the reason: the gate then refuses."""
    (tmp_path / "repo" / "src").mkdir(parents=True)
    flow = pinned(tmp_path, reads)
    with pytest.raises(base.PinError, match=f"could not be pinned at /implement: .*{why}"):
        table.before_run(flow)


def test_a_configuration_without_the_setting_declares_nothing(tmp_path: Path) -> None:
    flow = pinned(tmp_path, "")
    assert declared_inputs.read(flow).inputs == ()


@given(
    value=st.text(alphabet=st.sampled_from(["a", "/", ".", "~", " ", "\n", "\t", "é"]), max_size=30)
)
def test_any_setting_reads_as_absolute_normal_paths_each_once(value: str) -> None:
    found = declared_inputs.parse(value, "/project/root")
    assert all(os.path.isabs(path) and path == os.path.normpath(path) for path in found)
    assert len(set(found)) == len(found)
    assert len(found) <= len([line for line in value.splitlines() if line.strip()])


@pytest.mark.skipif(
    isolation.current().name != isolation.FULL,
    reason="the world is built by bubblewrap only (isolation level full)",
)
def test_the_world_shows_a_declared_input_and_hides_an_undeclared_one(
    tmp_path: Path, shared: Path
) -> None:
    """Under bubblewrap the run reads what is declared, read-only, and finds nothing at a
    path beside it that no pin shows (the criterion's own "no such file")."""
    (tmp_path / "undeclared.txt").write_text("2\n")
    flow = pinned(tmp_path, str(shared / "config.txt"))
    code = (
        "import sys\n"
        "print(open(sys.argv[1]).read().strip())\n"
        "try:\n"
        "    open(sys.argv[1], 'a')\n"
        "except OSError as error:\n"
        "    print(error.errno)\n"
        "try:\n"
        "    open(sys.argv[2])\n"
        "except FileNotFoundError:\n"
        "    print('hidden')\n"
    )
    words = [sys.executable, "-I", "-c", code, str(shared / "config.txt")]
    words.append(str(tmp_path / "undeclared.txt"))
    done = subprocess.run(
        apart.command(words, flow), capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.split() == ["2", "30", "hidden"], done.stderr
