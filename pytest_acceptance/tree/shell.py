"""Shell commands as the gate reads them: one reader for the guard, criterion integrity, the
witness, the gate's PATH pin and the vacuous-run check. Standard library only, Python 3.8.

- :func:`words`: the command's words, as a POSIX shell splits them (quotes removed),
  operators (``;``, ``&&``, ``|``, ``(``, ``>``, ...) as words of their own, a newline read as
  ``;``, heredoc bodies left out (:func:`split_heredocs` hands them over apart). Nothing is
  read as a comment: ``#`` starts one only at the start of a word in bash, which shlex
  cannot tell, and a reader that must see every write reads too much rather than too little.
- :func:`simple_commands`: the simple commands between the operators.
- :func:`unwrap`: what a simple command runs. Leading ``NAME=value`` assignments, then
  the wrappers that run another command (``timeout 5``, ``sudo -u root``, ``env -i A=1``,
  ``nice -n 5``, ``uv run``, ``npx``, ...), each with its options and their arities
  (``_WRAPPERS``), and the redirections, are taken off; what is left is the command that
  runs, with its own arguments untouched.
- :func:`runner`: the test runner a command starts (pytest, unittest, tox, nox, make, npm
  scripts, bun, jest, vitest, mocha, cargo, go), from what runs after unwrapping.
- :func:`nested_command`: the command string a shell, ``eval`` or ``flock -c`` runs.

A reader that meets a wrapper it does not know reads that wrapper as the command: each
caller says what that means for it (the guard then sees no write, the witness does not
watch the run and leaves it to its exit code). Adding a wrapper here teaches every reader.
"""

from __future__ import annotations

import os
import re
import shlex

from pytest_acceptance.tree.frozen import Frozen

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Iterator

# make reads the first of these it finds in its folder.
MAKEFILE_NAMES = ("GNUmakefile", "makefile", "Makefile")
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh"})
REDIRECTIONS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_INPUT_REDIRECTIONS = frozenset({"<", "<<", "<<<", "<&"})
# Reserved words and newlines that end a simple command like an operator does.
_SEPARATOR_WORDS = frozenset({"\n", "{", "}", "!"})
_OPERATOR_CHARACTERS = frozenset(";&|()")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_PYTHON = re.compile(r"^(?:python|pypy)[\d.]*$")
_PYTHON_OPTIONS_WITH_VALUE = frozenset({"-X", "-W", "-Q"})
_SHELL_OPTIONS_WITH_VALUE = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})


class UnreadableCommand(ValueError):
    """The command cannot be split into words (an unbalanced quote)."""


class Wrapper(Frozen):
    """A program that runs the command after it: the options that take a value (``-u``
    takes the next word unless attached, ``--user=x`` is one word), and the words it takes
    before the command (``timeout``'s duration)."""

    __slots__ = ("operands", "subcommand", "with_value")
    with_value: frozenset[str]
    operands: int
    # Subcommand that makes a launcher run a command (``uv run``): None for plain wrappers.
    subcommand: str | None

    def __init__(
        self,
        with_value: frozenset[str] = frozenset(),
        operands: int = 0,
        subcommand: str | None = None,
    ) -> None:
        self._init(with_value=with_value, operands=operands, subcommand=subcommand)


def _wrapper(with_value: str = "", operands: int = 0, subcommand: str | None = None) -> Wrapper:
    return Wrapper(frozenset(with_value.split()), operands, subcommand)


