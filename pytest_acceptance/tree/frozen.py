"""Frozen records for the code the hooks import before every tool call.

A frozen dataclass costs that code the ``dataclasses`` module (which imports ``inspect``,
``ast``, ``dis`` and ``tokenize``) and the generation of each class's methods when its module
is imported: together about half of the guard's start-up. A record of the hooks' path
subclasses :class:`Frozen` instead: it names its fields in ``__slots__``, declares their
types, and sets them once in a typed ``__init__`` through ``_init``; after that, assigning
or deleting any field raises, as a frozen dataclass does. Equality and hashing take every
field (only records of the same class are equal); copies keep the fields as they are.

Parsing stays the reader's job: each record's ``from_json`` (or its module's reader) takes
only its exact shape, exactly as it did as a dataclass.

This is the package's lowest layer, so every part of it may import it. Standard library
only, Python 3.8, and nothing beyond the builtins on import.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hooks never import typing for this
    from typing import Any


class Frozen:
    """A record whose fields, once set by its ``__init__``, cannot change."""

    __slots__: tuple[str, ...] = ()

    def _init(self, **values: object) -> None:
        """Sets every field of the record: its ``__init__``'s one call."""
        if set(values) != set(self.__slots__):
            missing = sorted(set(self.__slots__) ^ set(values))
            raise TypeError(f"{type(self).__name__} takes exactly its fields: {missing}")
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot assign {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot delete {name}")

    def field_values(self) -> tuple[Any, ...]:
        """The fields' values, in the order of ``__slots__`` (sorted by name)."""
        return tuple(getattr(self, name) for name in self.__slots__)

    def as_dict(self) -> dict[str, Any]:
        """The fields by name (not deep: a field that is a record stays one)."""
        return dict(zip(self.__slots__, self.field_values()))

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        assert isinstance(other, Frozen)
        return self.field_values() == other.field_values()

    def __hash__(self) -> int:
        return hash((type(self).__qualname__, self.field_values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in self.as_dict().items())
        return f"{type(self).__name__}({fields})"

    def __reduce__(self) -> tuple[Any, ...]:  # copy and pickle
        return (_rebuild, (type(self), self.as_dict()))


def _rebuild(kind: type[Frozen], values: dict[str, Any]) -> Frozen:
    """A copy of a record that was built, and checked, by its ``__init__``."""
    record = kind.__new__(kind)
    for name, value in values.items():
        object.__setattr__(record, name, value)
    return record
