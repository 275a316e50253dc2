"""A small dinosaur-like creature written with the project's own TMD/TKL/TML writers.

    python tools/demo_creature.py OUTPUT_FOLDER

writes demo.tmd, demo.tkl and demo.tml: 15 bones (body, neck, head, a tail
chain and four legs), two LODs of two meshes each, two materials (an RGBA8888
texture and a DXT5 DDS texture) and two looping animations ("walk_lp",
"idle_lp") that share keys in the keyframe library. ``large_model`` builds a
big model for benchmarks.
"""

from __future__ import annotations

import sys
from pathlib import Path

import addon_package
import numpy as np

addon_package.load()

from retro_models.formats.scene import (  # noqa: E402
    Animation,
    Channel,
    Image,
    Layer,
    Material,
    Mesh,
    Scene,
    Skeleton,
    TextureSlot,
)
from retro_models.formats.toshi import convert, tkl, tmd, tml  # noqa: E402

# name, parent, head position (x right, y forward, z up), radius of the limb it starts
BONES = [
    ("root", -1, (0.0, 0.0, 1.2), 0.45),
    ("spine", 0, (0.0, 0.5, 1.3), 0.45),
    ("neck", 1, (0.0, 1.0, 1.5), 0.22),
    ("head", 2, (0.0, 1.5, 1.9), 0.25),
    ("tail1", 0, (0.0, -0.6, 1.2), 0.3),
    ("tail2", 4, (0.0, -1.3, 1.1), 0.2),
    ("tail3", 5, (0.0, -2.0, 1.0), 0.1),
    ("leg_fl", 1, (0.35, 0.5, 1.0), 0.12),
    ("foot_fl", 7, (0.35, 0.55, 0.45), 0.1),
    ("leg_fr", 1, (-0.35, 0.5, 1.0), 0.12),
    ("foot_fr", 9, (-0.35, 0.55, 0.45), 0.1),
    ("leg_bl", 0, (0.35, -0.3, 1.0), 0.15),
    ("foot_bl", 11, (0.35, -0.25, 0.45), 0.1),
    ("leg_br", 0, (-0.35, -0.3, 1.0), 0.15),
    ("foot_br", 13, (-0.35, -0.25, 0.45), 0.1),
]
# Where each bone's limb ends (the child's head, or a tip for bones without children).
TIPS = {
    "head": (0.0, 2.1, 1.8),
    "tail3": (0.0, -2.7, 0.95),
    "foot_fl": (0.35, 0.75, 0.05),
    "foot_fr": (-0.35, 0.75, 0.05),
    "foot_bl": (0.35, -0.05, 0.05),
    "foot_br": (-0.35, -0.05, 0.05),
}
HEAD_BONES = {"neck", "head"}


def _skeleton() -> Skeleton:
    names = [b[0] for b in BONES]
    heads = np.array([b[2] for b in BONES])
    rest = np.tile(np.eye(4), (len(BONES), 1, 1))
    rest[:, :3, 3] = heads
    deform = np.ones(len(BONES), bool)
    return Skeleton("demo", names, np.array([b[1] for b in BONES], np.int32), rest, deform)


def _tube(start, end, radius: float, sides: int, rings: int, bone: int, parent: int):
    """A capped-by-nothing tube around a limb: positions, normals, uvs, joints, weights, triangles."""
    start, end = np.asarray(start, float), np.asarray(end, float)
    axis = end - start
    length = np.linalg.norm(axis)
    direction = axis / length
    helper = np.array([0.0, 0.0, 1.0]) if abs(direction[2]) < 0.9 else np.array([1.0, 0.0, 0.0])
    u = np.cross(direction, helper)
    u /= np.linalg.norm(u)
    v = np.cross(direction, u)
    t = np.linspace(0, 1, rings)
    angle = np.linspace(0, 2 * np.pi, sides, endpoint=False)
    taper = radius * (1 - 0.35 * t)
    ring_dirs = np.cos(angle)[:, None] * u + np.sin(angle)[:, None] * v  # (sides, 3)
    positions = start + t[:, None, None] * axis + taper[:, None, None] * ring_dirs[None]
    normals = np.broadcast_to(ring_dirs, positions.shape)
    uvs = np.stack(np.broadcast_arrays(angle[None, :] / (2 * np.pi), t[:, None]), axis=-1)
    joints = np.zeros((rings, sides, 4), np.int32)
    weights = np.zeros((rings, sides, 4), np.float32)
    joints[..., 0] = bone
    # The first ring blends with the parent so joints bend smoothly.
    blend = np.where(t < 0.01, 0.5, 1.0) if parent >= 0 else np.ones(rings)
    weights[..., 0] = blend[:, None]
    joints[..., 1] = max(parent, 0)
    weights[..., 1] = (1 - blend)[:, None]
    r, s = np.meshgrid(np.arange(rings - 1), np.arange(sides), indexing="ij")
    a = r * sides + s
    b = r * sides + (s + 1) % sides
    c = a + sides
    d = b + sides
    triangles = np.concatenate(
        [np.stack([a, b, d], -1).reshape(-1, 3), np.stack([a, d, c], -1).reshape(-1, 3)]
    )
    return (
        positions.reshape(-1, 3),
        normals.reshape(-1, 3),
        uvs.reshape(-1, 2),
        joints.reshape(-1, 4),
        weights.reshape(-1, 4),
        triangles,
    )


