"""J3D animations and material sets applied to the selection, compared with the game-exact evaluator.

Armatures and materials are made through the Scene builder; the real animation
files come from ../shared/corpus/j3d. Blender's evaluated values (pose bones,
node sockets, custom properties after ``frame_set``) must match
``formats.j3d.evaluate`` at every frame (bones) or at several frames (materials).
"""

import bpy
import numpy as np
import pytest
from j3d_support import (
    LENGTH_TOLERANCE,
    assert_same_transforms,
    blender_local,
    expected_local,
    make_armature,
    material_object,
)
from retro_models.formats import scene as sc
from retro_models.formats.j3d import bck, bmt, bpk, brk, btk, btp, evaluate
from retro_models.formats.j3d.container import track_keys
from retro_models.operators.blender import compat, props
from retro_models.operators.blender.material import slot_image_node
from support import corpus_file, corpus_files, data_counts

PATHS = ("scale", "rotation_euler", "location")  # BCK components


@pytest.mark.parametrize("rotated", [False, True], ids=["keys-kept", "baked"])
@pytest.mark.parametrize("path", corpus_files("j3d/*.bck"), ids=lambda p: p.name)
def test_bck_matches_the_game_at_every_frame(empty_scene, path, rotated):
    model = bck.read(path.read_bytes(), str(path))
    context = bpy.context
    armature = make_armature(context, model.joint_count, rotated)
    assert bpy.ops.import_scene.j3d_animation(filepath=str(path)) == {"FINISHED"}
    action = armature.animation_data.action
    assert action is not None and props.get_extras(action)["loop_mode"] == model.loop_mode
    fcurves = compat.action_fcurves(action)
    if not rotated:
        # Identity rests: every track is one F-curve with the file's keys (Blender may merge keys less than
        # 0.01 frame apart, as angrydemo's at 205 and 205.0005).
        curves = {(fc.data_path, fc.array_index): fc for fc in fcurves}
        for (joint, axis, component), track in np.ndenumerate(model.tracks):
            fcurve = curves[(f'pose.bones["joint{joint}"].{PATHS[component]}', axis)]
            keys = len(fcurve.keyframe_points)
            if track["count"] < 2:
                assert keys == 1
                continue
            times = track_keys(track, model.banks()[component]).times
            assert len(times) - int((np.diff(times) < 0.01).sum()) <= keys <= len(times)
            assert {k.interpolation for k in fcurve.keyframe_points} == {"BEZIER"}
    else:
        assert any(fc.data_path.endswith("rotation_quaternion") for fc in fcurves)
    cyclic = [fc for fc in fcurves if any(m.type == "CYCLES" for m in fc.modifiers)]
    assert bool(cyclic) == (model.loop_mode in (2, 4))
    frames = np.arange(0, 4 * model.length + 1) / 4  # whole frames and between them
    names = [f"joint{i}" for i in range(model.joint_count)]
    assert_same_transforms(expected_local(model, frames), blender_local(context, armature, names, frames))


def test_bck_for_another_model_fails_and_changes_nothing(empty_scene):
    path = corpus_file("j3d/monl_a_clap1.bck")
    armature = make_armature(bpy.context, 5, rotated=True)
    before = data_counts()
    with pytest.raises(RuntimeError) as error:
        bpy.ops.import_scene.j3d_animation(filepath=str(path))
    message = str(error.value)
    assert "7 joints" in message and "has 5" in message and "monl_a_clap1.bck" in message, message
    assert data_counts() == before
    assert armature.animation_data is None or armature.animation_data.action is None


def test_bck_without_an_armature_is_an_error(empty_scene):
    with pytest.raises(RuntimeError, match="select the armature"):
        bpy.ops.import_scene.j3d_animation(filepath=str(corpus_file("j3d/monl_a_clap1.bck")))


# -- materials ------------------------------------------------------------------------------


def socket(node, name):
    return np.array(node.inputs[name].default_value, np.float64)


