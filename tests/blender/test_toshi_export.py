"""Toshi (JPOG) export through Blender: files written by ``export_scene.toshi_tmd`` reread with the format layer.

Every test imports the generated demo creature (or builds a model from
scratch), edits it the way a modder would, exports, and rereads the written
TMD, TKL and TML with ``formats/toshi`` to compare them field by field with
what was imported and with what Blender holds. Geometry is compared per
triangle corner (position, uv, normal, bone weights), so the comparison does
not depend on the vertex order or the strip layout the exporter chose.
"""

import os
import shutil

import bpy
import numpy as np
import pytest
import retro_models
from demo_creature import demo_files
from retro_models.formats.toshi import convert, strips, tkl, tmd, tml
from retro_models.operators.blender import compat
from retro_models.operators.blender.mesh import vertex_group_weights

DEMO = demo_files()
NODE_NAMES = tmd.read(DEMO["demo.tmd"]).node_names()
MESH_SKIN = "dino_skin_LOD0_0"  # the LOD0 body, material dino_skin (RGBA8888 texture_0)
MESH_EYES = "dino_Eyes_LOD0_1"  # the LOD0 head, material dino_Eyes (DXT5 texture_1)


# -- helpers -----------------------------------------------------------------------------


@pytest.fixture
def src(tmp_path):
    """A folder holding the demo trio."""
    folder = tmp_path / "src"
    folder.mkdir()
    for name, data in DEMO.items():
        (folder / name).write_bytes(data)
    return folder


