"""pyproject.toml declares compatible ranges; constraints.txt holds the exact set verified.

A user installs seqrep into an environment that already has torch, transformers or numpy: exact
pins there would replace them or fail. CI must still test exactly what was verified, so every
requirement of every extra is pinned in constraints.txt and lies inside its declared range.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _constraints() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not NAME==VERSION"
            pins[canonicalize_name(name)] = Version(version)
    return pins


def _requirements() -> list[Requirement]:
    reqs = [Requirement(r) for r in PROJECT["dependencies"]]
    for extra, items in PROJECT["optional-dependencies"].items():
        reqs += [Requirement(r) for r in items if not r.startswith("seqrep-labeler[")]
        assert items, f"extra {extra} is empty"
    return reqs


def test_core_is_ranges_not_pins() -> None:
    for req in _requirements():
        ops = {spec.operator for spec in req.specifier}
        assert "==" not in ops, f"{req} is pinned; declare a range"
        assert ">=" in ops, f"{req} has no lower bound (the oldest verified version)"


def test_every_requirement_is_pinned_in_constraints_inside_its_range() -> None:
    pins = _constraints()
    for req in _requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is not pinned in constraints.txt"
        assert req.specifier.contains(pins[name]), f"constraints.txt {name}=={pins[name]} " \
                                                   f"lies outside {req}"
        lower = min(Version(s.version) for s in req.specifier if s.operator == ">=")
        assert lower == pins[name], f"{req}: the lower bound is the verified {pins[name]}"
        # the upper bound, where there is one, is the next major release after the pin
        for spec in req.specifier:
            if spec.operator == "<":
                assert Version(spec.version) == Version(f"{pins[name].major + 1}"), str(req)


def test_extras_the_guide_names_exist_and_all_holds_them() -> None:
    extras = PROJECT["optional-dependencies"]
    assert {"serve", "spacy", "onnx", "qlora", "lab", "gguf", "dev", "all"} <= set(extras)
    held = Requirement(extras["all"][0]).extras
    assert held == set(extras) - {"all", "dev", "docs"}
    # the lab's plots and statistics and the GGUF reader stay out of the core
    core = {canonicalize_name(Requirement(r).name) for r in PROJECT["dependencies"]}
    assert not core & {"matplotlib", "scipy", "pyyaml", "gguf"}
