"""Helpers shared by the tests (importable as ``support``)."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
GOLDEN = ROOT / "tests" / "golden"  # golden scene dumps, <family>_<case>.txt
REGENERATE = os.environ.get("RETRO_REGENERATE_GOLDEN") == "1"


def corpus_file(relative: str) -> Path:
    """A real sample file, or a skip when ../shared/corpus is not next to the project."""
    path = CORPUS / relative
    if not path.exists():
        pytest.skip(f"real sample {relative} not available ({CORPUS} is absent)")
    return path


def corpus_files(pattern: str) -> list[Path]:
    """Real sample files matching a glob, for parametrising; empty when the corpus is absent."""
    return sorted(CORPUS.glob(pattern)) if CORPUS.exists() else []


def data_counts() -> dict[str, int]:
    """How many of each kind of datablock exist: to prove a failed import changed nothing."""
    import bpy

    kinds = ("objects", "meshes", "materials", "images", "actions", "armatures", "collections")
    return {k: len(getattr(bpy.data, k)) for k in kinds}
