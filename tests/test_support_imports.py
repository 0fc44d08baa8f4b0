"""Tests share helpers through tests/support/, never by importing another test module or a conftest.py.

A test module imported by another runs its module-level code twice under two names and ties the two
files together; a conftest.py is pytest's to load. Folder-local helpers (`*_testkit.py`, `helpers.py`)
are fine; tests/support/ imports nothing of tests/ but itself.
"""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _imports(path: Path) -> list[tuple[str, set[str]]]:
    """(module, what it may name) per import of tests/: `from tests.a import b` may name tests.a.b too."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((alias.name, {alias.name}) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}))
    return [(module, names) for module, names in found if module == "tests" or module.startswith("tests.")]


def _is_test_module(dotted: str) -> bool:
    last = dotted.rsplit(".", 1)[-1]
    return last.startswith("test_") or last == "conftest"


def bad_imports(root: Path = TESTS) -> list[str]:
    """`<file> imports <module>` for each import of a test module or conftest, and of tests/ from support/."""
    problems = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        in_support = relative.startswith("support/")
        for module, names in _imports(path):
            problems.extend(f"tests/{relative} imports {name}" for name in sorted(names) if _is_test_module(name))
            if in_support and not (module == "tests.support" or module.startswith("tests.support.")):
                problems.append(f"tests/{relative} imports {module}")
    return sorted(problems)


def test_no_test_imports_another_test_module_or_a_conftest():
    assert bad_imports() == []


def test_the_checker_catches_each_kind(tmp_path):
    (tmp_path / "support").mkdir()
    (tmp_path / "robot").mkdir()
    (tmp_path / "support" / "fine.py").write_text("from tests.support.clocks import ManualClock\n")
    (tmp_path / "support" / "reaches.py").write_text("from tests.robot.helpers import thing\n")
    (tmp_path / "robot" / "test_a.py").write_text("from tests.robot.test_b import helper\nimport tests.support\n")
    (tmp_path / "robot" / "test_c.py").write_text("from tests.robot import conftest\nfrom tests.robot import helpers\n")
    assert bad_imports(tmp_path) == [
        "tests/robot/test_a.py imports tests.robot.test_b",
        "tests/robot/test_c.py imports tests.robot.conftest",
        "tests/support/reaches.py imports tests.robot.helpers",
    ]
