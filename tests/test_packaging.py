"""The sdist and the wheel hold what a user installs, built offline with the project's backend.

The build goes the way ``python -m build`` goes: the sdist from the repository, then the
wheel from the unpacked sdist, so a file the sdist forgets is missing from the wheel too.
"""

from __future__ import annotations

import email.parser
import importlib.metadata
import tarfile
import zipfile
from pathlib import Path

import pytest
from hatchling.builders.sdist import SdistBuilder
from hatchling.builders.wheel import WheelBuilder

import langchain_builderforce_memory

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "langchain_builderforce_memory"
SDIST_TOP = {
    PACKAGE,
    "tests",
    "notebooks",
    "docs",
    "README.md",
    "LICENSE",
    "pyproject.toml",
    "PKG-INFO",
    ".gitignore",  # hatchling always adds it; harmless
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[str], str]:
    """(sdist names, wheel names, the wheel's METADATA text)."""
    out = tmp_path_factory.mktemp("dist")
    sdist = Path(next(SdistBuilder(str(ROOT)).build(directory=str(out), versions=["standard"])))
    with tarfile.open(sdist) as tar:
        sdist_names = tar.getnames()
        tar.extractall(out / "unpacked", filter="data")
    (unpacked,) = (out / "unpacked").iterdir()
    wheel = Path(next(WheelBuilder(str(unpacked)).build(directory=str(out), versions=["standard"])))
    with zipfile.ZipFile(wheel) as whl:
        wheel_names = whl.namelist()
        metadata = next(
            whl.read(n).decode() for n in wheel_names if n.endswith(".dist-info/METADATA")
        )
    prefix = unpacked.name + "/"
    inside = [n.removeprefix(prefix) for n in sdist_names if n != unpacked.name]
    return inside, wheel_names, metadata


def _package_sources() -> set[str]:
    base = ROOT / PACKAGE
    return {
        f"{PACKAGE}/{p.relative_to(base).as_posix()}"
        for p in base.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix in {".py", ".typed"}
    }


def test_the_wheel_holds_the_package_and_the_license_and_no_src(
    built: tuple[list[str], list[str], str],
) -> None:
    _, names, _ = built
    assert _package_sources() <= set(names)
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {PACKAGE, f"{PACKAGE}-{_version()}.dist-info"}
    assert not any(n.startswith("src/") or "/src/" in n for n in names)
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def test_the_sdist_ships_the_sources_and_no_junk(built: tuple[list[str], list[str], str]) -> None:
    names, _, _ = built
    assert {n.split("/", 1)[0] for n in names} <= SDIST_TOP
    assert {"LICENSE", "README.md", "pyproject.toml"} <= set(names)
    assert _package_sources() <= set(names)
    assert not any("__pycache__" in n or n.endswith((".pyc", ".sqlite")) for n in names)
    assert not any(n.startswith((".ci", ".git/", "src/", "benchmarks")) for n in names)


def _version() -> str:
    return importlib.metadata.version("langchain-builderforce-memory")


def test_the_metadata_names_the_license_and_the_supported_pythons(
    built: tuple[list[str], list[str], str],
) -> None:
    _, _, text = built
    meta = email.parser.Parser().parsestr(text)
    assert meta["License-Expression"] == "MIT"
    assert meta.get_all("License-File") == ["LICENSE"]
    classifiers = set(meta.get_all("Classifier") or [])
    for minor in (10, 11, 12, 13):
        assert f"Programming Language :: Python :: 3.{minor}" in classifiers
    assert any(c.startswith("Development Status :: ") for c in classifiers)
    # PEP 639: no license classifier next to the SPDX expression.
    assert not any(c.startswith("License :: ") for c in classifiers)
    assert meta["Version"] == _version() == langchain_builderforce_memory.__version__
    assert "MIT License" in (ROOT / "LICENSE").read_text()
