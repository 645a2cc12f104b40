"""Command-line options derived from the config dataclasses, so every field is reachable and
each default and help text lives in one place (the field's ``metadata["help"]``).

:func:`config_params` turns dataclass fields into typer options (``exit_layer`` becomes
``--exit-layer``, a boolean a switch: ``--compile``, ``--no-final-norm``); :func:`command`
builds a typer command from such parameters and a body that receives them as one dict.
:data:`PANELS` says which ``--help`` panel each option is listed in, for every command
(:func:`group_options`).
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from seqrep.config import InferenceConfig

Params = list[inspect.Parameter]

MODEL, LAYERS, DATA, TRAINING = "Model", "Repetition and layers", "Data", "Training"
DISTILLATION, SERVING, BENCHMARK = "Distillation", "Serving", "Benchmark"
OUTPUT, RUNTIME = "Output", "Runtime and devices"

# The --help panel of every option of every command, by parameter name: a config field's name
# or the name a command gives its own option. A train command with 80 options is readable only
# in groups, and one table keeps an option in the same panel on every command. An option
# missing here lands in typer's plain "Options" panel, which tests/test_cli_help.py refuses.
PANELS: dict[str, str] = {
    **dict.fromkeys((  # what the labeler is
        "model", "student", "labels", "task", "finetune", "train_embeddings", "frozen_layers",
        "lora_rank", "lora_alpha", "lora_dropout", "lora_targets", "dropout",
        "attn_implementation", "dtype", "trust_remote_code", "decoding"), MODEL),
    **dict.fromkeys((  # what a model row holds and where words are read
        "repetitions", "exit_layer", "exit_layers", "exit_search_sentences", "unmask",
        "final_norm", "subtoken", "read", "separator", "bos", "max_subtokens", "context",
        "context_tokens", "context_overlap", "context_separator", "padding_side"), LAYERS),
    **dict.fromkeys((  # which sentences are read, and how files are parsed
        "dataset", "format", "train_split", "eval_split", "test_split", "max_train_sentences",
        "max_eval_sentences", "max_test_sentences", "subset_seed", "subset_unit", "train",
        "validation", "test", "split", "label_map", "max_sentences", "input", "words",
        "sentences", "bench", "tag_column", "word_column", "scheme", "strict", "label_column",
        "polarity", "domains", "folds", "alignment", "tokens_column", "tags_column",
        "doc_column"), DATA),
    **dict.fromkeys((  # how the model learns, and which runs a grid makes
        "recipe", "epochs", "lr", "head_lr", "weight_decay", "warmup", "batch_rows",
        "batch_tokens", "grad_accum", "max_grad_norm", "gradient_checkpointing", "compile",
        "eval_every", "checkpoint_every", "early_stopping", "seed", "max_steps",
        "eval_batch_size", "dry_run", "max_runs"), TRAINING),
    **dict.fromkeys(("unlabeled", "teacher_labels", "temperature", "gold_weight"),
                    DISTILLATION),
    **dict.fromkeys((
        "host", "port", "max_batch_tokens", "max_wait_ms", "max_text_chars", "max_texts",
        "max_queue", "request_timeout", "max_connections", "log_level", "ray", "replicas"),
        SERVING),
    **dict.fromkeys(("repeats", "latency_sentences", "encoder", "baseline"), BENCHMARK),
    **dict.fromkeys((  # what a command writes and says
        "output", "overwrite", "resume", "quiet", "as_json", "output_format", "predictions",
        "onnx", "opset", "check", "tolerance", "int8", "out", "notes"), OUTPUT),
    **dict.fromkeys((  # how and where the model runs
        "batch_size", "max_tokens", "precisions", "runtime", "device", "precision",
        "threads", "engine", "actors", "address"), RUNTIME),
    # the Hub: what push writes (and where), the revision of a model a command names
    **dict.fromkeys(("repo", "private", "commit_message"), OUTPUT), "revision": MODEL,
}
# where a command lists an option elsewhere: a training batch is a training setting
PANELS_BY_COMMAND: dict[str, dict[str, str]] = {
    "train": {"batch_size": TRAINING}, "distill": {"batch_size": TRAINING}}


def group_options(app: typer.Typer, path: str = "") -> None:
    """Put each option of each command of ``app`` (and of its sub-apps: ``data stats``) into
    its ``--help`` panel from :data:`PANELS`; the options are the commands' own objects, so
    the click command typer builds later carries the panels."""
    from typer.models import OptionInfo

    for info in app.registered_commands:
        if info.callback is None:
            continue
        name = path + (info.name or info.callback.__name__)
        own = PANELS_BY_COMMAND.get(name, {})
        for p in inspect.signature(info.callback).parameters.values():
            if isinstance(p.default, OptionInfo):
                p.default.rich_help_panel = own.get(p.name) or PANELS.get(p.name)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            group_options(group.typer_instance, f"{path}{group.name} ")


def field_default(f: dataclasses.Field) -> Any:
    """A dataclass field's default value (calling its factory)."""
    return f.default if f.default is not dataclasses.MISSING else f.default_factory()


