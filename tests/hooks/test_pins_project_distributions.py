"""The entry points the project's distribution metadata declares (pins/project_distributions.py),
in process: what counts as declaring code, and what the check before the run reports."""

from __future__ import annotations

import os
from pathlib import Path

from pinning import collected, take_pins

from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import project_distributions

PLUGIN = "[pytest11]\nlocalcheck = localcheck\n"
COMMAND = "[console_scripts]\napp = app:main\n"


def write(repo: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)


def test_what_declares_more_than_commands_is_pinned_wherever_it_stands(tmp_path: Path) -> None:
    """A plugin at the root or deep inside, a group a plugin reads, a file that cannot be
    read (a FIFO) and a metadata folder reached through a link count; commands only, and
    the metadata of an environment inside the project (pinned as one), do not."""
    repo = tmp_path / "repo"
    write(
        repo,
        {
            "a-1.0.dist-info/entry_points.txt": PLUGIN,
            "tests/deep/b.egg-info/entry_points.txt": "[pytest_randomly.random_seeder]\nb = b\n",
            "app.egg-info/entry_points.txt": COMMAND,
            ".venv/lib/c-1.0.dist-info/entry_points.txt": PLUGIN,
            ".hidden/e-1.0.dist-info/entry_points.txt": PLUGIN,
        },
    )
    (repo / "d.egg-info").mkdir()
    os.mkfifo(repo / "d.egg-info" / "entry_points.txt")
    (tmp_path / "outside" / "f-1.0.dist-info").mkdir(parents=True)
    (tmp_path / "outside" / "f-1.0.dist-info" / "entry_points.txt").write_text(PLUGIN)
    (repo / "f-1.0.dist-info").symlink_to(tmp_path / "outside" / "f-1.0.dist-info")
    declared = dict(project_distributions.declaring(str(repo)))
    assert sorted(declared) == [
        ".hidden/e-1.0.dist-info/entry_points.txt",
        "a-1.0.dist-info/entry_points.txt",
        "d.egg-info/entry_points.txt",
        "f-1.0.dist-info/entry_points.txt",
        "tests/deep/b.egg-info/entry_points.txt",
    ]
    assert declared["d.egg-info/entry_points.txt"] == "unreadable"


def test_a_change_since_implement_is_reported_before_and_after_the_run(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write(repo, {"a-1.0.dist-info/entry_points.txt": PLUGIN, "app.egg-info/entry_points.txt": ""})
    folder = tmp_path / "flow"
    folder.mkdir()
    flow = Flow(folder, {"repo": str(repo), "collection": collected()})
    take_pins(flow)
    pin = project_distributions.PIN
    assert pin.before_run(flow) == pin.after_run(flow) == []
    write(repo, {"app.egg-info/entry_points.txt": COMMAND})  # honest: a command only
    assert pin.before_run(flow) == []
    write(repo, {"app.egg-info/entry_points.txt": COMMAND + PLUGIN, "b.dist-info/x": ""})
    (repo / "a-1.0.dist-info" / "entry_points.txt").unlink()
    found = pin.before_run(flow)
    assert [line.split(": ")[0].rsplit(" ", 2)[1:] for line in found] == [
        ["is", "gone"],
        ["is", "new"],
    ]
    assert found == pin.after_run(flow)
