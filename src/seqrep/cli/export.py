"""``seqrep export``: write a trained labeler as an ONNX graph for ONNX Runtime."""

from __future__ import annotations

from pathlib import Path

import typer

from seqrep.cli.options import inference_option, revision_option


def export(
    run: Path = typer.Argument(..., help="run folder (or a saved labeler folder)"),
    onnx: Path = typer.Option(..., "--onnx", help="folder to write: model.onnx, "
                              "seqrep-onnx.json, config.json and tokenizer/"),
    opset: int = typer.Option(18, "--opset", help="ONNX opset"),
    check: bool = typer.Option(True, "--check/--no-check",
                               help="label fixed sentences with ONNX Runtime and PyTorch and "
                                    "refuse the export if they differ"),
    tolerance: float = typer.Option(1e-3, "--tolerance",
                                    help="largest absolute logit difference the check accepts"),
    int8: bool = typer.Option(
        False, "--int8", help="also write model.int8.onnx, run with --runtime onnx-int8 "
        "(check its F1 on your data)"),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="replace an earlier export in ONNX (only the files seqrep "
        "wrote there; a folder holding anything else is refused)"),
    trust_remote_code: bool = inference_option("trust_remote_code"),
    revision: str | None = revision_option(),
) -> None:
    """Export a trained labeler to one ONNX graph that runs without PyTorch.

    The graph holds RUN's cut backbone, word pooling and head (dynamic batch, length and word
    count) and `OnnxLabeler` runs it without a torch model; the opset, the exporter, the
    graph's sha256 and the parity check go into ONNX/seqrep-onnx.json."""
    from seqrep.cli.options import inference_config, with_revision
    from seqrep.errors import ConfigError
    from seqrep.export.folder import read_meta
    from seqrep.export.onnx import export_onnx

    # export's one inference option, checked as every command checks its own; the export
    # itself loads on the CPU in fp32 (the graph's numerics), whatever --device would say
    settings = inference_config(locals())
    run = with_revision(run, revision)
    if opset < 14:
        raise ConfigError(f"--opset {opset}; expected 14 or more (attention needs it)")
    if not tolerance > 0:
        raise ConfigError(f"--tolerance {tolerance}; expected a positive number")
    out = export_onnx(run, onnx, opset, settings.trust_remote_code, check, tolerance,
                      overwrite=overwrite)
    meta = read_meta(out)  # bounded, as every JSON a command reads from a folder
    size = (out / meta["model_file"]).stat().st_size / 2**20
    line = f"{run} -> {out / meta['model_file']} ({size:.1f} MiB, opset {opset}, " \
           f"{meta['export_seconds']:.1f} s)"
    if "check" in meta:
        c = meta["check"]
        line += f"; checked on {c['words']} words: largest logit difference " \
                f"{c['max_abs_logit_diff']:.2g}, same greedy tags: {c['same_argmax']}"
    typer.echo(line, err=True)
    if int8:
        from seqrep.export.quantize import quantize_int8

        target = quantize_int8(out)
        typer.echo(f"int8 -> {target} ({target.stat().st_size / 2**20:.1f} MiB)", err=True)
