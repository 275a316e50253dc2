"""TMRF animations edited in Blender: one moved key changes that key's value in the file, and every
other stored value (the other keys and bones) comes back bit for bit, though Blender's float32
rests add noise to every key of the edited F-curves."""

import bpy
import numpy as np
from retro_models.formats.tmrf import media
from retro_models.formats.tmrf import resources as res
from retro_models.operators.blender import compat
from test_tmrf_operators import export, full_file, import_file, select_all_of, select_only


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


def test_new_action_with_easing_exports_the_pose_of_every_frame(empty_scene, tmp_path):
    """Bézier easing (Blender's default keys) reaches a frame animation as the pose of each frame."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "model.tpak").write_bytes(full_file())
    import_file(tmp_path / "in" / "model.tpak")
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    ease = bpy.data.actions.new("ease")
    compat.assign_action(armature, ease, None)
    arm = armature.pose.bones["arm"]
    for frame, height in ((0, 0.0), (10, 1.0)):
        arm.location = (0.0, 0.0, height)
        arm.keyframe_insert("location", frame=frame)
    frames = range(11)

    def poses(action, frames=frames) -> np.ndarray:
        compat.assign_action(armature, action, compat.action_slot(action))
        out = []
        for frame in frames:
            bpy.context.scene.frame_set(frame)
            out.append(np.array(arm.location))
        return np.array(out)

    played = poses(ease)
    assert not np.allclose(played[2, 2], 0.2, atol=1e-2)  # eased, not linear
    select_only([armature], armature)
    export(tmp_path / "ease.tani", animation_kind="FRAME")
    before = set(bpy.data.actions)
    import_file(tmp_path / "ease.tani")
    (again,) = [a for a in set(bpy.data.actions) - before if a.name.startswith("ease")]
    np.testing.assert_allclose(poses(again), played, atol=1e-4)


def track_bytes(data: bytes) -> dict[str, bytes]:
    """Each track animation's keys by its name, as stored."""
    model = media.read(data)
    return {
        model.strings.name(r.content.name): b"".join(t.tobytes() for t in r.content.tracks)
        for r in model.walk()
        if isinstance(r.content, res.TrackAnimation)
    }


def test_eased_track_animation_plays_as_in_blender(empty_scene, tmp_path):
    """A Bézier-eased action written as a track animation gets the keys the game's linear interpolation
    needs to play Blender's pose within 1e-4 at every quarter frame; the report says how many; the
    unedited track animation next to it keeps its bytes."""
    import retro_models

    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "model.tpak").write_bytes(full_file())
    import_file(tmp_path / "in" / "model.tpak")
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    ease = bpy.data.actions.new("ease")
    compat.assign_action(armature, ease, None)
    root, arm = armature.pose.bones["root"], armature.pose.bones["arm"]
    # Each bone keys one property: the track gives the other its rest value, as Blender shows it.
    for frame, height, angle in ((0, 0.0, 0.0), (12, 1.0, 1.2), (20, 0.4, 0.3)):
        arm.location = (0.0, 0.0, height)
        root.rotation_quaternion = (np.cos(angle / 2), 0.0, 0.0, np.sin(angle / 2))
        arm.keyframe_insert("location", frame=frame)
        root.keyframe_insert("rotation_quaternion", frame=frame)
    frames = np.arange(0, 20.25, 0.25)

    def poses(action, frames=frames) -> np.ndarray:
        compat.assign_action(armature, action, compat.action_slot(action))
        for bone in armature.pose.bones:  # bones the action does not key at rest
            bone.matrix_basis.identity()
        out = []
        for frame in frames:
            bpy.context.scene.frame_set(int(frame), subframe=float(frame % 1))
            out.append([np.array(b.matrix) for b in armature.pose.bones])
        return np.array(out)

    played = poses(ease)
    select_only([armature], armature)
    report = retro_models.export_file(bpy.context, str(tmp_path / "ease.tani"), animation_kind="TRACK")
    data = (tmp_path / "ease.tani").read_bytes()
    (added,) = [w for w in report.warnings if "keys added" in w]
    model = media.read(data)
    (eased,) = [
        r.content.tracks
        for r in model.walk()
        if isinstance(r.content, res.TrackAnimation) and model.strings.name(r.content.name) == "ease"
    ]
    assert sum(len(t) for t in eased) == 6 + int(added.split()[0])  # each bone's three keys and the added
    assert track_bytes(data)["run"] == track_bytes(full_file())["run"]  # unedited: no key added
    before, rate = set(bpy.data.actions), bpy.context.scene.render.fps
    select_only([armature], armature)
    import_file(tmp_path / "ease.tani")
    (again,) = [a for a in set(bpy.data.actions) - before if a.name.startswith("ease")]
    # The file's first animation sets the scene's rate: the same times are other frames now.
    np.testing.assert_allclose(poses(again, frames * bpy.context.scene.render.fps / rate), played, atol=1e-4)
