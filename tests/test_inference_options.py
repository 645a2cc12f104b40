"""The inference options predict, evaluate, serve, export and bench share: one default each,
read here from the click command objects the user runs (not from the config dataclass), and a
bad value is one line naming the option, exit 2, on every command, before any model loads."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from support import cli

from seqrep.cli.app import app

COMMANDS = ("predict", "evaluate", "serve", "export", "bench")
# The defaults as the docs state them: batches of at most 64 sentences and 4,096 padded
# tokens (`seqrep.encode.BATCH_SENTENCES`, `BATCH_TOKENS`; the CLI reference shows them),
# runtime / device / precision auto, torch's own thread count, the run's decoding.
EXPECTED = {"--batch-size": 64, "--runtime": "auto", "--device": "auto", "--precision": "auto",
            "--threads": None, "--decoding": None, "--trust-remote-code": False}
# the padded-token budget of a batch has a name per command (kept: documented flags)
BATCH_TOKENS = {"serve": "--max-batch-tokens", "bench": "--max-tokens"}
# bench's --precision is another option under the same name: a comma list of the settings it
# measures side by side (fp32, bf16, onnx, onnx-int8), documented with the default fp32
NOT_SHARED = {("bench", "--precision")}


def _defaults() -> dict[str, dict[str, object]]:
    group = typer.main.get_command(app)
    out = {}
    for name in COMMANDS:
        command = group.commands[name]  # type: ignore[attr-defined]
        out[name] = {opt: p.default for p in command.params for opt in p.opts}
    return out


def test_each_shared_option_has_one_default_on_every_command() -> None:
    defaults = _defaults()
    for flag, expected in EXPECTED.items():
        having = {c: d[flag] for c, d in defaults.items() if flag in d
                  and (c, flag) not in NOT_SHARED}
        assert having and all(v == expected for v in having.values()), (flag, having)
    tokens = {c: defaults[c][flag] for c, flag in BATCH_TOKENS.items()}
    assert set(tokens.values()) == {4096}, tokens


def test_the_loading_commands_share_runtime_device_and_precision() -> None:
    defaults = _defaults()
    for command in ("predict", "evaluate", "serve"):
        for flag in ("--runtime", "--device", "--precision", "--batch-size"
                     if command != "serve" else "--max-batch-tokens"):
            assert flag in defaults[command], (command, flag)
    assert "--trust-remote-code" in defaults["export"]
    assert "--threads" in defaults["serve"] and "--threads" in defaults["bench"]


def test_serve_help_shows_device_and_precision(capsys) -> None:
    code, out, _ = cli(capsys, "serve", "--help")
    assert code == 0 and "--device" in out and "--precision" in out


def _never(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
    raise AssertionError("a model was loaded (or a benchmark ran) after a bad option value")


ARGS = {"predict": ["predict", "{run}", "Obama left."],
        "evaluate": ["evaluate", "{run}", "--dataset", "{run}/x.txt"],
        "serve": ["serve", "{run}", "--port", "1"],
        "bench": ["bench"]}
BAD = [("--batch-size", "0", "--batch-size 0"), ("--runtime", "foo", "--runtime 'foo'"),
       ("--precision", "foo", "--precision 'foo'"), ("--device", "tpu", "--device 'tpu'"),
       ("--threads", "0", "--threads 0"), ("--max-batch-tokens", "0", "--max-batch-tokens 0"),
       ("--max-tokens", "-1", "--max-tokens -1")]


# which command takes which of them, as the README's usage documents it (written out, so a
# command that lost one fails here instead of being skipped)
TAKES = {"predict": ("--batch-size", "--runtime", "--precision", "--device"),
         "evaluate": ("--batch-size", "--runtime", "--precision", "--device"),
         "serve": ("--runtime", "--precision", "--device", "--threads", "--max-batch-tokens"),
         "bench": ("--batch-size", "--device", "--threads", "--max-tokens")}


@pytest.mark.parametrize("command,option,value,says", [
    (command, *bad) for command, options in TAKES.items() for bad in BAD if bad[0] in options])
def test_a_bad_value_is_one_line_exit_2(command: str, option: str, value: str, says: str,
                                        tmp_path: Path, capsys, monkeypatch) -> None:
    import seqrep.export
    import seqrep.lab.bench
    import seqrep.serve.app

    monkeypatch.setattr(seqrep.export, "load_labeler", _never)
    monkeypatch.setattr(seqrep.export, "load", _never)
    monkeypatch.setattr(seqrep.serve.app, "create_app", _never)
    monkeypatch.setattr(seqrep.lab.bench, "run_bench", _never)
    args = [a.format(run=tmp_path) for a in ARGS[command]] + [option, value]
    code, _, err = cli(capsys, *args)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and says in err, err


def test_bench_precision_list_is_checked_before_anything_runs(capsys, monkeypatch) -> None:
    import seqrep.lab.bench

    monkeypatch.setattr(seqrep.lab.bench, "run_bench", _never)
    code, _, err = cli(capsys, "bench", "--precision", "fp32,fp64")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--precision" in err, err
    code, _, err = cli(capsys, "bench", "--repetitions", "1,x")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--repetitions" in err, err


def test_bench_options_are_typed_and_reach_the_config(capsys, monkeypatch) -> None:
    """Comma lists arrive as tuples of ints, 0 tokens as no limit, '' as no encoder; the help
    is BenchConfig's."""
    import seqrep.lab.bench

    seen = []

    def record(cfg, echo=print):  # noqa: ANN001, ANN202
        seen.append(cfg)
        return {"speedups": []}

    monkeypatch.setattr(seqrep.lab.bench, "run_bench", record)
    code, _, err = cli(capsys, "bench", "--repetitions", "0,2", "--exit-layer", "5",
                       "--max-tokens", "0", "--encoder", "", "--precision", "fp32,onnx",
                       "--batch-size", "8", "--threads", "1")
    assert code == 0, err
    (cfg,) = seen
    assert (cfg.repetitions, cfg.exit_layers, cfg.max_tokens, cfg.encoder, cfg.precisions,
            cfg.batch_size, cfg.threads) == ((0, 2), (5,), None, None, ("fp32", "onnx"), 8, 1)
    group = typer.main.get_command(app)
    helps = {o: p.help for p in group.commands["bench"].params for o in p.opts}  # type: ignore
    assert helps["--repeats"] == "timed passes; the fastest counts"
    assert helps["--latency-sentences"] == "sentences timed one by one"  # reachable now


