"""Scenes the Blender-layer tests share, made from numpy with known values, and scene comparisons.

Expectations are computed independently of the builder (parent-relative keys chained in numpy,
linear blend skinning in numpy) and compared with what Blender evaluates.
"""

import bpy
import numpy as np
from retro_models.formats import scene as sc
from retro_models.operators.blender.build import build_scene
from retro_models.operators.blender.extract import extract_scene

KEY_FRAMES = np.array([0.0, 10.0, 20.0, 30.0])


def random_quats(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def chain_skeleton(rng, n=5, display=None):
    """A chain of bones about one unit apart, each with a non-trivial rest rotation."""
    local = sc.compose(rng.normal(size=(n, 3)) * 0.3 + [0, 1, 0], random_quats(rng, n))
    local[0, :3, 3] = [0.2, -0.1, 0.3]
    parents = np.arange(-1, n - 1, dtype=np.int32)
    rest = local.copy()
    for i in range(1, n):
        rest[i] = rest[parents[i]] @ local[i]
    return sc.Skeleton(
        "Rig",
        [f"bone{i}" for i in range(n)],
        parents,
        rest,
        deform=np.array([True] * (n - 1) + [False]),
        bone_extras=[{"index": i, "flags": f"0x8000000{i}"} for i in range(n)],
        extras={"version": 3, "scale": [1.0, 2.0]},
        bone_display=display,
    )


def chain_animation(rng, skeleton, name="walk"):
    """Quaternion and location keys (parent-relative) for every bone at KEY_FRAMES."""
    channels = []
    local = skeleton.local_rest()
    for i, bone in enumerate(skeleton.bone_names):
        q = random_quats(rng, len(KEY_FRAMES))
        loc = local[i, :3, 3] + rng.normal(size=(len(KEY_FRAMES), 3)) * 0.1
        channels.append(sc.Channel("bone", bone, "rotation_quaternion", KEY_FRAMES, q, extras={"track": i}))
        channels.append(sc.Channel("bone", bone, "location", KEY_FRAMES, loc))
    return sc.Animation(
        name, channels, fps=25.0, frame_start=0.0, frame_end=30.0, loop=True, skeleton=0, extras={"id": 7}
    )


def expected_world(skeleton, animation, key):
    """Armature-space bone matrices at key index ``key``: the chain of parent-relative keys."""
    by = {(c.target, c.path): c.values[key] for c in animation.channels}
    local = skeleton.local_rest()
    world = np.empty_like(local)
    for i, bone in enumerate(skeleton.bone_names):
        m = local[i].copy()
        if (bone, "rotation_quaternion") in by:
            m[:3, :3] = sc.quat_to_matrix(by[bone, "rotation_quaternion"])
        if (bone, "location") in by:
            m[:3, 3] = by[bone, "location"]
        world[i] = m if skeleton.parents[i] < 0 else world[skeleton.parents[i]] @ m
    return world


def grid_mesh(rng, skeleton_size, name="Body"):
    """A strip of quads along the chain: POINT normals, two UV maps, colours, tangents, skin, a shape key."""
    rows = 6
    x, y = np.meshgrid(np.linspace(-0.5, 0.5, 3), np.linspace(0, 4, rows))
    positions = np.stack([x.ravel(), y.ravel(), 0.1 * rng.normal(size=x.size)], axis=1).astype(np.float32)
    v = positions.shape[0]
    quads = np.array(
        [
            [r * 3 + c, r * 3 + c + 1, (r + 1) * 3 + c + 1, (r + 1) * 3 + c]
            for r in range(rows - 1)
            for c in range(2)
        ]
    )
    triangles = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]]).astype(np.int32)
    f = len(triangles)
    normals = rng.normal(size=(v, 3)) + [0, 0, 3]
    normals = (normals / np.linalg.norm(normals, axis=1, keepdims=True)).astype(np.float32)
    joints = np.stack([rng.integers(0, skeleton_size, v), rng.integers(0, skeleton_size, v)], axis=1).astype(
        np.int32
    )
    joints[:, 1] = np.where(joints[:, 1] == joints[:, 0], (joints[:, 0] + 1) % skeleton_size, joints[:, 1])
    w0 = rng.uniform(0.3, 1.0, v).astype(np.float32)
    weights = np.stack([w0, 1 - w0], axis=1)
    weights[0] = [1.0, 0.0]
    tangents = np.concatenate(
        [np.tile([1.0, 0, 0], (v, 1)), np.where(np.arange(v) % 2, 1.0, -1.0)[:, None]], 1
    )
    return sc.Mesh(
        name,
        positions,
        triangles,
        normals=sc.Layer("normal", normals, "POINT"),
        uv_layers=[
            sc.Layer("UVMap", rng.uniform(0, 1, (v, 2)).astype(np.float32), "POINT"),
            sc.Layer("Detail", rng.uniform(0, 1, (3 * f, 2)).astype(np.float32), "CORNER"),
        ],
        color_layers=[sc.Layer("Col", rng.uniform(0, 1, (3 * f, 4)).astype(np.float32), "CORNER")],
        tangents=sc.Layer("tangent", tangents.astype(np.float32), "POINT"),
        material_indices=(np.arange(f) % 2).astype(np.int32),
        materials=[0, 1],
        skeleton=0,
        skin_joints=joints,
        skin_weights=weights,
        shape_keys=[sc.ShapeKey("Smile", positions + np.float32([0, 0, 0.5]), extras={"morph": 1})],
        extras={"lod": 0, "name_hash": "0xdeadbeef"},
    )


