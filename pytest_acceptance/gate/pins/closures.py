"""An environment pinned file by file (tree/closure.py): the record both environment pins
keep, how one is taken, and how it is checked. Not a pin itself: gate_environment.py and
criteria_environments.py are.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any, Mapping

from pytest_acceptance.gate import environment_digests, interpreter_paths
from pytest_acceptance.gate.flow_state import Flow, write_json
from pytest_acceptance.gate.gate_process import GateError, probe_report
from pytest_acceptance.gate.hook_io import PLUGIN_ROOT
from pytest_acceptance.gate.pins import base
from pytest_acceptance.tree import closure

BUDGET = 120.0  # seconds to pin, or to check, one environment's files
_FIELDS = frozenset({"python", "roots", "files", "left_out", "packages", "file"})


@dataclass(frozen=True)
class Environment:
    """One environment, pinned: where its files are, and the file of the flow's folder that
    holds their digests."""

    python: str
    roots: tuple[str, ...]  # folders walked file by file
    files: tuple[str, ...]  # single files, present or not
    left_out: tuple[str, ...]  # folders inside the roots not on its path
    packages: tuple[str, ...]  # roots that are package folders its run imports (the gate's)
    file: str  # the digests, in the flow's folder

    @property
    def places(self) -> closure.Places:
        return closure.Places(list(self.roots), list(self.files), list(self.left_out))

    def to_json(self) -> dict[str, object]:
        return {
            "python": self.python,
            "roots": list(self.roots),
            "files": list(self.files),
            "left_out": list(self.left_out),
            "packages": list(self.packages),
            "file": self.file,
        }

    @classmethod
    def from_json(cls, value: object) -> Environment | None:
        record = base.fields(value, _FIELDS)
        if record is None or not isinstance(record["python"], str):
            return None
        if not isinstance(record["file"], str) or os.sep in record["file"]:
            return None
        lists = [base.strings(record[key]) for key in ("roots", "files", "left_out", "packages")]
        roots, files, left_out, packages = lists
        if roots is None or files is None or left_out is None or packages is None:
            return None
        return cls(record["python"], roots, files, left_out, packages, record["file"])

    def digests(self, flow: Flow) -> closure.Pin:
        """Its files' digests as pinned; PinError when they cannot be read exactly."""
        try:
            pinned = json.loads((flow.folder / self.file).read_bytes())
        except (OSError, ValueError) as error:
            raise base.PinError(f"the pin of {self.python}'s environment: {error}") from None
        if not isinstance(pinned, dict) or not all(
            base.strings(value) is not None for value in pinned.values()
        ):
            raise base.PinError(f"the pin of {self.python}'s environment is damaged")
        return pinned

    def package_digests(self, flow: Flow) -> dict[str, str]:
        """The pinned digests of the files in its package folders (path: digest): what the
        gate's own run imports besides the standard library."""
        inside = tuple(os.path.join(folder, "") for folder in self.packages)
        return {
            path: entry[-1]
            for path, entry in self.digests(flow).items()
            if path in self.packages or path.startswith(inside)
        }

    def changes(self, flow: Flow) -> list[str]:
        """Files added, removed or changed since /implement."""
        pinned = self.digests(flow)
        try:
            return closure.changes(pinned, self.places, time.monotonic() + BUDGET)
        except closure.ClosureError as error:
            raise base.PinError(f"cannot check the interpreter's environment ({error})") from None

    def paths(self) -> list[str]:
        """What the run must see read-only: its folders and files."""
        return [*self.roots, *self.files]


def take(flow: Flow, python: str, wanted: Mapping[str, Any], file: str) -> Environment:
    """Pin the environment `wanted` names (the probe's closure report) into `file`."""
    places = _places(flow.repo, wanted)
    known = environment_digests.known(python)
    try:
        pinned = closure.pin(places, time.monotonic() + BUDGET, known)
    except closure.ClosureError as error:
        raise base.PinError(str(error)) from None
    environment_digests.keep(python, pinned)
    write_json(flow.folder / file, pinned)
    packages = tuple(_strings(wanted, "gate_roots"))
    left_out = tuple(sorted(places.left_out))
    return Environment(python, tuple(places.roots), tuple(places.files), left_out, packages, file)


def _places(repo: str, wanted: Mapping[str, Any]) -> closure.Places:
    roots = closure.outside(_strings(wanted, "roots"), repo)
    roots += [root for root in _strings(wanted, "gate_roots") if root not in roots]
    # git's own configuration steers every git command a criterion runs (core.worktree, ...)
    git_config = [os.path.join(repo, ".git", "config")]
    files = _strings(wanted, "files") + closure.config_above(repo) + git_config
    return closure.Places(roots, files, _strings(wanted, "left_out"))


def _strings(wanted: Mapping[str, Any], key: str) -> list[str]:
    return [str(item) for item in wanted.get(key) or [] if isinstance(item, str)]


# A criterion's interpreter need not have pytest_acceptance installed: the probe's closure()
# is read from the plugin's own copy (standard library only, like the rest of gate_probe),
# by identity: whatever of that name the interpreter loaded at start-up is dropped, a finder
# ahead of every other (an editable install's included) finds the package in the plugin's
# root only, and an answer from any module of the package found elsewhere is no answer.
_CLOSURE_PROBE = """\
import importlib.machinery, json, os, sys
root = os.path.realpath({root!r})
for name in [n for n in sys.modules if n.split(".")[0] == "pytest_acceptance"]:
    del sys.modules[name]
class PluginCopy:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.split(".")[0] != "pytest_acceptance":
            return None
        where = [root] if "." not in name else list(path or [])
        return importlib.machinery.PathFinder.find_spec(name, where)
sys.meta_path.insert(0, PluginCopy)
from pytest_acceptance.gate_probe import closure
found = [m for n, m in sys.modules.items() if n.split(".")[0] == "pytest_acceptance"]
paths = [os.path.realpath(getattr(m, "__file__", None) or "") for m in found]
if all(path.startswith(root + os.sep) for path in paths):
    print(json.dumps(closure()))
"""


def probe(python: str) -> dict[str, Any]:
    """What `python`'s closure is made of, asked of the plugin's own copy of the probe."""
    code = _CLOSURE_PROBE.format(root=str(PLUGIN_ROOT))
    with interpreter_paths.private_pycache() as pycache:
        try:
            return probe_report(python, ["-c", code], pycache, BUDGET)
        except GateError as error:
            raise base.PinError(str(error)) from None
