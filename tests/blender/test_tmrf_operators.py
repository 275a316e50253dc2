"""The Tertius media (TMRF) operators as a user runs them.

Fixtures: the hand-assembled file of the format tests (tests/formats/tmrf/tmrf_fixtures.py,
every resource type) and files the project's writer makes from it (``convert.from_scene``
with a content choice), plus a model built from scratch with bpy.
"""

from pathlib import Path

import bpy
import numpy as np
import pytest
import scene_dump
import tmrf_fixtures as fx
from retro_models.formats.tmrf import convert, media
from retro_models.formats.tmrf import resources as res
from retro_models.operators.blender import compat, props
from support import data_counts


def full_file() -> bytes:
    return fx.full_file()


def written(content: str, data: bytes | None = None, **options) -> bytes:
    """A file the project's writer makes from the fixture, holding ``content``."""
    scene = convert.to_scene(media.read(data or full_file()))
    return media.write(convert.from_scene(scene, content=content, **options))


def types(data: bytes) -> list[str]:
    model = media.read(data)
    return [model.type_name(r) for r in model.walk()]


def import_file(path: Path, **options):
    assert bpy.ops.import_scene.tertius_tmrf(filepath=str(path), **options) == {"FINISHED"}


def select_only(objects, active) -> None:
    for obj in bpy.context.view_layer.objects:
        obj.select_set(obj in objects)
    bpy.context.view_layer.objects.active = active


def select_all_of(kind_first: str = "ARMATURE") -> None:
    objects = list(bpy.context.view_layer.objects)
    select_only(objects, next((o for o in objects if o.type == kind_first), objects[0]))


def export(path: Path, **options) -> bytes:
    assert bpy.ops.export_scene.tertius_tmrf(filepath=str(path), **options) == {"FINISHED"}
    return path.read_bytes()


def armature_object():
    return next(o for o in bpy.data.objects if o.type == "ARMATURE")


def test_import_builds_armature_skinned_mesh_and_actions(empty_scene, tmp_path):
    path = tmp_path / "creature.tskm"  # the extension says skinned model; the contents say more
    path.write_bytes(full_file())
    import_file(path)
    armature = armature_object()
    assert [b.name for b in armature.data.bones] == ["root", "arm"]
    assert armature.data.bones["arm"].parent.name == "root"
    np.testing.assert_allclose(armature.data.bones["arm"].head_local, [1, 3.5, 3], atol=1e-6)
    (obj,) = [o for o in bpy.data.objects if o.type == "MESH"]
    mesh = obj.data
    assert (len(mesh.vertices), len(mesh.polygons)) == (3, 1)
    assert [m.object for m in obj.modifiers if m.type == "ARMATURE"] == [armature]
    assert sorted(g.name for g in obj.vertex_groups) == ["arm", "root"]
    arm = obj.vertex_groups["arm"].index
    assert [round(g.weight, 6) for g in mesh.vertices[1].groups if g.group == arm] == [0.75]
    assert mesh.has_custom_normals
    normals = np.array([n.vector for n in mesh.corner_normals])
    np.testing.assert_allclose(normals, [[0, 0, 1]] * 3, atol=1e-6)
    assert [uv.name for uv in mesh.uv_layers] == ["wood"]
    uvs = np.array([d.uv for d in mesh.uv_layers["wood"].data])
    np.testing.assert_allclose(uvs, [[0, 0], [1, 0], [0, 1]])
    images = [n.image.name for n in mesh.materials[0].node_tree.nodes if n.type == "TEX_IMAGE"]
    assert images == ["wood"]
    walk, run = bpy.data.actions["walk"], bpy.data.actions["run"]
    walk_frames = {tuple(k.co[0] for k in fc.keyframe_points) for fc in compat.action_fcurves(walk)}
    assert walk_frames == {(0.0, 1.0)}  # two frames, one key each
    assert bpy.context.scene.render.fps == 24  # the frame animation's rate
    run_frames = {
        (fc.data_path.rsplit(".", 1)[1], tuple(k.co[0] for k in fc.keyframe_points))
        for fc in compat.action_fcurves(run)
    }
    end = 1.5 * 24  # 1.5 s at the scene's rate (the walk's), so that "run" plays at its own speed
    assert {f for path, f in run_frames if path == "location"} == {(0.0, end)}  # keys at 0 s and 1.5 s
    # Quaternion F-curves also hold the slerp at every whole frame between keys (curves.slerp_keys).
    assert {f for path, f in run_frames if path == "rotation_quaternion"} == {tuple(np.arange(end + 1))}