def config_params(config: type, skip: Iterable[str] = (),
                  short: dict[str, str] | None = None,
                  names: dict[str, str] | None = None) -> Params:
    """One keyword parameter with a ``typer.Option`` per field of ``config``.

    Args:
        config: a config dataclass (every field has a default and ``metadata["help"]``).
        skip: fields the command sets itself.
        short: extra flags by field name (``{"repetitions": "-r"}``).
        names: flags other than the field's name (``{"exit_layers": "--exit-layer"}``).

    A boolean field that is off by default is a flag (``--compile``), one that is on can be
    turned off (``--final-norm/--no-final-norm``): a ``--no-x`` column beside every switch
    would leave the help text a third of the line.
    A ``tuple[int, ...]`` or ``tuple[str, ...]`` field is a comma list (``--repetitions
    0,1,2``) that arrives as a tuple; a bad item is one line naming the option.
    """
    hints = typing.get_type_hints(config)
    out = []
    for f in dataclasses.fields(config):
        if f.name in skip:
            continue
        flag = (names or {}).get(f.name, f"--{f.name.replace('_', '-')}")
        extra: dict[str, Any] = {}
        default = field_default(f)
        if typing.get_origin(hints[f.name]) is tuple:
            hints[f.name], extra["parser"] = CommaList, comma_list(hints[f.name], flag)
            extra["metavar"] = "A,B,..."
            default = ",".join(str(x) for x in default)
        elif type(None) in typing.get_args(hints[f.name]) and len(typing.get_args(
                hints[f.name])) > 2:  # int | str | None: typer takes one type, str
            hints[f.name] = str | None
        shown: bool | str = True
        if hints[f.name] is bool and default:  # on unless turned off: --no-final-norm
            flag = f"{flag}/--no-{flag[2:]}"
        elif hints[f.name] is bool:  # off unless given, as its name says: --compile
            shown = False
        elif isinstance(default, str) and not default.isprintable():
            shown = default.encode("unicode_escape").decode()  # "\n", not a line break
        shown = f.metadata.get("shown", shown)
        flags = [flag] + ([short[f.name]] if short and f.name in short else [])
        info = typer.Option(None if isinstance(default, list) and not default else default,
                            *flags, help=f.metadata.get("help", ""), show_default=shown, **extra)
        out.append(inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=info,
                                     annotation=hints[f.name]))
    return out


class CommaList(tuple):
    """The type of a comma-list option (its values: a tuple)."""


