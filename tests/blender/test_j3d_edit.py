"""Editing an applied J3D animation: one moved key re-encodes that track alone.

Every other track keeps its stored entries bit for bit (shared key tables included: materials
that shared a run with the edited track still read it unchanged), and the file grows by at most
the edited track's entries.
"""

import bpy
import numpy as np
import pytest
from retro_models.formats.j3d import bck, brk, btk, evaluate
from retro_models.formats.j3d.container import track_widths
from retro_models.formats.j3d.files import READERS
from retro_models.operators.blender import compat
from support import corpus_files
from test_j3d_export import apply_to_matching_target

KEYED = [p for p in corpus_files("j3d/*") if p.suffix in (".bck", ".btk", ".brk", ".bpk")]


def stored_tracks(model) -> dict:
    """Every track's (count, mode, its bank entries as bytes), by a key naming the track."""
    found = {}

    def add(key, track, bank):
        first, width = int(track["first"]), int(track_widths(np.asarray(track)[None])[0])
        found[key] = (int(track["count"]), int(track["mode"]), bank[first : first + width].tobytes())

    if isinstance(model, (bck.BCK, btk.BTK)):
        names = model.material_names if isinstance(model, btk.BTK) else list(range(len(model.tracks)))
        for n, name in enumerate(names):
            for axis in range(3):
                for component in range(3):
                    add(
                        (n, name, axis, component), model.tracks[n, axis, component], model.banks()[component]
                    )
    elif isinstance(model, brk.BRK):
        for label, group in (("register", model.register), ("konst", model.konst)):
            for n, name in enumerate(group.material_names):
                for c in range(4):
                    add((label, n, name, c), group.entries["tracks"][n, c], group.banks[c])
    else:
        for n, name in enumerate(model.material_names):
            for c in range(4):
                add((n, name, c), model.tracks[n, c], model.banks[c])
    return found


def editable_fcurve(path):
    """An F-curve with an inner key to move, and how far (colours stay inside 0..1)."""
    obj = bpy.context.active_object
    if path.suffix == ".bck":
        fcurves = compat.action_fcurves(obj.animation_data.action)
        return next(
            fc for fc in fcurves if fc.data_path.endswith(".location") and len(fc.keyframe_points) > 2
        ), 5.0
    for slot in obj.material_slots:
        data = slot.material.node_tree.animation_data
        if data is None or data.action is None:
            continue
        for fc in compat.action_fcurves(data.action):
            if len(fc.keyframe_points) < 3:
                continue
            if path.suffix == ".btk":
                return fc, 0.05
            value = fc.keyframe_points[1].co.y
            if 0.1 < value < 0.9:
                return fc, 20 / 255 if value < 0.5 else -20 / 255
    pytest.skip(f"{path.name} has no material curve with an inner key")


@pytest.mark.parametrize("path", KEYED, ids=lambda p: p.name)
def test_one_moved_key_rewrites_only_its_track(empty_scene, tmp_path, path):
    model = apply_to_matching_target(path)
    fcurve, delta = editable_fcurve(path)
    key = fcurve.keyframe_points[1]
    for point in (key.co, key.handle_left, key.handle_right):
        point.y += delta
    out = tmp_path / f"edited{path.suffix}"
    assert bpy.ops.export_scene.j3d_animation(filepath=str(out)) == {"FINISHED"}
    edited = READERS[path.suffix].read(out.read_bytes(), str(out))
    before, after = stored_tracks(model), stored_tracks(edited)
    assert before.keys() == after.keys()
    changed = [k for k in before if before[k] != after[k]]
    assert len(changed) == 1, changed
    count, mode, _ = after[changed[0]]
    assert count == len(fcurve.keyframe_points)
    growth = out.stat().st_size - path.stat().st_size
    # The edited track's entries, and the padding that keeps the section 32-byte aligned.
    assert growth <= len(after[changed[0]][2]) + 31
    print(f"{path.name}: {len(before) - 1} other tracks bit-identical, file grew {growth} bytes")
    frames = np.linspace(0, model.length, 4 * model.length + 1)
    played_before, played_after = evaluate.evaluate(model, frames), evaluate.evaluate(edited, frames)
    if isinstance(played_before, dict):
        played_before = np.concatenate([np.ravel(v) for v in played_before.values()])
        played_after = np.concatenate([np.ravel(v) for v in played_after.values()])
    assert not np.array_equal(played_before, played_after)
