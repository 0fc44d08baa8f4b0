"""Every document the product's code and docs point to is in the repository.

A cited file that is not there (the report once cited `notes/judge-research.md`, which lived only on a
developer's machine) sends a reader nowhere. Every `docs/...`, `notes/...`, `hardware_configs/...` or
`benchmarks/...` path named in the packages, the README and docs/ must exist in this checkout.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("robot", "teleop", "policies", "evaluation", "hardware_configs", "docs", "tests", "benchmarks")
SUFFIXES = {".py", ".md", ".html", ".yaml", ".js"}
# A path to a file of ours: a known top-level folder, then names, ending in a file suffix.
REFERENCE = re.compile(r"(?<![\w/.$-])((?:docs|notes|hardware_configs|benchmarks)/[\w./-]*\w\.(?:md|yaml|py))\b")


def _files() -> list[Path]:
    found = [ROOT / "README.md"]
    for folder in SOURCES:
        found += [p for p in (ROOT / folder).rglob("*") if p.suffix in SUFFIXES and "__pycache__" not in p.parts]
    return [p for p in found if p != Path(__file__).resolve()]  # this file names a missing one as its example


def _references(path: Path) -> set[str]:
    return set(REFERENCE.findall(path.read_text(encoding="utf-8")))


def test_the_pattern_finds_the_references_it_is_meant_to():
    text = "see docs/judge-research.md §2; --config_path=hardware_configs/so101_bimanual.yaml; ../shared/notes/x.md"
    assert REFERENCE.findall(text) == ["docs/judge-research.md", "hardware_configs/so101_bimanual.yaml"]


def test_every_referenced_file_exists():
    missing = {
        f"{path.relative_to(ROOT)}: {ref}"
        for path in _files()
        for ref in _references(path)
        if not (ROOT / ref).exists() and "<" not in ref
    }
    assert not missing, sorted(missing)
    assert any("docs/judge-research.md" in _references(p) for p in _files())  # the check saw the citations
