"""Criterion integrity: the checks a bash criterion runs are part of the criterion.

Standard library only and Python 3.8 compatible (the hooks import it under ``python3 -S``).

:func:`snapshot` is taken when a flow starts: for every file a criterion's command names —
directly (``pytest tests/test_x.py::test_a``, ``bash scripts/check.sh``, ``go test ./pkg/...``)
or through a named directory (``pytest tests/`` pins every test file under it) — it records
the sha256 and an inventory per test: the number of assertions, how many of them are
constants (``assert True``, ``expect(true).toBe(true)``), and the skip/xfail markers.
:func:`weakened` compares the tree at /done with that pin and returns one :class:`Finding`
per weakening: a pinned file or test deleted, fewer real assertions, an assertion replaced by
a constant, a new skip/xfail/only marker, fewer parametrized cases, a test script changed, a
file that no longer parses. Adding tests or assertions never reports. A file whose hash is
unchanged is not parsed again.

One module per role: :mod:`.core` (snapshot, weakened), :mod:`.findings` (the pin's format,
:class:`Finding`, comparing inventories), :mod:`.limits`, :mod:`.files` (safe reading,
naming test files), :mod:`.python`, :mod:`.javascript`, :mod:`.go` and :mod:`.inventory`
(what a file holds), :mod:`.commands` and :mod:`.make` (what a command runs), :mod:`.named`
(which files a command names), :mod:`.pins` and :mod:`.config` (what is pinned by hash),
:mod:`.data` (data files beside the tests), :mod:`.import_time` (code a module runs on
import).

What it can read, and how:

- Python (``ast``): ``test*`` functions and methods of ``Test*`` classes (and of unittest
  ``TestCase`` subclasses); ``assert`` statements, ``assert*``/``fail``/``raises``/``warns``
  calls, and calls to the module's own helpers that assert; ``pytest.mark.skip``/``skipif``/
  ``xfail`` (on the function, its class or ``pytestmark``), ``unittest.skip*``,
  ``expectedFailure``, ``pytest.skip()``/``xfail()``/``importorskip()``, ``self.skipTest()``,
  ``raise SkipTest``, ``__test__ = False``; literal ``parametrize`` case lists; skips in
  fixtures and helpers, and hooks that can skip, deselect or rewrite results
  (``pytest_collection_modifyitems``, ``pytest_runtest_makereport``, ...); module-level code
  that runs on import beyond definitions (see :mod:`.import_time`).
- JavaScript/TypeScript (patterns, comments stripped): ``it``/``test`` calls and their
  ``.skip``/``.todo``/``.only``/``.failing`` forms, ``xit``/``xtest``, ``describe.skip``/
  ``xdescribe``/``describe.only``/``fit``; ``expect(`` and ``assert(`` calls between one test and
  the next, constant when their argument is a literal.
- Go (patterns): ``func TestX(t *testing.T)``; ``t.Error*``/``t.Fatal*``/``t.Fail*``,
  ``assert.``/``require.`` calls; ``t.Skip*``.
- ``package.json``: the scripts an ``npm``/``yarn``/``pnpm`` command runs and its ``jest``/
  ``mocha`` settings (dependencies and other scripts may change).

What a command runs is followed (three levels deep) and pinned as if the criterion ran it:
npm scripts, make recipes (with the Makefile's simple variables and ``make VAR=value``
expanded), and command strings handed to a shell (``bash -c '...'``, ``sh -ec "..."``,
``eval`` of literal words).

Pinned by content hash instead (they have no notion of "adding a test": any change, a
deletion, and a new file where the runner would read one, reports):

- What the pytest a command starts reads or loads: in every directory from the root down to
  each path it names (or to where it runs), ``pytest.ini``, ``.pytest.ini`` and the pytest
  sections of ``pyproject.toml`` (``[tool.pytest]``, ``[tool.pytest.ini_options]``, with the
  root and ``[tool]`` tables), ``tox.ini`` (``[pytest]``) and ``setup.cfg`` (``[tool:pytest]``);
  ``conftest.py`` there and anywhere under a named directory; the non-test modules of the
  test folders (``tests/helpers.py``, ``tests/__init__.py``); and the project modules named
  by ``pytest_plugins`` in a pinned conftest, by ``-p`` in the pinned ``addopts`` or in the
  command; a ``-c``/``--config-file`` file; a new ``__init__.py`` beside or above a pinned
  test (it runs when pytest imports the test).
- Data files beside the pinned tests (any runner): every file of their test folders, or of
  the ``__snapshots__``/``testdata``/``fixtures``/... folders beside them, but tests, Python
  modules and bytecode — expected outputs, fixtures, snapshots, golden files. Files the
  ``.gitignore`` files exclude are generated outputs and are not pinned; new data files are
  never reported (new tests bring their own). A changed snapshot is a human decision.
- What a command runs: a script given to an interpreter (``bash``/``sh``/``python``/``node``
  ...) or run by its path (``./scripts/check.sh``; a built binary is the work, not a check),
  ``python -m tools.check``, the Makefile ``make`` reads (the root's, ``-C dir``, ``-f file``:
  a changed recipe of a named target is reported as such, any other change as "changed").
- ``jest.config.*``, ``vitest.config.*``, ``vite.config.*``, ``vitest.workspace.*`` and
  ``.mocharc.*`` at the root and where a JavaScript runner starts.

New Python modules in a pinned test's folder, and new test files beside a pinned test, are
reported when they run code on import (monkeypatching, ``sys.modules``, ``builtins``,
``os.environ``, writing files, ...) or hold a function that writes into a module they import
(never undone, so the pinned tests that run after it see it); new tests and helpers that
only define things, or patch through ``monkeypatch``, are not. The same code added to a
pinned test file reports too.

What it cannot see: semantics (an assertion rewritten to compare the wrong thing, a fixture
that makes a test trivial without skipping it, implementation code that detects the test
run), tests that a runner discovers through its configuration alone (pytest ``testpaths``,
jest ``testMatch``: commands that name no path pin every conventionally named test file
under the root instead), make variables it cannot resolve alone (set inside conditionals,
by the shell, by ``define``, per target, by make functions or the environment: the recipe
keeps the reference; the Makefile itself is pinned by hash), ``eval`` of a variable, code a
command runs through ``python -c`` or another interpreter's inline code, import-time code
or writes into shared state reached through aliases or modules outside the test folders
(the reading is syntactic),
data files git ignores and data the tests read from outside the test folders, Python modules
outside the test folders that tests import, configuration pytest finds above the project, Go
and other runners' configuration, languages other than these, and JavaScript or Go that does
not parse (they are read by patterns; Python that does not parse is reported).
``pyproject.toml`` is read by lines, not parsed (the hooks have no TOML parser on Python
3.8): a table with a quoted or escaped name counts as pytest's, and when a multi-line string
outside pytest's tables could hide a table header, the whole file counts.

Bounded: at most ``MAX_FILES`` files and ``MAX_FILE_BYTES`` per file are inventoried (data
files count too). Past the file cap the snapshot records the problem and :func:`weakened`
reports it (a human decides); a file over the byte cap is pinned by hash alone and any change
to it reports.
"""

from __future__ import annotations

from .core import snapshot, weakened
from .findings import (
    FILE_LEVEL,
    HASHED,
    IMPORTED_WITH,
    MAKE_READS,
    PYTEST_LOADS,
    PYTEST_READS,
    RUNNER_READS,
    RUNS,
    SCHEMA,
    TESTS_IMPORT,
    TESTS_READ,
    VERSION,
    WAY_OUT,
    Finding,
    compare_inventories,
)
from .inventory import inventory_of
from .limits import MAX_FILE_BYTES, MAX_FILES

__all__ = [
    "FILE_LEVEL",
    "HASHED",
    "IMPORTED_WITH",
    "MAKE_READS",
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "PYTEST_LOADS",
    "PYTEST_READS",
    "RUNNER_READS",
    "RUNS",
    "SCHEMA",
    "TESTS_IMPORT",
    "TESTS_READ",
    "VERSION",
    "WAY_OUT",
    "Finding",
    "compare_inventories",
    "inventory_of",
    "snapshot",
    "weakened",
]