def lod_mesh():
    """A hidden, static, placed mesh in its own collection, with corner normals."""
    matrix = sc.compose([1.0, 2.0, 3.0], [0.5, 0.5, 0.5, 0.5], [2.0, 2.0, 2.0])
    normals = np.tile(np.float32([0.0, 0.0, 1.0]), (3, 1))
    return sc.Mesh(
        "Body_LOD1",
        np.eye(3, dtype=np.float32),
        np.array([[0, 1, 2]], np.int32),
        normals=sc.Layer("normal", normals, "CORNER"),
        materials=[1],
        material_indices=np.zeros(1, np.int32),
        collection="LOD1",
        hidden=True,
        matrix=matrix,
    )


def scene_image(rng, name="skin", w=4, h=2, alpha=True):
    pixels = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
    if not alpha:
        pixels[..., 3] = 255
    return sc.Image(
        name, pixels, w, h, source_bytes=bytes(range(40)), source_format="DXT5", extras={"mips": 3}
    )


def make_scene(seed=1, display=None):
    rng = np.random.default_rng(seed)
    skeleton = chain_skeleton(rng, display=display)
    animation = chain_animation(rng, skeleton)
    images = [scene_image(rng), scene_image(rng, "eyes", 2, 2, alpha=False)]
    materials = [
        sc.Material(
            "Skin",
            base_color=(1.0, 0.5, 0.25, 1.0),
            alpha_mode="CLIP",
            backface_culling=True,
            textures=[
                sc.TextureSlot(
                    0,
                    uv_layer="UVMap",
                    wrap_s="MIRROR",
                    wrap_t="CLAMP",
                    translate=(0.25, 0.5),
                    rotate=0.5,
                    scale=(2.0, 3.0),
                    extras={"filter": 1},
                )
            ],
            extras={"shader": "skin"},
        ),
        sc.Material("Eyes", textures=[sc.TextureSlot(1)]),
    ]
    animation.channels.append(
        sc.Channel("material", "Skin", "texture.0.translate", KEY_FRAMES, rng.uniform(0, 1, (4, 2)))
    )
    animation.channels.append(
        sc.Channel(
            "material",
            "Skin",
            "texture.0.image_index",
            KEY_FRAMES,
            np.array([[0.0], [1], [0], [1]]),
            interpolation="CONSTANT",
        )
    )
    animation.channels.append(
        sc.Channel("shape_key", "Body", "Smile", KEY_FRAMES, np.array([[0.0], [1], [0.5], [0]]))
    )
    animation.channels.append(
        sc.Channel(
            "object", "Body", "hide", KEY_FRAMES, np.array([[0.0], [1], [0], [1]]), interpolation="CONSTANT"
        )
    )
    return sc.Scene(
        name="Test",
        skeletons=[skeleton],
        meshes=[grid_mesh(rng, skeleton_size=4), lod_mesh()],  # the last bone does not deform
        materials=materials,
        images=images,
        animations=[animation, chain_animation(rng, skeleton, "run")],
        extras={"file": "test.bin"},
    )


