"""A small generated J3D model (made with the project's own model builder) for the model tests."""

import numpy as np
from retro_models.formats.curves import euler_to_matrix
from retro_models.formats.j3d import model, model_build
from retro_models.formats.scene import world_from_local

ANGLE = np.pi / 32768


def _local(joint: model_build.Joint) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = euler_to_matrix(np.array([joint.rotation], float) * ANGLE)[0] * joint.scale
    m[:3, 3] = joint.translation
    return m


def generated():
    """Three joints; shape 0 rigid on joint 1; shape 1 in two packets mixing rigid and weighted
    matrices, the second packet keeping slot 0 (0xFFFF) from the first."""
    joints = [
        model_build.Joint("root", -1, (0, 0, 0)),
        model_build.Joint("arm", 0, (1, 2, 0), (0, 0, 0x4000)),
        model_build.Joint("hand", 1, (0, 1.5, 0), (0x2000, 0, 0), (1, 2, 1)),
    ]
    world = world_from_local(np.array([_local(j) for j in joints]), np.array([-1, 0, 1]))
    grid = np.stack(np.meshgrid(np.arange(4.0), np.arange(3.0)), -1).reshape(-1, 2)
    positions = np.concatenate([grid, np.zeros((12, 1))], 1).astype(np.float32)
    normals = np.tile([[0.0, 0.0, 1.0]], (12, 1)).astype(np.float32)
    uvs = (grid / 4).astype(np.float32)
    envelopes = [([0, 1], [0.25, 0.75]), ([1, 2], [0.5, 0.5])]
    rigid = [0, 1, 2]  # draw matrices 0-2 rigid, 3-4 weighted
    quads = [(r * 4 + c, r * 4 + c + 1, r * 4 + c + 5, r * 4 + c + 4) for r in range(2) for c in range(3)]

    def corners(faces, slot_of):
        out = []
        for a, b, c, d in faces:
            for v in (a, d, c, a, c, b):  # clockwise from +Z
                out.append((slot_of(v), v, v, v))
        return np.array(out)

    shapes = [
        model_build.Shape(0, [model_build.Packet([1], corners(quads[:3], lambda v: 0))]),
        model_build.Shape(
            1,
            [
                model_build.Packet([3, 4, 0], corners(quads[3:5], lambda v: v % 3)),
                model_build.Packet([0xFFFF, 2], corners(quads[5:], lambda v: v % 2)),
            ],
        ),
    ]
    images = [("checker", (np.indices((8, 8)).sum(0) % 2 * 255).astype(np.uint8))]
    built = model_build.build(
        joints,
        positions,
        normals,
        uvs,
        envelopes,
        rigid,
        shapes,
        ["skin", "cloth"],
        images,
        np.linalg.inv(world),
    )
    return model.read(model.write(built), "generated.bmd"), world


def generated_bytes() -> bytes:
    return model.write(generated()[0])


def rewritten_bytes() -> bytes:
    """The generated model with every shape re-encoded by the writer (strips, its packets and slots)."""
    from retro_models.formats.j3d import model_convert, model_write

    m = generated()[0]
    meshes = model_convert.to_scene(m).meshes
    return model.write(
        model_write.replace_shapes(m, {s: model_write.shape_data(x) for s, x in enumerate(meshes)})
    )