def _mesh(name: str, bones: list[int], sides: int, rings: int, material: int, lod: int) -> Mesh:
    parts = []
    for i in bones:
        bone_name, parent, head, radius = BONES[i]
        children = [j for j, b in enumerate(BONES) if b[1] == i]
        tip = TIPS.get(bone_name) or BONES[children[0]][2]
        parts.append(_tube(head, tip, radius, sides, rings, i, parent))
    offsets = np.cumsum([0] + [len(p[0]) for p in parts])
    positions, normals, uvs, joints, weights = (np.concatenate([p[k] for p in parts]) for k in range(5))
    triangles = np.concatenate([p[5] + o for p, o in zip(parts, offsets[:-1], strict=True)])
    return Mesh(
        name=name,
        positions=positions.astype(np.float32),
        triangles=triangles.astype(np.int32),
        normals=Layer("normal", normals.astype(np.float32)),
        uv_layers=[Layer(convert.UV_LAYER, uvs.astype(np.float32))],
        material_indices=np.zeros(len(triangles), np.int32),
        materials=[material],
        skeleton=0,
        skin_joints=joints,
        skin_weights=weights,
        collection=f"LOD{lod}",
        hidden=lod > 0,
    )


def _images() -> list[Image]:
    y, x = np.mgrid[0:64, 0:64]
    skin = np.zeros((64, 64, 4), np.uint8)
    skin[..., 0] = 60 + 40 * ((x // 8 + y // 8) % 2)
    skin[..., 1] = 120 + (y * 2)
    skin[..., 2] = 50
    skin[..., 3] = 255
    eyes = np.zeros((32, 32, 4), np.uint8)
    eyes[..., :3] = (200, 160, 90)
    eyes[..., 3] = 255
    eyes[(x[:32, :32] - 16) ** 2 + (y[:32, :32] - 16) ** 2 < 40] = (20, 20, 20, 255)
    return [
        Image("skin", skin, 64, 64, source_format="RGBA8888", extras={"format": 0}),
        Image("eyes", eyes, 32, 32, source_format="DXT5", extras={"format": tml.FORMAT_DDS}),
    ]


def _rotation_x(angles: np.ndarray) -> np.ndarray:
    return np.stack([np.cos(angles / 2), np.sin(angles / 2), 0 * angles, 0 * angles], axis=1)


def _rotation_z(angles: np.ndarray) -> np.ndarray:
    return np.stack([np.cos(angles / 2), 0 * angles, 0 * angles, np.sin(angles / 2)], axis=1)


def _animations(skeleton: Skeleton) -> list[Animation]:
    local = skeleton.local_rest()
    frames = np.arange(0, 31, 5, dtype=np.float64)
    phase = frames / 30 * 2 * np.pi
    tail = _rotation_z(0.25 * np.sin(phase))  # the same tail sway in both: shared library keys

    def bone_channels(name: str, rotation: np.ndarray, location: np.ndarray | None = None) -> list[Channel]:
        out = [Channel("bone", name, "rotation_quaternion", frames, rotation)]
        if location is not None:
            out.append(Channel("bone", name, "location", frames, location))
        return out

    rest_location = {n: local[i, :3, 3] for i, n in enumerate(skeleton.bone_names)}
    walk = []
    bob = np.tile(rest_location["root"], (len(frames), 1))
    bob[:, 2] += 0.05 * np.abs(np.sin(phase))
    walk += bone_channels("root", _rotation_x(0 * phase), bob)
    for name, sign in (("leg_fl", 1), ("leg_br", 1), ("leg_fr", -1), ("leg_bl", -1)):
        walk += bone_channels(name, _rotation_x(sign * 0.5 * np.sin(phase)))
    for name in ("tail1", "tail2", "tail3"):
        walk += bone_channels(name, tail)
    walk += bone_channels("neck", _rotation_x(0.1 * np.sin(2 * phase)))
    idle = bone_channels("head", _rotation_x(0.2 * np.sin(phase)))
    for name in ("tail1", "tail2", "tail3"):
        idle += bone_channels(name, tail)
    return [
        Animation("walk_lp", walk, 30.0, 0.0, 30.0, True, 0),
        Animation("idle_lp", idle, 30.0, 0.0, 30.0, True, 0),
    ]


def demo_scene() -> Scene:
    skeleton = _skeleton()
    body = [i for i, b in enumerate(BONES) if b[0] not in HEAD_BONES and b[0] != "spine"]
    head = [i for i, b in enumerate(BONES) if b[0] in HEAD_BONES] + [1]
    meshes = [
        _mesh("body", body, 12, 6, 0, 0),
        _mesh("head", head, 12, 6, 1, 0),
        _mesh("body_low", body, 6, 3, 0, 1),
        _mesh("head_low", head, 6, 3, 1, 1),
    ]
    materials = [
        Material("dino_skin", textures=[TextureSlot(0, uv_layer=convert.UV_LAYER)]),
        Material("dino_Eyes", textures=[TextureSlot(1, uv_layer=convert.UV_LAYER)]),
    ]
    return Scene("demo", [skeleton], meshes, materials, _images(), _animations(skeleton))


def demo_files() -> dict[str, bytes]:
    model, library, materials = convert.from_scene(demo_scene(), tkl_name="demo")
    return {"demo.tmd": tmd.write(model), "demo.tkl": tkl.write(library), "demo.tml": tml.write(materials)}


def large_model(
    triangles: int = 200_000, bones: int = 60, animations: int = 10, keys: int = 100
) -> dict[str, bytes]:
    """A big model for benchmarks: grid meshes skinned along a bone chain, animated on every bone."""
    parents = np.arange(-1, bones - 1, dtype=np.int32)
    rest = np.tile(np.eye(4), (bones, 1, 1))
    rest[:, 1, 3] = np.arange(bones, dtype=np.float64)
    skeleton = Skeleton("large", [f"bone{i}" for i in range(bones)], parents, rest)
    per_mesh = 50_000  # triangles per mesh, well under the vertex limit
    meshes = []
    remaining = triangles
    while remaining > 0:
        count = min(per_mesh, remaining)
        columns = 50
        rows = -(-count // (2 * columns))
        y, x = np.mgrid[0 : rows + 1, 0 : columns + 1]
        positions = np.stack([x.ravel() / columns, y.ravel() / rows * (bones - 1), 0 * x.ravel()], 1)
        a = (np.arange(rows)[:, None] * (columns + 1) + np.arange(columns)[None, :]).ravel()
        quads = np.stack([a, a + 1, a + columns + 2, a + columns + 1], 1)
        tris = np.concatenate([quads[:, [0, 1, 2]], quads[:, [0, 2, 3]]])[:count]
        bone = np.minimum(positions[:, 1].astype(int), bones - 1)
        joints = np.stack([bone, np.minimum(bone + 1, bones - 1), bone, bone], 1).astype(np.int32)
        frac = positions[:, 1] - bone
        weights = np.stack([1 - frac, frac, 0 * frac, 0 * frac], 1).astype(np.float32)
        meshes.append(
            Mesh(
                f"grid{len(meshes)}",
                positions.astype(np.float32),
                tris.astype(np.int32),
                normals=Layer("normal", np.tile(np.float32([0, 0, 1]), (len(positions), 1))),
                uv_layers=[Layer(convert.UV_LAYER, positions[:, :2].astype(np.float32))],
                materials=[0],
                skeleton=0,
                skin_joints=joints,
                skin_weights=weights,
            )
        )
        remaining -= count
    image = Image("grid", np.full((64, 64, 4), 200, np.uint8), 64, 64)
    material = Material("grid", textures=[TextureSlot(0)])
    rng = np.random.default_rng(7)
    frames = np.arange(keys, dtype=np.float64)
    anims = []
    local = skeleton.local_rest()
    for k in range(animations):
        channels = []
        for i, name in enumerate(skeleton.bone_names):
            angles = 0.3 * np.sin(frames / keys * 2 * np.pi + rng.random() * 6)
            channels.append(Channel("bone", name, "rotation_quaternion", frames, _rotation_x(angles)))
            channels.append(Channel("bone", name, "location", frames, np.tile(local[i, :3, 3], (keys, 1))))
        anims.append(Animation(f"anim{k}", channels, 30.0, 0.0, float(keys - 1), False, 0))
    scene = Scene("large", [skeleton], meshes, [material], [image], anims)
    model, library, materials = convert.from_scene(scene, tkl_name="large")
    return {"large.tmd": tmd.write(model), "large.tkl": tkl.write(library), "large.tml": tml.write(materials)}


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(__doc__.strip())
        return 2
    folder = Path(args[0])
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in demo_files().items():
        (folder / name).write_bytes(data)
        print(f"wrote {folder / name} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
