"""Numbers and words for people: a count with its noun, a type's name with its
article (messages once said `it is a int`, `1 reachable functions`)."""

import pytest

from hloscope.units import counted, with_article


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (0, "0 reachable functions"),
        (1, "1 reachable function"),
        (1234, "1,234 reachable functions"),
    ],
)
def test_counted(count, text):
    assert counted(count, "reachable function") == text


def test_counted_with_an_irregular_plural():
    assert counted(2, "child", "children") == "2 children"


@pytest.mark.parametrize(
    ("word", "text"),
    [
        ("int", "an int"),
        ("ArrayImpl", "an ArrayImpl"),
        ("dict", "a dict"),
        ("object", "an object"),
        ("uint8", "a uint8"),
        ("Lowered", "a Lowered"),
    ],
)
def test_with_article(word, text):
    assert with_article(word) == text