def blender_uv_transform(tree, slot):
    """(2×2 matrix, offset) of the slot's Mapping chain as Blender evaluates it (uv' = A·uv + b)."""
    main = tree.nodes[f"Mapping {slot}"]
    rotation = tree.nodes[f"Mapping {slot} Rotation"]
    shift = tree.nodes[f"Mapping {slot} Center"]
    angle = socket(rotation, "Rotation")[2]
    rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    scale = np.diag(socket(main, "Scale")[:2])
    assert not socket(main, "Rotation").any() and (socket(rotation, "Scale") == 1).all()
    a = scale @ rot
    return a, a @ socket(shift, "Location")[:2] + socket(main, "Location")[:2]


def game_uv_transform(values, center, n, f):
    """The game's texture matrix (S·R·(uv − c) + c + t) seen in Blender's V-up UV space."""
    su, sv = values["scale"][f, n, :2]
    theta = np.radians(values["rotation"][f, n, 2])
    tu, tv = values["translation"][f, n, :2]
    rot = np.array([[np.cos(theta), -np.sin(theta)], [np.sin(theta), np.cos(theta)]])
    a = np.diag([su, sv]) @ rot
    b = center[:2] + np.array([tu, tv]) - a @ center[:2]
    flip, shift = np.diag([1.0, -1.0]), np.array([0.0, 1.0])
    return flip @ a @ flip, flip @ (a @ shift + b) + shift


@pytest.mark.parametrize("path", corpus_files("j3d/*.btk"), ids=lambda p: p.name)
def test_btk_scrolls_and_rotates_like_the_game(empty_scene, path):
    model = btk.read(path.read_bytes(), str(path))
    slots: dict[str, int] = {}
    for name, index in zip(model.material_names, model.texture_indices, strict=True):
        slots[name] = max(slots.get(name, 0), int(index) + 1)
    materials = material_object(bpy.context, {**slots, "unrelated": 1})
    assert bpy.ops.import_scene.j3d_animation(filepath=str(path)) == {"FINISHED"}
    frames = np.linspace(0, model.length, 7).round()
    values = evaluate.evaluate_btk(model, frames)
    for f, frame in enumerate(frames):
        bpy.context.scene.frame_set(int(frame))
        for n, (name, slot) in enumerate(zip(model.material_names, model.texture_indices, strict=True)):
            found = blender_uv_transform(materials[name].node_tree, int(slot))
            expected = game_uv_transform(values, model.centers[n].astype(np.float64), n, f)
            assert np.abs(found[0] - expected[0]).max() < LENGTH_TOLERANCE, (name, frame)
            assert np.abs(found[1] - expected[1]).max() < LENGTH_TOLERANCE, (name, frame)
    assert materials["unrelated"].node_tree.animation_data is None


def shown_color(tree, kind, slot):
    """(R, G, B, A) × 255 the slot's driven RGB and alpha nodes show."""
    rgb = tree.nodes[f"J3D {kind} {slot}"].outputs[0].default_value[:3]
    alpha = tree.nodes[f"J3D {kind} {slot} alpha"].outputs[0].default_value
    return np.array([*rgb, alpha], np.float64) * 255


def assert_shows_the_game(shown, game, raw, tracks, bank_of, frame, where):
    """The colour a slot shows is the game's (clamped, truncated) at every key frame, and between keys
    wherever the game's curve is not within float32 reach of an integer (Blender evaluates its
    curves in float32: there a value the game puts on an integer can fall a hair either side)."""
    for c in range(4):
        at_key = frame in track_keys(tracks[c], bank_of(c)).times
        near_integer = abs(raw[c] - round(raw[c])) < 1e-4
        step = 1.0 if near_integer and not at_key else 0.0
        assert abs(shown[c] - game[c]) <= step + 255e-4, (where, frame, c, shown[c], game[c])


def feeding(socket):
    """The node linked into ``socket``."""
    return socket.links[0].from_node


def principled(tree):
    return next(n for n in tree.nodes if n.type == "BSDF_PRINCIPLED")


