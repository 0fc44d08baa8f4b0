"""Imports point down only: evaluation stands apart; policies > teleop > robot (docs/architecture.md).

Three exceptions, each a language every command speaks, evaluation's too, and each importing nothing
of the product but each other (`SHARED`): the command-line shell, robot/shell/ (help, option names,
the parser, the exit codes, the errors every command prints); the rig's vocabulary, robot/joints.py
(joint names, sides, camera roles); and the layout of a dataset folder (`DATASET_LAYOUT`): its feature keys
(teleop/dataset/vocabulary.py), the facts we keep beside it, whether they still belong to their
episodes, whether LeRobot can open it at all, the one reader of its metadata and data files
(teleop/dataset/reader.py, which the replay and the judge read through) with the errors it raises,
the trim a curation proposes from an episode's motion (the review page proposes what so101-edit
would), and where a curated dataset's episodes came from (so the scores of whole ones follow them).
The lists live in tests/support/layering.py, which the evaluation layer's own test reads too.

Also: no import circles among the product's modules (imports inside functions and under
TYPE_CHECKING count), and nothing outside robot/virtual/ imports the emulator, only its light
front (`EMULATOR_FRONT`: settings, client, launcher, pre-calibrated files, the scripted hands of
calibration, motor setup and port discovery). The allow-list,
`EMULATOR_USERS`, is the three modules that run the emulator on purpose: robot/rig_ports.py,
robot/commands/sim.py and robot/commands/fit.py. Tests may import anything. And no product file grows past `MAX_LINES`.

LeRobot sits behind a few adapter modules (`LEROBOT_ADAPTERS`): only they import `lerobot`, so an
upgrade of LeRobot is checked there, and everything else speaks the product's own types.
"""

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

from tests.support.layering import SHARED

ROOT = Path(__file__).resolve().parents[1]
# What each layer must never import.
FORBIDDEN = {
    "robot": {"teleop", "policies", "evaluation"},
    "teleop": {"policies", "evaluation"},
    "policies": {"evaluation"},
    "evaluation": {"robot", "teleop", "policies"},
}
PRODUCT = tuple(FORBIDDEN)
MAX_LINES = 400  # one concept per file; past ~300 lines a file asks to be split along a seam

# The virtual rig's front: what code outside robot/virtual/ may import. Its settings (parsed with
# every rig file), the control client, the launcher (it starts the emulator in a child process,
# importing none of it), a pre-calibrated rig's calibration and the joint profiles it comes from,
# and the scripted person that calibrates through the client. Everything else under
# robot/virtual/ is the emulator (bus, motors, physics, operator, server).
EMULATOR_FRONT = {
    "robot.virtual",
    "robot.virtual.config",
    "robot.virtual.client",
    "robot.virtual.launcher",
    "robot.virtual.precalibrated",
    "robot.virtual.profiles",
    "robot.virtual.calibration_operator",
    "robot.virtual.setup_operator",
}
# The only modules outside robot/virtual/ that run the emulator on purpose: so101-sim serves it
# in-process, and rig_ports finds the arms' ports (a running rig, or one it starts) and writes a
# pre-calibrated rig's files from the emulator's own model. Tests may import the emulator too.
# so101-fit replays recordings through the emulated follower to fit its servo model (robot/virtual/twin/).
EMULATOR_USERS = {"robot/rig_ports.py", "robot/commands/sim.py", "robot/commands/fit.py"}
# The only product files and folders that import lerobot, each with the part of LeRobot it wraps.
LEROBOT_ADAPTERS = {
    "robot/feetech/": "the Feetech motor bus, the SO follower and leader classes, calibration files",
    "robot/lerobot_edge.py": "LeRobot's home folder and its video encoder settings",
    "teleop/dataset/lerobot_adapter.py": "the dataset writer (LeRobotDataset, its streaming encoder)",
    "teleop/dataset/lerobot_format.py": "the dataset format: version, default features, metadata, the hub",
    "teleop/dataset/curate/lerobot_tools.py": "its dataset tools (delete, split, merge) and writer, for curation",
    "policies/lerobot_policy.py": "policy configs, models, processors, RTC's latency tracker",
    "policies/engines/remote_wire.py": "the async-inference transport (gRPC messages, pickled payloads)",
    "policies/testing/": "tiny ACT and SmolVLA checkpoints built offline, for tests and the demo",
    "evaluation/testing/": "tiny synthetic datasets written offline, for tests and the demo",
}


def _shared(module: str) -> bool:
    return any(module == shared or module.startswith(f"{shared}.") for shared in SHARED)


