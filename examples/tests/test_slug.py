from slug import slug


def test_words_are_lowercase_and_joined_by_dashes() -> None:
    assert slug("Hello, World!") == "hello-world"


def test_punctuation_and_spaces_never_double_a_dash() -> None:
    assert slug("  a -- b  ") == "a-b"


def test_long_titles_are_cut_at_a_word_boundary() -> None:
    assert slug("one two three", max_length=8) == "one-two"


def test_an_empty_title_still_has_a_slug() -> None:
    assert slug("!!!") == "untitled"