@pytest.mark.parametrize("name", ["attack.brk", "normal.brk"])
def test_brk_colours_follow_the_game(empty_scene, capfd, name):
    path = corpus_file(f"j3d/{name}")
    model = brk.read(path.read_bytes(), str(path))
    names = sorted(set(model.register.material_names) | set(model.konst.material_names))
    materials = material_object(bpy.context, dict.fromkeys(names[1:], 1))  # the first has no match
    bpy.ops.import_scene.j3d_animation(filepath=str(path), set_frame_range=True)
    report = capfd.readouterr().out
    assert f"no selected material named {names[0]!r}" in report and ", ".join(names[1:]) in report
    assert (bpy.context.scene.frame_start, bpy.context.scene.frame_end) == (0, model.length)
    frames = np.arange(model.length + 1)
    expected = evaluate.evaluate_brk(model, frames)
    for label, group in (("register", model.register), ("konst", model.konst)):
        tracks = group.entries["tracks"]
        raw = np.stack(
            [evaluate.evaluate_tracks(tracks[:, c], group.banks[c], frames, 0.0) for c in range(4)], -1
        )
        for f, frame in enumerate(frames):
            bpy.context.scene.frame_set(int(frame))
            for n, (name, slot) in enumerate(zip(group.material_names, group.entries["slot"], strict=True)):
                if name == names[0]:
                    assert name not in materials
                    continue
                tree = materials[name].node_tree
                found = np.array(tree[f"color.{label}{int(slot)}"]) * 255
                assert np.abs(found - raw[f, n]).max() < 1e-3, (label, name, frame)
                # The RGB node cannot hold a negative: a negative tint shows black, as the game's clamp makes it.
                game = expected[label][f, n].astype(np.float64)
                game[:3] = np.maximum(game[:3], 0)
                shown = shown_color(tree, label, int(slot))
                banks = group.banks
                assert_shows_the_game(
                    shown, game, raw[f, n], tracks[n], banks.__getitem__, frame, (label, name)
                )
    # The first slot animated on each material tints the texture; the others are shown but not wired.
    first: dict[str, str] = {}
    for label, group in (("register", model.register), ("konst", model.konst)):
        for name, slot in zip(group.material_names, group.entries["slot"], strict=True):
            first.setdefault(name, f"J3D {label} {int(slot)}")
    for name, material in materials.items():
        tree = material.node_tree
        tint = feeding(principled(tree).inputs["Base Color"])
        assert tint.name == "J3D tint" and tint.blend_type == "MULTIPLY"
        assert feeding(next(s for s in tint.inputs if s.identifier == "A_Color")).type == "TEX_IMAGE"
        assert feeding(next(s for s in tint.inputs if s.identifier == "B_Color")).name == first[name]
        for node in tree.nodes:
            if props.COLOR_SLOT in node and node.name != first[name]:
                assert not node.outputs[0].is_linked, node.name
            if props.COLOR_SLOT in node:
                slot = props.to_python(node[props.COLOR_SLOT])
                assert node.name.startswith(f"J3D {slot['kind']} {slot['slot']}")


