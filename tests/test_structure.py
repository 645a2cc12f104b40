"""The structure the features build on: strategies validated in the config, before any weight
is loaded; the CLI reaches every config field; the learning rate is a function of the step."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from typer.testing import CliRunner

from seqrep.cli.app import app
from seqrep.config import LabelerConfig, TrainConfig, parse_unmask
from seqrep.errors import ConfigError
from seqrep.train.state import TrainState, lr_factor


@pytest.mark.parametrize("bad", ["midle", "0,x", "", "-1", "1,-2"])
def test_unmask_is_validated_in_the_config(bad: str) -> None:
    with pytest.raises(ConfigError, match="unmask"):
        LabelerConfig(unmask=bad)


def test_unmask_values() -> None:
    assert parse_unmask("middle") == "middle"
    assert parse_unmask("5, 0,3,3") == (0, 3, 5)


def test_bad_strategy_fails_before_loading(monkeypatch) -> None:
    """A typo in a strategy stops before the backbone loader is ever called."""
    from seqrep.model import labeler as module

    def boom(*a, **k):  # noqa: ANN002, ANN003
        raise AssertionError("weights were loaded")

    monkeypatch.setattr(module, "load_backbone", boom)
    for options in ({"unmask": "midle"}, {"read": "first"}, {"subtoken": "middle"},
                    {"repetitions": -1}, {"exit_layer": 0}):
        with pytest.raises(ConfigError):
            module.SequenceLabeler.from_model("anything", labels=["O"], **options)


def test_cli_train_reaches_every_config_field() -> None:
    """Every LabelerConfig and TrainConfig field is a `seqrep train` option, with the field's
    own default (LabelerConfig.decoding is set by training, from TrainConfig.decoding)."""
    from seqrep.cli.train import _params

    params = {p.name: p.default for p in _params()}
    for config, skip in ((LabelerConfig, {"decoding"}), (TrainConfig, set())):
        for f in dataclasses.fields(config):
            if f.name in skip:
                continue
            assert f.name in params, f.name
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            if default != []:
                assert params[f.name].default == default, f.name
    help_text = CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "200"}).output
    for flag in ("--padding-side", "--subset-seed", "--eval-batch-size", "--train-split",
                 "--dropout", "--separator", "--no-final-norm", "--dtype", "--labels"):
        assert flag in help_text, flag


def test_lr_is_a_function_of_the_step() -> None:
    """Linear warm-up then linear decay, equal to torch's LambdaLR over the same steps."""
    total, warmup = 20, 0.2
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=0.5)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, total, warmup))
    for step in range(total):
        assert opt.param_groups[0]["lr"] == 0.5 * lr_factor(step, total, warmup)
        opt.step()
        sched.step()
    assert lr_factor(0, total, warmup) == 1 / 4 and lr_factor(4, total, warmup) == 1.0
    assert lr_factor(total, total, warmup) == 0.0


def test_train_state_round_trip() -> None:
    # best is the log record of the best evaluation, which always holds its f1
    state = TrainState(epoch=1, step=7, best_f1=0.5, best={"step": 5, "f1": 0.5}, tokens=99)
    assert TrainState.from_dict({**state.to_dict(), "unknown": 1}) == state


def _seqrep_imports() -> dict[str, set[str]]:
    """Every seqrep module and the seqrep modules it imports anywhere in its file (at the top,
    inside functions, under TYPE_CHECKING: a type is a dependency too), read with ast."""
    import ast
    from pathlib import Path

    import seqrep

    src = Path(seqrep.__file__).resolve().parents[1]
    files = {}
    for path in (src / "seqrep").rglob("*.py"):
        parts = path.relative_to(src).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def owner(name: str) -> str | None:  # seqrep.a.b.NAME -> the module seqrep.a.b
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for module, path in files.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        names: list[str] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from package levels up
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                names += [base] + [f"{base}.{a.name}" for a in node.names]
        edges[module] = {m for m in map(owner, filter(lambda n: n.startswith("seqrep"), names))
                         if m and m != module}
    return edges


