"""Each name of the rig and of its datasets is defined in one module, and every other module imports it.

The dataset's feature keys live in teleop/dataset/vocabulary.py; the rig's joint names, sides and
camera roles in robot/joints.py (docs/architecture.md, "Where each concept lives"). A module that
spells one of them again, e.g. `STATE_KEY = "observation.state"` or its own `class Side`, drifts
apart from the home the day the home changes: this scan of the product's modules finds such copies.

A dataset's files have one reader too: outside the dataset package (teleop/dataset/), no module
opens a parquet file; the replay and the judge read through teleop/dataset/reader.py.
"""

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("robot", "teleop", "policies", "evaluation")
CAMERA_ROLES = frozenset({"left_wrist", "right_wrist", "overhead"})
BODY_JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_roll")
JOINT_NAMES = (*BODY_JOINTS, "gripper")
# Each name -> the one module that defines it.
HOMES = {
    "observation.state": "teleop/dataset/vocabulary.py",
    "action (a *_KEY)": "teleop/dataset/vocabulary.py",
    "observation.images.": "teleop/dataset/vocabulary.py",
    "gripper": "robot/joints.py",
    "the joint names": "robot/joints.py",
    "the camera roles": "robot/joints.py",
    "class Side": "robot/joints.py",
}


def _strings(node: ast.expr) -> tuple[str, ...] | None:
    """The strings of a tuple or list of string literals (None: not one)."""
    if not isinstance(node, ast.Tuple | ast.List):
        return None
    items = [item.value for item in node.elts if isinstance(item, ast.Constant) and isinstance(item.value, str)]
    return tuple(items) if len(items) == len(node.elts) else None


def _concept(target: str, value: ast.expr) -> str | None:
    """Which of the one-home names `target = value` defines, if any."""
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        text = value.value
        if text in ("observation.state", "observation.images.", "gripper"):
            return text
        if text == "action" and target.endswith("_KEY"):
            return "action (a *_KEY)"
        return None
    strings = _strings(value)
    if strings is not None and len(strings) == len(CAMERA_ROLES) and set(strings) == CAMERA_ROLES:
        return "the camera roles"
    if strings in (BODY_JOINTS, JOINT_NAMES):
        return "the joint names"
    return None


def _definitions(tree: ast.Module) -> Iterator[tuple[str, str, int]]:
    """(name, concept, line) of each one-home name a module defines at its top level, and each `class Side`."""
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = [t.id for t in node.targets if isinstance(t, ast.Name)], node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            targets, value = [node.target.id], node.value
        else:
            continue
        for target in targets:
            concept = _concept(target, value)
            if concept is not None:
                yield target, concept, node.lineno
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Side":
            yield "Side", "class Side", node.lineno
        if isinstance(node, ast.ClassDef):  # an enum of the roles is their definition too (`VirtualView` was)
            members = {
                statement.value.value
                for statement in node.body
                if isinstance(statement, ast.Assign)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            }
            if members == CAMERA_ROLES:
                yield node.name, "the camera roles", node.lineno


def definitions(root: Path = ROOT) -> dict[str, list[str]]:
    """Each one-home name -> where it is defined ("path:line NAME"), over every module of the four layers."""
    found: dict[str, list[str]] = {concept: [] for concept in HOMES}
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            for name, concept, line in _definitions(ast.parse(path.read_text(), filename=str(path))):
                found[concept].append(f"{relative}:{line} {name}")
    return found


def copies(root: Path = ROOT) -> list[str]:
    """Every name defined anywhere but in its one home, or not in its home at all, said for people."""
    problems = []
    for concept, places in definitions(root).items():
        modules = sorted({place.partition(":")[0] for place in places})
        if modules != [HOMES[concept]]:
            problems.append(f"{concept!r} is defined in {places or 'no module'}; its one home is {HOMES[concept]}")
    return problems


def strays(root: Path = ROOT) -> list[str]:
    """The definitions outside their home ("path:line NAME")."""
    found = definitions(root)
    return sorted(
        place for concept, places in found.items() for place in places if not place.startswith(f"{HOMES[concept]}:")
    )


def test_each_name_of_the_rig_and_its_datasets_has_one_home():
    problems = copies()
    assert problems == [], "import the name from its home instead:\n" + "\n".join(problems)


def test_the_scan_finds_a_copy(tmp_path):
    # The homes as they are, then a module that keeps its own copies.
    for relative in set(HOMES.values()):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text((ROOT / relative).read_text())
    (tmp_path / "evaluation").mkdir()
    (tmp_path / "policies").mkdir()
    (tmp_path / "evaluation" / "reader.py").write_text(
        "from enum import StrEnum\n"
        'STATE_KEY = "observation.state"\n'
        'VIEWS: tuple[str, ...] = ("overhead", "left_wrist", "right_wrist")\n'
        "class Side(StrEnum):\n"
        '    LEFT = "left"\n'
    )
    # Not copies: "action" as something other than a key, a longer tuple, a key built from the home.
    (tmp_path / "policies" / "fine.py").write_text(
        'KIND = "action"\nCAMERAS = ("left_wrist", "right_wrist", "overhead", "side")\n'
        'EMPTY = f"{IMAGE_PREFIX}empty_camera_"\n'
    )
    assert strays(tmp_path) == [
        "evaluation/reader.py:2 STATE_KEY",
        "evaluation/reader.py:3 VIEWS",
        "evaluation/reader.py:4 Side",
    ]
    assert [problem.partition(" is defined")[0] for problem in copies(tmp_path)] == [
        "'observation.state'",
        "'the camera roles'",
        "'class Side'",
    ]