_WRAPPERS: dict[str, Wrapper] = {
    "builtin": _wrapper(),
    "command": _wrapper(),
    "exec": _wrapper("-a"),
    "nohup": _wrapper(),
    "time": _wrapper("-f --format -o --output"),
    "nice": _wrapper("-n --adjustment"),
    "timeout": _wrapper("-s --signal -k --kill-after", operands=1),
    "sudo": _wrapper(
        "-u --user -g --group -h --host -p --prompt -C --close-from -D --chdir -r --role "
        "-t --type -T --command-timeout -U --other-user -R --chroot"
    ),
    "doas": _wrapper("-u -C"),
    "env": _wrapper("-u --unset -C --chdir -P -S --split-string -a --argv0"),
    "stdbuf": _wrapper("-i --input -o --output -e --error"),
    "xargs": _wrapper(
        "-a --arg-file -d --delimiter -E -e -I -L -n --max-args -P --max-procs -s "
        "--max-chars --process-slot-var"
    ),
    "setsid": _wrapper(),
    "ionice": _wrapper("-c --class -n --classdata -p --pid -P --pgid -u --uid"),
    "chrt": _wrapper("-T --sched-runtime -P --sched-period -D --sched-deadline", operands=1),
    "taskset": _wrapper(operands=1),
    "unbuffer": _wrapper(),
    "flock": _wrapper("-w --wait --timeout -E --conflict-exit-code", operands=1),
    "xvfb-run": _wrapper(
        "-n --server-num -s --server-args -f --auth-file -e --error-file -p "
        "--xauth-protocol -w --wait"
    ),
    "catchsegv": _wrapper(),
    "npx": _wrapper("-p --package -c --call"),
    "bunx": _wrapper("-p --package"),
    "uv": _wrapper(
        "--with --with-editable --with-requirements -p --python --extra --group --only-group "
        "--no-group --package --directory --project --env-file --index --default-index "
        "--index-url --extra-index-url -f --find-links --config-file --cache-dir -C "
        "--config-setting --prerelease --resolution --exclude-newer --python-platform",
        subcommand="run",
    ),
    "poetry": _wrapper("-C --directory -P --project", subcommand="run"),
    "pipenv": _wrapper(subcommand="run"),
    "pdm": _wrapper("-p --project", subcommand="run"),
    "rye": _wrapper(subcommand="run"),
    "hatch": _wrapper("-e --env", subcommand="run"),
    "conda": _wrapper("-n --name -p --prefix --cwd", subcommand="run"),
    "pnpm": _wrapper("-C --dir --filter", subcommand="exec"),
}
# Wrappers that run the command in the same environment: a variable the gate sets for it
# (the witness's reporter) still reaches it. sudo and doas reset the environment, env may
# clear it, the launchers pick another interpreter.
TRANSPARENT = frozenset(
    {"command", "exec", "nohup", "time", "nice", "timeout", "stdbuf", "setsid", "ionice",
     "chrt", "taskset", "unbuffer", "flock", "xvfb-run", "catchsegv", "env"}
)  # fmt: skip


class Command(Frozen):
    """One simple command, read: what runs (``argv``) and what was taken off around it."""

    __slots__ = ("argv", "assignments", "redirections", "wrappers")
    assignments: tuple[str, ...]  # NAME=value before the program, and those env sets
    wrappers: tuple[tuple[str, ...], ...]  # each wrapper's words, outermost first
    argv: tuple[str, ...]  # what runs: the program and its own arguments (empty: nothing)
    redirections: tuple[tuple[str, str], ...]  # (operator, target)

    def __init__(
        self,
        assignments: tuple[str, ...],
        wrappers: tuple[tuple[str, ...], ...],
        argv: tuple[str, ...],
        redirections: tuple[tuple[str, str], ...],
    ) -> None:
        self._init(assignments=assignments, wrappers=wrappers, argv=argv, redirections=redirections)

    @property
    def program(self) -> str:
        return os.path.basename(self.argv[0]) if self.argv else ""


# --- words ----------------------------------------------------------------------------------


def split_heredocs(command: str) -> tuple[str, list[tuple[str, str]]]:
    """The command without its heredoc bodies, and each body with the program its line runs
    (after unwrapping): a body is data for ``cat``, but code for a shell or an interpreter."""
    kept: list[str] = []
    bodies: list[tuple[str, str]] = []
    terminator: str | None = None
    body: list[str] = []
    opener = ""
    for line in command.split("\n"):
        if terminator is not None:
            if line.strip() == terminator:
                bodies.append((opener, "\n".join(body)))
                terminator, body = None, []
            else:
                body.append(line)
            continue
        kept.append(line)
        match = _HEREDOC.search(line)
        if match:
            terminator = match.group(2)
            opener = _heredoc_opener(line[: match.start()])
    if terminator is not None:
        bodies.append((opener, "\n".join(body)))
    return "\n".join(kept), bodies


def _heredoc_opener(before: str) -> str:
    """The program of the last simple command before ``<<`` on its line."""
    try:
        found = list(simple_commands(_split(before)))
    except UnreadableCommand:
        found = [before.split()]
    return unwrap(found[-1]).program if found and found[-1] else ""


def words(command: str) -> list[str]:
    """The words of a command line (see the module's docstring); UnreadableCommand when
    quotes do not balance."""
    return _split(split_heredocs(command)[0])


def loose_words(command: str) -> list[str]:
    """:func:`words`, or the command split at whitespace when it cannot be read: for
    readers that pin what a command names, an unbalanced quote still leaves words to pin."""
    try:
        return words(command)
    except UnreadableCommand:
        return command.split()


