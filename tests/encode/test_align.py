from __future__ import annotations

from transformers import AutoTokenizer

from seqrep.encode.align import WordTokenizer, special_affixes


def test_byte_level_words_get_their_leading_space(tiny) -> None:
    tok = AutoTokenizer.from_pretrained(tiny("llama"))
    words = WordTokenizer(tok)
    ids = words(["Obama", "visited", "Obama"])
    assert ids[0] == ids[2]
    # same ids as the word inside running text
    running = tok(" Obama visited", add_special_tokens=False)["input_ids"]
    assert running == ids[0] + ids[1]
    # a lone space token is kept in the input but skipped when the word is read
    assert tok.convert_ids_to_tokens(ids[0][0]) == "Ġ" and words.leads(["Obama"]) == [1]


def test_encoder_affixes_and_empty_words(tiny) -> None:
    tok = AutoTokenizer.from_pretrained(tiny("bert"))
    assert special_affixes(tok) == ([tok.cls_token_id], [tok.sep_token_id])
    words = WordTokenizer(tok)
    ids = words(["\u200b", "obama"])  # a zero-width space tokenizes to nothing
    assert ids[0] == [tok.unk_token_id] and words.empty_words == 1


def test_long_words_are_cut_and_counted(tiny) -> None:
    words = WordTokenizer(AutoTokenizer.from_pretrained(tiny("llama")), max_word_subtokens=4)
    (ids,) = words(["x" * 200 + "🙂" * 30])
    assert len(ids) == 4 and words.cut_words == 1
