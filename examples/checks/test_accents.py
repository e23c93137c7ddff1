"""A check for something slug.py does not do yet (failing.md runs it)."""

from slug import slug


def test_accented_letters_become_plain_letters() -> None:
    assert slug("Crème brûlée") == "creme-brulee"
