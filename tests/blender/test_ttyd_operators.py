"""The TTYD operators as a user runs them: import, pose fidelity against the game's evaluator, export.

The model is the format tests' hand-built fixture (tests/formats/ttyd/ttyd_fixtures.py), written
again by the project's writer with a rest rotation on its animated bone for the "rotated" case,
plus a TPL of two images named as the game names it ("<texture name>-").
"""

from pathlib import Path

import bpy
import numpy as np
import pytest
import ttyd_fixtures as F
from retro_models.formats.textures import gx
from retro_models.formats.textures import tpl as tpl_format
from retro_models.formats.ttyd import convert
from retro_models.formats.ttyd import model as fmt
from retro_models.formats.ttyd.evaluate import Evaluator, world_matrices
from support import data_counts
from ttyd_support import evaluated_positions

TOLERANCE = 1e-4
BODY_NODE = 24
# Inside the keyed range of "walk" (keys at 0 and 10), sub-frames included.
FRAMES = (0.0, 2.5, 5.0, 7.5, 9.5)


def model_bytes(rotated: bool) -> bytes:
    if not rotated:
        return F.build()
    model = fmt.read(F.build())
    model.node_floats[BODY_NODE + 9 : BODY_NODE + 12] = (0.0, 20.0, 30.0)  # rotation B at rest
    return fmt.write(model)


def tpl_bytes() -> bytes:
    rng = np.random.default_rng(3)
    images = [
        tpl_format.image_from_pixels(
            rng.integers(0, 256, (8, 8, 4), np.uint8), gx.RGB5A3, wrap_s=1, wrap_t=2
        ),
        tpl_format.image_from_pixels(rng.integers(0, 256, (4, 8, 4), np.uint8), gx.RGBA8),
    ]
    return tpl_format.write(tpl_format.TPL(images))


@pytest.fixture(params=[False, True], ids=["plain", "rotated"])
def files(request, tmp_path):
    (tmp_path / "c_test").write_bytes(model_bytes(request.param))
    (tmp_path / "c_test_tex-").write_bytes(tpl_bytes())
    return tmp_path


@pytest.fixture
def imported(empty_scene, files):
    assert bpy.ops.import_scene.ttyd_model(filepath=str(files / "c_test")) == {"FINISHED"}
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    return files, armature, bpy.data.objects["body"]


def test_registered_without_a_file_handler(addon):
    assert hasattr(bpy.types, "IMPORT_SCENE_OT_ttyd_model") and hasattr(
        bpy.types, "EXPORT_SCENE_OT_ttyd_model"
    )
    importers = {c.bl_import_operator for c in bpy.types.FileHandler.__subclasses__()}
    assert "import_scene.toshi_tmd" in importers
    assert "import_scene.ttyd_model" not in importers  # the game's files have no extension to match


def test_import_builds_the_model(imported):
    files, armature, body = imported
    assert [b.name for b in armature.data.bones] == ["root", "body"]
    assert body.parent == armature and body.modifiers["Armature"].object == armature
    mesh = body.data
    assert (len(mesh.vertices), len(mesh.polygons)) == (4, 2)
    uv = np.empty(12, np.float32)
    mesh.uv_layers["UV0"].data.foreach_get("uv", uv)
    np.testing.assert_allclose(uv.reshape(-1, 2)[0], [0, 1])  # file T 0 → Blender V 1
    assert mesh.color_attributes["Col"].domain == "CORNER"
    material = mesh.materials[0]
    assert material.use_backface_culling is False  # cull mode 1 (front) in the fixture
    node = next(n for n in material.node_tree.nodes if n.type == "TEX_IMAGE")
    assert node.image.alpha_mode == "CHANNEL_PACKED" and node.image.size[:] == (8, 8)
    mapping = material.node_tree.nodes["Mapping 0"]
    assert tuple(mapping.inputs["Location"].default_value)[:2] == pytest.approx(F.TRANSLATE)
    assert [k.name for k in mesh.shape_keys.key_blocks] == ["Basis", "walk.1"]
    assert {a.name for a in bpy.data.actions} >= {
        "walk",
        "idle",
        "walk body",
        "walk Key",
        "walk Shader Nodetree",
    }
    swap = material.node_tree.animation_data.action
    assert swap is not None and "texture.0.image_index" in material.node_tree


