"""The entry points the project's distribution metadata declares (pins/project_distributions.py),
in process: what counts as declaring code, and what the check before the run reports."""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

from hook_transcripts import write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pinning import collected, take_pins

from pytest_acceptance.gate.flow_state import Flow
from pytest_acceptance.gate.pins import project_distributions

PLUGIN = "[pytest11]\nlocalcheck = localcheck\n"
COMMAND = "[console_scripts]\napp = app:main\n"


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


# Line breaks str.splitlines knows (importlib.metadata reads entry_points.txt with it), and
# whitespace around a line that it strips.
BREAKS = st.sampled_from(["\n", "\r", "\r\n", "\f", "\v", "\x1c", "\x85", "\u2028"])
SPACE = st.sampled_from(["", " ", "\t", "  "])
GROUPS = st.sampled_from(["console_scripts", "gui_scripts", "pytest11", "my.group", "x"])


@st.composite
def entry_points_texts(draw: st.DrawFn) -> str:
    text = ""
    for group in draw(st.lists(GROUPS, min_size=1, max_size=4)):
        text += f"{draw(SPACE)}[{group}]{draw(SPACE)}{draw(BREAKS)}"
        text += f"{draw(SPACE)}name = module:attr{draw(SPACE)}{draw(BREAKS)}"
    return text


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=60)
@given(entry_points_texts())
def test_a_group_importlib_reads_is_one_the_pin_reads(tmp_path: Path, text: str) -> None:
    """Whatever group of entry points importlib.metadata finds in the file, other than
    commands, the pin counts: the file is read as importlib reads it, never as it looks."""
    folder = tmp_path / "x-1.0.dist-info"
    folder.mkdir(exist_ok=True)
    (folder / "entry_points.txt").write_bytes(text.encode("utf-8"))
    groups = {entry.group for entry in metadata.PathDistribution(folder).entry_points}
    declared = bool(project_distributions.declaring(str(tmp_path)))
    assert declared >= bool(groups - project_distributions.COMMANDS), (text, groups)
