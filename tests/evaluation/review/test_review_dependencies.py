"""The web stack's floors in pyproject.toml include Range support and the Range-header DoS fix, and are installed."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"
# The floor each package needs: Starlette 0.49.1 fixes CVE-2025-62727 (FileResponse Range parsing, quadratic
# time) and has Range support (0.39); FastAPI allows Starlette 0.49 from 0.120.1 on.
FLOORS = {"starlette": Version("0.49.1"), "fastapi": Version("0.120.1")}


def _requirements() -> dict[str, Requirement]:
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    return {r.name: r for r in map(Requirement, deps)}


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_the_floor_is_safe_and_the_installed_version_meets_it(name: str):
    requirement = _requirements()[name]
    floors = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==", "~=")]
    assert floors, f"{name} has no lower bound in pyproject.toml"
    assert max(floors) >= FLOORS[name], f"{requirement} allows versions before {FLOORS[name]}"
    installed = importlib.metadata.version(name)
    assert requirement.specifier.contains(installed, prereleases=True), (
        f"{name} {installed} does not meet {requirement}"
    )
