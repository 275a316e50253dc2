"""TMRF animations edited in Blender: one moved key changes that key's value in the file, and every
other stored value (the other keys and bones) comes back bit for bit, though Blender's float32
rests add noise to every key of the edited F-curves."""

import bpy
import numpy as np
from retro_models.formats.tmrf import media
from retro_models.formats.tmrf import resources as res
from retro_models.operators.blender import compat
from test_tmrf_operators import export, full_file, import_file, select_all_of


def random_values_file(seed: int = 3) -> bytes:
    """The fixture with float values no decimal round trip gives back: rests and frames."""
    rng = np.random.default_rng(seed)
    model = media.read(full_file())
    for r in model.walk():
        c = r.content
        if isinstance(c, res.Skeleton):
            q = rng.normal(size=(len(c.bones), 4))
            c.bones["orientation"] = q / np.linalg.norm(q, axis=1, keepdims=True)
            c.bones["position"] = rng.normal(size=(len(c.bones), 3))
        if isinstance(c, res.FrameAnimation):
            for bone in c.bones:
                if bone.positions.size:
                    bone.positions[:] = rng.normal(size=bone.positions.shape)
                if bone.orientations.size and bone.orientations.dtype.kind == "f":
                    bone.orientations[:] = rng.normal(size=bone.orientations.shape) * 0.3
    return media.write(model)


def frame_values(data: bytes) -> dict:
    model = media.read(data)
    frame = next(r.content for r in model.walk() if isinstance(r.content, res.FrameAnimation))
    return {
        model.strings.name(b.bone): tuple(np.asarray(v, np.float32) for v in b.decode()) for b in frame.bones
    }


def test_one_moved_key_keeps_every_other_value(empty_scene, tmp_path):
    data = random_values_file()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "model.tpak").write_bytes(data)
    import_file(tmp_path / "in" / "model.tpak")
    select_all_of()
    assert export(tmp_path / "same.tpak") == data
    walk = bpy.data.actions["walk"]
    (curve,) = [
        fc
        for fc in compat.action_fcurves(walk)
        if fc.data_path == 'pose.bones["arm"].location' and fc.array_index == 2
    ]
    curve.keyframe_points[0].co[1] += 0.5
    curve.update()
    before, after = frame_values(data), frame_values(export(tmp_path / "edited.tpak"))
    for bone, (positions, orientations) in before.items():
        new_positions, new_orientations = after[bone]
        assert new_orientations.tobytes() == orientations.tobytes(), bone
        changed = (new_positions != positions).any(axis=1)
        # The arm's first key moved (along its rest Z: several parent-relative components), nothing else.
        assert changed.tolist() == ([True, False] if bone == "arm" else [False, False]), bone