@pytest.mark.parametrize("textures", [1, 0], ids=["textured", "untextured"])
def test_bpk_colours_follow_the_game(empty_scene, textures):
    path = corpus_file("j3d/color.bpk")
    model = bpk.read(path.read_bytes(), str(path))
    materials = material_object(bpy.context, dict.fromkeys(model.material_names, textures))
    bpy.ops.import_scene.j3d_animation(filepath=str(path))
    frames = np.array([0, 1, 2.5, 3, 4, 5.25, model.length])
    raw = np.stack(
        [evaluate.evaluate_tracks(model.tracks[:, c], model.banks[c], frames, 0.0) for c in range(4)], -1
    )
    expected = evaluate.evaluate_bpk(model, frames)
    assert len(np.unique(expected[..., :3], axis=0)) > 3  # the colour changes
    for f, frame in enumerate(frames):
        bpy.context.scene.frame_set(int(frame), subframe=float(frame % 1))
        for n, name in enumerate(model.material_names):
            tree = materials[name].node_tree
            found = np.array(tree["color.material"]) * 255
            assert np.abs(found - raw[f, n]).max() < 1e-3
            shown = shown_color(tree, "material", 0)
            banks = model.banks
            assert_shows_the_game(
                shown, expected[f, n], raw[f, n], model.tracks[n], banks.__getitem__, frame, name
            )
    for material in materials.values():
        tree = material.node_tree
        bsdf = principled(tree)
        color, alpha = tree.nodes["J3D material 0"], tree.nodes["J3D material 0 alpha"]
        if textures:  # texture × material colour, texture alpha × material alpha
            mix = feeding(bsdf.inputs["Base Color"])
            assert mix.blend_type == "MULTIPLY"
            assert feeding(next(s for s in mix.inputs if s.identifier == "A_Color")).type == "TEX_IMAGE"
            assert feeding(next(s for s in mix.inputs if s.identifier == "B_Color")) == color
            multiply = feeding(bsdf.inputs["Alpha"])
            assert multiply.operation == "MULTIPLY" and feeding(multiply.inputs[1]) == alpha
            assert feeding(multiply.inputs[0]).type == "TEX_IMAGE"
        else:  # the animated colour replaces the static one; an opaque material shows no alpha
            assert feeding(bsdf.inputs["Base Color"]) == color
            assert not bsdf.inputs["Alpha"].is_linked


def switched_image(tree, slot, value):
    """The image the slot's switch shows for an index value (None: the slot's own)."""
    for node in tree.nodes:
        if (
            node.type == "MATH"
            and node.operation == "COMPARE"
            and abs(node.inputs[1].default_value - value) < 0.5
        ):
            mix = node.outputs[0].links[0].to_node
            return _socket_source(mix, "B_Color").image
    return None


def _socket_source(node, identifier):
    socket = next(s for s in node.inputs if s.identifier == identifier)
    return socket.links[0].from_node


def test_btp_switches_the_material_set_textures_like_the_game(empty_scene):
    from retro_models.operators.blender.build import build_images

    path = corpus_file("j3d/grandstarget.btp")
    model = btp.read(path.read_bytes(), str(path))
    materials = material_object(bpy.context, dict.fromkeys(model.material_names, 1))
    # As a material set applied before leaves them: images that know their TEX1 index.
    pixels = np.zeros((2, 2, 4), np.uint8)
    images = build_images([sc.Image(f"tex{i}", pixels, 2, 2, extras={"tex1_index": i}) for i in range(16)])
    assert bpy.ops.import_scene.j3d_animation(filepath=str(path)) == {"FINISHED"}
    frames = np.array([0, 1, 37, 450, 898, model.length, model.length + 30])
    expected = evaluate.evaluate_btp(model, frames)
    for f, frame in enumerate(frames):
        bpy.context.scene.frame_set(int(frame))
        for n, (name, entry) in enumerate(zip(model.material_names, model.entries, strict=True)):
            tree = materials[name].node_tree
            slot = int(entry["slot"])
            assert round(tree[f"texture.{slot}.image_index"]) == expected[f, n], (name, frame)
            shown = tree.nodes[f"Image Index {slot}"].outputs[0].default_value
            assert round(shown) == expected[f, n], (name, frame)
            assert switched_image(tree, slot, shown) == images[expected[f, n]]
    # Every link the slot's image fed now comes from the switch.
    for material in materials.values():
        bsdf = next(n for n in material.node_tree.nodes if n.type == "BSDF_PRINCIPLED")
        assert bsdf.inputs["Base Color"].links[0].from_node.type == "MIX"


def test_btp_textures_from_a_model_file(empty_scene):
    path = corpus_file("j3d/grandstarget.btp")
    model_path = corpus_file("j3d/driver.bmd")
    model = btp.read(path.read_bytes(), str(path))
    materials = material_object(bpy.context, dict.fromkeys(model.material_names, 1))
    bpy.ops.import_scene.j3d_animation(filepath=str(path), textures_file=str(model_path))
    tree = materials[model.material_names[0]].node_tree
    # driver.bmd has 11 textures: indices 0, 3 and 10 of the pattern exist there.
    assert switched_image(tree, 0, 3).name.startswith("mario_eye.2")
    assert switched_image(tree, 0, 10).size[:] == (256, 128)
    assert switched_image(tree, 0, 12) is None
    assert all(bpy.data.images[n].packed_file is not None for n in ("mario_all", "mario_eye.2"))