def comma_list(hint: Any, flag: str) -> Callable[[Any], tuple]:
    """A parser of ``"0,1,2"`` into a tuple of the items' type (``tuple[int | None, ...]``:
    ints); a bad item is a ConfigError naming ``flag``."""
    from seqrep.errors import ConfigError

    item = typing.get_args(hint)[0]  # tuple[X, ...] -> X
    kind = next(k for k in typing.get_args(item) or (item,) if k is not type(None))

    def parse(value: Any) -> tuple:
        if not isinstance(value, str):
            return tuple(value)
        try:
            return tuple(kind(x.strip()) for x in value.split(",") if x.strip())
        except ValueError:
            raise ConfigError(f"{flag} {value!r}: expected a comma list of "
                              f"{kind.__name__}s") from None

    return parse


def config_values(config: type, values: dict[str, Any], skip: Iterable[str] = ()
                  ) -> dict[str, Any]:
    """The entries of ``values`` that are fields of ``config``; for optional string fields an
    empty string means None (``--test-split ""``: no test split)."""
    hints = typing.get_type_hints(config)
    out = {}
    for f in dataclasses.fields(config):
        if f.name not in values or f.name in skip:
            continue
        v = values[f.name]
        if v == "" and type(None) in typing.get_args(hints[f.name]):
            v = None
        if v is None and isinstance(field_default(f), list):
            v = []
        out[f.name] = v
    return out


def command(body: Callable[[dict[str, Any]], None], params: Sequence[inspect.Parameter],
            doc: str) -> Callable[..., None]:
    """A typer command with ``params`` whose values reach ``body`` as one dict."""
    def run(**values: Any) -> None:
        body(values)

    run.__signature__ = inspect.Signature(list(params))  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    run.__doc__ = doc
    run.__name__ = body.__name__
    return run


def option(config: type, name: str, *flags: str, **kw: Any) -> Any:
    """A ``typer.Option`` whose default and help are those of ``config``'s field ``name``."""
    f = {x.name: x for x in dataclasses.fields(config)}[name]
    return typer.Option(field_default(f), *flags, help=f.metadata.get("help", ""), **kw)


def inference_option(name: str, **kw: Any) -> Any:
    """The ``typer.Option`` of :class:`~seqrep.config.InferenceConfig`'s field ``name``, the
    same on every command that has it: its default and its help. The value is checked once,
    when the command builds its config (:func:`inference_config`) before any model loads."""
    from seqrep.config import InferenceConfig

    return option(InferenceConfig, name, f"--{name.replace('_', '-')}", show_default=True,
                  **kw)


def inference_config(values: dict[str, Any]) -> InferenceConfig:
    """The one :class:`~seqrep.config.InferenceConfig` a command runs with, from the options
    it read (the fields it has no option for keep their defaults); every value is checked
    here, once, so a bad one is one line naming its option, exit 2, before anything loads.
    Loading, prediction, evaluation and serving then read this object, not loose values."""
    from seqrep.config import InferenceConfig

    return InferenceConfig(**config_values(InferenceConfig, values))


def revision_option() -> Any:
    """``--revision``: the branch, tag or commit of a Hub model named as RUN (``org/name``);
    the same as writing ``org/name@REV``."""
    return typer.Option(None, "--revision",
                        help="branch, tag or commit of RUN when it names a Hugging Face Hub model")


def with_revision(run: Any, revision: str | None) -> Any:
    """RUN as the commands load it: itself, or with ``--revision`` its checked snapshot (a
    local folder with a revision, or two revisions, is one line)."""
    if revision is None:
        return run
    from seqrep.model.hub import resolve

    return resolve(run, revision)


def parse_label_map(items: list[str] | None) -> dict[str, str]:
    """``["PERSON=PER", ...]`` -> ``{"PERSON": "PER"}``."""
    from seqrep.errors import ConfigError

    out = {}
    for item in items or []:
        if "=" not in item:
            raise ConfigError(f"--label-map {item!r}: expected OLD=NEW")
        old, new = item.split("=", 1)
        out[old.strip()] = new.strip()
    return out
