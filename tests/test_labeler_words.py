"""Shared sample sentences for tests that need plain word lists."""

WORDS = [["Obama", "visited", "Paris", "."], ["Peter", "Blackburn", "reports"],
         ["The", "European", "Union", "said", "on", "Thursday", "it", "disagreed", "."]]


def test_words_are_nonempty() -> None:
    assert all(WORDS)
