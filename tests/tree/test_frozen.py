"""tree/frozen.Frozen: the records on the hooks' path hold like frozen dataclasses.

Once built, no field can be assigned or deleted; two records are equal only when they are
of the same class with the same fields, and hash alike then; a copy or a pickle keeps
every field. In process, on the real records of the guard's path.
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_acceptance.gate.flow_records import Ended, ToolNote
from pytest_acceptance.gate.protect import Violation
from pytest_acceptance.gate.transcript_pin import Tail, TranscriptRead
from pytest_acceptance.tree.shell import Command

NUMBERS = st.floats(allow_nan=False) | st.integers()
TEXT = st.text(max_size=10)


@given(at=NUMBERS, why=TEXT)
def test_a_record_cannot_change(at: float, why: str) -> None:
    record = Ended(at, why)
    with pytest.raises(AttributeError, match="frozen"):
        record.why = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="frozen"):
        del record.at
    with pytest.raises(AttributeError):
        record.extra = 1  # type: ignore[attr-defined]  # no field of its own
    assert (record.at, record.why) == (at, why)


@given(at=NUMBERS, why=TEXT, other=TEXT)
def test_equal_only_with_its_own_class_and_fields(at: float, why: str, other: str) -> None:
    record = Ended(at, why)
    assert record == Ended(at, why) and hash(record) == hash(Ended(at, why))
    assert (record == Ended(at, other)) is (why == other)
    assert record != ToolNote(None, at)
    assert record != (at, why)  # never a tuple of its fields


@given(end=st.integers(min_value=1), digest=TEXT, path=TEXT)
def test_copies_keep_every_field(end: int, digest: str, path: str) -> None:
    read = TranscriptRead(path, 0, digest, (Tail(end, digest),))
    for copied in (copy.copy(read), copy.deepcopy(read), pickle.loads(pickle.dumps(read))):
        assert copied == read and copied.tails == (Tail(end, digest),)
        with pytest.raises(AttributeError, match="frozen"):
            copied.length = 1  # type: ignore[misc]


def test_a_record_takes_exactly_its_fields() -> None:
    with pytest.raises(TypeError, match="exactly its fields"):
        Ended._init(Ended.__new__(Ended), at=1.0)


def test_records_read_as_before() -> None:
    """The fields by name, and a repr that names them, as a dataclass's does."""
    command = Command(("A=1",), (), ("ls",), ())
    assert command.program == "ls" and command.as_dict()["argv"] == ("ls",)
    violation = Violation("spec.md", Path("/r/spec.md"), "protected", "Write")
    assert "target='spec.md'" in repr(violation) and repr(violation).startswith("Violation(")
