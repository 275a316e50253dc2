"""TMRF files written back as they came: a .tpak keeps exactly its own resources (shader and unknown
ones included, no rig it did not have), and the animations of a file applied to an armature come
back as that file, whatever other actions the armature has."""

from pathlib import Path

import bpy
import pytest
import tmrf_fixtures as fx
from retro_models.formats.tmrf import media
from retro_models.formats.tmrf import resources as res
from retro_models.operators.blender import compat
from test_tmrf_operators import armature_object, export, import_file, select_only, types, written

ANIMATION_HINTS = [h for h in fx.HINTS if h[0] in ("AX3FrameAnimation", "AX3TrackAnimation")]
ANIMATIONS = (res.FrameAnimation, res.TrackAnimation)


def animation_pack() -> bytes:
    """Animations with a shader resource and one of a type nobody knows, as a .tpak may hold them."""
    shaders = fx.Res(fx.ident("TMatVariants"), b"\x00\x00\x00\x02opaque", name="shaders")
    body = [
        fx.hints(ANIMATION_HINTS),
        fx.frame_animation(),
        shaders,
        fx.track_animation(),
        fx.Res(fx.ident("Mystery"), b"\x01\x02\x03"),
    ]
    data = fx.assemble(body)
    assert media.write(media.read(data)) == data  # the project's writer makes this very file
    return data


def static_mesh_pack() -> bytes:
    """A mesh without skin between a shader resource and an unknown one."""
    points = fx.points()
    points.children = []
    hints = [h for h in fx.HINTS if h[0] in ("3DPoints", "TriangleMesh")]
    shaders = fx.Res(fx.ident("TMatVariants"), b"\x00\x00\x00\x02opaque", name="shaders")
    body = [fx.hints(hints), shaders, points, fx.mesh(), fx.Res(fx.ident("Mystery"), b"\x01\x02\x03")]
    data = fx.assemble(body)
    assert media.write(media.read(data)) == data
    return data


def test_tpak_of_a_static_mesh_is_written_back_identical(empty_scene, tmp_path):
    data = static_mesh_pack()
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "prop.tpak").write_bytes(data)
    import_file(tmp_path / "in" / "prop.tpak")
    assert not [o for o in bpy.data.objects if o.type == "ARMATURE"]
    (obj,) = bpy.data.objects
    select_only([obj], obj)
    assert export(tmp_path / "prop.tpak") == data
    obj.data.vertices[1].co.x += 0.25
    assert changed_resources(data, export(tmp_path / "prop.tpak")) == ["3DPoints"]


def model_with_applied(tmp_path: Path, applied: str, data: bytes):
    """The full model imported, a Blender-keyed action on it, then ``applied`` applied to its armature."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "model.tmdl").write_bytes(fx.full_file())
    (tmp_path / "in" / applied).write_bytes(data)
    import_file(tmp_path / "in" / "model.tmdl")
    armature = armature_object()
    keyed = bpy.data.actions.new("wave")
    compat.assign_action(armature, keyed, None)
    arm = armature.pose.bones["arm"]
    for frame, height in ((0, 0.0), (8, 0.5)):
        arm.location = (0.0, 0.0, height)
        arm.keyframe_insert("location", frame=frame)
    select_only([armature], armature)
    import_file(tmp_path / "in" / applied)
    compat.assign_action(armature, keyed, None)  # the keyed action exports too while it is active
    return armature


def test_tpak_of_a_model_is_written_back_identical(empty_scene, tmp_path):
    data = fx.full_file()
    assert {"TMatVariants", "Mystery"} <= set(types(data))
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "model.tpak").write_bytes(data)
    import_file(tmp_path / "in" / "model.tpak")
    armature = armature_object()
    select_only([armature], armature)
    assert export(tmp_path / "model.tpak") == data
    # Edits change only the edited resources: a key of the walk, a vertex of the mesh.
    (curve,) = [
        fc
        for fc in compat.action_fcurves(bpy.data.actions["walk"])
        if fc.data_path == 'pose.bones["root"].location' and fc.array_index == 0
    ]
    curve.keyframe_points[1].co[1] += 0.5
    curve.update()
    assert changed_resources(data, export(tmp_path / "model.tpak")) == ["AX3FrameAnimation"]
    (mesh,) = [o.data for o in bpy.data.objects if o.type == "MESH"]
    mesh.vertices[2].co.y += 0.25  # in the triangle's plane: Blender's custom normals turn with the face
    assert changed_resources(data, export(tmp_path / "model.tpak")) == ["3DPoints", "AX3FrameAnimation"]


def test_applied_tpak_is_written_back_identical_without_a_rig(empty_scene, tmp_path):
    data = animation_pack()
    armature = model_with_applied(tmp_path, "pack.tpak", data)
    select_only([armature], armature)
    back = export(tmp_path / "pack.tpak")
    assert "AX3Skeleton" not in types(back) and "Mystery" in types(back)
    assert back == data
    # An edit changes only the edited resource: the frame animation; the others keep their bytes.
    walk = next(a for a in bpy.data.actions if a.name.startswith("walk") and a != bpy.data.actions["walk"])
    (curve,) = [
        fc
        for fc in compat.action_fcurves(walk)
        if fc.data_path == 'pose.bones["root"].location' and fc.array_index == 2
    ]
    curve.keyframe_points[1].co[1] += 0.5
    curve.update()
    edited = export(tmp_path / "pack.tpak")
    assert changed_resources(data, edited) == ["AX3FrameAnimation"]


def changed_resources(data: bytes, edited: bytes) -> list[str]:
    """The types of the resources whose own bytes differ (the files hold the same resources)."""
    assert types(edited) == types(data)
    return [
        name for name, a, b in zip(types(data), _resources(data), _resources(edited), strict=True) if a != b
    ]


def _resources(data: bytes) -> list[bytes]:
    """Each resource's own bytes: its header and data, without its subresources."""
    out = []
    for start, size in media.resource_spans(media.read(data)):
        first_child = int.from_bytes(data[start + 8 : start + 12], "big")
        out.append(data[start : start + (first_child or 12 + size)])
    return out