def imported_packages(path: Path) -> set[str]:
    """The top-level packages `path` imports (the shared modules, `SHARED`, not counted as their layer)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules.add(node.module)
    return {module.split(".")[0] for module in modules if not _shared(module)}


def upward_imports() -> list[str]:
    problems = []
    for layer, forbidden in FORBIDDEN.items():
        for path in sorted((ROOT / layer).rglob("*.py")):
            bad = imported_packages(path) & forbidden
            problems.extend(f"{path.relative_to(ROOT)} imports {name}" for name in sorted(bad))
    return problems


# --- the module import graph --------------------------------------------------------------------


def product_modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the product (a package is its __init__)."""
    modules = {}
    for layer in PRODUCT:
        for path in sorted((ROOT / layer).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _known(dotted: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of `dotted` that is a product module (`a.b.name` -> `a.b`), if any."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in modules:
            return candidate
    return None


def _imported_modules(tree: ast.AST) -> Iterator[tuple[str, list[str], int]]:
    """(module, names, level) of every import statement, including those inside functions and
    under TYPE_CHECKING: each of them ties the two modules together as much as a top-level one."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, [], 0
        elif isinstance(node, ast.ImportFrom):
            yield node.module or "", [alias.name for alias in node.names], node.level


def import_graph() -> dict[str, set[str]]:
    """Module -> the product modules it imports.

    `from pkg import name` is an edge to the submodule `pkg.name` when there is one, else to
    `pkg` itself; relative imports are resolved against the importing module's package.
    """
    modules = product_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for module, names, level in _imported_modules(ast.parse(path.read_text(), filename=str(path))):
            if level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - level + 1])
                module = f"{base}.{module}" if module else base
            for imported in names or [""]:
                submodule = f"{module}.{imported}"
                target = submodule if imported and submodule in modules else _known(module, modules)
                if target is not None and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for succ in graph.get(todo.pop(), ()):
            if succ not in seen:
                seen.add(succ)
                todo.append(succ)
    return seen


def import_circles() -> list[list[str]]:
    """Groups of product modules that import each other, directly or around a loop.

    Each group is a strongly connected component of the import graph: the modules that can reach
    one another (no self-edges are recorded, so a module that reaches itself is in a group of 2+).
    """
    graph = import_graph()
    reach = {node: _reachable(graph, node) for node in graph}
    circles = {tuple(sorted(m for m in reach[n] if n in reach[m])) for n in graph if n in reach[n]}
    return sorted(list(circle) for circle in circles)


def _virtual(module: str) -> bool:
    return module == "robot.virtual" or module.startswith("robot.virtual.")


def emulator_imports() -> list[str]:
    """Imports of the emulator from outside robot/virtual/, and from the front into the emulator."""
    problems = []
    modules = product_modules()
    for name, edges in sorted(import_graph().items()):
        relative = modules[name].relative_to(ROOT).as_posix()
        if relative in EMULATOR_USERS or (_virtual(name) and name not in EMULATOR_FRONT):
            continue
        for target in sorted(edges):
            if _virtual(target) and target not in EMULATOR_FRONT:
                problems.append(f"{relative} imports the emulator ({target})")
    return problems


def lerobot_importers() -> set[str]:
    """Product files (relative paths) with any import of lerobot, inside functions too."""
    found = set()
    for path in product_modules().values():
        imports = _imported_modules(ast.parse(path.read_text(), filename=str(path)))
        if any(level == 0 and module.split(".")[0] == "lerobot" for module, _, level in imports):
            found.add(path.relative_to(ROOT).as_posix())
    return found


def _adapter(relative: str) -> str | None:
    return next((entry for entry in LEROBOT_ADAPTERS if relative == entry or relative.startswith(entry)), None)


def long_files() -> list[str]:
    """Product files over `MAX_LINES` lines."""
    problems = []
    for path in product_modules().values():
        lines = len(path.read_text().splitlines())
        if lines > MAX_LINES:
            problems.append(f"{path.relative_to(ROOT)}: {lines} lines")
    return sorted(problems)


def _plant(root: Path, files: dict[str, str]) -> None:
    for layer in PRODUCT:
        (root / layer).mkdir(exist_ok=True)
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


# --- the tests ----------------------------------------------------------------------------------


def test_no_module_imports_upward():
    assert upward_imports() == []


def test_the_shared_modules_import_nothing_of_the_product_but_themselves():
    # evaluation/ may import robot/shell/ and the dataset layout only because they stand on the
    # standard library, draccus, numpy and pyarrow.
    outside = {
        f"{name} imports {target}"
        for name, edges in import_graph().items()
        if _shared(name)
        for target in edges
        if not _shared(target)
    }
    assert outside == set()


def test_no_module_imports_a_command():
    # A command's module is its wiring; what two commands share lives below them (teleop/recording_run.py,
    # policies/runner.py, teleop/dataset_options.py), never in one of them.
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    commands = {target.partition(":")[0] for target in scripts.values()}
    importers = sorted(
        f"{name} imports {target}" for name, edges in import_graph().items() for target in edges & commands
    )
    assert importers == []


def test_command_mains_are_wiring_only():
    # parse -> build -> run -> report: every command's main() short, its module small, no `# type: ignore`.
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    for target in scripts.values():
        relative = target.partition(":")[0].replace(".", "/") + ".py"
        text = (ROOT / relative).read_text()
        assert "type: ignore" not in text, relative
        tree = ast.parse(text)
        main = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main")
        assert main.end_lineno - main.lineno < 45, f"{relative}: main() is {main.end_lineno - main.lineno} lines"
        assert len(text.splitlines()) < 300, relative


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


def test_no_import_circles():
    assert import_circles() == []


def test_the_checker_catches_import_circles(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    _plant(
        tmp_path,
        {
            # Module level one way, inside a function the other.
            "robot/a.py": "from robot.b import B\n",
            "robot/b.py": "def f():\n    from robot import a\n",
            # Relative one way, under TYPE_CHECKING the other.
            "teleop/c.py": "from .d import D\n",
            "teleop/d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import teleop.c\n",
            # Around a loop of three.
            "policies/e.py": "import policies.f\n",
            "policies/f.py": "from policies.g import G\n",
            "policies/g.py": "from policies import e\n",
            # A package importing its children is fine...
            "evaluation/fine/__init__.py": "from evaluation.fine.leaf import LEAF\n",
            "evaluation/fine/leaf.py": "LEAF = 1\n",
            # ...unless a child imports the package back.
            "evaluation/back/__init__.py": "from .child import CHILD\nNAME = 'back'\n",
            "evaluation/back/child.py": "from evaluation.back import NAME\nCHILD = NAME\n",
        },
    )
    assert import_circles() == [
        ["evaluation.back", "evaluation.back.child"],
        ["policies.e", "policies.f", "policies.g"],
        ["robot.a", "robot.b"],
        ["teleop.c", "teleop.d"],
    ]


def test_only_the_virtual_rig_imports_the_emulator():
    assert emulator_imports() == []


def test_the_checker_catches_an_emulator_import(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    _plant(
        tmp_path,
        {
            "robot/virtual/__init__.py": "",
            "robot/virtual/config.py": "",
            "robot/virtual/bus.py": "",
            "robot/virtual/client.py": "def f():\n    from robot.virtual.bus import VirtualBus\n",  # the front
            "robot/virtual/server.py": "from robot.virtual import bus\n",  # the emulator itself: fine
            "robot/config.py": "from robot.virtual.config import VirtualRigConfig\n",  # the front: fine
            "robot/rig_ports.py": "from robot.virtual.server import serve\n",  # allowed to run it
            "robot/arm.py": "from robot.virtual.bus import ErrorBit\n",
            "teleop/session.py": "from robot.virtual import server\n",
        },
    )
    assert emulator_imports() == [
        "robot/arm.py imports the emulator (robot.virtual.bus)",
        "robot/virtual/client.py imports the emulator (robot.virtual.bus)",
        "teleop/session.py imports the emulator (robot.virtual.server)",
    ]


def test_only_the_adapters_import_lerobot():
    importers = lerobot_importers()
    assert sorted(relative for relative in importers if _adapter(relative) is None) == []
    # And the list stays true: every adapter named there still imports LeRobot.
    assert sorted(set(LEROBOT_ADAPTERS) - {_adapter(relative) for relative in importers}) == []


def test_the_checker_catches_a_stray_lerobot_import(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    _plant(
        tmp_path,
        {
            "robot/feetech/so101_arm.py": "from lerobot.robots.so_follower import SOFollower\n",
            "teleop/session.py": "def f():\n    from lerobot.utils.constants import HF_LEROBOT_HOME\n",
            "policies/predictor.py": "import lerobot.policies\n",
            "policies/fine.py": "from .lerobot import x\nimport lerobotics\n",  # not LeRobot
        },
    )
    assert sorted(lerobot_importers()) == ["policies/predictor.py", "robot/feetech/so101_arm.py", "teleop/session.py"]
    assert [relative for relative in sorted(lerobot_importers()) if _adapter(relative) is None] == [
        "policies/predictor.py",
        "teleop/session.py",
    ]


def test_no_product_file_is_too_long():
    assert long_files() == []


def test_the_checker_catches_a_long_file(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    _plant(tmp_path, {"robot/short.py": "x = 1\n" * MAX_LINES, "teleop/long.py": "x = 1\n" * (MAX_LINES + 1)})
    assert long_files() == [f"teleop/long.py: {MAX_LINES + 1} lines"]