@pytest.fixture
def out(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


@pytest.fixture
def demo(empty_scene, src):
    """The demo creature imported with the default options (every LOD); returns its armature object."""
    assert bpy.ops.import_scene.toshi_tmd(filepath=str(src / "demo.tmd")) == {"FINISHED"}
    return bpy.data.objects["demo"]


def select(*objects):
    for obj in bpy.context.view_layer.objects:
        obj.select_set(False)
    for obj in objects:
        obj.select_set(True)
    bpy.context.view_layer.objects.active = objects[0]


def export(folder, armature=None, name="demo.tmd", **options) -> set:
    if armature is not None:
        select(armature)
    return bpy.ops.export_scene.toshi_tmd(filepath=str(folder / name), **options)


def export_fails(folder, match: str, armature=None, name="demo.tmd", **options) -> None:
    """The export is cancelled with an error report matching ``match`` and nothing is written.

    bpy.ops raises RuntimeError (carrying the report) when an operator returns
    {'CANCELLED'} with an error report, so that is how the cancellation shows here.
    """
    before = sorted(os.listdir(folder))
    with pytest.raises(RuntimeError, match=match):
        export(folder, armature, name, **options)
    assert sorted(os.listdir(folder)) == before


def read_trio(folder, stem="demo", library="demo"):
    return (
        tmd.read((folder / f"{stem}.tmd").read_bytes(), f"{stem}.tmd"),
        tkl.read((folder / f"{library}.tkl").read_bytes(), f"{library}.tkl"),
        tml.read((folder / f"{stem}.tml").read_bytes(), f"{stem}.tml"),
    )


def original_trio():
    return tmd.read(DEMO["demo.tmd"]), tkl.read(DEMO["demo.tkl"]), tml.read(DEMO["demo.tml"])


def get(collection, field: str, count: int, width: int = 1, dtype=np.float32) -> np.ndarray:
    out = np.empty(count * width, dtype)
    collection.foreach_get(field, out)
    return out.reshape(count, width) if width > 1 else out


def vertex_positions(obj) -> np.ndarray:
    return get(obj.data.vertices, "co", len(obj.data.vertices), 3)


def set_vertex_positions(obj, positions) -> None:
    obj.data.vertices.foreach_set("co", np.ascontiguousarray(positions, np.float32).ravel())
    obj.data.update()


class Corners:
    """A surface as triangle corners: (3T, k) positions, uvs, normals and dense bone weights.

    ``canonical()`` rotates each triangle to start at its smallest corner (by
    position then uv; winding kept) and sorts the triangles, so two surfaces
    compare equal whatever their vertex order, strip layout or vertex splits.
    """

    def __init__(self, positions, uvs, normals, weights):
        self.positions = np.asarray(positions, np.float64).reshape(-1, 3)
        self.uvs = np.asarray(uvs, np.float64).reshape(-1, 2)
        self.normals = np.asarray(normals, np.float64).reshape(-1, 3)
        self.weights = np.asarray(weights, np.float64).reshape(len(self.positions), -1)

    def canonical(self):
        key = np.column_stack([self.positions, self.uvs]).round(5)
        rank = np.empty(len(key), np.int64)
        rank[np.lexsort(key.T[::-1])] = np.arange(len(key))
        count = len(key) // 3
        start = np.argmin(rank.reshape(-1, 3), axis=1)
        order = ((np.arange(3)[None, :] + start[:, None]) % 3 + 3 * np.arange(count)[:, None]).ravel()
        rows = key[order].reshape(count, -1)
        sort = np.lexsort(rows.T[::-1])
        pick = order.reshape(count, 3)[sort].ravel()
        return (
            rows[sort],
            self.normals[pick].reshape(count, -1),
            self.weights[pick].reshape(count, -1),
        )

    def assert_equal(self, other: "Corners", what: str, normal_atol=1e-4, weight_atol=1.01 / 255):
        rows, normals, weights = self.canonical()
        other_rows, other_normals, other_weights = other.canonical()
        assert rows.shape == other_rows.shape, f"{what}: {len(rows)} vs {len(other_rows)} triangles"
        np.testing.assert_allclose(rows, other_rows, atol=1e-5, err_msg=f"{what}: positions and uvs")
        np.testing.assert_allclose(normals, other_normals, atol=normal_atol, err_msg=f"{what}: normals")
        np.testing.assert_allclose(weights, other_weights, atol=weight_atol, err_msg=f"{what}: weights")


def blender_corners(obj, bone_names: list[str]) -> Corners:
    """What Blender holds: loop triangles, corner normals, the first UV map, vertex group weights."""
    data = obj.data
    data.calc_loop_triangles()
    count = len(data.loop_triangles)
    loops = get(data.loop_triangles, "loops", count, 3, np.int32).ravel()
    vertices = get(data.loops, "vertex_index", len(data.loops), 1, np.int32)[loops]
    normals = get(data.corner_normals, "vector", len(data.loops), 3)[loops]
    uvs = (
        get(data.uv_layers[0].data, "uv", len(data.loops), 2)[loops]
        if data.uv_layers
        else np.zeros((3 * count, 2))
    )
    weights = np.zeros((len(data.vertices), len(bone_names)))
    ((vertex, bone, weight),) = vertex_group_weights(bpy.context, [obj], bone_names)
    weights[vertex, bone] = weight
    totals = weights.sum(axis=1, keepdims=True)
    weights = weights / np.where(totals > 0, totals, 1)
    return Corners(vertex_positions(obj)[vertices], uvs, normals, weights[vertices])


def scene_corners(mesh, bone_count: int) -> Corners:
    """A mesh of ``convert.to_scene`` (what the written file decodes to)."""
    dense = np.zeros((len(mesh.positions), bone_count))
    rows = np.repeat(np.arange(len(mesh.positions)), mesh.skin_joints.shape[1])
    np.add.at(dense, (rows, mesh.skin_joints.ravel()), mesh.skin_weights.ravel())
    corners = np.asarray(mesh.triangles).reshape(-1)
    return Corners(
        mesh.positions[corners], mesh.uv_layers[0].data[corners], mesh.normals.data[corners], dense[corners]
    )


def file_scene(model, library=None, materials=None):
    return convert.to_scene(model, library, materials, axis=None, lods="ALL")


def file_mesh(scene, lod: int, material: str):
    (mesh,) = [
        m for m in scene.meshes if m.extras["lod"] == lod and scene.materials[m.materials[0]].name == material
    ]
    return mesh


def assert_models_equal_except_lods(got: tmd.TMD, want: tmd.TMD) -> None:
    """Header, nodes and animations equal (the written channels decode to the same keys)."""
    assert got.tkl_field == want.tkl_field and got.salt == want.salt and got.unknown == want.unknown
    assert got.nodes.tobytes() == want.nodes.tobytes()
    assert [a.name for a in got.animations] == [a.name for a in want.animations]
    for ga, wa in zip(got.animations, want.animations, strict=True):
        assert (ga.a, ga.b, ga.c, ga.duration) == (wa.a, wa.b, wa.c, wa.duration)
        for gc, wc in zip(ga.channels, wa.channels, strict=True):
            g, w = got.channels[gc], want.channels[wc]
            assert g.flags == w.flags and g.keys.tobytes() == w.keys.tobytes()


def piece_vertices(mesh: tmd.Mesh) -> np.ndarray:
    return np.concatenate([p.vertices for p in mesh.pieces])


def keyed_pose(armature, frames) -> dict[float, np.ndarray]:
    """Armature-space pose matrices of every bone at each frame."""
    result = {}
    for frame in frames:
        bpy.context.scene.frame_set(int(frame))
        result[frame] = np.array([np.array(b.matrix) for b in armature.pose.bones])
    return result


def assign(armature, action) -> None:
    anim = armature.animation_data or armature.animation_data_create()
    anim.action = action
    if compat.SLOTTED_ACTIONS and anim.action_slot is None and len(action.slots):
        anim.action_slot = action.slots[0]


# -- building models from scratch ------------------------------------------------------------


def make_armature(name: str, count: int, chain: bool = True):
    """``count`` bones b0, b1, … one unit apart along +Y (a chain, or all children of b0)."""
    data = bpy.data.armatures.new(name)
    obj = bpy.data.objects.new(name, data)
    bpy.context.scene.collection.objects.link(obj)
    select(obj)
    bpy.ops.object.mode_set(mode="EDIT")
    bones = []
    for i in range(count):
        bone = data.edit_bones.new(f"b{i}")
        bone.head, bone.tail = (0.0, float(i), 0.0), (0.0, i + 1.0, 0.0)
        if i:
            bone.parent = bones[i - 1] if chain else bones[0]
        bones.append(bone)
    bpy.ops.object.mode_set(mode="OBJECT")
    return obj


def grid_mesh(name: str, columns: int, rows: int, size=(1.0, 1.0), material: bool = True):
    """A flat grid of quads over [0, size] in X and Y with a UV map (and a plain material: TMD meshes need one)."""
    y, x = np.mgrid[0 : rows + 1, 0 : columns + 1]
    positions = np.column_stack(
        [x.ravel() / columns * size[0], y.ravel() / rows * size[1], np.zeros(x.size)]
    ).astype(np.float32)
    a = (np.arange(rows)[:, None] * (columns + 1) + np.arange(columns)[None, :]).ravel()
    quads = np.stack([a, a + 1, a + columns + 2, a + columns + 1], 1).astype(np.int32)
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(positions))
    mesh.vertices.foreach_set("co", positions.ravel())
    mesh.loops.add(quads.size)
    mesh.loops.foreach_set("vertex_index", quads.ravel())
    mesh.polygons.add(len(quads))
    mesh.polygons.foreach_set("loop_start", np.arange(0, quads.size, 4, dtype=np.int32))
    mesh.update(calc_edges=True)
    uv = mesh.uv_layers.new(name="UVMap")
    uv.data.foreach_set("uv", (positions[quads.ravel(), :2] / np.float32(max(size))).ravel())
    if material:
        mesh.materials.append(compat.new_material(f"{name}_material"))
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def skin(obj, armature, weights: np.ndarray, bone_names: list[str]) -> None:
    """Armature modifier and one vertex group per bone from a dense (V, B) weight table."""
    modifier = obj.modifiers.new("Armature", "ARMATURE")
    modifier.object = armature
    for b, name in enumerate(bone_names):
        column = weights[:, b]
        if not (column > 0).any():
            continue
        group = obj.vertex_groups.new(name=name)
        for value in np.unique(column[column > 0]):
            group.add(np.flatnonzero(column == value).tolist(), float(value), "REPLACE")


