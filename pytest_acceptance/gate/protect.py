"""Protected paths during an /implement flow: which writes a tool call makes that it must not.

While a flow is open, nothing the agent runs may write the pinned spec, the plugin's own
files or state, the evidence folder `.acceptance/`, the sign-offs file
(`acceptance-signoffs.yaml`), Claude Code's settings and the session transcripts, or the git
internals that decide what the working-tree fingerprint sees.

Write/Edit/MultiEdit/NotebookEdit name their file: that check is exact (paths resolved
against the cwd, `~`, `..` and symlinks). A Bash command is read with a HEURISTIC: it is split
into simple commands and unwrapped (`timeout 5`, `sudo -u x`, `env A=1`, ...) by the one
shell reader, tree/shell.py; redirections (`>`, `>>`, `&>`), known writers (tee, cp, mv,
rm, ln, touch, truncate, dd, sed -i, perl -i, install, rsync, chmod, ...), inline code of
python/perl/ruby/node that both names a protected path and writes, and the git commands that
change what git reports (update-index --assume-unchanged/--skip-worktree, config
core.fsmonitor/core.excludesFile/..., sparse-checkout, GIT_INDEX_FILE=...) are checked. An
agent that hides a write (base64 | sh, a script file it wrote first, an alias) gets past it:
Claude Code's sandbox (filesystem write restrictions) and managed settings are the layers
that stop such an agent; the gate's own verification is what never trusts these files.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pytest_acceptance.gate.flow_state import SIGNOFF_FILE
from pytest_acceptance.tree import shell
from pytest_acceptance.tree.frozen import Frozen
from pytest_acceptance.tree.shell import UnreadableCommand as UnreadableCommand

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hooks never import typing
    from collections.abc import Iterable, Iterator
    from typing import Any

FILE_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path"}
NOTEBOOK_TOOL = ("NotebookEdit", "notebook_path")
_WRITERS_ALL_ARGS = {
    "rm",
    "rmdir",
    "unlink",
    "shred",
    "touch",
    "truncate",
    "mv",
    "ln",
    "chmod",
    "chown",
    "chgrp",
    "chattr",
    "mkfifo",
    "mknod",
    "mkdir",
}
_WRITERS_LAST_ARG = {"cp", "install", "rsync", "scp"}
_INPLACE_EDITORS = {"sed", "perl", "ruby"}
# Patterns, compiled by re (and kept in its cache) when first used: the guard imports this
# module before every tool call, and most calls need one or none of them.
_INTERPRETERS = r"^(python[0-9.]*|pypy[0-9.]*|perl|ruby|node|deno|bun|php)$"
_CODE_WRITES = (
    r"(?i)open\s*\([^)]*[\"'][rb]?[wax+][bt+]?[\"']|write|unlink|remove|rmtree|rename|replace|truncate|symlink|copy|move|"
    r"chmod|system|popen|subprocess|spawn|exec|>|unlinkSync|writeFileSync|fs\."
)
_GIT_CONFIG_KEYS = (
    r"(?i)^(core\.(fsmonitor|excludesfile|untrackedcache|worktree|sparsecheckout|ignorestat|"
    r"hookspath|attributesfile)|include\.path|includeif\..*)$"
)
_GIT_ENV = r"^(GIT_INDEX_FILE|GIT_DIR|GIT_WORK_TREE|GIT_CONFIG\w*|GIT_OBJECT_DIRECTORY)="


class Protected(Frozen):
    """What must not be written while a flow is open (absolute, resolved paths)."""

    __slots__ = ("spec", "trees")
    spec: Path | None
    trees: tuple[tuple[Path, str], ...]  # (directory, why) protected with all they hold

    def __init__(self, spec: Path | None, trees: tuple[tuple[Path, str], ...]) -> None:
        self._init(spec=spec, trees=trees)

    def why(self, path: Path) -> str | None:
        """Why `path` is protected, or None. `path` is absolute and normalised."""
        real = Path(os.path.realpath(path))
        for candidate in {path, real}:
            reason = self._why(candidate)
            if reason is not None:
                return reason
        return None

    def _why(self, path: Path) -> str | None:
        if self.spec is not None and path == self.spec:
            return "it is the spec of this /implement flow: the contract does not change mid-flow"
        named = _by_name(path)
        if named is not None:
            return named
        for tree, why in self.trees:
            if path == tree or tree in path.parents:
                return why
        return None


def _by_name(path: Path) -> str | None:
    """Protected wherever they are: evidence folders, Claude Code settings, git internals."""
    parts = path.parts
    if ".acceptance" in parts:
        return (
            "`.acceptance/` holds the verification evidence: only `pytest --acceptance` writes it"
        )
    if parts and parts[-1] == SIGNOFF_FILE:
        return "it holds people's sign-offs of manual criteria: only a person adds one"
    for index, part in enumerate(parts[:-1]):
        if part == ".claude" and (
            parts[index + 1].startswith("settings") or parts[index + 1] in ("hooks", "plugins")
        ):
            return "Claude Code's settings and hooks are the human's, not the agent's"
    if ".git" in parts:
        return (
            "git's internals (index, config, info/exclude, hooks) decide what the verification "
            "fingerprint sees; use ordinary git commands (add, commit) instead"
        )
    return None


def protected_set(
    spec: Path | None,
    plugin_root: Path,
    plugin_data: str | None,
    transcript_path: str | None,
    home: Path,
    cwd: Path | None = None,
) -> Protected:
    trees: list[tuple[Path, str]] = [
        (plugin_root, PLUGIN_WHY),
        (Path("/etc/claude-code"), "Claude Code's managed settings are the administrator's"),
        (home / ".gitconfig", "git's global configuration decides what git reports"),
        (home / ".config" / "git", "git's global configuration decides what git reports"),
        (Path("/etc/gitconfig"), "git's system configuration decides what git reports"),
    ]
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR")
    if config_dir:  # the user's settings, plugins and transcripts, where the CLI reads them
        trees.append((Path(config_dir), "Claude Code's settings and hooks are the human's"))
    if plugin_data:
        trees.append((Path(plugin_data), "it is the plugin's own state (pinned flows, records)"))
    if transcript_path:
        # The transcripts' folder, unless the work itself happens inside it (then the file).
        folder = Path(transcript_path).parent
        inside = cwd is not None and (folder == cwd or folder in cwd.parents)
        trees.append(
            (Path(transcript_path) if inside else folder, "it holds the session transcript")
        )
    return protecting(spec, trees)


PLUGIN_WHY = "it is the pytest-acceptance plugin itself"


def protecting(spec: str | Path | None, trees: Iterable[tuple[Path, str]]) -> Protected:
    """The spec and the trees protected, each as named and as resolved (a tree reached
    through a symlink is protected by either name)."""
    named = list(trees)
    resolved = [(Path(os.path.realpath(tree)), why) for tree, why in named]
    return Protected(
        spec=Path(os.path.realpath(spec)) if spec else None,
        trees=tuple(dict.fromkeys([*named, *resolved])),
    )


# --- what a tool call writes ---------------------------------------------------------------


class Violation(Frozen):
    __slots__ = ("how", "path", "target", "why")
    target: str  # as the tool call wrote it
    path: Path
    why: str
    how: str  # e.g. "Write", "redirection >", "rm", "git update-index --assume-unchanged"

    def __init__(self, target: str, path: Path, why: str, how: str) -> None:
        self._init(target=target, path=path, why=why, how=how)


def violations(
    tool_name: str, tool_input: dict[str, Any], cwd: Path, protected: Protected
) -> list[Violation]:
    if tool_name in FILE_TOOLS or tool_name == NOTEBOOK_TOOL[0]:
        key = FILE_TOOLS.get(tool_name, NOTEBOOK_TOOL[1])
        target = tool_input.get(key)
        if not isinstance(target, str) or not target:
            return []
        return _check(protected, target, cwd, tool_name)
    if tool_name == "Bash":
        command = tool_input.get("command")
        return bash_violations(command, cwd, protected) if isinstance(command, str) else []
    return []


def leaves_sandbox(tool_name: str, tool_input: object) -> bool:
    """A Bash call asking to run outside Claude Code's sandbox (its escape hatch, there
    unless the settings set ``allowUnsandboxedCommands`` to false). Any value but an
    explicit false asks: the CLI reads the field loosely."""
    if tool_name != "Bash" or not isinstance(tool_input, dict):
        return False
    asked = tool_input.get("dangerouslyDisableSandbox", False)
    return asked is not False and asked is not None


def _check(protected: Protected, target: str, cwd: Path, how: str) -> list[Violation]:
    found = []
    for path in resolve(target, cwd):
        why = protected.why(path)
        if why is not None:
            found.append(Violation(target, path, why, how))
    return found


def named_violations(
    how: str, targets: Iterable[object], cwd: Path, protected: Protected
) -> list[Violation]:
    """The protected paths among the files a tool call names (a file tool's path, a
    patch's targets); what is not a non-empty string names nothing."""
    return [
        violation
        for target in targets
        if isinstance(target, str) and target
        for violation in _check(protected, target, cwd, how)
    ]


# The files an apply_patch call writes (Codex and Copilot CLI use the same patch format).
_PATCH_TARGET = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+?)\s*$", re.M)


