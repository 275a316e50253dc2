"""What the J3D Blender tests share: armatures and material objects made through the Scene
builder, and the game's joint transforms next to Blender's."""

import numpy as np
from retro_models.formats import scene as sc
from retro_models.formats.curves import euler_to_matrix
from retro_models.formats.j3d import evaluate
from retro_models.operators.blender.build import build_scene

ANGLE_TOLERANCE = 1e-3  # degrees
LENGTH_TOLERANCE = 1e-4
FLOAT32_RELATIVE = 1e-6  # about 8 float32 ulps


def random_quats(rng, n):
    q = rng.normal(size=(n, 4))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


def chain_skeleton(joints: int, rotated: bool, seed: int = 3) -> sc.Skeleton:
    """A chain of ``joints`` bones; with ``rotated`` every rest has its own orientation (baked path)."""
    rng = np.random.default_rng(seed)
    quats = random_quats(rng, joints) if rotated else np.tile([1.0, 0, 0, 0], (joints, 1))
    local = sc.compose(rng.normal(size=(joints, 3)) * 0.2 + [0, 1, 0], quats)
    parents = np.arange(-1, joints - 1, dtype=np.int32)
    rest = local.copy()
    for i in range(1, joints):
        rest[i] = rest[parents[i]] @ local[i]
    return sc.Skeleton("Rig", [f"joint{i}" for i in range(joints)], parents, rest)


def make_armature(context, joints: int, rotated: bool):
    result = build_scene(sc.Scene(name="rig", skeletons=[chain_skeleton(joints, rotated)]), context)
    armature = result.armatures[0]
    for obj in context.view_layer.objects:
        obj.select_set(False)
    armature.select_set(True)
    context.view_layer.objects.active = armature
    return armature


def expected_local(model, frames) -> np.ndarray:
    """(F, joints, 4, 4) parent-relative joint matrices the game computes: T · Rz·Ry·Rx · S."""
    values = evaluate.evaluate_bck(model, frames)
    frames_count, joints = values["scale"].shape[:2]
    rotation = euler_to_matrix(np.radians(values["rotation"]).reshape(-1, 3)).reshape(
        frames_count, joints, 3, 3
    )
    out = np.zeros((frames_count, joints, 4, 4))
    out[..., :3, :3] = rotation * values["scale"][..., None, :]
    out[..., :3, 3] = values["translation"]
    out[..., 3, 3] = 1.0
    return out


def blender_local(context, armature, names, frames) -> np.ndarray:
    """(F, joints, 4, 4) parent-relative matrices Blender evaluates: rest_local · basis."""
    bones = armature.data.bones
    rest = np.array([np.array(bones[n].matrix_local) for n in names])
    parents = [bones[n].parent for n in names]
    rest_local = np.array(
        [
            r if p is None else np.linalg.inv(np.array(p.matrix_local)) @ r
            for r, p in zip(rest, parents, strict=True)
        ]
    )
    out = np.empty((len(frames), len(names), 4, 4))
    for f, frame in enumerate(frames):
        whole = int(np.floor(frame))
        context.scene.frame_set(whole, subframe=float(frame - whole))
        out[f] = rest_local @ np.array([np.array(armature.pose.bones[n].matrix_basis) for n in names])
    return out


def assert_same_transforms(expected, found):
    scale_e = np.linalg.norm(expected[..., :3, :3], axis=-2)
    scale_f = np.linalg.norm(found[..., :3, :3], axis=-2)
    assert np.abs(scale_e - scale_f).max() < LENGTH_TOLERANCE
    rot_e = expected[..., :3, :3] / scale_e[..., None, :]
    rot_f = found[..., :3, :3] / scale_f[..., None, :]
    cos = (np.einsum("...ij,...ij->...", rot_e, rot_f) - 1) / 2
    angles = np.degrees(np.arccos(np.clip(cos, -1, 1)))
    assert angles.max() < ANGLE_TOLERANCE, angles.max()
    # Poses are float32: joints hundreds of units long get a few ulps more than 1e-4 after baking.
    length = np.linalg.norm(expected[..., :3, 3], axis=-1, keepdims=True)
    tolerance = np.maximum(LENGTH_TOLERANCE, FLOAT32_RELATIVE * length)
    assert (np.abs(expected[..., :3, 3] - found[..., :3, 3]) < tolerance).all()


def material_object(context, slots: dict[str, int]):
    """One selected mesh with a material per name, each with ``slots[name]`` image textures."""
    image = sc.Image("tile", np.full((2, 2, 4), 200, np.uint8), 2, 2)
    materials = [
        sc.Material(name, textures=[sc.TextureSlot(0) for _ in range(count)]) for name, count in slots.items()
    ]
    mesh = sc.Mesh(
        "Plane",
        np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32),
        np.array([[0, 1, 2]], np.int32),
        uv_layers=[sc.Layer("UVMap", np.array([[0, 0], [1, 0], [0, 1]], np.float32))],
        material_indices=np.zeros(1, np.int32),
        materials=list(range(len(materials))),
    )
    result = build_scene(sc.Scene(name="mats", meshes=[mesh], materials=materials, images=[image]), context)
    obj = result.objects[0]
    obj.select_set(True)
    context.view_layer.objects.active = obj
    return {m.name: b for m, b in zip(materials, result.materials, strict=True)}


def shape_objects(context, count: int):
    """``count`` selected meshes named shape0, shape1, … as the J3D model import names a model's shapes."""
    meshes = [
        sc.Mesh(
            f"shape{i}",
            np.array([[i, 0, 0], [i + 1, 0, 0], [i, 1, 0]], np.float32),
            np.array([[0, 1, 2]], np.int32),
        )
        for i in range(count)
    ]
    objects = build_scene(sc.Scene(name="shapes", meshes=meshes), context).objects
    for obj in context.view_layer.objects:
        obj.select_set(obj in objects)
    context.view_layer.objects.active = objects[0] if objects else None
    return objects