@pytest.mark.parametrize("name", ["model.tpak", "model.tmdl"])
def test_import_export_is_byte_identical(empty_scene, tmp_path, name):
    data = full_file()
    assert written("everything", data) == data  # the project's writer makes this very file
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / name).write_bytes(data)
    import_file(tmp_path / "in" / name)
    select_all_of()
    assert export(tmp_path / name) == data


def test_fresh_export_of_the_writer_round_trips(empty_scene, tmp_path):
    """A file written without an imported layout (compressed normals, frame animations) comes back whole."""
    scene = convert.to_scene(media.read(full_file()))
    scene.extras = {}
    for item in scene.skeletons + scene.meshes + scene.animations:
        item.extras = {}
    data = media.write(convert.from_scene(scene))
    assert "CompressedNormals" in types(data) and "AX3TrackAnimation" not in types(data)
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "fresh.tmdl").write_bytes(data)
    import_file(tmp_path / "in" / "fresh.tmdl")
    (mesh,) = [o.data for o in bpy.data.objects if o.type == "MESH"]
    assert mesh.has_custom_normals  # decoded from the compressed angles
    np.testing.assert_allclose([n.vector for n in mesh.corner_normals], [[0, 0, 1]] * 3, atol=1e-4)
    select_all_of()
    assert export(tmp_path / "fresh.tmdl") == data


def test_edited_keys_reach_the_file(empty_scene, tmp_path):
    """The file's exact key values are kept only while the keys are unedited."""
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "model.tpak").write_bytes(full_file())
    import_file(tmp_path / "in" / "model.tpak")
    select_all_of()
    walk = bpy.data.actions["walk"]
    (curve,) = [
        fc
        for fc in compat.action_fcurves(walk)
        if fc.data_path == 'pose.bones["arm"].location' and fc.array_index == 2
    ]
    curve.keyframe_points[0].co[1] += 0.5  # along the bone's rest Z, which its parent-relative Z is too
    curve.update()
    model = media.read(export(tmp_path / "edited.tani"))
    frame = next(r.content for r in model.walk() if isinstance(r.content, res.FrameAnimation))
    arm = next(b for b in frame.bones if model.strings.name(b.bone) == "arm")
    positions, _ = arm.decode()
    np.testing.assert_allclose(positions, [[0, 1.5, 0.5], [0, 1.5, 0]], atol=1e-6)
    assert not arm.flags & res.COPY_POSITION[2]


@pytest.mark.parametrize(
    ("extension", "expected"),
    [
        (".tskl", ["AX3Skeleton"]),
        (".tmsh", ["3DPoints", "TriangleMesh"]),
        (".tskm", ["3DPoints", "AX3SkeletalDeform", "TriangleMesh"]),
        (".tani", ["AX3FrameAnimation", "AX3TrackAnimation"]),
        (".tapk", ["AX3FrameAnimation", "AX3TrackAnimation"]),
    ],
)
def test_the_extension_chooses_the_contents(empty_scene, tmp_path, extension, expected):
    (tmp_path / "model.tpak").write_bytes(full_file())
    import_file(tmp_path / "model.tpak")
    select_all_of()
    back = export(tmp_path / f"part{extension}")
    assert [t for t in types(back) if t in res.HINTED_TYPES] == expected
    assert "TMatVariants" not in types(back)
    assert back == written(convert_contents(extension))  # as the format layer writes that part