def test_unmatched_material_names_are_reported_and_nothing_is_applied(empty_scene):
    materials = material_object(bpy.context, {"not_in_the_file": 1})
    before = data_counts()
    with pytest.raises(RuntimeError, match="no selected object has a material"):
        bpy.ops.import_scene.j3d_animation(filepath=str(corpus_file("j3d/color.bpk")))
    assert data_counts() == before
    assert materials["not_in_the_file"].node_tree.animation_data is None


def test_bmt_updates_materials_by_name_and_creates_the_others(empty_scene, tmp_path):
    source = corpus_file("j3d/driver.bmd")
    path = tmp_path / "driver.bmt"
    path.write_bytes(bmt.write(bmt.cut_from_model(source.read_bytes(), str(source))))
    material_object(bpy.context, {"mario_all_tx": 0})
    obj = bpy.context.active_object
    assert bpy.ops.import_scene.j3d_animation(filepath=str(path)) == {"FINISHED"}
    updated = obj.material_slots[0].material
    assert updated.name == "mario_all_tx" and "mario_all_tx.001" not in bpy.data.materials
    assert updated.use_backface_culling
    image = slot_image_node(updated.node_tree, 0).image
    # TEX1 names "mario_all" twice (textures 0 and 10, the same texels); the material uses the second.
    assert image.name.startswith("mario_all") and image.size[:] == (256, 128)
    assert props.get_extras(image)["tex1_index"] == 10 and image.packed_file is not None
    indices = sorted(props.get_extras(i).get("tex1_index", -1) for i in bpy.data.images)
    assert indices[-11:] == list(range(11))  # every TEX1 texture, for a BTP to show
    assert "mat3" in props.get_extras(updated)
    assert "mario_eye_tx" in bpy.data.materials


class _Recorder:
    """Stands in for a panel layout: records the operator buttons drawn."""

    def __init__(self, buttons):
        self.buttons = buttons

    def box(self):
        return self

    def row(self):
        return self

    def label(self, **_):
        pass

    def operator(self, idname, **kwargs):
        button = type("Button", (), {})()
        self.buttons.append((idname, kwargs, button))
        return button


def test_panel_lists_and_switches_applied_animations(empty_scene):
    armature = make_armature(bpy.context, 7, rotated=False)
    path = corpus_file("j3d/monl_a_clap1.bck")
    bpy.ops.import_scene.j3d_animation(filepath=str(path))
    first = armature.animation_data.action
    bpy.ops.import_scene.j3d_animation(filepath=str(path))
    second = armature.animation_data.action
    assert first != second
    groups = props.to_python(armature.data[props.ANIMATIONS])
    assert len(groups) == 2
    panel = bpy.types.VIEW3D_PT_retro_animations
    assert panel.poll(bpy.context)
    buttons = []
    fake = type("Panel", (), {"layout": _Recorder(buttons), "owners": staticmethod(panel.owners)})()
    panel.draw(fake, bpy.context)
    assert [b.group for _, _, b in buttons] == groups
    assert [kwargs["depress"] for _, kwargs, _ in buttons] == [False, True]
    bpy.ops.retro_models.use_animation(group=groups[0])
    assert armature.animation_data.action == first


def test_panel_switches_material_animations(empty_scene):
    path = corpus_file("j3d/color.bpk")
    model = bpk.read(path.read_bytes(), str(path))
    material = material_object(bpy.context, dict.fromkeys(model.material_names, 1))[model.material_names[0]]
    bpy.ops.import_scene.j3d_animation(filepath=str(path))
    first = material.node_tree.animation_data.action
    bpy.ops.import_scene.j3d_animation(filepath=str(path))
    assert material.node_tree.animation_data.action != first
    groups = props.to_python(material[props.ANIMATIONS])
    bpy.ops.retro_models.use_animation(group=groups[0], material=material.name)
    assert material.node_tree.animation_data.action == first


