"""The ``--label-map`` hint says which spelling to map: label types (``PERSON=PER``), not the
B-/I- tags the unknown labels are listed as (issue 37, item 21)."""

from __future__ import annotations

from seqrep.data.tasks import SPANS, TOKENS, unknown_labels_message


def test_the_span_hint_maps_types_and_gives_an_example() -> None:
    message = unknown_labels_message("test.txt", ["B-PERSON", "I-PERSON", "B-GPE"],
                                     ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"], SPANS)
    assert message == ("test.txt has labels the model does not know: B-GPE, B-PERSON, "
                       "I-PERSON (model labels: LOC, PER); map label names, not B-/I- tags, "
                       "with --label-map OLD=NEW, e.g. --label-map PERSON=PER")


def test_the_token_hint_maps_the_tags_themselves() -> None:
    message = unknown_labels_message("", ["ADJ"], ["ADJECTIVE", "VERB"], TOKENS)
    assert message == ("the dataset has labels the model does not know: ADJ (model "
                       "labels: ADJECTIVE, VERB); map them with --label-map OLD=NEW, e.g. "
                       "--label-map ADJ=ADJECTIVE")


def test_no_pairing_is_guessed_where_no_model_label_looks_alike() -> None:
    """A new user was told --label-map creative-work=LOC and IN=INTJ: unrelated names, or a
    prefix too short to mean anything, are not offered as a mapping."""
    message = unknown_labels_message("", ["B-creative-work", "I-creative-work"],
                                     ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"], SPANS)
    assert message.endswith("e.g. --label-map creative-work=NEW with NEW one of the model "
                            "labels")
    message = unknown_labels_message("", ["IN"], ["INTJ", "NOUN", "VERB"], TOKENS)
    assert "IN=INTJ" not in message and message.endswith("IN=NEW with NEW one of the model "
                                                         "labels")