def track_file() -> bytes:
    """A .tani: one track animation."""
    data = fx.assemble(
        [fx.hints([h for h in ANIMATION_HINTS if h[0] == "AX3TrackAnimation"]), fx.track_animation()]
    )
    assert media.write(media.read(data)) == data
    return data


@pytest.mark.parametrize("name", ["moves.tapk", "run.tani"])
def test_applied_animation_files_are_written_back_identical(empty_scene, tmp_path, name):
    """On an armature with its own animations (from its .tmdl) and an action keyed in Blender."""
    data = written("animations") if name.endswith(".tapk") else track_file()
    armature = model_with_applied(tmp_path, name, data)
    applied = len(types(data)) - 2  # all but the TOC and the hints
    assert len(bpy.data.actions) == 3 + applied  # the model's walk and run, the keyed wave, the file's
    select_only([armature], armature)
    assert export(tmp_path / name) == data
    assert export(tmp_path / name.upper()) == data  # the name decides, whatever its case
    # Under another name, the file holds every animation of the armature.
    assert len(animation_names(export(tmp_path / "all.tapk"))) == 3 + applied
    # Under the model's own name, the model's animations and the keyed action, not the applied file's.
    assert animation_names(export(tmp_path / "model.tmdl")) == ["walk", "run", "wave"]


def animation_names(data: bytes) -> list[str]:
    """The TOC names of the file's animations, in file order."""
    model = media.read(data)
    names = model.names()
    return [names[i][0] for i, r in enumerate(model.walk()) if isinstance(r.content, ANIMATIONS)]


@pytest.mark.parametrize("bones", [("root", "arm"), ("root",)])
def test_written_back_file_keeps_its_skeleton_binding_and_bones(empty_scene, tmp_path, bones):
    """Applied to an armature made in Blender (another name, other rests, maybe without some of the
    file's bones), the file comes back as it was."""
    from test_tmrf_operators import new_armature

    pack = written("animations")
    specs = {"root": None, "arm": ((0, 1, 0), (0, 2, 0.5), "root")}
    armature = new_armature("rig", {bone: specs[bone] for bone in bones})
    (tmp_path / "moves.tapk").write_bytes(pack)
    (tmp_path / "out").mkdir()
    select_only([armature], armature)
    import_file(tmp_path / "moves.tapk")
    assert export(tmp_path / "out" / "moves.tapk") == pack
    model = media.read(export(tmp_path / "out" / "other.tapk"))  # new resources, bound to the armature
    assert {
        model.strings.name(r.content.skeleton) for r in model.walk() if isinstance(r.content, ANIMATIONS)
    } == {"rig"}


def test_applied_file_plays_at_its_own_speed_at_the_scene_rate(empty_scene, tmp_path):
    """A 30 fps track file applied to a 24 fps model: the scene keeps its rate (the model's
    animations their speed), the track's keys move so that it lasts its 1.5 s, and it is written
    back at its own rate."""
    data = track_file()
    armature = model_with_applied(tmp_path, "run.tani", data)
    assert bpy.context.scene.render.fps == 24  # the model's walk's rate, not the track's 30
    (run,) = [a for a in bpy.data.actions if a.name.startswith("run") and a.name != "run"]
    ends = {fc.keyframe_points[-1].co[0] for fc in compat.action_fcurves(run)}
    assert ends == {1.5 * 24}
    select_only([armature], armature)
    assert export(tmp_path / "run.tani") == data
