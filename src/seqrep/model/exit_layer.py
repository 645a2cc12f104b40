"""The exit layer: which layer a labeler reads its labels from, as a setting and as a layer.

A setting (``LabelerConfig.exit_layer``) is a layer number, ``all`` (kept as ``None``, the
form every saved run holds), ``auto`` (the layer a frozen probe picks on validation, chosen
by training), a fraction of the depth (``"2/3"``) or ``default``. The model's depth turns it
into the layer a model is cut at (:func:`resolve_exit_layer`); the run plan does that before
anything loads where the model's config says its depth, the labeler when its backbone loads,
and a saved labeler records the layer, never the fraction.
"""

from __future__ import annotations

from seqrep.errors import ConfigError

# The exit layer a labeler is cut at when none is named: 2/3 of a decoder's depth, every layer
# of an encoder. Fine-tuned and paired by seed, SmolLM2-135M cut at 20 of 30 layers beat its
# full depth in every seed (CoNLL-2003 +4.1 F1 at r=0, +11.9 at r=1; Rest14 +5.6 and +7.2) at
# 2/3 of the cost, and `auto`'s probe picked layers 17-20 (Gemma-3-270m: 11 of 18); the paper
# finds 60 to 75 % of the depth on par with the last layer (docs/concepts/exit-layer.md).
# An encoder's depth was never cut here, so it keeps every layer.
EXIT_DEFAULT = "default"
DECODER_EXIT = (2, 3)
EXIT_FORMS = "a layer number, a fraction of the depth such as 2/3, all, auto or default"


def parse_exit_layer(value: int | str | None) -> int | str | None:
    """An ``exit_layer`` setting, normalised: a layer number (``"12"`` -> 12), ``None`` for
    every layer (``"all"``), ``"auto"``, ``"default"``, or a fraction ``"a/b"`` of the depth
    with ``0 < a/b <= 1`` (resolved by :func:`resolve_exit_layer` once the depth is known).

    Raises:
        ConfigError: ``exit_layer=VALUE; expected`` the forms above, in one line.
    """
    text = value.strip() if isinstance(value, str) else value
    if text is None or text == "all":
        return None
    if text in ("auto", EXIT_DEFAULT):
        return text
    if isinstance(text, str) and _digits(text):
        text = int(text)
    if isinstance(text, int) and not isinstance(text, bool):
        if text >= 1:
            return text
    elif isinstance(text, str) and text.count("/") == 1 and all(
            _digits(p.strip()) for p in text.split("/")):
        num, den = (int(p) for p in text.split("/"))
        if 0 < num <= den:
            return f"{num}/{den}"
    raise ConfigError(f"exit_layer={text!r}; expected {EXIT_FORMS}")


def _digits(text: str) -> bool:
    return text.isascii() and text.isdigit()  # "²".isdigit(), but int("²") fails


def resolve_exit_layer(value: int | str | None, depth: int, encoder: bool) -> int | str | None:
    """The layer a model of ``depth`` layers is cut at for a parsed ``exit_layer`` setting: a
    fraction becomes ``a * depth / b`` rounded to the nearest layer (halves up, at least 1);
    ``default`` is :data:`DECODER_EXIT` of a decoder and every layer (``None``) of an
    ``encoder``. A number, ``None`` and ``auto`` (chosen by training) come back unchanged."""
    if value == EXIT_DEFAULT:
        if encoder:
            return None
        value = "{}/{}".format(*DECODER_EXIT)
    if not isinstance(value, str) or value == "auto":
        return value
    num, den = (int(p) for p in value.split("/"))
    return max(1, (2 * num * depth + den) // (2 * den))


def cut_layer(value: int | str | None, depth: int, encoder: bool) -> int | None:
    """The layer a model is built with for a parsed setting (:func:`resolve_exit_layer`);
    ``None``: every layer.

    Raises:
        ConfigError: ``auto``, which only training can choose (it fits probes on the data).
    """
    layer = resolve_exit_layer(value, depth, encoder)
    if isinstance(layer, str):
        raise ConfigError("exit_layer='auto' is picked by training on the data (seqrep train "
                          "or train_labeler); a labeler built from a model takes a layer "
                          "number, a fraction of the depth or all")
    return layer