def _split(text: str) -> list[str]:
    lexer = shlex.shlex(text.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError as error:
        raise UnreadableCommand(str(error)) from None


def is_separator(word: str) -> bool:
    """An operator that ends a simple command (``;``, ``&&``, ``|``, ``(``, ``}``, ...); a
    redirection (``>&``) is no separator."""
    if word in _SEPARATOR_WORDS:
        return True
    return bool(word) and set(word) <= _OPERATOR_CHARACTERS


def simple_commands(all_words: list[str]) -> Iterator[list[str]]:
    """The simple commands of a command line's words, as they stand (assignments, wrappers
    and redirections kept)."""
    current: list[str] = []
    for word in all_words:
        if is_separator(word):
            if current:
                yield current
            current = []
        else:
            current.append(word)
    if current:
        yield current


def commands(command: str) -> Iterator[Command]:
    """Each simple command of a command line, unwrapped (unreadable text: its words)."""
    for simple in simple_commands(loose_words(command)):
        yield unwrap(simple)


# --- what a simple command runs -------------------------------------------------------------


def unwrap(simple: list[str]) -> Command:
    """Assignments, wrappers and redirections taken off a simple command."""
    rest, redirections = _without_redirections(simple)
    assignments: list[str] = []
    wrappers: list[tuple[str, ...]] = []
    while True:
        while rest and _ASSIGNMENT.match(rest[0]):
            assignments.append(rest.pop(0))
        name = os.path.basename(rest[0]) if rest else ""
        wrapper = _WRAPPERS.get(name)
        if wrapper is None:
            break
        taken, inner, string = _wrapper_words(wrapper, rest)
        if taken is None:
            break  # a launcher without its subcommand (``uv sync``): it is the command
        wrappers.append(tuple(taken))
        if name == "env":
            while inner and _ASSIGNMENT.match(inner[0]):
                assignments.append(inner.pop(0))
        if string is not None:  # env -S 'a b': its words; flock f -c 'cmd': a shell's
            inner = (_loose_split(string) if name == "env" else ["sh", "-c", string]) + inner
        rest = inner
    return Command(tuple(assignments), tuple(wrappers), tuple(rest), tuple(redirections))


def _wrapper_words(
    wrapper: Wrapper, rest: list[str]
) -> tuple[list[str] | None, list[str], str | None]:
    """(the wrapper's words, the words of the command it runs, a command string it runs)."""
    index = 1
    string: str | None = None
    if wrapper.subcommand is not None:
        index = _skip_options(wrapper, rest, index)
        if index >= len(rest) or rest[index] != wrapper.subcommand:
            return None, rest, None
        index += 1
    index = _skip_options(wrapper, rest, index)
    for _ in range(wrapper.operands):
        if index < len(rest):
            index += 1
    flock_command = rest[index : index + 1] in (["-c"], ["--command"])
    if os.path.basename(rest[0]) == "flock" and flock_command and index + 1 < len(rest):
        return rest[:index], rest[index + 2 :], rest[index + 1]
    if os.path.basename(rest[0]) == "env":
        string = _env_split_string(rest[1:index])
    if index < len(rest) and rest[index] == "--":
        index += 1
    return rest[:index], rest[index:], string


def _skip_options(wrapper: Wrapper, rest: list[str], index: int) -> int:
    """The index of the first word after the options starting at ``index``."""
    while index < len(rest):
        word = rest[index]
        if word == "--" or not word.startswith("-") or word == "-":
            if word == "-" and os.path.basename(rest[0]) == "env":
                index += 1  # env's "-" is -i
                continue
            return index
        if word.startswith("--"):
            index += 2 if word in wrapper.with_value else 1
            continue
        index += 2 if _short_option_takes_next(wrapper, word) else 1
    return index


def _short_option_takes_next(wrapper: Wrapper, word: str) -> bool:
    """``-u root``: yes; ``-uroot`` or ``-nu`` followed by its value: the last letter
    decides; ``-5`` (nice's old form): no."""
    for position, letter in enumerate(word[1:], start=1):
        if "-" + letter in wrapper.with_value:
            return position == len(word) - 1  # the value is attached unless it ends the word
    return False


def _env_split_string(options: list[str]) -> str | None:
    for index, word in enumerate(options):
        if word in ("-S", "--split-string") and index + 1 < len(options):
            return options[index + 1]
        if word.startswith("--split-string="):
            return word.split("=", 1)[1]
        if word.startswith("-S") and len(word) > 2:
            return word[2:]
    return None


def _loose_split(text: str) -> list[str]:
    try:
        return _split(text)
    except UnreadableCommand:
        return text.split()


def _without_redirections(simple: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    kept: list[str] = []
    redirections: list[tuple[str, str]] = []
    index = 0
    while index < len(simple):
        word = simple[index]
        if word in REDIRECTIONS or word in _INPUT_REDIRECTIONS:
            if kept and kept[-1].isdigit():
                kept.pop()  # the descriptor of "2>"
            target = simple[index + 1] if index + 1 < len(simple) else ""
            redirections.append((word, target))
            index += 2
            continue
        kept.append(word)
        index += 1
    return kept, redirections


def nested_command(argv: tuple[str, ...]) -> str | None:
    """The command string a command hands to a shell: ``bash -c '...'``, ``sh -ec "..."``,
    ``bash -o pipefail -c ...``, and ``eval ...`` (its words joined by spaces, as eval joins
    them). A shell reads ``-c`` among its options only, before the first operand (a
    script, whose own ``-c`` is its argument)."""
    name = os.path.basename(argv[0]) if argv else ""
    if name == "eval":
        return " ".join(argv[1:])
    if name not in SHELLS:
        return None
    index = 1
    while index < len(argv):
        word = argv[index]
        if word in _SHELL_OPTIONS_WITH_VALUE:
            index += 2
            continue
        if word == "--" or not word.startswith(("-", "+")) or word in ("-", "+"):
            return None
        if not word.startswith("--") and "c" in word[1:]:
            return argv[index + 1] if index + 1 < len(argv) else None
        index += 1
    return None


# --- which test runner ----------------------------------------------------------------------

# What each runner is called here; ``runner`` answers one of these or None.
RUNNERS = frozenset(
    {"pytest", "unittest", "tox", "nox", "make", "npm", "bun", "jest", "vitest", "mocha",
     "cargo", "go"}
)  # fmt: skip
_JS_PACKAGE_MANAGERS = frozenset({"npm", "pnpm", "yarn"})
_JS_RUNNERS = frozenset({"jest", "vitest", "mocha"})
_PYTHON_MODULE_RUNNERS = {"pytest": "pytest", "unittest": "unittest", "tox": "tox", "nox": "nox"}


def runner(command: Command) -> str | None:
    """The test runner a simple command starts, from what runs after unwrapping."""
    argv = command.argv
    program = command.program
    if program in ("pytest", "py.test"):
        return "pytest"
    if program in ("tox", "nox") or program in _JS_RUNNERS:
        return program
    if program in ("make", "gmake"):
        return "make"
    if _PYTHON.match(program):
        return _PYTHON_MODULE_RUNNERS.get(python_module(argv[1:]) or "")
    if program == "coverage" and argv[1:2] == ("run",):
        return _PYTHON_MODULE_RUNNERS.get(python_module(argv[2:]) or "")
    subcommands = [word for word in argv[1:] if not word.startswith("-")]
    first = subcommands[0] if subcommands else ""
    if program == "hatch" and first == "test":
        return "pytest"  # hatch test runs pytest
    if program == "go" and first == "test":
        return "go"
    if program == "cargo" and _cargo_tests(subcommands):
        return "cargo"
    if program in _JS_PACKAGE_MANAGERS or program == "bun":
        # `yarn jest`, `pnpm vitest`, `npm exec mocha`: the package manager runs the binary
        named = subcommands[1] if first in ("exec", "x", "dlx") and subcommands[1:] else first
        if named in _JS_RUNNERS:
            return named
    if program == "bun":
        return "bun" if first == "test" else "npm" if first == "run" else None
    if program in _JS_PACKAGE_MANAGERS and npm_script(argv) is not None:
        return "npm"
    return None


def _cargo_tests(subcommands: list[str]) -> bool:
    if subcommands and subcommands[0].startswith("+"):
        subcommands = subcommands[1:]  # cargo +nightly test
    return subcommands[:1] == ["test"] or subcommands[:2] == ["nextest", "run"]


def python_module(arguments: tuple[str, ...]) -> str | None:
    """The module of ``python [options] -m MODULE``; None for a script, ``-c`` or stdin."""
    index = 0
    while index < len(arguments) and arguments[index].startswith("-"):
        word = arguments[index]
        if word.startswith("-m"):
            module = word[2:] or (arguments[index + 1] if index + 1 < len(arguments) else "")
            return module or None
        if word in _PYTHON_OPTIONS_WITH_VALUE:
            index += 2
            continue
        if word.startswith("-c") or (not word.startswith("--") and "c" in word[1:]):
            return None
        index += 1
    return None


def npm_script(argv: tuple[str, ...]) -> str | None:
    """The package.json script ``npm test`` / ``npm run X`` / ``yarn X`` runs."""
    rest = [word for word in argv[1:] if not word.startswith("-")]
    if not rest:
        return None
    if rest[0] in ("run", "run-script", "rum", "urn") and len(rest) > 1:
        return rest[1]
    if rest[0] in ("test", "t", "tst"):
        return "test"
    return None


def runners(command: str, depth: int = 0) -> list[str]:
    """Every test runner a command line starts, in order, inside ``bash -c`` strings, eval
    and a shell's heredoc too."""
    found: list[str] = []
    for simple in commands(command):
        name = runner(simple)
        if name is not None:
            found.append(name)
        nested = nested_command(simple.argv)
        if nested is not None and depth < 3:
            found += runners(nested, depth + 1)
    if depth < 3:
        for opener, body in split_heredocs(command)[1]:
            if opener in SHELLS:
                found += runners(body, depth + 1)
    return list(dict.fromkeys(found))