# --- one reader of a dataset's parquet files ------------------------------------------------------

# The dataset package (writer, reader, sidecars, lineage, format checks, curation) is the one home of
# a dataset's files; every other module reads a dataset through teleop/dataset/reader.py.
DATASET_PACKAGE = "teleop/dataset/"
# Modules outside it that may import pyarrow.parquet, each with why: they write a parquet file that is
# no dataset, and read none (a read there is still found).
PARQUET_WRITERS = {"evaluation/export.py": "writes the scores table (so101-report's export), reads no dataset"}
# What reads a parquet file: pyarrow.parquet's readers, and any library's read_parquet (pandas, polars).
PARQUET_READERS = frozenset(
    {"read_table", "read_metadata", "read_schema", "read_pandas", "ParquetFile", "ParquetDataset"}
)
PARQUET = "pyarrow.parquet"


def _bindings(tree: ast.Module) -> dict[str, str]:
    """Each name a module's imports bind -> the dotted name it stands for (`pq` -> `pyarrow.parquet`)."""
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:  # `import pyarrow.parquet` binds `pyarrow`
                    top = alias.name.split(".")[0]
                    bound[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return bound


def _dotted(node: ast.expr) -> str | None:
    """`a.b.c` of a Name or a chain of Attributes, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and (base := _dotted(node.value)) is not None:
        return f"{base}.{node.attr}"
    return None


def _reads(name: str) -> bool:
    last = name.rpartition(".")[2]
    return last == "read_parquet" or (name.startswith(f"{PARQUET}.") and last in PARQUET_READERS)


def parquet_reads(root: Path = ROOT) -> list[str]:
    """Modules outside the dataset package that import pyarrow.parquet or read a parquet file ("path:line what")."""
    found = set()
    for layer in LAYERS:
        for path in sorted((root / layer).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative.startswith(DATASET_PACKAGE):
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            bound = _bindings(tree)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import | ast.ImportFrom) and relative not in PARQUET_WRITERS:
                    modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                    if isinstance(node, ast.ImportFrom) and node.module == "pyarrow":
                        modules = [f"pyarrow.{a.name}" for a in node.names]
                    if any(m == PARQUET or m.startswith(f"{PARQUET}.") for m in modules):
                        found.add(f"{relative}:{node.lineno} imports {PARQUET}")
                elif isinstance(node, ast.Attribute | ast.Name) and (text := _dotted(node)) is not None:
                    head, _, rest = text.partition(".")
                    name = ".".join(filter(None, (bound.get(head, head), rest)))
                    if _reads(name):
                        found.add(f"{relative}:{node.lineno} reads a parquet file ({text})")
    return sorted(found)


def test_only_the_dataset_package_reads_parquet_files():
    problems = parquet_reads()
    assert problems == [], "read the dataset through teleop/dataset/reader.py instead:\n" + "\n".join(problems)


def test_the_scan_finds_a_parquet_read(tmp_path):
    for relative, text in {
        "evaluation/review/checks.py": "import pyarrow.parquet as pq\nt = pq.read_table('x')\n",
        "policies/replay/frames.py": "import pyarrow.parquet\nf = pyarrow.parquet.ParquetFile('x')\n",
        "robot/log.py": "import pandas as pd\nd = pd.read_parquet('x')\n",
        "teleop/tasks.py": "from pyarrow import parquet\nfrom pyarrow.parquet import read_metadata\n"
        "m = read_metadata('x')\n",
        "evaluation/export.py": "import pyarrow.parquet as pq\npq.write_table(t, 'x')\npq.read_schema('x')\n",
        # Not reads: the dataset package itself, pyarrow without its parquet module, a writer's write.
        "teleop/dataset/reader.py": "import pyarrow.parquet as pq\nt = pq.read_table('x')\n",
        "evaluation/rig_log.py": "import pyarrow as pa\nt = pa.table({})\n",
    }.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    assert parquet_reads(tmp_path) == [
        "evaluation/export.py:3 reads a parquet file (pq.read_schema)",
        "evaluation/review/checks.py:1 imports pyarrow.parquet",
        "evaluation/review/checks.py:2 reads a parquet file (pq.read_table)",
        "policies/replay/frames.py:1 imports pyarrow.parquet",
        "policies/replay/frames.py:2 reads a parquet file (pyarrow.parquet.ParquetFile)",
        "robot/log.py:2 reads a parquet file (pd.read_parquet)",
        "teleop/tasks.py:1 imports pyarrow.parquet",
        "teleop/tasks.py:2 imports pyarrow.parquet",
        "teleop/tasks.py:3 reads a parquet file (read_metadata)",
    ]
