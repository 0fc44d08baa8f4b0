"""Imports point down only: evaluation stands apart; policies > teleop > robot (DESIGN.md)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# What each layer must never import.
FORBIDDEN = {
    "robot": {"teleop", "policies", "evaluation"},
    "teleop": {"policies", "evaluation"},
    "policies": {"evaluation"},
    "evaluation": {"robot", "teleop", "policies"},
}


def imported_packages(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def upward_imports() -> list[str]:
    problems = []
    for layer, forbidden in FORBIDDEN.items():
        for path in sorted((ROOT / layer).rglob("*.py")):
            bad = imported_packages(path) & forbidden
            problems.extend(f"{path.relative_to(ROOT)} imports {name}" for name in sorted(bad))
    return problems


def test_no_module_imports_upward():
    assert upward_imports() == []


def test_the_checker_catches_an_upward_import(tmp_path, monkeypatch):
    fake = tmp_path / "robot"
    fake.mkdir()
    (fake / "bad.py").write_text("from teleop.session import Session\nimport policies.runner\n")
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    for layer in ("teleop", "policies", "evaluation"):
        (tmp_path / layer).mkdir()
    assert upward_imports() == ["robot/bad.py imports policies", "robot/bad.py imports teleop"]


def test_each_layer_states_its_rule():
    for layer in FORBIDDEN:
        doc = ast.get_docstring(ast.parse((ROOT / layer / "__init__.py").read_text())) or ""
        assert "Layer rule" in doc, layer
