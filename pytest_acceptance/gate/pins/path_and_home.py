"""The run's PATH, the tools the criteria name on it, and the files of HOME it gets.

At /implement each tool a criterion names (gate_env.named_tools) is resolved on the PATH of
that moment to its real file, whose sha256 is pinned, and linked from the pin's ``tools/``
folder, which comes first on the run's PATH after the interpreter's; the HOME files the run
gets are copied (gate_env.py). Before each run every pinned tool is hashed again, and its
link read again: a changed one refuses the run.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass

from pytest_acceptance.gate import gate_env
from pytest_acceptance.gate.flow_state import Flow, write_bytes
from pytest_acceptance.gate.pins import base
from pytest_acceptance.tree.hostile import file_digest, read_regular_or_none

NAME = "path-and-home"
COVERS = "the gate's PATH, the tools the criteria name and the HOME files the run gets"


@dataclass(frozen=True)
class Tool:
    name: str  # as the criteria name it
    target: str  # its real file at /implement
    sha256: str


@dataclass(frozen=True)
class PathAndHome:
    path: str
    home: str
    tools: tuple[Tool, ...]
    toolchains: tuple[tuple[str, str], ...]

    def to_json(self) -> dict[str, object]:
        return {
            "path": self.path,
            "home": self.home,
            "tools": {
                tool.name: {"target": tool.target, "sha256": tool.sha256} for tool in self.tools
            },
            "toolchains": dict(self.toolchains),
        }

    @classmethod
    def from_json(cls, value: object) -> PathAndHome | None:
        record = base.fields(value, frozenset({"path", "home", "tools", "toolchains"}))
        if record is None or not isinstance(record["tools"], dict):
            return None
        path, home = record["path"], record["home"]
        toolchains = base.text_pairs(record["toolchains"])
        tools = [
            (name, base.fields(tool, frozenset({"target", "sha256"})))
            for name, tool in sorted(record["tools"].items())
        ]
        if not (isinstance(path, str) and isinstance(home, str)) or toolchains is None:
            return None
        if not all(tool is not None and base.text_pairs(tool) for _, tool in tools):
            return None
        return cls(
            path=path,
            home=home,
            tools=tuple(Tool(name, tool["target"], tool["sha256"]) for name, tool in tools if tool),
            toolchains=toolchains,
        )


def read(flow: Flow) -> PathAndHome:
    return PIN.record(flow)


class PathAndHomePin(base.RecordPin[PathAndHome]):
    """Its links and copies live in the plugin's state, read-only to the run as a whole;
    what the links name (each tool's file) and the toolchains' folders are read-only to
    the run too, and all the run's world holds of them."""

    def take(self, flow: Flow, taking: base.Taking) -> None:
        try:
            base.write(flow, NAME, _take(flow, flow.python).to_json())
        except OSError as error:
            raise base.PinError(f"{type(error).__name__}: {error}") from None

    def before_run(self, flow: Flow) -> list[str]:
        """Pinned tools whose file changed (or whose link in the pin's folder did)."""
        found = []
        for tool in read(flow).tools:
            try:
                linked: str | None = os.readlink(gate_env.tools_folder(flow) / tool.name)
            except OSError:
                linked = None
            if linked != tool.target or file_digest(tool.target) != tool.sha256:
                found.append(
                    f"{tool.target} (the tool `{tool.name}` the criteria run, pinned at /implement)"
                )
        return found

    def read_only(self, flow: Flow) -> list[str]:
        pinned = read(flow)
        return [tool.target for tool in pinned.tools] + [f for _, f in pinned.toolchains]


PIN = PathAndHomePin(NAME, COVERS, PathAndHome.from_json)


def _take(flow: Flow, python: str) -> PathAndHome:
    path = os.environ.get("PATH", os.defpath)
    home = os.path.expanduser("~")
    interpreter_folder = os.path.realpath(os.path.dirname(python)) if python else ""
    search = f"{os.path.dirname(python)}{os.pathsep}{path}" if python else path
    tools: list[Tool] = []
    folder = gate_env.tools_folder(flow)
    folder.mkdir(mode=0o700, exist_ok=True)
    for name in gate_env.named_tools(flow.bash_commands()):
        found = shutil.which(name, path=search)
        if found is None:
            continue
        if os.path.realpath(os.path.dirname(found)) == interpreter_folder:
            continue  # the interpreter's folder is pinned entry by entry (interpreter_path)
        target = os.path.realpath(found)
        digest = file_digest(target)
        if digest is None:
            continue
        tools.append(Tool(name, target, digest))
        link = folder / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
    for relative in gate_env.HOME_PINNED:
        data = read_regular_or_none(os.path.join(home, relative), gate_env.HOME_FILE_LIMIT)
        if data is not None:
            write_bytes(gate_env.home_copy(flow) / relative, data)
    toolchains = tuple(
        (variable, os.environ.get(variable) or os.path.join(home, default))
        for variable, default in gate_env.TOOLCHAIN_HOMES
        if os.path.isdir(os.environ.get(variable) or os.path.join(home, default))
    )
    return PathAndHome(path, home, tuple(tools), toolchains)