def patch_violations(patch: str, cwd: Path, protected: Protected) -> list[Violation]:
    return named_violations("apply_patch", _PATCH_TARGET.findall(patch), cwd, protected)


def resolve(target: str, cwd: Path) -> list[Path]:
    """The absolute paths a word names: `~` and $VARS expanded, relative to cwd, `..`
    collapsed, globs expanded (the word itself when nothing matches)."""
    expanded = os.path.expandvars(os.path.expanduser(target))
    joined = os.path.normpath(os.path.join(str(cwd), expanded))
    if any(char in joined for char in "*?["):
        import glob  # here: most words name no pattern

        matches = glob.glob(joined, recursive=True)
        if matches:
            return [Path(os.path.normpath(match)) for match in matches]
    return [Path(joined)]


def bash_violations(
    command: str, cwd: Path, protected: Protected, depth: int = 0
) -> list[Violation]:
    found: list[Violation] = []
    here = cwd
    for words in shell.simple_commands(shell.words(command)):
        read = shell.unwrap(words)
        for target, how in written_targets(words):
            found.extend(_check(protected, target, here, how))
        nested = shell.nested_command(read.argv)
        if nested is not None and depth < 3:
            found.extend(bash_violations(nested, here, protected, depth + 1))
        here = _after_cd(read.argv, here)
    for opener, body in shell.split_heredocs(command)[1]:
        if opener in shell.SHELLS and depth < 3:
            found.extend(bash_violations(body, here, protected, depth + 1))
        elif re.match(_INTERPRETERS, opener):
            targets = _code_targets(opener, body)
            found.extend(v for t, how in targets for v in _check(protected, t, here, how))
    return found