def test_the_configs_check_themselves_from_python() -> None:
    """A program that builds the configs directly gets the same one-line errors."""
    from seqrep.config import InferenceConfig
    from seqrep.errors import ConfigError
    from seqrep.serve.settings import ServeSettings

    for bad, says in (({"batch_size": 0}, "--batch-size 0"), ({"runtime": "x"}, "--runtime"),
                      ({"device": "cuda:a"}, "--device"), ({"decoding": "x"}, "--decoding")):
        with pytest.raises(ConfigError, match=says):
            InferenceConfig(**bad)
    with pytest.raises(ConfigError, match="--max-texts 0"):
        ServeSettings(max_texts=0)
    assert InferenceConfig(device="cuda:1").device == "cuda:1"
    assert ServeSettings().max_batch_tokens == 4096


@pytest.mark.parametrize("name,low,says", [
    ("max_batch_tokens", 1, "expected 1 or more"), ("max_texts", 1, "expected 1 or more"),
    ("max_text_chars", 1, "expected 1 or more"), ("max_queue", 1, "expected 1 or more"),
    ("retry_after_s", 1, "expected 1 or more"), ("max_connections", 1, "expected 1 or more"),
    ("max_wait_ms", 0, "expected 0 or more"), ("request_timeout", 0.001, "expected more than 0")])
def test_each_serve_limit_has_its_bound(name: str, low: float, says: str) -> None:
    """Each ServeSettings limit: its least value is taken, one step below is one line naming
    the option as the command spells it."""
    from seqrep.errors import ConfigError
    from seqrep.serve.settings import ServeSettings

    assert getattr(ServeSettings(**{name: low}), name) == low
    below = 0 if name == "request_timeout" else low - 1
    option = "--" + name.replace("_", "-")
    with pytest.raises(ConfigError, match=f"^{option} {below}; {says}$"):
        ServeSettings(**{name: below})


def test_the_python_loaders_default_to_the_commands_device() -> None:
    """`--device auto` is the commands' default (README, "On a GPU"); the ONNX labeler's
    loader and place() take the same default (on ONNX Runtime, auto is the CPU, its only
    device), as load_labeler, which the commands call, and SequenceLabeler.place do."""
    import inspect

    from seqrep.export import load_labeler
    from seqrep.export.runtime import OnnxLabeler
    from seqrep.model.labeler import SequenceLabeler

    for fn in (load_labeler, OnnxLabeler.from_pretrained, OnnxLabeler.place,
               SequenceLabeler.place):
        assert inspect.signature(fn).parameters["device"].default == "auto", fn.__qualname__


def test_a_bad_runtime_lists_the_runtimes_on_both_routes(capsys) -> None:
    """--runtime as an option (InferenceConfig) and as export.load_labeler's argument
    (seqrep.core.runtimes) refuse with the same line, naming the runtimes."""
    from seqrep.core.runtimes import runtime
    from seqrep.errors import ConfigError

    says = "--runtime 'tpu'; expected one of auto, torch, openvino, compile, onnx, onnx-int8"
    code, _, err = cli(capsys, "predict", "run", "x", "--runtime", "tpu")
    assert code == 2 and err.strip().endswith(says), err
    with pytest.raises(ConfigError) as caught:
        runtime("tpu")
    assert str(caught.value) == says


def test_a_bad_runtime_names_the_flag_it_was_read_from() -> None:
    from seqrep.config import InferenceConfig
    from seqrep.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        InferenceConfig.check("runtime", "tpu", "--serve-runtime")
    assert str(caught.value) == \
        "--serve-runtime 'tpu'; expected one of auto, torch, openvino, compile, onnx, onnx-int8"