def _circles(edges: dict[str, set[str]]) -> list[str]:
    """Every path that leads from a node's imports back to the node, as ``a -> b -> a``."""
    circles = []
    for start in sorted(edges):  # a path from a module's imports back to itself
        seen, todo = set(), [(start, (start,))]
        while todo:
            node, path = todo.pop()
            for nxt in sorted(edges.get(node, ())):
                if nxt == start:
                    circles.append(" -> ".join((*path, start)))
                elif nxt not in seen:
                    seen.add(nxt)
                    todo.append((nxt, (*path, nxt)))
    return circles


def test_no_import_circles() -> None:
    """No two seqrep modules import each other, directly or around a longer loop: each
    import points one way (data -> encode -> model -> train / evaluate / predict ...)."""
    edges = _seqrep_imports()
    assert "seqrep.model.labeler_config" in edges["seqrep.model.labeler"]
    circles = _circles(edges)
    assert not circles, "\n".join(circles)


def test_no_import_circles_between_subpackages() -> None:
    """The same between seqrep's subpackages and top-level modules (``seqrep.encode.batch``
    counts as ``seqrep.encode``): a layer never refers back to one above it, not even for a
    type annotation; what a lower layer needs of a config above it, it names as a Protocol."""
    groups: dict[str, set[str]] = {}
    for module, targets in _seqrep_imports().items():
        here = ".".join(module.split(".")[:2])
        groups.setdefault(here, set()).update(
            g for g in (".".join(t.split(".")[:2]) for t in targets) if g != here)
    assert "seqrep.encode" in groups["seqrep.model"]
    circles = _circles(groups)
    assert not circles, "\n".join(circles)


def _layers() -> tuple[str, ...]:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "hooks"))
    import layout

    return layout.LAYERS


def _part(module: str) -> str:
    """``seqrep.encode.batch`` -> ``encode``; the package's own ``__init__`` -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_import_points_down_the_layers() -> None:
    """Each part of seqrep (a subpackage, or a module at the root) imports only from itself
    and from the parts listed before it in the layout page's LAYERS, lazy imports and
    TYPE_CHECKING ones included; every part is listed, so a new one must take its place."""
    layers = _layers()
    rank = {part: i for i, part in enumerate(layers)}
    edges = _seqrep_imports()
    assert {_part(m) for m in edges} == set(layers)
    upward = sorted(f"{module} imports {target} ({_part(target)} is above {_part(module)})"
                    for module, targets in edges.items() for target in targets
                    if rank[_part(target)] > rank[_part(module)])
    assert not upward, "\n".join(upward)


def test_the_layer_check_sees_an_upward_import() -> None:
    """The check above on a made-up edge: model importing from predict is refused."""
    rank = {part: i for i, part in enumerate(_layers())}
    assert rank["predict"] > rank["model"] and rank["encode"] < rank["model"]
    assert rank["core"] < rank["data"] < rank["train"] < rank["labeling"] < rank["cli"]


def test_the_package_root_holds_at_most_eight_modules() -> None:
    from pathlib import Path

    import seqrep

    root = Path(seqrep.__file__).resolve().parent
    modules = sorted(p.name for p in root.glob("*.py")
                     if p.name not in {"__init__.py", "__main__.py"})
    assert len(modules) <= 8, modules


def test_the_layout_page_lists_every_module_with_its_docstring() -> None:
    """The generated page names each module once, with a description (its docstring's first
    sentence), and every part in order; checked against a walk of the source tree."""
    import sys
    from pathlib import Path

    import seqrep

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "hooks"))
    import layout

    root = Path(seqrep.__file__).resolve().parent
    page = layout.layout_markdown(root)
    rows, section = [], ""
    for line in page.splitlines():
        if line.startswith("### "):
            section = line.strip("#` /")
        elif line.startswith("| `"):
            rows.append((section, line.split("`")[1], line.split(" | ")[1]))
    expected = sorted((p.relative_to(root).parts[0], "/".join(p.relative_to(root).parts[1:]))
                      for p in root.rglob("*.py")
                      if p.name != "__init__.py" and p.parent != root)
    assert sorted((part, name) for part, name, _ in rows) == expected
    assert all(len(text) > 20 for *_, text in rows), rows
    numbered = [line.split("`")[1].rstrip("/").removesuffix(".py")
                for line in page.splitlines() if line[:1].isdigit()]
    assert numbered == list(layout.LAYERS)
    source = (Path(__file__).resolve().parents[1] / "docs" / "reference" / "layout.md")
    assert layout.MARKER in source.read_text(encoding="utf-8")