def convert_contents(extension: str) -> str:
    from retro_models.formats.tmrf.files import CONTENT_BY_EXTENSION

    return CONTENT_BY_EXTENSION[extension]


def test_export_options_reach_the_file(empty_scene, tmp_path):
    (tmp_path / "model.tpak").write_bytes(full_file())
    import_file(tmp_path / "model.tpak")
    select_all_of()
    back = export(
        tmp_path / "options.tpak",
        normals="COMPRESSED",
        tangents="HIGH",
        animation_kind="TRACK",
        orientations="S16",
    )
    kinds = types(back)
    assert "HighCompressedTangentVectors" in kinds and "TangentVectors" not in kinds
    assert "Normals" not in kinds and "CompressedNormals" in kinds
    assert "AX3FrameAnimation" not in kinds and kinds.count("AX3TrackAnimation") == 2
    assert back == written("everything", normals="compressed", tangents="high", animation="track", s16=True)
    frames = export(tmp_path / "frames.tani", animation_kind="FRAME", orientations="S16")
    model = media.read(frames)
    bones = [b for r in model.walk() if isinstance(r.content, res.FrameAnimation) for b in r.content.bones]
    assert len(bones) == 3 and all(b.flags & res.ORIENTATION_S16 for b in bones)
    with pytest.raises(RuntimeError, match="need compressed normals"):
        bpy.ops.export_scene.tertius_tmrf(
            filepath=str(tmp_path / "bad.tpak"), normals="NONE", tangents="HIGH"
        )
    assert not (tmp_path / "bad.tpak").exists()


@pytest.mark.parametrize("axes", [{}, {"axis_forward": "-Z", "axis_up": "Y"}])
def test_animation_file_applies_to_the_selected_armature(empty_scene, tmp_path, axes):
    """With an axis conversion too: the root bone's keys turn with the skeleton they now drive."""
    skeleton, animations = written("skeleton"), written("animations")
    assert types(animations) == ["TableOfContents", "Hints", "AX3FrameAnimation", "AX3TrackAnimation"]
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "skel.tskl").write_bytes(skeleton)
    (tmp_path / "in" / "moves.tapk").write_bytes(animations)
    import_file(tmp_path / "in" / "skel.tskl", **axes)
    armature = armature_object()
    assert not bpy.data.actions
    select_only([armature], armature)
    before = data_counts()
    import_file(tmp_path / "in" / "moves.tapk", **axes)
    after = data_counts()
    assert after == {**before, "actions": 2}  # no new armature, mesh or collection
    assert armature.animation_data.action == bpy.data.actions["walk"]
    assert len(props.to_python(armature.data[props.ANIMATIONS])) == 2
    # Exporting the animations gives the file back; the skeleton file too.
    assert export(tmp_path / "moves.tapk", **axes) == animations
    assert export(tmp_path / "skel.tskl", **axes) == skeleton
    # In a model, they are new resources bound to the armature's skeleton, each of the kind it was.
    model = media.read(export(tmp_path / "all.tmdl", **axes))
    kinds = [model.type_name(r) for r in model.walk()]
    assert kinds.count("AX3Skeleton") == 1
    assert kinds.count("AX3FrameAnimation") == 1 and kinds.count("AX3TrackAnimation") == 1
    for r in model.walk():
        if isinstance(r.content, (res.FrameAnimation, res.TrackAnimation)):
            assert model.strings.name(r.content.skeleton) == "skel"


