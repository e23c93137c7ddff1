"""The run guard passes a stop signal to its own children only, found without reading /proc.

Each case runs in a fresh Python process (a signal sent to "our children" from the test
process would reach whatever else the test worker started): it starts a real bash child
with a real grandchild, calls the guard, and reports which of them the signal reached and
which /proc files it read (a Python audit hook watches ``open`` and ``os.scandir``).
End to end (a real SIGTERM to a real xdist run) is tests/test_run_faults.py.
"""

from __future__ import annotations

import json
import subprocess
import sys

_SCRIPT = """
import json, os, re, signal, subprocess, sys
from pytest_acceptance.run import guard

read = []
def audit(event, args):
    path = args[0] if args else None
    if event == "os.scandir" and str(path) == "/proc":
        read.append("/proc")
    elif event == "open" and isinstance(path, str) and re.match(r"/proc/\\d+/stat$", path):
        read.append(path)
if sys.argv[1] == "no-children-list":
    guard._kernel_lists_children = lambda: False
child = subprocess.Popen(
    ["bash", "-c", "sleep 300 & echo $!; wait"], stdout=subprocess.PIPE, text=True
)
grandchild = int(child.stdout.readline())
sys.addaudithook(audit)
guard._stop_children(signal.SIGTERM)
code = child.wait(timeout=60)
try:
    os.kill(grandchild, 0)
    alive = True
except ProcessLookupError:
    alive = False
if alive:
    os.kill(grandchild, signal.SIGKILL)
print(json.dumps({"child": code, "grandchild_alive": alive, "read": read}))
"""


def stop_children(mode: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, mode], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_stop_reaches_each_child_from_the_kernels_list_without_scanning_proc() -> None:
    """The child dies of the SIGTERM; the grandchild is not ours to signal (its parent, an
    xdist worker, kills its commands); not one /proc/<pid>/stat is read."""
    report = stop_children("kernel")
    assert report == {"child": -15, "grandchild_alive": True, "read": []}


def test_without_the_kernels_children_list_the_proc_scan_finds_the_same_children() -> None:
    """A kernel built without CONFIG_PROC_CHILDREN cannot be booted here: the probe for
    the list is replaced to say it is missing, and the fallback scan of /proc signals
    exactly the same process."""
    report = stop_children("no-children-list")
    assert report["child"] == -15
    assert report["grandchild_alive"] is True
    assert "/proc" in report["read"]
