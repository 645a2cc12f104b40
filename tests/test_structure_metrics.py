"""scripts/structure_metrics.py on a small package written here, every figure worked out by
hand from the files below."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import load_script


@pytest.fixture(scope="module")
def metrics():
    return load_script("structure_metrics")


FILES = {
    "__init__.py": "",
    # a -> b, a -> d at module level (one inside try); a -> c inside a function
    "a.py": "from pkg import b\ntry:\n    import pkg.d\nexcept ImportError:\n    pass\n\n\n"
            "def late():\n    from . import c\n    return c\n",
    # b -> a and b -> sub.e (the most specific module named), both at module level
    "b.py": "import pkg.a\nfrom pkg.sub import e\nX = 1\n",
    # c -> a inside a method: a circle only once function-level imports count
    "c.py": "class K:\n    def m(self):\n        from pkg import a\n        return a\n",
    # d -> a only for the type checker: no edge in either graph
    "d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg import a\n",
    # sub -> sub.e (relative); e -> b (X is a name in b, not a module)
    "sub/__init__.py": "from .e import thing\n",
    "sub/e.py": "from ..b import X\nthing = X\n",
    # functions: long 81 lines, exact 80 (not over), Klass.method 88, its inner 86
    "f.py": "def long():\n" + "    x = 1\n" * 80
            + "def exact():\n" + "    x = 1\n" * 79
            + "class Klass:\n    def method(self):\n        def inner():\n"
            + "            y = 2\n" * 85 + "        return inner\n",
    "g.py": "x = 1\n" * 301,
    "h.py": "x = 1\n" * 401,
    "s.py": (
        "def f(mode, task, d, x, c):\n"
        "    if mode == 'lora':\n        pass\n"                       # finetune
        "    if mode in ('lora', 'qlora'):\n        pass\n"            # finetune
        "    if 'tokens' != task:\n        pass\n"                     # task
        "    if d == 'auto' and x == 'onnx-int8':\n        pass\n"     # decoding, runtime
        "    if x is 'torch':\n        pass\n"                         # `is`: not counted
        "    if x == 'document' == d:\n        pass\n"                 # context (one node)
        "    if x in {'greedy', 'sentence'}:\n        pass\n"          # decoding and context
        "    if x < 'full' or x == 'other':\n        pass\n"           # neither counted
        "    if (c.get('decoding') == 'greedy' or getattr(c, 'context') != 'sentence'\n"
        "            or c['runtime'] == 'torch'):\n        pass\n"   # each on its field
        "    return {'lora': 1}[mode]\n"),                             # a table: not counted
    "t.py": "def g(m):\n    return m not in ['full']\n",               # finetune, in a table
}


@pytest.fixture
def src(tmp_path: Path) -> Path:
    for name, text in FILES.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_module_and_function_sizes(metrics, src: Path) -> None:
    m = metrics.measure(src, "pkg")
    assert m["modules"] == 12
    assert m["modules_over_300"] == [{"module": "pkg.h", "lines": 401},
                                     {"module": "pkg.g", "lines": 301}]
    assert m["modules_over_400"] == [{"module": "pkg.h", "lines": 401}]
    assert m["functions_over_80"] == [
        {"function": "pkg.f:Klass.method", "line": 163, "lines": 88},
        {"function": "pkg.f:Klass.method.inner", "line": 164, "lines": 86},
        {"function": "pkg.f:long", "line": 1, "lines": 81},
    ]


def test_import_circles(metrics, src: Path) -> None:
    m = metrics.measure(src, "pkg")
    # module level: a->b, a->d, b->a, b->sub.e, sub->sub.e, sub.e->b; function: a->c, c->a
    assert m["import_edges"] == {"top": 6, "function": 2, "type_checking": 1}
    assert m["circles_top_level"] == [["pkg.a", "pkg.b", "pkg.sub.e"]]
    assert m["circles_with_function_imports"] == [["pkg.a", "pkg.b", "pkg.c", "pkg.sub.e"]]
    # d -> a for the type checker closes a -> d
    assert m["circles_all_imports"] == [["pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.sub.e"]]
    # pkg.sub and pkg.sub.e are one node, pkg.sub (its own sub -> sub.e edge dropped)
    assert m["circles_between_packages"] == [["pkg.a", "pkg.b", "pkg.c", "pkg.d", "pkg.sub"]]
    assert m["circles_between_packages_at_run_time"] == [["pkg.a", "pkg.b", "pkg.c", "pkg.sub"]]


def test_circles_between_packages_only(metrics, tmp_path: Path) -> None:
    """x -> p.one and p.two -> x: no module circle, but x and p import each other; y -> p.one
    and p.one -> y for the type checker only: a circle only with type-checking imports."""
    for name, text in {"__init__.py": "", "x.py": "from pkg.p import one\n",
                       "p/__init__.py": "",
                       "p/one.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                   "    import pkg.y\n",
                       "p/two.py": "import pkg.x\n", "y.py": "import pkg.p.one\n"}.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    m = metrics.measure(tmp_path, "pkg")
    assert m["circles_with_function_imports"] == []
    assert m["circles_all_imports"] == [["pkg.p.one", "pkg.y"]]
    assert m["circles_between_packages"] == [["pkg.p", "pkg.x", "pkg.y"]]
    assert m["circles_between_packages_at_run_time"] == [["pkg.p", "pkg.x"]]


def test_strategy_comparisons(metrics, src: Path) -> None:
    s = metrics.measure(src, "pkg", tables=("pkg.t",))["strategy_comparisons"]
    assert s["per_family"] == {"finetune": 2, "task": 1, "decoding": 3, "runtime": 2,
                               "context": 3}
    assert s["total"] == 11 and s["in_tables"] == 1
    assert s["per_file"] == {"pkg.s": {"finetune": 2, "task": 1, "decoding": 3, "runtime": 2,
                                       "context": 3}}
    assert [h["line"] for h in s["hits"] if h["family"] == "context"] == [12, 14, 18]
    # on fields: mode (twice), task, c.get('decoding'), getattr(c, 'context'), c['runtime']
    assert s["on_fields"] == {"total": 6, "per_family": {"finetune": 2, "task": 1,
                                                         "decoding": 1, "runtime": 1,
                                                         "context": 1}}
    everywhere = metrics.measure(src, "pkg")["strategy_comparisons"]
    assert everywhere["per_family"]["finetune"] == 3 and everywhere["total"] == 12
    assert everywhere["per_file"]["pkg.t"] == {"finetune": 1}


def test_main_prints_and_saves(metrics, src: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out" / "m.json"
    assert metrics.main([str(src), "--package", "pkg", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "modules over 300 lines: 2, over 400: 1" in printed
    assert "pkg.a <-> pkg.b <-> pkg.sub.e" in printed
    assert json.loads(out.read_text())["strategy_comparisons"]["total"] == 12
    assert metrics.main([str(tmp_path / "nowhere"), "--package", "pkg"]) == 2


def test_the_size_bounds_and_where_an_import_runs(metrics, tmp_path: Path) -> None:
    """Exactly 300 and 400 lines are not over (301 and 401 are); an import in the else of
    ``if TYPE_CHECKING`` runs at module level, one in a function defined under
    ``if TYPE_CHECKING`` is for the type checker only."""
    for name, text in {"__init__.py": "", "m300.py": "x = 1\n" * 300,
                       "m400.py": "x = 1\n" * 400, "m401.py": "x = 1\n" * 401,
                       "a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                               "    def f():\n        import pkg.b\nelse:\n    import pkg.c\n",
                       "b.py": "", "c.py": ""}.items():
        (tmp_path / "pkg").mkdir(exist_ok=True)
        (tmp_path / "pkg" / name).write_text(text)
    m = metrics.measure(tmp_path, "pkg")
    assert m["modules_over_300"] == [{"module": "pkg.m401", "lines": 401},
                                     {"module": "pkg.m400", "lines": 400}]
    assert m["modules_over_400"] == [{"module": "pkg.m401", "lines": 401}]
    assert m["import_edges"] == {"top": 1, "function": 0, "type_checking": 1}
