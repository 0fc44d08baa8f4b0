"""The evaluation layer reads datasets only: no robot/teleop/policies imports; lerobot only at the edge."""

import ast
from pathlib import Path

EVALUATION = Path(__file__).resolve().parents[2] / "evaluation"
FORBIDDEN = ("robot", "teleop", "policies")
LEROBOT_ADAPTERS = {"episode_source.py", "testing/synthetic_dataset.py"}


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_upward_imports_and_lerobot_only_in_adapters():
    files = sorted(EVALUATION.rglob("*.py"))
    assert len(files) > 20
    for path in files:
        rel = path.relative_to(EVALUATION).as_posix()
        for name in _imports(path):
            top = name.split(".")[0]
            assert top not in FORBIDDEN, f"{rel} imports {name}: evaluation must not import {FORBIDDEN}"
            if top == "lerobot":
                assert rel in LEROBOT_ADAPTERS, f"{rel} imports lerobot; only {sorted(LEROBOT_ADAPTERS)} may"


def test_library_modules_do_not_print():
    for path in sorted(EVALUATION.rglob("*.py")):
        if "commands" in path.parts:
            continue
        calls = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)]
        assert not any(isinstance(c.func, ast.Name) and c.func.id == "print" for c in calls), path