def test_file_handler_accepts_every_j3d_extension(addon):
    handler = bpy.types.FileHandler.bl_rna_get_subclass_py("IO_FH_retro_j3d_animation")
    assert handler.bl_import_operator == "import_scene.j3d_animation"
    for extension in (".bck", ".btk", ".brk", ".bpk", ".btp", ".bmt"):
        assert extension in handler.bl_file_extensions


@pytest.mark.parametrize("name", ["daisy_sky.btk", "color.bpk", "attack.brk", "grandstarget.btp"])
def test_material_animations_extract_back_to_the_same_file(empty_scene, name):
    from retro_models.formats.j3d import convert
    from retro_models.formats.j3d.apply import to_blender_uv
    from retro_models.formats.j3d.files import READERS
    from retro_models.operators.blender.extract import extract_scene

    path = corpus_file(f"j3d/{name}")
    module = READERS[path.suffix]
    model = module.read(path.read_bytes(), str(path))
    animation = convert.to_scene(model).animations[0]
    slots: dict[str, int] = {}
    for channel in animation.channels:
        slot = int(channel.path.split(".")[1]) if channel.path.startswith("texture.") else 0
        slots[channel.target] = max(slots.get(channel.target, 0), slot + 1)
    material_object(bpy.context, slots)
    bpy.ops.import_scene.j3d_animation(filepath=str(path))
    scene = extract_scene(bpy.context, None, [bpy.context.active_object])
    assert len(scene.animations) == 1
    if name.endswith(".btk"):
        to_blender_uv(scene)  # its own inverse: back to the GameCube's UV space
    assert module.write(convert.from_scene(scene)) == path.read_bytes()


@pytest.mark.parametrize("rotated", [False, True], ids=["keys-kept", "baked"])
@pytest.mark.parametrize("path", corpus_files("j3d/*.bck"), ids=lambda p: p.name)
def test_bck_extracts_back_to_the_same_file(empty_scene, path, rotated):
    """Both files step with two keys on one frame or 0.0005 frame apart: spread in Blender, restored here."""
    from retro_models.formats.j3d import convert
    from retro_models.operators.blender.extract import extract_scene

    armature = make_armature(bpy.context, bck.read(path.read_bytes()).joint_count, rotated)
    bpy.ops.import_scene.j3d_animation(filepath=str(path))
    scene = extract_scene(bpy.context, armature, [])
    bck_model = convert.from_scene(scene, joint_names=scene.skeletons[0].bone_names)
    assert bck.write(bck_model) == path.read_bytes()


def test_batch_import_of_a_material_set(empty_scene, tmp_path):
    import retro_models

    source = corpus_file("j3d/kindan_Room0_model3.bdl")
    path = tmp_path / "room.bmt"
    path.write_bytes(bmt.write(bmt.cut_from_model(source.read_bytes(), str(source))))
    report = retro_models.import_file(bpy.context, str(path))
    assert report.summary.startswith("room.bmt: 1 material, 1 image")
    material = bpy.data.materials["lambert54_v"]
    assert material.surface_render_method == "BLENDED"


def test_ping_pong_loops_mirror(empty_scene, tmp_path):
    source = corpus_file("j3d/monl_a_clap1.bck")
    model = bck.read(source.read_bytes(), str(source))
    model.loop_mode = 4
    path = tmp_path / "pingpong.bck"
    path.write_bytes(bck.write(model))
    armature = make_armature(bpy.context, model.joint_count, rotated=False)
    bpy.ops.import_scene.j3d_animation(filepath=str(path))
    modifiers = [m for fc in compat.action_fcurves(armature.animation_data.action) for m in fc.modifiers]
    assert modifiers and {(m.mode_before, m.mode_after) for m in modifiers} == {("MIRROR", "MIRROR")}
