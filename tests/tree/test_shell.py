"""The one reader of shell commands (tree/shell.py), and the readers that use it agreeing.

The guard (gate/protect.py), criterion integrity (integrity/commands.py), the witness
(gate/witness.py), the gate's PATH pin (gate/gate_env.py) and the vacuous-run check
(run/no_tests.py) each read a command under every wrapper of the table the same way: the
guard sees the write, integrity follows the pytest, the PATH pin looks both programs up,
the vacuous-run check knows the runner, and the witness watches exactly the runs under a
wrapper that passes the environment on.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_acceptance.gate import gate_env, protect, witness
from pytest_acceptance.integrity import commands as integrity
from pytest_acceptance.run.no_tests import vacuous_reason
from pytest_acceptance.tree import shell

# (wrapper words, whether the command under it sees the caller's environment)
WRAPPERS = [
    ("timeout 5", True),
    ("timeout -k 3 -s KILL 10", True),
    ("nice -n 5", True),
    ("nice -5", True),
    ("nohup", True),
    ("stdbuf -oL -eL", True),
    ("time -p", True),
    ("command", True),
    ("exec", True),
    ("setsid -f", True),
    ("ionice -c 3", True),
    ("chrt -f 10", True),
    ("taskset -c 0", True),
    ("unbuffer", True),
    ("flock -w 5 /tmp/lock", True),
    ("xvfb-run -a -s '-screen 0 1x1x8'", True),
    ("env CI=1", True),
    ("timeout 5 nice -n 5", True),
    ("doas", False),
    ("doas -u root", False),
    ("sudo", False),
    ("sudo -u root -E", False),
    ("env -i CI=1", False),
    ("uv run --with pytest-xdist", False),
    ("poetry run", False),
    ("xargs -n 1", False),
]
IDS = [wrapper for wrapper, _ in WRAPPERS]


@dataclass(frozen=True)
class _Run:
    exit_code: int | None
    stdout: str = ""
    stderr: str = ""


@pytest.mark.parametrize(("wrapper", "passes_environment"), WRAPPERS, ids=IDS)
def test_every_reader_sees_the_command_under_a_wrapper(
    wrapper: str, passes_environment: bool
) -> None:
    write = f"{wrapper} rm spec.md"
    words = shell.words(write)
    assert ("spec.md", "rm") in list(protect.written_targets(words))
    run = f"{wrapper} pytest -q tests"
    assert list(integrity.simple_commands(integrity.shell_words(run))) == [
        ["pytest", "-q", "tests"]
    ]
    assert integrity.runner_of(integrity.shell_words(run)) == "pytest"
    assert vacuous_reason(run, _Run(5)) is not None
    assert "pytest" in gate_env.named_tools([run])
    assert shell.words(wrapper)[0] in gate_env.named_tools([run])
    assert witness.pytest_command(run) is passes_environment


@pytest.mark.parametrize(("wrapper", "passes_environment"), WRAPPERS, ids=IDS)
def test_honest_a_read_under_a_wrapper_is_no_write(wrapper: str, passes_environment: bool) -> None:
    assert list(protect.written_targets(shell.words(f"{wrapper} cat spec.md"))) == []


UNWRAPPED = [
    ("A=1 B=2 pytest", ("A=1", "B=2"), ("pytest",)),
    ("env -u HOME -- A=1 pytest -x", ("A=1",), ("pytest", "-x")),
    ("env -S 'rm spec.md'", (), ("rm", "spec.md")),
    ("flock /tmp/l -c 'rm spec.md'", (), ("sh", "-c", "rm spec.md")),
    ("sudo -iu root", (), ()),
    ("timeout 5 pytest > log 2>&1", (), ("pytest",)),
    ("uv sync", (), ("uv", "sync")),  # a launcher without its subcommand is the command
    ("npx --yes jest --ci", (), ("jest", "--ci")),
    ("pnpm --filter app exec vitest", (), ("vitest",)),
    ("conda run -n env python -m pytest", (), ("python", "-m", "pytest")),
]


@pytest.mark.parametrize(("command", "assignments", "argv"), UNWRAPPED)
def test_what_a_simple_command_runs(
    command: str, assignments: tuple[str, ...], argv: tuple[str, ...]
) -> None:
    read = shell.unwrap(shell.words(command))
    assert (read.assignments, read.argv) == (assignments, argv)


RUNNERS = [
    ("pytest -q", ["pytest"]),
    ("py.test tests", ["pytest"]),
    ("python3.12 -X dev -m pytest", ["pytest"]),
    ("python -mpytest", ["pytest"]),
    ("coverage run -m pytest", ["pytest"]),
    ("hatch test", ["pytest"]),
    ("uv run pytest", ["pytest"]),
    ("python -m unittest discover", ["unittest"]),
    ("tox -e py", ["tox"]),
    ("nox -s tests", ["nox"]),
    ("make -C sub test", ["make"]),
    ("npm test", ["npm"]),
    ("npm run test:unit", ["npm"]),
    ("yarn test", ["npm"]),
    ("pnpm t", ["npm"]),
    ("bun test", ["bun"]),
    ("bun run test", ["npm"]),
    ("npx jest", ["jest"]),
    ("./node_modules/.bin/mocha", ["mocha"]),
    ("npx vitest run", ["vitest"]),
    ("yarn jest --ci", ["jest"]),
    ("pnpm vitest run", ["vitest"]),
    ("npm exec mocha", ["mocha"]),
    ("cargo test", ["cargo"]),
    ("cargo +nightly nextest run", ["cargo"]),
    ("go test ./...", ["go"]),
    ("cd sub && timeout 60 pytest; go test ./...", ["pytest", "go"]),
    ("bash -c 'cd x && pytest'", ["pytest"]),
    ("bash <<'EOF'\npytest -q\nEOF", ["pytest"]),
    ("echo pytest", []),
    ("npm install", []),
    ("python script.py", []),
    ("python -c 'import pytest'", []),
    ("bash scripts/check.sh -c 'pytest'", []),  # the script's own -c: not the shell's
]


@pytest.mark.parametrize(("command", "runners"), RUNNERS)
def test_which_test_runners_a_command_starts(command: str, runners: list[str]) -> None:
    assert shell.runners(command) == runners


def test_the_makefile_names_are_make_s_own_order(tmp_path: Path) -> None:
    assert shell.MAKEFILE_NAMES == ("GNUmakefile", "makefile", "Makefile")


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=120))
def test_any_text_is_read_or_unreadable_never_a_crash(command: str) -> None:
    with contextlib.suppress(shell.UnreadableCommand):
        shell.words(command)
    for read in shell.commands(command):
        shell.runner(read)
        shell.nested_command(read.argv)
    shell.runners(command)
    shell.split_heredocs(command)


_SHELLISH = st.text(alphabet=st.sampled_from(list("ab >|&;()'\"\\$`\n<-=.*/#~ctimoeurnsxk5")))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.sampled_from([*IDS, "rm", "pytest", "-c", "-S", "--", ";"]), max_size=8), _SHELLISH
)
def test_any_wrapper_chain_is_unwrapped_without_a_crash(chain: list[str], tail: str) -> None:
    for read in shell.commands(" ".join(chain) + " " + tail):
        assert isinstance(read.argv, tuple)
