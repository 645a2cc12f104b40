"""The one table type the strategy families share (:mod:`seqrep.core.table`): names, lookup with one
line naming the field or option, checks and help text generated from the entries. Expected
strings are written out by hand, as the tables' helpers wrote them before the type existed."""

from __future__ import annotations

import dataclasses

import pytest

from seqrep.core.contexts import CONTEXTS, DOCUMENT, SENTENCE, context_of
from seqrep.core.runtimes import RUNTIMES
from seqrep.core.table import Table, resolve
from seqrep.data.tasks import DECODINGS, SPANS, TASKS, task_of
from seqrep.errors import ConfigError
from seqrep.model.tuning import MODES


@dataclasses.dataclass(frozen=True)
class _Colour:
    name: str
    help: str


def _colours() -> Table[_Colour]:
    return Table("colour", [_Colour("red", "warm"), _Colour("blue", "cold"),
                            _Colour("green", "grass")])


def test_names_lookup_and_one_line_errors() -> None:
    table = _colours()
    assert table.names() == ("red", "blue", "green")
    assert table.names(auto=True) == ("auto", "red", "blue", "green")
    assert table["blue"].help == "cold" and table.of("red").name == "red"
    assert table.of(table["green"]) is table["green"]  # an entry is returned as it is
    with pytest.raises(ConfigError, match=r"^colour='pink'; expected one of red, blue, green$"):
        table["pink"]
    with pytest.raises(ConfigError, match=r"^colour='pink'; expected one of red, blue, green$"):
        table.of("pink")


def test_check_names_the_field_or_the_option() -> None:
    table = _colours()
    assert table.check("red") == "red" and table.check("auto", auto=True) == "auto"
    with pytest.raises(ConfigError, match=r"^colour='auto'; expected one of red, blue, green$"):
        table.check("auto")
    with pytest.raises(ConfigError, match=r"^--colour 'x'; expected one of auto, red, blue, "
                                          r"green$"):
        table.check("x", "--colour", auto=True)


def test_help_is_generated_from_the_entries_and_follows_registration() -> None:
    table = _colours()
    assert table.help() == "red (warm), blue (cold) or green (grass)"
    assert table.help("pick: ") == "pick: red (warm), blue (cold) or green (grass)"
    table.register(_Colour("grey", "neutral"))
    assert table.names()[-1] == "grey" and table.help().endswith(", green (grass) or "
                                                                   "grey (neutral)")


def test_defaults_and_aliases() -> None:
    table = Table("colour", [_Colour("red", "warm")], default="red", aliases={"auto": "red"})
    assert table.of(None).name == "red" and table.of("auto").name == "red"


def test_a_reference_resolves_lazily() -> None:
    import json

    assert resolve("json:dumps") is json.dumps
    assert resolve(len) is len


def test_the_strategy_families_are_tables() -> None:
    """Every family is one Table, and its old helpers' answers stay as they were."""
    for table, field in ((CONTEXTS, "context"), (DECODINGS, "decoding"), (RUNTIMES, "runtime"),
                         (MODES, "finetune"), (TASKS, "task")):
        assert isinstance(table, Table) and table.field == field
    assert RUNTIMES.names(auto=True) == ("auto", "torch", "openvino", "compile", "onnx",
                                         "onnx-int8")
    assert DECODINGS.names(auto=True) == ("auto", "greedy", "constrained")
    assert TASKS.names(auto=True) == ("auto", "spans", "tokens")
    assert context_of(None) is SENTENCE and context_of("document") is DOCUMENT
    assert task_of("auto") is SPANS
    assert MODES.help() == (
        "full (all backbone weights; the CPU default), lora (adapters on q,k,v,o), qlora "
        "(the paper's: LoRA on a 4-bit NF4 base; needs bitsandbytes able to quantize on the "
        "device: a CUDA GPU, or the CPU with bitsandbytes 0.50.2) or frozen (head only)")
    with pytest.raises(ConfigError, match=r"^--runtime 'tpu'; expected one of auto, torch, "
                                          r"openvino, compile, onnx, onnx-int8$"):
        RUNTIMES.check("tpu", "--runtime", auto=True)
    with pytest.raises(ConfigError, match=r"^finetune='x'; expected one of full, lora, qlora, "
                                          r"frozen$"):
        MODES["x"]
