"""Speed of the J3D model export in Blender, and what keeping the model costs the import.

    .venv/bin/python bench/bench_j3d_model_export.py [--runs N]

For every corpus model (../shared/corpus; an archive's models imported together): the import
(best of ``--runs``) with and without what it records for the export (each mesh's geometry digest
and material slot: ``operators/j3d_model._record_for_export``), then the unedited export of each
of its models, which must give the model's own bytes.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tools"))

import addon_package  # noqa: E402

addon_package.load()

import bpy  # noqa: E402
import retro_models  # noqa: E402
from retro_models.formats import archives  # noqa: E402
from retro_models.operators import j3d_model  # noqa: E402

CORPUS = HERE.parent.parent / "shared" / "corpus"


def _import_time(path: Path, runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        start = time.perf_counter()
        retro_models.import_file(bpy.context, str(path), import_animations=False)
        best = min(best, time.perf_counter() - start)
    return best


def _models(path: Path) -> dict[str, bytes]:
    """Each model of the file by its name: the file itself, or an archive's members."""
    data = path.read_bytes()
    if not archives.is_archive(data):
        return {path.stem: archives.unwrap(data, str(path))}
    found = archives.read_archive(data, str(path)).members()
    return {
        os.path.splitext(os.path.basename(m.path))[0]: archives.unwrap(m.data, m.path)
        for m in found
        if m.path.lower().endswith((".bmd", ".bdl"))
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    runs = parser.parse_args().runs
    retro_models.register()
    recording = j3d_model._record_for_export
    paths = sorted([*CORPUS.glob("j3d*/*.bmd"), *CORPUS.glob("j3d*/*.bdl"), *CORPUS.glob("j3d*/*.arc")])
    with tempfile.TemporaryDirectory() as folder:
        for path in paths:
            models = _models(path)
            if not models:
                continue
            j3d_model._record_for_export = lambda scene, result: None
            without = _import_time(path, runs)
            j3d_model._record_for_export = recording
            with_record = _import_time(path, runs)
            exported, same = 0.0, 0
            for armature in [o for o in bpy.data.objects if o.type == "ARMATURE"]:
                bpy.context.view_layer.objects.active = armature
                name = armature.users_collection[0].name
                out = os.path.join(folder, f"{name}.{'bdl' if models[name][4:8] == b'bdl4' else 'bmd'}")
                start = time.perf_counter()
                retro_models.export_file(bpy.context, out)
                exported += time.perf_counter() - start
                same += Path(out).read_bytes() == models[name]
            print(
                f"{path.name}: import {without:.2f} s, {with_record:.2f} s with the export's records; "
                f"unedited export {exported:.2f} s, {same} of {len(models)} models byte-identical"
            )


if __name__ == "__main__":
    main()
