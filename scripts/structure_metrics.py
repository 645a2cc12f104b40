"""Structure figures of a package, from its source alone (stdlib ``ast``; nothing is imported):
the figures issue 22 asks for before and after.

- modules over 300 and over 400 lines (lines as ``wc -l`` counts them);
- functions and methods over 80 lines (``end_lineno - lineno + 1`` of the ``def``; decorators
  are not counted), named ``module:Class.function``;
- import circles among the package's modules: the graph of ``import``/``from ... import``
  statements, edges to the most specific module named (``from seqrep.data import tags`` is an
  edge to ``seqrep.data.tags`` when that module exists, else to ``seqrep.data``; a parent
  package's ``__init__`` is not counted as imported). Imports at module level (inside ``if``
  and ``try`` too), inside functions and under ``if TYPE_CHECKING:`` are three separate graphs;
  circles are the strongly connected components of more than one module, reported for the
  module-level graph, for module-level plus function-level imports, for all three together,
  and between the package's subpackages and top-level modules (``seqrep.encode.pipeline``
  counts as ``seqrep.encode``; imports inside one are dropped) with and without the
  type-checking imports;
- comparisons on strategy names: ``ast.Compare`` nodes with an ``==``, ``!=``, ``in`` or
  ``not in`` whose operands include a string literal naming a strategy (directly, or inside a
  tuple, list or set literal), counted once per node and family, per file. Modules passed with
  ``--table`` (the strategy tables themselves) are counted apart. A literal such as ``"auto"``
  or ``"full"`` is also used for other things (a device, an exit layer, an unmask value), so
  every hit is listed with its line in the JSON output, and the hits whose other side reads a
  strategy's own name (``cfg.finetune``, ``mode``, ``r["task"]``, ``getattr(c, "context")``;
  see ``FIELDS``) are counted apart as ``on_fields``.

    python scripts/structure_metrics.py [SRC] [--package seqrep] [--json OUT.json]
        [--table seqrep.model.modes ...]
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path
from typing import Any

FAMILIES: dict[str, frozenset[str]] = {
    "finetune": frozenset({"full", "lora", "qlora", "frozen"}),
    "task": frozenset({"tokens", "spans"}),
    "decoding": frozenset({"greedy", "constrained", "auto"}),
    "runtime": frozenset({"torch", "onnx", "onnx-int8"}),
    "context": frozenset({"sentence", "document"}),
}
COMPARE_OPS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)
# The names a strategy is read through (a variable, an attribute, a key): a comparison whose
# other side is one of these is on a strategy for sure, not on another "auto" or "full".
FIELDS: dict[str, frozenset[str]] = {
    "finetune": frozenset({"finetune", "mode"}),
    "task": frozenset({"task"}),
    "decoding": frozenset({"decoding", "method"}),
    "runtime": frozenset({"runtime"}),
    "context": frozenset({"context"}),
}


def module_name(path: Path, src: Path) -> str:
    """``src/seqrep/data/tags.py`` -> ``seqrep.data.tags``; a package's ``__init__.py`` is the
    package."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def load(src: Path, package: str) -> dict[str, tuple[Path, str, ast.Module]]:
    """module name -> (file, text, tree) for every ``.py`` file of the package."""
    out = {}
    for path in sorted((src / package).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        out[module_name(path, src)] = (path, text, ast.parse(text, str(path)))
    return out


def line_count(text: str) -> int:
    """Lines as ``wc -l`` counts them (newline characters)."""
    return text.count("\n")


def long_functions(name: str, tree: ast.Module, limit: int) -> list[dict[str, Any]]:
    """Every function or method (nested ones too) over ``limit`` lines."""
    found: list[dict[str, Any]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                qual = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lines = child.end_lineno - child.lineno + 1
                    if lines > limit:
                        found.append({"function": f"{name}:{qual}", "line": child.lineno,
                                      "lines": lines})
                visit(child, qual + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement with where it runs: ``top``, ``function`` or ``type_checking``."""
    out: list[tuple[ast.Import | ast.ImportFrom, str]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append((child, where))
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, "function" if where == "top" else where)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), "type_checking")
                for stmt in child.orelse:
                    visit(ast.Module(body=[stmt], type_ignores=[]), where)
            else:
                visit(child, where)

    visit(tree, "top")
    return out


def _resolve(name: str, modules: set[str]) -> str | None:
    """The most specific module of the package that ``name`` (dotted) is or lies in."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def import_targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom,
                   modules: set[str]) -> set[str]:
    """The package's modules one import statement names."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            here = module.split(".") if is_package else module.split(".")[:-1]
            here = here[: len(here) - (node.level - 1)]
            base = ".".join(here + ([base] if base else []))
        names = [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
    targets = {_resolve(n, modules) for n in names}
    return {t for t in targets if t is not None and t != module}


def import_graphs(parsed: dict[str, tuple[Path, str, ast.Module]]
                  ) -> dict[str, dict[str, set[str]]]:
    """``{"top" | "function" | "type_checking": {module: imported modules}}``."""
    modules = set(parsed)
    graphs: dict[str, dict[str, set[str]]] = {
        k: {m: set() for m in modules} for k in ("top", "function", "type_checking")}
    for name, (path, _, tree) in parsed.items():
        is_package = path.name == "__init__.py"
        for node, where in _imports(tree):
            graphs[where][name] |= import_targets(name, is_package, node, modules)
    return graphs


def package_graph(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """``graph`` between the package's subpackages and top-level modules: ``seqrep.a.b.c`` is
    ``seqrep.a``; an import inside one of them is dropped."""
    depth = package.count(".") + 2

    def group(name: str) -> str:
        return ".".join(name.split(".")[:depth])

    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        here = group(module)
        out.setdefault(here, set()).update(
            g for g in map(group, targets) if g != here)
    return out


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan's algorithm, iterative),
    each sorted, the list sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def _literals(node: ast.expr) -> list[str]:
    """The string literals an operand is: itself, or the items of a tuple/list/set literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _field(node: ast.expr) -> str | None:
    """The name an operand reads: ``x``, ``a.x``, ``a["x"]``, ``a.get("x")``,
    ``getattr(a, "x")``; ``None`` for anything else."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value if isinstance(node.slice.value, str) else None
    if isinstance(node, ast.Call):
        func, args = node.func, node.args
        key = None
        if isinstance(func, ast.Attribute) and func.attr == "get" and args:
            key = args[0]
        elif isinstance(func, ast.Name) and func.id == "getattr" and len(args) > 1:
            key = args[1]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
    return None


def strategy_comparisons(name: str, text: str, tree: ast.Module) -> list[dict[str, Any]]:
    """One entry per (Compare node, family) whose operands hold a literal of that family."""
    hits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        if not any(isinstance(op, COMPARE_OPS) for op in node.ops):
            continue
        operands = [node.left, *node.comparators]
        literals = {s for operand in operands for s in _literals(operand)}
        fields = {_field(operand) for operand in operands}
        for family, names in FAMILIES.items():
            matched = sorted(literals & names)
            if matched:
                hits.append({"module": name, "line": node.lineno, "family": family,
                             "literals": matched, "on_field": bool(fields & FIELDS[family]),
                             "code": ast.get_source_segment(text, node) or ""})
    return hits


def measure(src: Path, package: str = "seqrep", tables: tuple[str, ...] = (),
            function_limit: int = 80) -> dict[str, Any]:
    """All the figures, as a JSON-ready dict."""
    parsed = load(src, package)
    lines = {name: line_count(text) for name, (_, text, _) in parsed.items()}
    functions = sorted((f for name, (_, _, tree) in parsed.items()
                        for f in long_functions(name, tree, function_limit)),
                       key=lambda f: (-f["lines"], f["function"]))
    graphs = import_graphs(parsed)
    both = {m: graphs["top"][m] | graphs["function"][m] for m in graphs["top"]}
    every = {m: both[m] | graphs["type_checking"][m] for m in both}
    hits = [h for name, (_, text, tree) in sorted(parsed.items())
            for h in strategy_comparisons(name, text, tree)]
    outside = [h for h in hits if h["module"] not in tables]
    per_family = {f: sum(h["family"] == f for h in outside) for f in FAMILIES}
    on_fields = {f: sum(h["family"] == f and h["on_field"] for h in outside) for f in FAMILIES}
    per_file: dict[str, dict[str, int]] = {}
    for h in outside:
        counts = per_file.setdefault(h["module"], {})
        counts[h["family"]] = counts.get(h["family"], 0) + 1
    big = sorted(((n, c) for n, c in lines.items() if c > 300), key=lambda x: (-x[1], x[0]))
    return {
        "package": package,
        "modules": len(parsed),
        "modules_over_300": [{"module": n, "lines": c} for n, c in big],
        "modules_over_400": [{"module": n, "lines": c} for n, c in big if c > 400],
        f"functions_over_{function_limit}": functions,
        "import_edges": {k: sum(len(v) for v in g.values()) for k, g in graphs.items()},
        "circles_top_level": circles(graphs["top"]),
        "circles_with_function_imports": circles(both),
        "circles_all_imports": circles(every),
        "circles_between_packages": circles(package_graph(every, package)),
        "circles_between_packages_at_run_time": circles(package_graph(both, package)),
        "strategy_comparisons": {
            "tables": list(tables),
            "total": len(outside),
            "per_family": per_family,
            "per_file": dict(sorted(per_file.items())),
            "in_tables": len(hits) - len(outside),
            "on_fields": {"total": sum(on_fields.values()), "per_family": on_fields},
            "hits": outside,
        },
    }


def summary(m: dict[str, Any]) -> str:
    """The figures as a few readable lines."""
    key = next(k for k in m if k.startswith("functions_over_"))
    out = [f"{m['package']}: {m['modules']} modules",
           f"modules over 300 lines: {len(m['modules_over_300'])}, over 400: "
           f"{len(m['modules_over_400'])}"]
    out += [f"  {x['lines']:5d} {x['module']}" for x in m["modules_over_300"]]
    out.append(f"{key.replace('_', ' ')} lines: {len(m[key])}")
    out += [f"  {f['lines']:5d} {f['function']} (line {f['line']})" for f in m[key]]
    for what, field in (("(module-level imports)", "circles_top_level"),
                        ("(with imports inside functions)", "circles_with_function_imports"),
                        ("(with imports inside functions and for type checking)",
                         "circles_all_imports"),
                        ("between subpackages (all imports)", "circles_between_packages"),
                        ("between subpackages (without type-checking imports)",
                         "circles_between_packages_at_run_time")):
        out.append(f"import circles {what}: {len(m[field])}")
        out += ["  " + " <-> ".join(c) for c in m[field]]
    s = m["strategy_comparisons"]
    fam = ", ".join(f"{k} {v}" for k, v in s["per_family"].items())
    tables = f" (in the tables {', '.join(s['tables'])}: {s['in_tables']})" if s["tables"] else ""
    out.append(f"strategy-name comparisons: {s['total']} ({fam}){tables}")
    fam = ", ".join(f"{k} {v}" for k, v in s["on_fields"]["per_family"].items())
    out.append(f"  of them on a strategy's own field: {s['on_fields']['total']} ({fam})")
    for name, counts in s["per_file"].items():
        out.append(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("src", nargs="?", default="src", type=Path,
                        help="the folder holding the package (default: src)")
    parser.add_argument("--package", default="seqrep")
    parser.add_argument("--json", type=Path, help="also write the figures here as JSON")
    parser.add_argument("--table", action="append", default=[],
                        help="a module holding a strategy table (its comparisons are counted "
                             "apart); repeatable")
    args = parser.parse_args(argv)
    if not (args.src / args.package).is_dir():
        print(f"{args.src / args.package}: no such package folder", file=sys.stderr)
        return 2
    figures = measure(args.src, args.package, tuple(args.table))
    print(summary(figures))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