def chain_weights(y: np.ndarray, bones: int) -> np.ndarray:
    """Each vertex shared between the bone it lies on and the next one, by its position along Y."""
    bone = np.minimum(np.floor(y).astype(int), bones - 1)
    frac = np.clip(y - bone, 0, 1)
    dense = np.zeros((len(y), bones))
    rows = np.arange(len(y))
    dense[rows, bone] += 1 - frac
    dense[rows, np.minimum(bone + 1, bones - 1)] += frac
    return dense


def material_with_image(name: str, pixels: np.ndarray):
    """A material whose Principled BSDF base colour is an image texture of ``pixels`` (H, W, 4 uint8, top row first)."""
    height, width = pixels.shape[:2]
    image = bpy.data.images.new(f"{name}_image", width, height, alpha=True)
    image.pixels.foreach_set((pixels[::-1].astype(np.float32) / 255).ravel())
    material = compat.new_material(name)
    tree = material.node_tree
    bsdf = next(n for n in tree.nodes if n.type == "BSDF_PRINCIPLED")
    node = tree.nodes.new("ShaderNodeTexImage")
    node.image = image
    tree.links.new(node.outputs["Color"], bsdf.inputs["Base Color"])
    return material


# -- 1. unedited round trip ----------------------------------------------------------------


@pytest.mark.parametrize("library_in_destination", [False, True])
def test_unedited_round_trip_is_byte_identical(demo, src, out, library_in_destination):
    if library_in_destination:
        shutil.copy(src / "demo.tkl", out / "demo.tkl")
    # Not next to the source either: the library stored at import is the one appended to.
    (src / "demo.tkl").unlink()
    assert export(out, demo) == {"FINISHED"}
    assert sorted(os.listdir(out)) == ["demo.tkl", "demo.tmd", "demo.tml"]
    for name, data in DEMO.items():
        assert (out / name).read_bytes() == data, name


def test_library_in_destination_with_more_keys_is_appended_to(demo, out):
    """Another model appended keys to the shared library: they stay, and the model's indices stay valid."""
    library = tkl.read(DEMO["demo.tkl"])
    rng = np.random.default_rng(1)
    library.positions = np.concatenate([library.positions, rng.normal(size=(5, 3)).astype(np.float32)])
    library.rotations = np.concatenate([library.rotations, rng.normal(size=(7, 4)).astype(np.float32)])
    shared = tkl.write(library)
    (out / "demo.tkl").write_bytes(shared)
    assert export(out, demo) == {"FINISHED"}
    assert (out / "demo.tkl").read_bytes() == shared
    assert (out / "demo.tmd").read_bytes() == DEMO["demo.tmd"]


def test_new_library_holds_only_this_models_keys(demo, out):
    assert export(out, demo, tkl_mode="NEW", new_tkl_name="mine") == {"FINISHED"}
    assert sorted(os.listdir(out)) == ["demo.tmd", "demo.tml", "mine.tkl"]
    model, library, materials = read_trio(out, library="mine")
    assert model.tkl_name == "mine" and library.name == "mine"
    original = file_scene(*original_trio())
    written = file_scene(model, library, materials)
    for got, want in zip(written.animations, original.animations, strict=True):
        assert got.name == want.name
        for gc, wc in zip(got.channels, want.channels, strict=True):
            assert (gc.target, gc.path) == (wc.target, wc.path)
            np.testing.assert_array_equal(gc.times, wc.times)
            np.testing.assert_allclose(gc.values, wc.values, atol=1e-6)  # through Blender's F-curves
    used = {(c.keys["position"].max(), c.keys["rotation"].max()) for c in model.channels if len(c.keys)}
    assert len(library.positions) == max(p for p, _ in used) + 1
    assert len(library.rotations) == max(r for _, r in used) + 1


# -- 2. what is saved re-imports as the same scene --------------------------------------------