def test_animation_file_on_an_armature_made_in_blender(empty_scene, tmp_path):
    """Bones are matched by name; channels of bones the armature lacks are left out with a warning."""
    armature = new_armature("rig", {"root": None})
    (tmp_path / "moves.tapk").write_bytes(written("animations"))
    select_only([armature], armature)
    import_file(tmp_path / "moves.tapk")
    walk = bpy.data.actions["walk"]
    paths = {fc.data_path for fc in compat.action_fcurves(walk)}
    assert paths == {'pose.bones["root"].location', 'pose.bones["root"].rotation_quaternion'}
    model = media.read(export(tmp_path / "again.tani"))
    frame = next(r.content for r in model.walk() if isinstance(r.content, res.FrameAnimation))
    assert model.strings.name(frame.skeleton) == "rig"
    positions, _ = frame.bones[0].decode()
    np.testing.assert_allclose(positions, [[1, 2, 3], [1, 2, 4]], atol=1e-6)
    from retro_models.formats.tmrf import files
    from retro_models.operators.blender.extract import extract_scene

    scene = files.load(str(tmp_path / "moves.tapk"), files.ImportOptions())
    files.retarget(scene, extract_scene(bpy.context, armature, []).skeletons[0], np.eye(4))
    assert scene.warnings == [
        "animation walk: bones missing from armature 'rig' left out (kept for writing the file back): arm",
    ]


def test_animation_file_needs_an_armature(empty_scene, tmp_path):
    (tmp_path / "moves.tani").write_bytes(written("animations"))
    with pytest.raises(RuntimeError, match="select the armature"):
        bpy.ops.import_scene.tertius_tmrf(filepath=str(tmp_path / "moves.tani"))
    assert not bpy.data.actions


def test_bad_files_report_and_leave_the_scene_unchanged(empty_scene, tmp_path):
    data = full_file()
    (tmp_path / "good.tpak").write_bytes(data)
    import_file(tmp_path / "good.tpak")
    before = data_counts()
    cases = {"truncated.tmdl": data[: len(data) - 7], "magic.tani": b"TDPMediX" + data[8:], "empty.tskl": b""}
    for name, payload in cases.items():
        (tmp_path / name).write_bytes(payload)
        with pytest.raises(RuntimeError) as error:
            bpy.ops.import_scene.tertius_tmrf(filepath=str(tmp_path / name))
        assert name in str(error.value) and "offset" in str(error.value)
        assert data_counts() == before, name


def test_export_needs_the_right_selection(empty_scene, tmp_path):
    with pytest.raises(RuntimeError, match="select an armature"):
        bpy.ops.export_scene.tertius_tmrf(filepath=str(tmp_path / "x.tskl"))
    armature = new_armature("rig", {"root": None})
    select_only([armature], armature)
    with pytest.raises(RuntimeError, match="select the meshes"):
        bpy.ops.export_scene.tertius_tmrf(filepath=str(tmp_path / "x.tmsh"))
    with pytest.raises(RuntimeError, match="no animations"):
        bpy.ops.export_scene.tertius_tmrf(filepath=str(tmp_path / "x.tani"))
    assert list(tmp_path.iterdir()) == []


def test_file_handler_and_menus(addon):
    from retro_models.formats.registry import FAMILIES

    handler = bpy.types.FileHandler.bl_rna_get_subclass_py("IO_FH_retro_tertius_tmrf")
    assert handler.bl_import_operator == "import_scene.tertius_tmrf"
    assert handler.bl_export_operator == "export_scene.tertius_tmrf"
    assert set(handler.bl_file_extensions.split(";")) == {
        ".tmdl",
        ".tani",
        ".tapk",
        ".tskl",
        ".tskm",
        ".tmsh",
        ".tpak",
    }
    (family,) = [f for f in FAMILIES if f.name == "tmrf"]
    assert family.importer.menu == "Tertius media (.tmdl .tani .tapk .tskl .tskm .tmsh .tpak)"
    assert hasattr(bpy.types, "IMPORT_SCENE_OT_tertius_tmrf") and hasattr(
        bpy.types, "EXPORT_SCENE_OT_tertius_tmrf"
    )


# -- a model made in Blender --------------------------------------------------------


