"""The architecture table (by config.model_type) agrees with the heuristics on the families it
holds, is consulted before them, and takes a user's entries."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from transformers import AutoConfig, AutoModel

from seqrep.model import architectures
from seqrep.model.architectures import ARCHITECTURES, Architecture, register_architecture
from seqrep.model.backbone import final_norm_owner, layer_stack
from seqrep.model.tuning import lora_targets

SHAPE = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=3,
             num_attention_heads=4, num_key_value_heads=2, head_dim=8)
FAMILIES = {"llama": SHAPE, "mistral": SHAPE, "qwen2": SHAPE, "qwen3": SHAPE,
            "gemma3_text": {**SHAPE, "sliding_window": 4},
            "bert": dict(vocab_size=64, hidden_size=32, intermediate_size=48,
                         num_hidden_layers=3, num_attention_heads=4)}


@pytest.fixture(scope="module", params=sorted(FAMILIES))
def model(request) -> nn.Module:
    torch.manual_seed(0)
    return AutoModel.from_config(AutoConfig.for_model(request.param, **FAMILIES[request.param]))


def _answers(model: nn.Module) -> tuple:
    owner = final_norm_owner(model)
    return layer_stack(model), owner and (id(owner[0]), owner[1]), lora_targets(model)


def test_the_table_and_the_heuristics_agree(model, monkeypatch) -> None:
    model_type = model.config.model_type
    assert model_type in ARCHITECTURES
    assert architectures.table_layer_stack(model) is not None  # the entry fits the model
    with_table = _answers(model)
    monkeypatch.delitem(ARCHITECTURES, model_type)  # the heuristics alone
    assert architectures.table_layer_stack(model) is None
    assert _answers(model) == with_table
    # and both are what the model really is, read from its own attributes
    blocks, norm, targets = with_table
    if model_type == "bert":
        assert blocks is model.encoder.layer and norm is None
        assert targets == ["key", "query", "value"]
    else:
        assert blocks is model.layers and norm == (id(model), "norm")
        assert targets == ["k_proj", "o_proj", "q_proj", "v_proj"]


class _Toy(nn.Module):
    """Blocks at ``trunk.blocks``; a shallower ModuleList of the same length fools the
    heuristic (it takes the shallowest), a final norm under a name it does not know."""

    def __init__(self) -> None:
        super().__init__()
        self.config = type("Cfg", (), {"model_type": "toy-arch", "num_hidden_layers": 2})()
        self.aux = nn.ModuleList([nn.Identity(), nn.Identity()])
        self.trunk = nn.Module()
        self.trunk.blocks = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])
        self.out_norm = nn.LayerNorm(4)
        self.wq, self.wv, self.q_proj = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 4)


def test_a_registered_entry_is_consulted_before_the_heuristics(monkeypatch) -> None:
    toy = _Toy()
    assert layer_stack(toy) is toy.aux and final_norm_owner(toy) is None
    assert lora_targets(toy) == ["q_proj"]
    monkeypatch.setattr(architectures, "ARCHITECTURES", dict(ARCHITECTURES))
    register_architecture("toy-arch", Architecture("trunk.blocks", "out_norm", ("wq", "wv")))
    assert layer_stack(toy) is toy.trunk.blocks
    assert final_norm_owner(toy) == (toy, "out_norm")
    assert lora_targets(toy) == ["wq", "wv"]
    # an entry that does not fit the loaded model falls back to the heuristics
    register_architecture("toy-arch", Architecture("trunk.missing", "nope", ("wk",)))
    assert layer_stack(toy) is toy.aux and final_norm_owner(toy) is None
    assert lora_targets(toy) == ["q_proj"]
    with pytest.raises(TypeError, match="Architecture"):
        register_architecture("toy-arch", ("layers", "norm", ()))


def test_lora_targets_option_overrides_the_table() -> None:
    """--lora-targets (LabelerConfig.lora_targets) wins over the table's q, k, v, o."""
    from peft import PeftModel

    from seqrep.config import LabelerConfig
    from seqrep.model.tuning import prepare_backbone

    torch.manual_seed(0)
    llama = AutoModel.from_config(AutoConfig.for_model("llama", **SHAPE))
    assert lora_targets(llama) == ["k_proj", "o_proj", "q_proj", "v_proj"]  # the table's
    assert lora_targets(llama, ["up_proj", "gate_proj"]) == ["gate_proj", "up_proj"]
    config = LabelerConfig(model="x", finetune="lora", lora_targets=["up_proj"])
    peft = prepare_backbone(llama, config)
    assert isinstance(peft, PeftModel)
    adapted = {n.split(".lora_A")[0].rsplit(".", 1)[-1] for n, _ in peft.named_parameters()
               if ".lora_A" in n}
    assert adapted == {"up_proj"}