def blender_snapshot():
    """The imported model as Blender holds it, independent of datablock names' .001 suffixes."""
    (armature,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    names = [b.name for b in armature.data.bones]
    snapshot = {
        "bones": names,
        "parents": [b.parent.name if b.parent else None for b in armature.data.bones],
        "rest": np.array([np.array(b.matrix_local) for b in armature.data.bones]),
        "meshes": {},
        "actions": {},
        "images": {},
    }
    for obj in bpy.data.objects:
        if obj.type == "MESH":
            key = (obj.users_collection[0].name, obj.data.materials[0].name)
            snapshot["meshes"][key] = (
                len(obj.data.vertices),
                obj.hide_render,
                blender_corners(obj, names),
                {
                    (n.image.name if n.image else None)
                    for n in obj.data.materials[0].node_tree.nodes
                    if n.type == "TEX_IMAGE"
                },
            )
    for action in bpy.data.actions:
        snapshot["actions"][action.name] = {
            (fc.data_path, fc.array_index): get(fc.keyframe_points, "co", len(fc.keyframe_points), 2)
            for fc in compat.action_fcurves(action)
        }
    for image in bpy.data.images:
        width, height = image.size
        pixels = np.empty(width * height * 4, np.float32)
        image.pixels.foreach_get(pixels)
        snapshot["images"][image.name] = ((width, height), pixels)
    return snapshot


def assert_snapshots_equal(got, want):
    assert got["bones"] == want["bones"] and got["parents"] == want["parents"]
    np.testing.assert_allclose(got["rest"], want["rest"], atol=1e-5)
    assert sorted(got["meshes"]) == sorted(want["meshes"])
    for key, (count, hidden, corners, images) in want["meshes"].items():
        got_count, got_hidden, got_corners, got_images = got["meshes"][key]
        assert (got_count, got_hidden, got_images) == (count, hidden, images), key
        got_corners.assert_equal(corners, str(key))
    assert sorted(got["actions"]) == sorted(want["actions"])
    for name, curves in want["actions"].items():
        assert sorted(got["actions"][name]) == sorted(curves), name
        for path, keys in curves.items():
            np.testing.assert_allclose(got["actions"][name][path], keys, atol=1e-5, err_msg=f"{name} {path}")
    assert sorted(got["images"]) == sorted(want["images"])
    for name, (size, pixels) in want["images"].items():
        assert got["images"][name][0] == size
        np.testing.assert_allclose(got["images"][name][1], pixels, atol=0.5 / 255, err_msg=name)


def reimport(folder, name="demo.tmd"):
    """Factory-empty scene, then the written files imported (every LOD)."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.import_scene.toshi_tmd(filepath=str(folder / name), lods="ALL") == {"FINISHED"}


def test_saved_files_reimport_as_the_same_scene(demo, out):
    first = blender_snapshot()
    assert len(first["meshes"]) == 4 and sorted(first["actions"]) == ["idle_lp", "walk_lp"]
    assert export(out, demo) == {"FINISHED"}
    reimport(out)
    assert_snapshots_equal(blender_snapshot(), first)


# -- 3. edits --------------------------------------------------------------------------------


def test_moved_vertices(demo, out):
    obj = bpy.data.objects[MESH_SKIN]
    positions = vertex_positions(obj)
    moved = np.arange(0, len(positions), 20)
    positions[moved] += np.float32([0.05, -0.02, 0.1])
    set_vertex_positions(obj, positions)
    assert export(out, demo) == {"FINISHED"}

    model, library, materials = read_trio(out)
    old_model, _, _ = original_trio()
    assert (out / "demo.tkl").read_bytes() == DEMO["demo.tkl"]
    assert (out / "demo.tml").read_bytes() == DEMO["demo.tml"]
    assert_models_equal_except_lods(model, old_model)
    for li, (lod, old_lod) in enumerate(zip(model.lods, old_model.lods, strict=True)):
        for mi, (mesh, old_mesh) in enumerate(zip(lod.meshes, old_lod.meshes, strict=True)):
            new_v, old_v = piece_vertices(mesh), piece_vertices(old_mesh)
            assert mesh.material_field == old_mesh.material_field
            assert [p.strip.tobytes() for p in mesh.pieces] == [p.strip.tobytes() for p in old_mesh.pieces]
            assert [p.palette.tolist() for p in mesh.pieces] == [p.palette.tolist() for p in old_mesh.pieces]
            for field in ("weights", "bones", "uv"):
                np.testing.assert_array_equal(new_v[field], old_v[field])
            if (li, mi) != (0, 0):
                assert new_v.tobytes() == old_v.tobytes()
                continue
            # The body: the moved vertices (and only they) have their new positions.
            np.testing.assert_array_equal(new_v["position"], positions)
            changed = np.flatnonzero((new_v["position"] != old_v["position"]).any(axis=1))
            np.testing.assert_array_equal(changed, moved)
            # Normals: Blender's (recomputed around the moved vertices), the old ones elsewhere.
            blender_corners(obj, NODE_NAMES).assert_equal(
                scene_corners(file_mesh(file_scene(model, library, materials), 0, "dino_skin"), 15), "body"
            )
            triangles = np.concatenate([strips.to_triangles(p.strip) for p in old_mesh.pieces])
            near = np.unique(triangles[np.isin(triangles, moved).any(axis=1)])
            away = np.setdiff1d(np.arange(len(old_v)), near)
            assert len(away) > len(old_v) // 2
            np.testing.assert_allclose(new_v["normal"][away], old_v["normal"][away], atol=1e-3)


def test_repainted_weights_keep_the_top_four(demo, out):
    obj = bpy.data.objects[MESH_SKIN]
    bones = NODE_NAMES
    vertex = 40
    painted = {"root": 0.4, "tail1": 0.25, "leg_bl": 0.15, "leg_br": 0.12, "tail2": 0.08}
    for group in obj.vertex_groups:
        group.remove([vertex])
    for name, weight in painted.items():
        group = obj.vertex_groups.get(name) or obj.vertex_groups.new(name=name)
        group.add([vertex], weight, "REPLACE")
    position = vertex_positions(obj)[vertex]
    assert export(out, demo) == {"FINISHED"}

    model, library, materials = read_trio(out)
    body = model.lods[0].meshes[0]
    vertices = piece_vertices(body)
    (rows,) = np.nonzero((vertices["position"] == position).all(axis=1))
    assert len(rows) >= 1
    for row in rows:
        owner = next(p for p in body.pieces if row in p.strip)  # the piece whose palette the bytes index
        weights = vertices["weights"][row]
        assert int(weights.sum()) == 255
        nodes = owner.palette[vertices["bones"][row] // 3]
        top4 = dict(list(painted.items())[:4])
        got = {bones[n]: int(w) for n, w in zip(nodes, weights, strict=True) if w}
        assert set(got) == set(top4)
        total = sum(top4.values())
        for name, weight in top4.items():
            assert abs(got[name] - weight / total * 255) <= 1, name
    # Every other vertex keeps its weights: the file decodes to what Blender holds, top four for the painted one.
    want = blender_corners(obj, bones)
    painted_corners = (want.positions == position).all(axis=1)
    expected = np.zeros(len(bones))
    for name, weight in list(painted.items())[:4]:
        expected[bones.index(name)] = weight / sum(list(painted.values())[:4])
    want.weights[painted_corners] = expected
    want.assert_equal(
        scene_corners(file_mesh(file_scene(model, library, materials), 0, "dino_skin"), len(bones)), "body"
    )
    old = tmd.read(DEMO["demo.tmd"])
    for li, mi in ((0, 1), (1, 0), (1, 1)):
        assert (
            piece_vertices(model.lods[li].meshes[mi]).tobytes()
            == piece_vertices(old.lods[li].meshes[mi]).tobytes()
        )


def test_changed_uvs_and_custom_normals(demo, out):
    obj = bpy.data.objects[MESH_SKIN]
    data = obj.data
    loops = len(data.loops)
    uvs = get(data.uv_layers[0].data, "uv", loops, 2)
    uvs += np.float32([0.125, 0.25])
    uvs[5] = (0.9, 0.1)  # one corner only: a seam, its vertex is split in the file
    data.uv_layers[0].data.foreach_set("uv", uvs.ravel())
    old_normals = get(data.corner_normals, "vector", loops, 3)
    vertex_normals = np.zeros((len(data.vertices), 3), np.float32)
    vertex_normals[get(data.loops, "vertex_index", loops, 1, np.int32)] = old_normals
    vertex_normals += np.float32([0.0, 0.0, 0.5])
    vertex_normals /= np.linalg.norm(vertex_normals, axis=1, keepdims=True)
    data.normals_split_custom_set_from_vertices(vertex_normals)
    data.update()
    assert np.abs(get(data.corner_normals, "vector", loops, 3) - old_normals).max() > 0.1
    assert export(out, demo) == {"FINISHED"}

    model, library, materials = read_trio(out)
    old_model, _, _ = original_trio()
    assert_models_equal_except_lods(model, old_model)
    assert (out / "demo.tkl").read_bytes() == DEMO["demo.tkl"]
    assert (out / "demo.tml").read_bytes() == DEMO["demo.tml"]
    body = model.lods[0].meshes[0]
    assert body.material == "dino_skin"
    assert len(piece_vertices(body)) == len(data.vertices) + 1  # the seam
    written = scene_corners(file_mesh(file_scene(model, library, materials), 0, "dino_skin"), len(NODE_NAMES))
    blender_corners(obj, NODE_NAMES).assert_equal(written, "body")
    for li, mi in ((0, 1), (1, 0), (1, 1)):
        assert (
            piece_vertices(model.lods[li].meshes[mi]).tobytes()
            == piece_vertices(old_model.lods[li].meshes[mi]).tobytes()
        )


def eyes_material():
    return bpy.data.materials["dino_Eyes"]


@pytest.mark.parametrize("how", ["new pixels", "new image"])
def test_replaced_texture_is_written_as_rgba8888(demo, out, how):
    old = tml.read(DEMO["demo.tml"])
    old_by_id = old.texture_by_id()
    y, x = np.mgrid[0:16, 0:8]
    pixels = np.stack([x * 30, y * 15, (x + y) * 8, 255 - y], axis=-1).astype(np.uint8)
    (node,) = [n for n in eyes_material().node_tree.nodes if n.type == "TEX_IMAGE"]
    eyes_id = old.materials[old.material_names().index("dino_Eyes")].textures[0]
    assert old_by_id[eyes_id].format == tml.FORMAT_DDS
    if how == "new pixels":
        pixels = np.tile(pixels, (2, 4, 1))  # the image's own 32 × 32
        node.image.pixels.foreach_set((pixels[::-1].astype(np.float32) / 255).ravel())
    else:
        image = bpy.data.images.new("painted", 8, 16, alpha=True)
        image.pixels.foreach_set((pixels[::-1].astype(np.float32) / 255).ravel())
        node.image = image
    assert export(out, demo) == {"FINISHED"}

    assert (out / "demo.tmd").read_bytes() == DEMO["demo.tmd"]
    assert (out / "demo.tkl").read_bytes() == DEMO["demo.tkl"]
    _, _, materials = read_trio(out)
    assert materials.material_names() == old.material_names()
    by_id = materials.texture_by_id()
    (texture_id,) = materials.materials[materials.material_names().index("dino_Eyes")].textures
    texture = by_id[texture_id]
    assert (texture.format, texture.width, texture.height) == (0, pixels.shape[1], pixels.shape[0])
    assert texture.data == pixels.tobytes()
    np.testing.assert_array_equal(texture.decode(), pixels)
    if how == "new pixels":
        assert texture_id == eyes_id
        kept = old_by_id[eyes_id]
        assert (texture.flags, texture.unknown1, texture.unknown2, texture.unknown3, texture.unknown4) == (
            kept.flags,
            kept.unknown1,
            kept.unknown2,
            kept.unknown3,
            kept.unknown4,
        )
    # The unchanged texture keeps its original bytes and header.
    skin_id = old.materials[old.material_names().index("dino_skin")].textures[0]
    assert materials.materials[materials.material_names().index("dino_skin")].textures == [skin_id]
    assert by_id[skin_id] == old_by_id[skin_id]


def test_new_action_appends_to_the_library(demo, out):
    rotation_only, both, location_only = ["neck", "head"], ["leg_fl"], ["tail1"]
    action = bpy.data.actions.new("wave")
    assign(demo, action)
    rng = np.random.default_rng(5)
    frames = (0, 10, 20)
    for frame in frames:
        for name in rotation_only + both + location_only:
            bone = demo.pose.bones[name]
            bone.rotation_mode = "QUATERNION"
            if name not in location_only:
                q = rng.normal(size=4)
                bone.rotation_quaternion = q / np.linalg.norm(q)
                bone.keyframe_insert("rotation_quaternion", frame=frame)
            if name not in rotation_only:
                bone.location = rng.normal(size=3) * 0.1
                bone.keyframe_insert("location", frame=frame)
    want_pose = keyed_pose(demo, frames)
    assert export(out, demo) == {"FINISHED"}

    model, library, _ = read_trio(out)
    old_model, old_library, _ = original_trio()
    # The old entries are a prefix: every index other models use still points to the same value.
    np.testing.assert_array_equal(library.positions[: len(old_library.positions)], old_library.positions)
    np.testing.assert_array_equal(library.rotations[: len(old_library.rotations)], old_library.rotations)
    assert len(library.positions) > len(old_library.positions)
    assert len(library.rotations) > len(old_library.rotations)
    assert library.name_field == old_library.name_field
    assert [a.name for a in model.animations] == ["walk_lp", "idle_lp", "wave"]
    for anim, old_anim in zip(model.animations[:2], old_model.animations, strict=True):
        assert anim.duration == old_anim.duration and (anim.a, anim.b, anim.c) == (
            old_anim.a,
            old_anim.b,
            old_anim.c,
        )
        for node, (cid, old_cid) in enumerate(zip(anim.channels, old_anim.channels, strict=True)):
            channel, old_channel = model.channels[cid], old_model.channels[old_cid]
            assert channel.flags == old_channel.flags, node
            assert channel.keys.tobytes() == old_channel.keys.tobytes(), node
    wave = model.animations[2]
    assert abs(wave.duration - 20 / 30) < 1e-6 and wave.c == len(model.nodes)
    names = model.node_names()
    for node, cid in enumerate(wave.channels):
        channel = model.channels[cid]
        expected = (
            tmd.CHANNEL_ROTATION
            if names[node] in rotation_only
            else tmd.CHANNEL_TRANSLATION_ROTATION
            if names[node] in both
            else tmd.CHANNEL_TRANSLATION
            if names[node] in location_only
            else tmd.CHANNEL_UNUSED
        )
        assert channel.flags == expected, names[node]
        if expected == tmd.CHANNEL_UNUSED:
            assert len(channel.keys) == 0
        else:  # the keys set, and those the game needs to follow Blender's Bézier curves
            times = channel.keys["time"].astype(np.float64) * 30
            assert all(np.abs(times - frame).min() < 1e-4 for frame in frames)
            assert times[0] == 0 and abs(times[-1] - 20) < 1e-4
    # The new keys are where the appended part of the library is.
    used = np.concatenate([model.channels[c].keys for c in wave.channels])
    assert used["rotation"].max() >= len(old_library.rotations)
    assert used["position"].max() >= len(old_library.positions)

    # Re-imported, the new animation poses the skeleton as Blender did at every key.
    reimport(out)
    armature = bpy.data.objects["demo"]
    assign(armature, bpy.data.actions["wave"])
    got_pose = keyed_pose(armature, frames)
    for frame in frames:
        np.testing.assert_allclose(got_pose[frame], want_pose[frame], atol=1e-4, err_msg=f"frame {frame}")


def test_renamed_materials_are_resorted(demo, out):
    eyes_material().name = "Zeta_Eyes"  # now sorts after dino_skin (case-insensitively)
    bpy.data.materials["dino_skin"].name = "Body_skin"  # and this one first
    assert export(out, demo) == {"FINISHED"}

    model, _, materials = read_trio(out)
    old = tml.read(DEMO["demo.tml"])
    names = materials.material_names()
    assert names == ["Body_skin", "Zeta_Eyes"] and names == sorted(names, key=tml.sort_key)
    renamed = {"dino_skin": "Body_skin", "dino_Eyes": "Zeta_Eyes"}
    for old_name, old_record in zip(old.material_names(), old.materials, strict=True):
        record = materials.materials[names.index(renamed[old_name])]
        assert (record.flags, record.textures) == (old_record.flags, old_record.textures), old_name
    assert materials.textures == old.textures
    old_model = tmd.read(DEMO["demo.tmd"])
    for lod, old_lod in zip(model.lods, old_model.lods, strict=True):
        for mesh, old_mesh in zip(lod.meshes, old_lod.meshes, strict=True):
            assert mesh.material == renamed[old_mesh.material]
            assert piece_vertices(mesh).tobytes() == piece_vertices(old_mesh).tobytes()
    # And the game's look-up finds each mesh's material.
    for lod in model.lods:
        for mesh in lod.meshes:
            assert mesh.material.lower() in [n.lower() for n in names]


def test_more_than_28_bones_split_into_palettes(empty_scene, out):
    armature = make_armature("many", 40)
    obj = grid_mesh("ribbon", 2, 160, size=(1.0, 40.0))
    weights = chain_weights(vertex_positions(obj)[:, 1], 40)
    names = [f"b{i}" for i in range(40)]
    skin(obj, armature, weights, names)
    assert export(out, armature, "many.tmd", tkl_mode="NEW", new_tkl_name="many") == {"FINISHED"}
    want = blender_corners(obj, names)

    model, library, materials = read_trio(out, "many", "many")
    assert model.node_names() == names
    (mesh,) = model.lods[0].meshes
    assert len(mesh.pieces) >= 2
    used = set()
    for piece in mesh.pieces:
        assert 0 < len(piece.palette) <= convert.MAX_PALETTE
        if len(piece.vertices):
            assert (piece.vertices["bones"] // 3 < len(piece.palette)).all()
            assert (piece.vertices["weights"].sum(axis=1) == 255).all()
        used |= set(piece.palette.tolist())
    assert used == set(range(40))
    (scene_mesh,) = file_scene(model, library, materials).meshes
    scene_corners(scene_mesh, 40).assert_equal(want, "file")
    reimport(out, "many.tmd")
    (again,) = [o for o in bpy.data.objects if o.type == "MESH"]
    blender_corners(again, names).assert_equal(want, "re-imported")


def test_long_strip_is_split_at_7500_indices(empty_scene, out):
    armature = make_armature("rig", 1)
    obj = grid_mesh("grid", 60, 60)
    skin(obj, armature, np.ones((len(obj.data.vertices), 1)), ["b0"])
    assert export(out, armature, "grid.tmd", tkl_mode="NEW", new_tkl_name="grid") == {"FINISHED"}

    model, library, materials = read_trio(out, "grid", "grid")
    (mesh,) = model.lods[0].meshes
    assert len(mesh.pieces) >= 3
    assert mesh.total_indices == sum(len(p.strip) for p in mesh.pieces) > 3 * 7500
    assert mesh.total_vertices == sum(len(p.vertices) for p in mesh.pieces) == len(obj.data.vertices)
    for previous, piece in zip(mesh.pieces, mesh.pieces[1:], strict=False):
        np.testing.assert_array_equal(piece.strip[:2], previous.strip[-2:])  # the two-index overlap
    for piece in mesh.pieces:
        assert len(piece.strip) <= strips.MAX_PIECE_INDICES
        assert piece.vertices_required == piece.strip.max()
    vertices = piece_vertices(mesh)
    triangles = np.concatenate([strips.to_triangles(p.strip) for p in mesh.pieces])
    decoded = Corners(
        vertices["position"][triangles.ravel()],
        vertices["uv"][triangles.ravel()] * np.float32([1, -1]),
        vertices["normal"][triangles.ravel()],
        np.ones((triangles.size, 1)),
    )
    decoded.assert_equal(blender_corners(obj, ["b0"]), "grid")
    assert len(triangles) == 2 * 60 * 60


# -- 4. from scratch ---------------------------------------------------------------------------


def test_model_made_in_blender_exports_a_valid_trio(empty_scene, out):
    armature = make_armature("rig", 3)
    obj = grid_mesh("body", 4, 12, size=(1.0, 3.0), material=False)
    obj.parent = armature
    names = ["b0", "b1", "b2"]
    skin(obj, armature, chain_weights(vertex_positions(obj)[:, 1], 3), names)
    y, x = np.mgrid[0:4, 0:8]
    pixels = np.stack([x * 32, y * 64, x + y, np.full_like(x, 200)], axis=-1).astype(np.uint8)
    obj.data.materials.append(material_with_image("scratch_mat", pixels))
    action = bpy.data.actions.new("bend")
    assign(armature, action)
    for frame, angle in ((0, 0.0), (15, 0.6)):
        bone = armature.pose.bones["b1"]
        bone.rotation_mode = "QUATERNION"
        bone.rotation_quaternion = (np.cos(angle / 2), np.sin(angle / 2), 0, 0)
        bone.keyframe_insert("rotation_quaternion", frame=frame)
    tails = {}
    for frame in (0, 15):
        bpy.context.scene.frame_set(frame)
        tails[frame] = np.array([np.array(armature.pose.bones[n].tail) for n in names])
    want = blender_corners(obj, names)
    assert export(out, armature, "creature.tmd", tkl_mode="NEW", new_tkl_name="scratch") == {"FINISHED"}
    assert sorted(os.listdir(out)) == ["creature.tmd", "creature.tml", "scratch.tkl"]

    model, library, materials = read_trio(out, "creature", "scratch")
    assert model.tkl_name == "scratch" and library.name == "scratch"
    assert model.node_names() == names and model.nodes["parent"].tolist() == [-1, 0, 1]
    assert [a.name for a in model.animations] == ["bend"]
    assert materials.material_names() == ["scratch_mat"]
    (texture,) = materials.textures
    assert (texture.format, texture.width, texture.height, texture.data) == (0, 8, 4, pixels.tobytes())
    assert materials.materials[0].textures == [texture.id]
    (mesh,) = model.lods[0].meshes
    assert mesh.material == "scratch_mat"
    # Written from scratch, the files are what the writers make of what the readers read.
    for module, name in ((tmd, "creature.tmd"), (tkl, "scratch.tkl"), (tml, "creature.tml")):
        data = (out / name).read_bytes()
        assert module.write(module.read(data, name)) == data
    (scene_mesh,) = file_scene(model, library, materials).meshes
    scene_corners(scene_mesh, 3).assert_equal(want, "file")

    reimport(out, "creature.tmd")
    (again,) = [o for o in bpy.data.objects if o.type == "MESH"]
    blender_corners(again, names).assert_equal(want, "re-imported")
    assert again.data.materials[0].name == "scratch_mat"
    (image,) = bpy.data.images
    assert tuple(image.size) == (8, 4)
    (rig,) = [o for o in bpy.data.objects if o.type == "ARMATURE"]
    assign(rig, bpy.data.actions["bend"])
    for frame in (0, 15):  # the re-imported bones point elsewhere (their file X axis); their heads agree
        bpy.context.scene.frame_set(frame)
        got = np.array([np.array(rig.pose.bones[n].head) for n in names])
        want_heads = np.concatenate([[[0, 0, 0]], tails[frame][:2]])  # each bone's head is its parent's tail
        np.testing.assert_allclose(got, want_heads, atol=1e-4, err_msg=f"frame {frame}")


# -- 5. validation -----------------------------------------------------------------------------


def test_bone_name_longer_than_15_bytes(demo, out):
    demo.data.bones["head"].name = "head_with_a_long_name"
    export_fails(out, "head_with_a_long_name", demo)


@pytest.mark.parametrize("how", ["renamed", "new"])
def test_action_name_longer_than_15_bytes(demo, out, how):
    if how == "renamed":
        bpy.data.actions["walk_lp"].name = "walk_cycle_long_name"
    else:
        action = bpy.data.actions.new("walk_cycle_long_name")
        assign(demo, action)
        demo.pose.bones["head"].keyframe_insert("location", frame=1)
    export_fails(out, "walk_cycle_long_name", demo)


def test_material_name_longer_than_31_bytes(demo, out):
    long_name = "dino_skin_with_a_name_much_too_long_for_tml"
    bpy.data.materials["dino_skin"].name = long_name
    export_fails(out, long_name, demo)


def test_more_than_32767_vertices(empty_scene, out):
    armature = make_armature("big", 1)
    obj = grid_mesh("huge_grid", 190, 180)
    assert len(obj.data.vertices) > 32767
    skin(obj, armature, np.ones((len(obj.data.vertices), 1)), ["b0"])
    export_fails(out, "huge_grid", armature, tkl_mode="NEW", new_tkl_name="big")


def test_mesh_without_armature(empty_scene, out):
    obj = grid_mesh("loose_mesh", 2, 2)
    select(obj)
    export_fails(out, "loose_mesh")


@pytest.mark.parametrize("parent_bone", ["b2", None])
def test_unweighted_vertices_go_to_the_parent_bone_or_root(empty_scene, out, parent_bone):
    armature = make_armature("rig", 3, chain=False)
    obj = grid_mesh("partly_weighted", 3, 3)
    positions = vertex_positions(obj)
    weighted = positions[:, 1] < 0.5
    weights = np.zeros((len(positions), 3))
    weights[weighted, 1] = 1.0
    skin(obj, armature, weights, ["b0", "b1", "b2"])
    if parent_bone:  # parented as Ctrl+P > Bone does: the mesh stays where it is
        shown = obj.matrix_world.copy()
        obj.parent = armature
        obj.parent_type = "BONE"
        obj.parent_bone = parent_bone
        bpy.context.view_layer.update()
        obj.matrix_world = shown
    select(armature)
    report = retro_models.export_file(
        bpy.context, str(out / "rig.tmd"), family="toshi", tkl_mode="NEW", new_tkl_name="rig"
    )
    assert sorted(os.path.basename(p) for p in report.paths) == ["rig.tkl", "rig.tmd", "rig.tml"]
    bone = parent_bone or "b0"
    assert any("partly_weighted" in w and repr(bone) in w for w in report.warnings), report.warnings

    model, library, materials = read_trio(out, "rig", "rig")
    (mesh,) = file_scene(model, library, materials).meshes
    expected = np.zeros((len(positions), 3))
    expected[weighted, 1] = 1.0
    expected[~weighted, model.node_names().index(bone)] = 1.0
    corners = scene_corners(mesh, 3)
    obj.data.calc_loop_triangles()
    want = blender_corners(obj, ["b0", "b1", "b2"])
    loops = get(obj.data.loop_triangles, "vertices", len(obj.data.loop_triangles), 3, np.int32).ravel()
    want.weights = expected[loops]
    corners.assert_equal(want, "partly weighted")


def test_ngons_are_triangulated(empty_scene, out):
    armature = make_armature("rig", 1)
    angles = np.linspace(0, 2 * np.pi, 8, endpoint=False)
    ring = np.column_stack([np.cos(angles), np.sin(angles), np.zeros(8)])
    verts = [*map(tuple, ring), (3.0, 0.0, 0.0), (3.0, 1.0, 0.0), (2.0, 1.0, 0.5)]
    faces = [tuple(range(8)), (0, 8, 9, 10)]  # an octagon and a non-planar quad
    data = bpy.data.meshes.new("polygons")
    data.from_pydata(verts, [], faces)
    data.uv_layers.new(name="UVMap")
    data.materials.append(compat.new_material("flat"))
    obj = bpy.data.objects.new("polygons", data)
    bpy.context.scene.collection.objects.link(obj)
    skin(obj, armature, np.ones((len(verts), 1)), ["b0"])
    assert export(out, armature, "polygons.tmd", tkl_mode="NEW", new_tkl_name="poly") == {"FINISHED"}
    model, library, materials = read_trio(out, "polygons", "poly")
    (mesh,) = file_scene(model, library, materials).meshes
    assert len(mesh.triangles) == 6 + 2
    scene_corners(mesh, 1).assert_equal(blender_corners(obj, ["b0"]), "polygons")


# -- 6. failed writes ----------------------------------------------------------------------------


@pytest.mark.parametrize("blocked", ["demo.tkl", "demo.tml"])
def test_failed_write_leaves_no_partial_files(demo, out, blocked):
    """A file that cannot be written (here a folder of that name) stops the export before anything is written."""
    (out / blocked).mkdir()
    older = {"demo.tmd": b"an older model", "demo.tkl": DEMO["demo.tkl"], "demo.tml": b"older materials"}
    for name, data in older.items():
        if name != blocked:
            (out / name).write_bytes(data)
    export_fails(out, blocked, demo)
    assert sorted(os.listdir(out)) == sorted(older)
    for name, data in older.items():
        if name != blocked:
            assert (out / name).read_bytes() == data, name
    assert os.listdir(out / blocked) == []


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into read-only folders"
)
def test_read_only_folder_leaves_no_files(demo, out):
    out.chmod(0o555)
    try:
        export_fails(out, "demo", demo)
        assert os.listdir(out) == []
    finally:
        out.chmod(0o755)


def test_a_failure_while_renaming_puts_the_old_files_back(demo, out, monkeypatch):
    """Even once some new files are in place, a failure restores every older file."""
    older = {"demo.tmd": b"an older model", "demo.tkl": DEMO["demo.tkl"], "demo.tml": b"older materials"}
    for name, data in older.items():
        (out / name).write_bytes(data)
    real_replace = os.replace

    def replace_failing_on_the_material_library(source, target):
        if str(target).endswith("demo.tml") and ".old." not in str(source):  # placing the new file
            raise PermissionError(13, "locked by another program", str(target))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace_failing_on_the_material_library)
    export_fails(out, "locked", demo)
    monkeypatch.undo()
    assert {name: (out / name).read_bytes() for name in os.listdir(out)} == older


def test_object_transforms_are_baked_into_the_vertices(demo, out):
    """A TMD mesh has no transform: a mesh object moved in Object Mode exports where it is shown."""
    obj = bpy.data.objects[MESH_SKIN]
    positions = vertex_positions(obj)
    obj.location = (0.5, 0.0, -0.25)
    obj.scale = (2.0, 2.0, 2.0)
    bpy.context.view_layer.update()
    assert export(out, demo) == {"FINISHED"}
    model, _, _ = read_trio(out)
    written = piece_vertices(model.lods[0].meshes[0])["position"]
    np.testing.assert_allclose(written, positions * 2 + np.float32([0.5, 0.0, -0.25]), atol=1e-5)


def test_exported_demo_reimports_to_the_golden_dump(demo, out):
    import scene_dump
    from support import GOLDEN

    golden = GOLDEN / "toshi_demo_creature.txt"
    assert export(out, demo) == {"FINISHED"}
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.import_scene.toshi_tmd(filepath=str(out / "demo.tmd"), lods="ALL") == {"FINISHED"}
    assert scene_dump.dump() == golden.read_text(encoding="utf-8")