def test_bad_files_report_and_leave_the_scene_unchanged(empty_scene, tmp_path):
    data = F.build()
    cases = {"truncated": data[: len(data) // 2], "empty": b"", "not_a_model": b"\xff" * 0x400}
    before = data_counts()
    for name, payload in cases.items():
        (tmp_path / name).write_bytes(payload)
        with pytest.raises(RuntimeError) as error:
            bpy.ops.import_scene.ttyd_model(filepath=str(tmp_path / name))
        assert name in str(error.value) and "offset" in str(error.value)
        assert data_counts() == before, name


def test_pose_matches_the_game_evaluator(imported):
    files, armature, body = imported
    model = fmt.read((files / "c_test").read_bytes())
    evaluator = Evaluator(model, model.animations[0].data)
    axis = convert.default_axis()
    body_group = 0
    for frame in FRAMES:
        bpy.context.scene.frame_set(int(frame), subframe=frame - int(frame))
        pose = evaluator.at([frame])
        world = axis @ world_matrices(model, pose.node_floats[0])
        for bone, group in (("root", 1), ("body", body_group)):
            np.testing.assert_allclose(
                np.array(armature.pose.bones[bone].matrix),
                world[group],
                atol=TOLERANCE,
                err_msg=f"{bone} @ {frame}",
            )
        # Vertices: the shape-key morph and the bone together, as the game draws them.
        expected = pose.positions[0] @ world[body_group][:3, :3].T + world[body_group][:3, 3]
        np.testing.assert_allclose(
            evaluated_positions(body), expected, atol=TOLERANCE, err_msg=f"frame {frame}"
        )
        assert body.hide_viewport == (not pose.visibility[0][1])


def test_visibility_plays_as_animated_hide_flags(imported):
    _, _, body = imported
    for frame, hidden in ((0, False), (5, False), (10, True)):
        bpy.context.scene.frame_set(frame)
        assert (body.hide_viewport, body.hide_render) == (hidden, hidden), frame


def export(files, armature, **options) -> Path:
    out = files / "out"
    out.mkdir(exist_ok=True)
    bpy.context.view_layer.objects.active = armature
    assert bpy.ops.export_scene.ttyd_model(filepath=str(out / "c_test"), **options) == {"FINISHED"}
    return out


def test_unchanged_model_exports_byte_identical(imported):
    files, armature, _ = imported
    out = export(files, armature)
    assert (out / "c_test").read_bytes() == (files / "c_test").read_bytes()
    assert (out / "c_test_tex-").read_bytes() == (files / "c_test_tex-").read_bytes()


def test_edits_export_as_valid_files(imported):
    files, armature, body = imported
    mesh = body.data
    mesh.vertices[0].co.x += 0.5
    uv = mesh.uv_layers["UV0"].data[0].uv
    uv[0] = 0.25
    image = next(n for n in mesh.materials[0].node_tree.nodes if n.type == "TEX_IMAGE").image
    image.pixels.foreach_set(np.ones(len(image.pixels), np.float32))
    action = armature.animation_data.action
    from retro_models.operators.blender import compat

    location = next(fc for fc in compat.action_fcurves(action) if fc.data_path.endswith("location"))
    key = location.keyframe_points[1]  # the file's keyframe (the last key only holds it to the loop end)
    key.co.y += 1.0
    key.handle_left.y += 1.0
    key.handle_right.y += 1.0
    location.update()

    out = export(files, armature, texture_format="RGBA8")
    model = fmt.read((out / "c_test").read_bytes())
    original = fmt.read((files / "c_test").read_bytes())
    to_file = np.linalg.inv(convert.default_axis() @ world_matrices(original, original.node_floats)[0])
    np.testing.assert_allclose(
        model.positions[0], original.positions[0] + to_file[:3, :3] @ [0.5, 0, 0], atol=1e-5
    )
    np.testing.assert_allclose(model.texcoords[0], [0.25, 0.0], atol=1e-6)  # V 1 is T 0
    tpl = tpl_format.read((out / "c_test_tex-").read_bytes())
    assert tpl.images[0].format == gx.RGBA8 and (tpl.images[0].decode() == 255).all()
    assert tpl.images[1].data == tpl_format.read((files / "c_test_tex-").read_bytes()).images[1].data
    anim = model.animations[0].data
    assert anim is not None and not np.array_equal(anim.node_deltas, original.animations[0].data.node_deltas)
    fmt.validate(model)


def test_export_without_an_armature_is_an_error(empty_scene):
    with pytest.raises(RuntimeError, match="armature"):
        bpy.ops.export_scene.ttyd_model(filepath="/nonexistent/c_test")


def test_group_with_a_zero_scale_imports_and_exports_unchanged(empty_scene, tmp_path):
    model = fmt.read(F.build())
    model.node_floats[0 + 3 : 0 + 6] = 0.0  # the root collapses everything below it
    (tmp_path / "c_test").write_bytes(fmt.write(model))
    assert bpy.ops.import_scene.ttyd_model(filepath=str(tmp_path / "c_test")) == {"FINISHED"}
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    out = export(tmp_path, armature)
    assert (out / "c_test").read_bytes() == (tmp_path / "c_test").read_bytes()