def euler_scene(rng):
    """Two bones with the same Bézier euler channel: the root's rest rotation is the identity, the child's not."""
    rest = np.stack(
        [sc.compose([0.0, 0, 0], [1.0, 0, 0, 0]), sc.compose([0.0, 1, 0], random_quats(rng, 1)[0])]
    )
    skeleton = sc.Skeleton("Rig", ["root", "child"], np.array([-1, 0], np.int32), rest)
    times = np.array([0.0, 8.0, 20.0])
    values = rng.uniform(-1.5, 1.5, (3, 3))
    left = np.stack([np.broadcast_to((times - [2, 3, 4])[:, None], (3, 3)), values - 0.3], axis=-1)
    right = np.stack([np.broadcast_to((times + [3, 2, 4])[:, None], (3, 3)), values + 0.4], axis=-1)
    channels = [
        sc.Channel("bone", bone, "rotation_euler", times, values, "BEZIER", left, right)
        for bone in ("root", "child")
    ]
    return sc.Scene(skeletons=[skeleton], animations=[sc.Animation("turn", channels, skeleton=0)])


# A signed axis permutation: bones whose files point them along X are shown along Y.
X_TO_Y = np.array([[0.0, 1, 0, 0], [-1, 0, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])


def assign(obj, action):
    """Make ``action`` the object's active action (its first slot on Blender 4.4+)."""
    obj.animation_data.action = action
    if hasattr(action, "slots"):
        obj.animation_data.action_slot = action.slots[0]


def attribute(owner, name, field, width, dtype=np.float32):
    """``owner[name]``'s values (an attribute, UV map or shape key) as a (N, width) array."""
    data = owner[name].data if hasattr(owner[name], "data") else owner[name]
    out = np.empty(len(data) * width, dtype)
    data.foreach_get(field, out)
    return out.reshape(len(data), width) if width > 1 else out


def pose_matrices(armature):
    return np.array([np.array(p.matrix) for p in armature.pose.bones])


TOLERANCE = 1e-5


def dense_skin(mesh, bones):
    dense = np.zeros((len(mesh.positions), bones))
    np.add.at(dense, (np.arange(len(mesh.positions))[:, None], mesh.skin_joints), mesh.skin_weights)
    return dense


def assert_close(a, b, what):
    assert (a is None) == (b is None), what
    if a is not None:
        np.testing.assert_allclose(
            np.asarray(a, np.float64), np.asarray(b, np.float64), atol=TOLERANCE, err_msg=what
        )


def assert_layers_equal(a, b, what):
    a, b = [x for x in a if x is not None], [y for y in b if y is not None]
    assert [(x.name, x.domain) for x in a] == [(y.name, y.domain) for y in b], what
    for x, y in zip(a, b, strict=True):
        assert_close(x.data, y.data, f"{what} {x.name}")


def assert_scenes_equal(got: sc.Scene, want: sc.Scene):
    assert (got.name, got.extras) == (want.name, want.extras)
    for g, w in zip(got.skeletons, want.skeletons, strict=True):
        assert (g.name, g.bone_names, g.parents.tolist(), g.deform.tolist()) == (
            w.name,
            w.bone_names,
            w.parents.tolist(),
            w.deform.tolist(),
        )
        assert (g.bone_extras, g.extras) == (w.bone_extras, w.extras)
        assert_close(g.rest, w.rest, "rest")
        assert_close(g.bone_display, w.bone_display, "bone display")
    assert len(got.meshes) == len(want.meshes)
    for g, w in zip(got.meshes, want.meshes, strict=True):
        assert (g.name, g.collection, g.hidden, g.materials, g.skeleton, g.extras) == (
            w.name,
            w.collection,
            w.hidden,
            w.materials,
            w.skeleton,
            w.extras,
        )
        np.testing.assert_array_equal(g.positions, w.positions)
        np.testing.assert_array_equal(g.triangles, w.triangles)
        np.testing.assert_array_equal(g.material_indices, w.material_indices)
        assert_layers_equal([g.normals], [w.normals], "normals")
        np.testing.assert_array_equal(g.normals.data, w.normals.data)  # the source normals, exactly
        assert_layers_equal(g.uv_layers, w.uv_layers, "uv")
        assert_layers_equal(g.color_layers, w.color_layers, "colour")
        assert_layers_equal([g.tangents], [w.tangents], "tangents")
        assert (g.skin_joints is None) == (w.skin_joints is None)
        if w.skin_joints is not None:
            assert_close(dense_skin(g, len(got.skeletons[0])), dense_skin(w, len(want.skeletons[0])), "skin")
            assert g.skin_joints.shape == w.skin_joints.shape
        assert [(k.name, k.extras) for k in g.shape_keys] == [(k.name, k.extras) for k in w.shape_keys]
        for gk, wk in zip(g.shape_keys, w.shape_keys, strict=True):
            assert_close(gk.positions, wk.positions, "shape key")
        assert_close(g.matrix, w.matrix, "matrix")
    for g, w in zip(got.materials, want.materials, strict=True):
        assert (g.name, g.alpha_mode, g.backface_culling, g.extras) == (
            w.name,
            w.alpha_mode,
            w.backface_culling,
            w.extras,
        )
        assert_close(g.base_color, w.base_color, "base colour")
        assert len(g.textures) == len(w.textures)
        for gs, ws in zip(g.textures, w.textures, strict=True):
            assert (gs.image, gs.role, gs.uv_layer, gs.wrap_s, gs.wrap_t, gs.extras) == (
                ws.image,
                ws.role,
                ws.uv_layer,
                ws.wrap_s,
                ws.wrap_t,
                ws.extras,
            )
            assert_close(
                [*gs.translate, gs.rotate, *gs.scale], [*ws.translate, ws.rotate, *ws.scale], "mapping"
            )
    assert len(got.materials) == len(want.materials)
    assert len(got.images) == len(want.images)
    for g, w in zip(got.images, want.images, strict=True):
        assert (g.name, g.width, g.height, g.source_bytes, g.source_format, g.extras) == (
            w.name,
            w.width,
            w.height,
            w.source_bytes,
            w.source_format,
            w.extras,
        )
        np.testing.assert_array_equal(g.pixels, w.pixels)
    assert [a.name for a in got.animations] == [a.name for a in want.animations]
    for g, w in zip(got.animations, want.animations, strict=True):
        assert (g.fps, g.frame_start, g.frame_end, g.loop, g.skeleton, g.extras) == (
            w.fps,
            w.frame_start,
            w.frame_end,
            w.loop,
            w.skeleton,
            w.extras,
        )
        assert [(c.target_kind, c.target, c.path, c.interpolation, c.extras) for c in g.channels] == [
            (c.target_kind, c.target, c.path, c.interpolation, c.extras) for c in w.channels
        ]
        for gc, wc in zip(g.channels, w.channels, strict=True):
            what = f"{g.name} {wc.target} {wc.path}"
            assert_close(gc.times, wc.times, what)
            assert_close(gc.values, wc.values, what)
            assert_close(gc.handles_left, wc.handles_left, what)
            assert_close(gc.handles_right, wc.handles_right, what)


def build_and_extract(scene, **options):
    result = build_scene(scene, bpy.context)
    return result, extract_scene(
        bpy.context, result.armatures[0] if result.armatures else None, result.objects, **options
    )