def simple_commands(command: str) -> Iterator[list[str]]:
    """The simple commands of a shell line, as word lists (separators and heredoc bodies
    dropped). Raises UnreadableCommand when it cannot be split into words."""
    return shell.simple_commands(shell.words(command))


def written_targets(words: list[str]) -> Iterator[tuple[str, str]]:
    """(word, how) for each path this simple command writes, as far as the heuristic sees."""
    read = shell.unwrap(list(words))
    for operator, target in read.redirections:
        if operator in shell.REDIRECTIONS and target and not target.startswith("&"):
            yield target, f"redirection {operator}"
    for assignment in read.assignments:
        if re.match(_GIT_ENV, assignment):
            yield ".git/index", f"git environment {assignment.split('=', 1)[0]}"
    if not read.argv:
        return
    name, args = read.program, list(read.argv[1:])
    operands = [arg for arg in args if not arg.startswith("-")]
    if name in ("export", "declare", "typeset", "local"):
        for arg in operands:
            if re.match(_GIT_ENV, arg):
                yield ".git/index", f"{name} {arg.split('=', 1)[0]}"
    elif name in _WRITERS_ALL_ARGS:
        yield from ((arg, name) for arg in operands)
    elif name in _WRITERS_LAST_ARG:
        yield from _copy_targets(name, args, operands)
    elif name == "tee":
        yield from ((arg, "tee") for arg in operands)
    elif name == "dd":
        yield from ((arg[3:], "dd of=") for arg in args if arg.startswith("of="))
    elif name in _INPLACE_EDITORS and any(_is_inplace_flag(arg) for arg in args):
        yield from ((arg, f"{name} -i") for arg in operands)
    elif name == "find" and any(arg in ("-delete", "-exec", "-execdir") for arg in args):
        yield from ((arg, "find") for arg in args[:1] + operands[:1])
    elif re.match(_INTERPRETERS, name):
        yield from _inline_code_targets(name, args)
    elif name == "git":
        yield from _git_targets(args)


