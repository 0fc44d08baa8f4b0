"""The evaluation layer reads datasets only: no robot/teleop/policies imports; lerobot only at the edge.

The exceptions are what every command speaks: the command-line shell, robot/shell/, the rig's
vocabulary, robot/joints.py, and the layout of a dataset folder with its feature keys
(tests/support/layering.py lists them); tests/test_layers.py checks that they import nothing else of
the product.
"""

import ast
from pathlib import Path

from tests.support.layering import SHARED

EVALUATION = Path(__file__).resolve().parents[2] / "evaluation"
FORBIDDEN = ("robot", "teleop", "policies")
# The dataset itself is read by teleop/dataset/reader.py (a shared leaf, through LeRobot's metadata
# reader in teleop/dataset/lerobot_format.py); evaluation/ imports lerobot only to write test datasets.
LEROBOT_ADAPTERS = {"testing/synthetic_dataset.py"}
# Besides evaluation/judge/ itself: the judge command and what it prints (its tables and progress bar).
JUDGE_USERS = {"commands/judge.py", "commands/judge_output.py"}


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
            if any(name == shared or name.startswith(f"{shared}.") for shared in SHARED):
                continue
            assert top not in FORBIDDEN, f"{rel} imports {name}: evaluation must not import {FORBIDDEN}"
            if top == "lerobot":
                assert rel in LEROBOT_ADAPTERS, f"{rel} imports lerobot; only {sorted(LEROBOT_ADAPTERS)} may"


def test_only_the_judge_command_imports_the_judge_package():
    # The top level is the shared core (store, rubric, episode source...) that review/ and report/ read
    # too; if it imported evaluation.judge, the review page would load the judge's client and prompt.
    for path in sorted(EVALUATION.rglob("*.py")):
        rel = path.relative_to(EVALUATION).as_posix()
        if rel.startswith("judge/") or rel in JUDGE_USERS:
            continue
        judge_imports = sorted(
            n for n in _imports(path) if n == "evaluation.judge" or n.startswith("evaluation.judge.")
        )
        assert not judge_imports, f"{rel} imports {judge_imports}: only {sorted(JUDGE_USERS)} may use evaluation.judge"


def test_library_modules_do_not_print():
    for path in sorted(EVALUATION.rglob("*.py")):
        if "commands" in path.parts:
            continue
        calls = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Call)]
        assert not any(isinstance(c.func, ast.Name) and c.func.id == "print" for c in calls), path