def new_armature(name: str, bones: dict[str, tuple]) -> bpy.types.Object:
    """Bones along +Y (name → (head, tail, parent) or None for a unit root bone)."""
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    bpy.context.view_layer.objects.active = obj
    bpy.ops.object.mode_set(mode="EDIT")
    for bone_name, spec in bones.items():
        head, tail, parent = spec or ((0, 0, 0), (0, 1, 0), None)
        bone = data.edit_bones.new(bone_name)
        bone.head, bone.tail = head, tail
        if parent:
            bone.parent = data.edit_bones[parent]
    bpy.ops.object.mode_set(mode="OBJECT")
    return obj


def build_from_scratch() -> None:
    """An armature with two bones, a skinned triangle pair with custom normals, a UV map and an
    image slot, and an action keyed on every frame (the way the importer shows frame animations)."""
    # Bone tails where the importer puts them: the root reaches its child, a leaf is half its parent.
    armature = new_armature("rig", {"root": None, "tip": ((0, 1, 0), (0, 1.5, 0), "root")})
    mesh = bpy.data.meshes.new("panel")
    mesh.from_pydata([(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)], [], [(0, 1, 2), (0, 2, 3)])
    mesh.normals_split_custom_set_from_vertices([(0, 0, 1), (0, 0, 1), (0, 0, 1), (0, 0, 1)])
    uv = mesh.uv_layers.new(name="paint")
    uv.data.foreach_set("uv", np.array([[0, 0], [1, 0], [1, 1], [0, 0], [1, 1], [0, 1]], np.float32).ravel())
    image = bpy.data.images.new("paint", 1, 1, alpha=True)
    image.pixels.foreach_set(np.array([1, 0, 1, 1], np.float32))
    material = compat.new_material("panel")  # the importer names a mesh's material after the mesh
    node = material.node_tree.nodes.new("ShaderNodeTexImage")
    node.image = image
    mesh.materials.append(material)
    obj = bpy.data.objects.new("panel", mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.parent = armature
    obj.modifiers.new("Armature", "ARMATURE").object = armature
    root, tip = obj.vertex_groups.new(name="root"), obj.vertex_groups.new(name="tip")
    root.add([0, 1], 1.0, "REPLACE")
    root.add([2, 3], 0.25, "REPLACE")
    tip.add([2, 3], 0.75, "REPLACE")
    bpy.context.scene.render.fps = 30
    tip_bone = armature.pose.bones["tip"]
    for frame, (angle, lift) in enumerate([(0.0, 0.0), (0.3, 0.1), (0.6, 0.2)]):
        tip_bone.location = (0.0, 0.0, lift)
        tip_bone.rotation_quaternion = (np.cos(angle / 2), np.sin(angle / 2), 0.0, 0.0)
        tip_bone.keyframe_insert("location", frame=frame)
        tip_bone.keyframe_insert("rotation_quaternion", frame=frame)
    armature.animation_data.action.name = "bend"


def test_model_from_scratch_exports_and_reimports_the_same(empty_scene, tmp_path):
    build_from_scratch()
    select_all_of()
    before = scene_dump.dump(detail=False)
    data = export(tmp_path / "panel.tmdl", normals="NONE")
    assert [t for t in types(data) if t in res.HINTED_TYPES] == [
        "AX3Skeleton",
        "3DPoints",
        "AX3SkeletalDeform",
        "TriangleMesh",
        "AX3FrameAnimation",
    ]
    bpy.ops.wm.read_factory_settings(use_empty=True)
    import_file(tmp_path / "panel.tmdl")
    after = scene_dump.dump(detail=False)
    # The importer's own bookkeeping: the exact normals kept beside Blender's custom normals.
    after = "\n".join(line for line in after.splitlines() if props.SOURCE_NORMAL not in line) + "\n"
    assert after == before
    (obj,) = [o for o in bpy.data.objects if o.type == "MESH"]
    weights = {obj.vertex_groups[g.group].name: round(g.weight, 6) for g in obj.data.vertices[2].groups}
    assert weights == {"root": 0.25, "tip": 0.75}  # the dump lists groups, not weights
    # Unedited, the re-import exports the same file.
    select_all_of()
    assert export(tmp_path / "again.tmdl", normals="NONE") == data