def _copy_targets(name: str, args: list[str], operands: list[str]) -> Iterator[tuple[str, str]]:
    for index, arg in enumerate(args):
        if arg in ("-t", "--target-directory") and index + 1 < len(args):
            yield args[index + 1], name
            return
        if arg.startswith("--target-directory="):
            yield arg.split("=", 1)[1], name
            return
    if len(operands) >= 2:
        yield operands[-1], name


def _is_inplace_flag(arg: str) -> bool:
    return arg.startswith("--in-place") or bool(re.match(r"^-[A-Za-z]*i", arg))


def _inline_code_targets(name: str, args: list[str]) -> Iterator[tuple[str, str]]:
    """Inline code (-c/-e) that writes: its path-like string literals are targets."""
    for index, arg in enumerate(args[:-1]):
        if arg == "-m":
            return  # a module run: what follows are the module's arguments
        if re.match(r"^-[A-Za-z]*[ce]$", arg) or arg == "--eval":
            yield from _code_targets(name, args[index + 1])
            return


def _code_targets(name: str, code: str) -> list[tuple[str, str]]:
    if not re.search(_CODE_WRITES, code):
        return []
    how = f"{name} inline code"
    literals = re.findall(r"[\"']([^\"'\s]+)[\"']", code)
    named = re.findall(r"[\w.~/$-]*\.(?:acceptance|claude|git)\b[\w./-]*", code)
    return [(word, how) for word in dict.fromkeys([*literals, *named])]


def _git_targets(args: list[str]) -> Iterator[tuple[str, str]]:
    """git commands that change what git reports (and so the fingerprint), as `.git` writes."""
    rest = list(args)
    while rest and rest[0].startswith("-"):  # global options: -C dir, -c k=v, --git-dir=...
        option = rest.pop(0)
        if option in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") and rest:
            rest.pop(0)
    if not rest:
        return
    sub, tail = rest[0], rest[1:]
    flags = {arg.split("=", 1)[0] for arg in tail}
    if sub == "update-index" and flags & _UPDATE_INDEX_FLAGS:
        yield ".git/index", "git update-index " + " ".join(sorted(flags & _UPDATE_INDEX_FLAGS))
    elif sub == "config":
        yield from _git_config_targets(tail)
    elif sub == "sparse-checkout":
        yield ".git/info/sparse-checkout", "git sparse-checkout"
    elif sub in ("checkout", "restore", "rm", "mv"):
        yield from ((arg, f"git {sub}") for arg in tail if not arg.startswith("-"))


_UPDATE_INDEX_FLAGS = {
    "--assume-unchanged",
    "--skip-worktree",
    "--index-info",
    "--cacheinfo",
    "--fsmonitor-valid",
    "--untracked-cache",
    "--force-untracked-cache",
}
_GIT_CONFIG_READS = {"--get", "--get-all", "--get-regexp", "-l", "--list", "--show-origin"}


def _git_config_targets(tail: list[str]) -> Iterator[tuple[str, str]]:
    if set(tail) & _GIT_CONFIG_READS or tail[:1] in (["get"], ["list"]):
        return
    for arg in tail:
        if re.match(_GIT_CONFIG_KEYS, arg) or re.match(_GIT_CONFIG_KEYS, arg.split("=", 1)[0]):
            yield ".git/config", f"git config {arg}"
            return


def _after_cd(words: tuple[str, ...], here: Path) -> Path:
    if len(words) >= 2 and words[0] in ("cd", "pushd"):
        return resolve(words[1], here)[0]
    return here


def describe(found: Iterable[Violation]) -> str:
    lines = []
    for violation in found:
        shown = (
            violation.target
            if violation.target == str(violation.path)
            else (f"{violation.target} ({violation.path})")
        )
        lines.append(f"{violation.how} writes {shown}: {violation.why}")
    return "; ".join(dict.fromkeys(lines))
