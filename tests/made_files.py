"""Tiny data files written by the tests themselves (not copies of the shared datasets):
a CoNLL-U file with multiword tokens, empty nodes and comments, and NLU++ folds in the
``data/<domain>/fold<N>.json`` layout with ``value`` and ``values`` slots."""

from __future__ import annotations

import json
from pathlib import Path

# CoNLL-U rows; the blank entries are sentence breaks. Line numbers matter to the tests.
CONLLU = [
    "# newdoc id = doc-a",
    "# sent_id = s1",
    "# text = Del mar vino él.",
    ["1-2", "Del", "_", "_", "_", "_", "_", "_", "_", "_"],
    ["1", "De", "de", "ADP", "SPS00", "_", "3", "case", "_", "_"],
    ["2", "el", "el", "DET", "DA0MS0", "Definite=Def", "3", "det", "_", "_"],
    ["3", "mar", "mar", "NOUN", "NCMS000", "Gender=Masc", "4", "obl", "_", "_"],
    ["4", "vino", "venir", "VERB", "VMIS3S0", "_", "0", "root", "_", "_"],
    ["5", "él", "él", "PRON", "PP3MS000", "_", "4", "nsubj", "_", "SpaceAfter=No"],
    ["6", ".", ".", "PUNCT", "Fp", "_", "4", "punct", "_", "_"],
    "",
    "# sent_id = s2",
    "# text = Sue likes tea",
    ["1", "Sue", "Sue", "PROPN", "NNP", "_", "2", "nsubj", "_", "_"],
    ["2", "likes", "like", "VERB", "VBZ", "_", "0", "root", "_", "_"],
    ["2.1", "drinks", "drink", "VERB", "VBZ", "_", "_", "_", "2:conj", "_"],
    ["3", "tea", "tea", "NOUN", "NN", "_", "2", "obj", "_", "_"],
    "",
    "# newdoc id = doc-b",
    "# sent_id = s3",
    "# text = Go!",
    ["1", "Go", "go", "VERB", "VB", "_", "0", "root", "_", "SpaceAfter=No"],
    ["2", "!", "!", "PUNCT", ".", "_", "1", "punct", "_", "_"],
    "",
]

NLUPP = {
    "banking/fold0.json": [
        {
            "text": "How much did I spend on amazon prime until May?",
            "intents": ["how_much", "transfer_payment_deposit"],
            "slots": {
                "company_name": {"text": "amazon prime", "span": [24, 36], "value": "amazon prime"},
                "date_to": {
                    "text": "May",
                    "span": [43, 46],
                    "value": {"day": 31, "month": 5, "year": 2022},
                },
            },
        },
        {"text": "hi", "intents": ["greet"]},
    ],
    "banking/fold1.json": [
        {
            "text": "what did I pay at Godaddy-Inc's shop",
            "slots": {"company_name": {"text": "Godaddy", "span": [18, 25], "value": "godaddy"}},
        }
    ],
    "hotels/fold0.json": [
        {
            "text": "only today",
            "intents": ["booking"],
            "slots": {
                "date_period": {
                    "text": "only today",
                    "span": [0, 10],
                    "values": {"type": "absolute"},
                },
                "date": {
                    "text": "today",
                    "span": [5, 10],
                    "value": {"day": 15, "month": 3, "year": 2022},
                },
            },
        },
        {
            "text": "2 rooms for 3 adults",
            "slots": {
                "rooms": {"text": "2", "span": [0, 1], "value": 2},
                "adults": {"text": "3", "span": [12, 13], "value": 3},
            },
        },
    ],
}


def write_made_files(root: Path) -> None:
    """Write ``tiny.conllu`` and ``nlupp/data/...`` under ``root``."""
    rows = ["\t".join(r) if isinstance(r, list) else r for r in CONLLU]
    (root / "tiny.conllu").write_text("\n".join(rows), encoding="utf-8")
    for name, records in NLUPP.items():
        path = root / "nlupp" / "data" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
