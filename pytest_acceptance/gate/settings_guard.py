"""Settings changes during an /implement flow: refuse the ones that switch hooks off or add some.

Claude Code hot-reloads its settings files and sends a ConfigChange event (payload: `source`
= user_settings | project_settings | local_settings | policy_settings | skills, `file_path`)
before the change takes effect; a hook answering `{"decision": "block"}` keeps the old
settings (a policy_settings change cannot be blocked: the CLI ignores the answer). While a
flow is open, a change of a user, project or local settings file is refused when it sets
`disableAllHooks`, changes `enabledPlugins`, changes an `ACCEPTANCE_*`/`CLAUDE_*` variable
of its `env` section (the hooks' switches), makes its `hooks` section differ from the one in
force when the flow started, or changes anything else but the permission "allow" rules and
the few keys in FREE_KEYS. "In force when the flow started" is a snapshot the PreToolUse
guard takes at the flow's first guarded tool call (before the agent can have written
anything), kept in the plugin's own state ($CLAUDE_PLUGIN_DATA).

The guard reads a settings file only as far as it can read it exactly as the CLI does
(:func:`read_settings`): strict JSON in UTF-8, an object, no byte order mark, no duplicate
key, no NaN, no number a JavaScript double cannot hold, a regular file of at most
SETTINGS_LIMIT bytes. The CLI reads more leniently (it decodes a byte order mark and
UTF-16, replaces invalid UTF-8, lets the last of duplicate keys win) and obeys what it
finds: a file the guard cannot read so is never "nothing" to it. Changing one, or changing
one that was so when the flow started, is refused. An event the guard does not know how to
read (another source, no file named) is refused too.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from pathlib import Path

from pytest_acceptance.gate.flow_state import data_dir
from pytest_acceptance.gate.hook_io import PLUGIN_NAME
from pytest_acceptance.tree.hostile import read_regular, write_atomic

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hooks never import typing
    from typing import Any

GUARDED_SOURCES = {"user_settings", "project_settings", "local_settings"}
# Sources the guard lets through during a flow: skills are no settings, and the CLI never lets
# a hook block a change of the managed (policy) settings, which are the administrator's.
FREE_SOURCES = {"skills", "policy_settings"}
# Keys whose change cannot change what runs: the model, how answers look.
FREE_KEYS = frozenset(
    {"$schema", "model", "outputStyle", "alwaysThinkingEnabled", "spinnerTipsEnabled"}
)
# Settings that change how hooks and tools run, named in a refusal: `env` reaches every hook
# command (a PATH with a fake python3, a PYTHONPATH with a json.py that exits 0), the others
# run commands or loosen the sandbox and the permission rules.
RUNTIME_KEYS = (
    "env",
    "sandbox",
    "apiKeyHelper",
    "awsAuthRefresh",
    "awsCredentialExport",
    "otelHeadersHelper",
    "forceLoginMethod",
)
SNAPSHOTS = "settings-snapshots"
REFUSALS = "settings-refusals.jsonl"  # under the plugin's data folder: what was refused
# Settings' "env" reaches the hooks: the plugin's switches and Claude Code's own are frozen.
SWITCH_PREFIXES = ("ACCEPTANCE_", "CLAUDE_")
SETTINGS_LIMIT = 4 << 20  # bytes of one settings file the guard reads; a larger one is unread
# The largest integer a JavaScript number holds exactly: past it the CLI reads another value.
_EXACT_INTEGERS = 2**53
UNREADABLE = "unreadable"  # the key of the view of a file the guard cannot read as the CLI does


class Unreadable(ValueError):
    """The guard cannot read this settings file exactly as Claude Code does."""


def settings_files(project_dir: Path, home: Path) -> list[Path]:
    """The settings files an agent could change (managed settings are the admin's): the
    user's (in ``$CLAUDE_CONFIG_DIR`` when it is set, and in ``~/.claude``), the project's
    and the local ones."""
    config = os.environ.get("CLAUDE_CONFIG_DIR")
    folders = [Path(config)] if config else []
    folders.append(home / ".claude")
    return [
        *(folder / name for folder in folders for name in ("settings.json", "settings.local.json")),
        project_dir / ".claude" / "settings.json",
        project_dir / ".claude" / "settings.local.json",
    ]


def read_settings(path: Path) -> dict[str, Any] | None:
    """The settings object in `path` as the CLI reads it; None when there is no such file.
    Raises Unreadable for anything the guard cannot read exactly as the CLI would."""
    try:
        raw = read_regular(path, SETTINGS_LIMIT)
    except (FileNotFoundError, NotADirectoryError):  # absent, for the CLI too
        return None
    except OSError as error:  # a FIFO, a folder, past the limit, no permission
        raise Unreadable(
            f"not a readable regular file of at most {SETTINGS_LIMIT} bytes ({error})"
        ) from None
    if raw.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        raise Unreadable("it starts with a byte order mark (the CLI decodes it)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Unreadable(f"it is not UTF-8 ({error.reason} at byte {error.start})") from None
    try:
        data = json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
            parse_int=_exact_int,
            parse_float=_finite_float,
        )
    except ValueError as error:
        raise Unreadable(f"it is not strict JSON ({error})") from None
    if not isinstance(data, dict):
        raise Unreadable(f"it holds a JSON {type(data).__name__}, not an object")
    return data


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = sorted({key for key in keys if keys.count(key) > 1})
        raise Unreadable(f"the key {twice[0]!r} appears twice (the CLI takes the last)")
    return dict(pairs)


def _no_constant(name: str) -> Any:
    raise Unreadable(f"{name} is no JSON value")


def _exact_int(text: str) -> int:
    value = int(text)
    if abs(value) > _EXACT_INTEGERS:
        raise Unreadable(f"the number {text[:40]} is past what the CLI reads exactly")
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise Unreadable(f"the number {text[:40]} is past what the CLI reads exactly")
    return value


def hook_view(path: Path) -> dict[str, Any]:
    """What in one settings file decides what runs, for comparing it across the flow: {}
    when the file is absent; for a file the guard cannot read as the CLI does, why and the
    digest of its bytes (:data:`UNREADABLE`)."""
    try:
        data = read_settings(path)
    except Unreadable as error:
        return {UNREADABLE: str(error), "sha256": _digest(path)}
    if data is None:
        return {}
    view = {key: value for key, value in data.items() if key not in FREE_KEYS}
    permissions = view.get("permissions")
    if isinstance(permissions, dict):  # an "allow" rule is the user's own "don't ask again"
        kept = {key: value for key, value in permissions.items() if key != "allow"}
        if kept:
            view["permissions"] = kept
        else:
            del view["permissions"]
    return view


def _digest(path: Path) -> str:
    try:
        return hashlib.sha256(read_regular(path, SETTINGS_LIMIT)).hexdigest()
    except OSError as error:
        return f"unread: {type(error).__name__}"


def snapshot_path(flow_key: str) -> Path:
    return data_dir() / SNAPSHOTS / f"{flow_key}.json"


def ensure_snapshot(path: Path, files: list[Path]) -> None:
    """Record the hook view of every settings file, once per flow (first call wins)."""
    if path.exists():
        return
    views = {os.path.realpath(file): hook_view(file) for file in files}
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(views), mode=0o600)


def load_snapshot(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def refusal(source: object, file_path: object, snapshot: dict[str, Any]) -> str | None:
    """Why this settings change must not take effect during the flow; None to let it."""
    if source in FREE_SOURCES:
        return None
    if source not in GUARDED_SOURCES:
        return f"a change of {str(source)[:80]!r} configuration, which the guard cannot read"
    if not isinstance(file_path, str) or not file_path:
        return "a settings change that names no file, which the guard cannot read"
    before = snapshot.get(os.path.realpath(file_path))
    before = before if isinstance(before, dict) else {}
    after = hook_view(Path(file_path))
    if UNREADABLE in after or UNREADABLE in before:
        return _unreadable_change(file_path, before, after)
    return _hooks_change(file_path, before, after) or _other_change(file_path, before, after)


def _unreadable_change(file_path: str, before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """A file the guard could not read as the CLI does, at the flow's start or now: only
    the very same bytes go through (the CLI reporting a file that did not change)."""
    if after == before:
        return None
    if UNREADABLE in after:
        return f"{file_path} cannot be read exactly as Claude Code reads it: {after[UNREADABLE]}"
    return (
        f"{file_path} could not be read exactly as Claude Code reads it when the flow started "
        f"({before[UNREADABLE]}), so no change of it can be judged"
    )


def _hooks_change(file_path: str, before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """What in the change switches hooks off, or adds or alters some."""
    if after.get("disableAllHooks") != before.get("disableAllHooks"):
        if after.get("disableAllHooks") is True:
            return f"{file_path} sets disableAllHooks"
        return f"{file_path} changes disableAllHooks"
    plugins_before = before.get("enabledPlugins")
    plugins_after = after.get("enabledPlugins")
    if plugins_after != plugins_before:
        for key, enabled in (plugins_after if isinstance(plugins_after, dict) else {}).items():
            if key.split("@")[0] == PLUGIN_NAME and enabled is not True:
                return f"{file_path} disables the plugin {key}"
        return f"{file_path} changes enabledPlugins (a plugin's hooks added or removed)"
    if _switches(after) != _switches(before):
        return f"{file_path} changes ACCEPTANCE_*/CLAUDE_* variables in its env section"
    if (after.get("hooks") or None) != (before.get("hooks") or None):
        return f"{file_path} changes its hooks section (hooks added, removed or altered)"
    return None


def _switches(view: dict[str, Any]) -> dict[str, Any]:
    env = view.get("env")
    if not isinstance(env, dict):
        return {}
    return {key: value for key, value in env.items() if str(key).startswith(SWITCH_PREFIXES)}


def _other_change(file_path: str, before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """Anything else that changed but permission "allow" rules and FREE_KEYS."""
    changed = sorted(
        key
        for key in set(after) | set(before)
        if (key in after) != (key in before) or after.get(key) != before.get(key)
    )
    if not changed:
        return None
    runtime = [key for key in changed if key in RUNTIME_KEYS or key == "permissions"]
    how = "how hooks and tools run" if runtime else "settings stay as they were while a flow runs"
    return f"{file_path} changes {', '.join(changed)} ({how})"


def record_refusal(payload: dict[str, Any], why: str) -> None:
    """One JSON line per refused change, for the human reading the plugin's state later."""
    record = {
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "session_id": payload.get("session_id"),
        "source": payload.get("source"),
        "file_path": payload.get("file_path"),
        "refused_because": why,
    }
    try:
        data_dir().mkdir(parents=True, exist_ok=True)
        with (data_dir() / REFUSALS).open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")
    except OSError:
        pass  # the refusal itself stands; the record is for reading later
