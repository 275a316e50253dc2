"""The pose maps of a whole skeleton, computed together (curves.BoneMaps.many), against their definition:
basis = Cᵀ · rest_local⁻¹ · key_local · C, each bone's maps its own, the inverses undoing them."""

import numpy as np
from retro_models.formats.curves import BoneMaps, scaled_permutation
from retro_models.formats.scene import matrix_to_quat, quat_to_matrix

DISPLAY = np.array([[0.0, 0, 1, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1]])  # bones along file X


def _bones(count: int, display: np.ndarray):
    rng = np.random.default_rng(7)
    quats = rng.normal(size=(count, 4))
    quats /= np.linalg.norm(quats, axis=1, keepdims=True)
    quats[0] = [1.0, 0, 0, 0]  # an unrotated bone
    rest = np.tile(np.eye(4), (count, 1, 1))
    rest[:, :3, :3] = quat_to_matrix(quats)
    rest[:, :3, 3] = rng.normal(size=(count, 3))
    rest_quats = matrix_to_quat(rest[:, :3, :3])
    maps = BoneMaps.many(
        rest, display, rest_quats, matrix_to_quat(display[:3, :3]), np.ones((count, 3)), np.ones(count)
    )
    return rng, rest, maps


def test_each_bone_maps_its_channels_onto_its_pose_basis():
    rng, rest, maps = _bones(6, DISPLAY)
    c = DISPLAY[:3, :3]
    for local, bone in zip(rest, maps, strict=True):
        location = rng.normal(size=3)
        a, b = bone.maps["location"]
        np.testing.assert_allclose(
            a @ location + b, c.T @ local[:3, :3].T @ (location - local[:3, 3]), atol=1e-12
        )
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        a, b = bone.maps["rotation_quaternion"]
        expected = c.T @ local[:3, :3].T @ quat_to_matrix(q) @ c
        np.testing.assert_allclose(quat_to_matrix(a @ q + b), expected, atol=1e-12)
        scale = rng.uniform(0.5, 2.0, size=3)
        a, b = bone.maps["scale"]
        np.testing.assert_allclose(a @ scale + b, np.abs(c.T) @ scale, atol=1e-12)
        for path, (a, b) in bone.maps.items():
            a_inv, b_inv = bone.inverses[path]
            value = rng.normal(size=len(b))
            np.testing.assert_allclose(a_inv @ (a @ value + b) + b_inv, value, atol=1e-12)
            assert (bone.permutations[path] is None) == (scaled_permutation(a) is None)


def test_euler_maps_only_for_bones_that_stand_unrotated():
    _, _, maps = _bones(4, np.eye(4))
    assert "rotation_euler" in maps[0].maps and "rotation_euler" in maps[0].inverses
    assert all("rotation_euler" not in bone.maps for bone in maps[1:])
    np.testing.assert_array_equal(maps[0].permutations["location"], [0, 1, 2])
    assert maps[1].permutations["location"] is None
    _, _, shown = _bones(4, DISPLAY)  # a display rotation: eulers are baked on every bone
    assert all("rotation_euler" not in bone.maps for bone in shown)
    np.testing.assert_array_equal(shown[0].permutations["location"], [1, 2, 0])


def test_a_rest_scale_scales_the_translation_and_divides_the_scale():
    rest = np.tile(np.eye(4), (1, 1, 1))
    rest[0, :3, 3] = [2.0, 0, 0]
    (bone,) = BoneMaps.many(
        rest,
        np.eye(4),
        np.array([[1.0, 0, 0, 0]]),
        np.array([1.0, 0, 0, 0]),
        np.array([[1.0, 2.0, 4.0]]),
        np.array([2.0]),
    )
    a, b = bone.maps["location"]
    np.testing.assert_allclose(a @ [3.0, 1.0, 1.0] + b, [4.0, 2.0, 2.0])  # (location − rest) × parent scale
    a, b = bone.maps["scale"]
    np.testing.assert_allclose(a @ [1.0, 1.0, 1.0] + b, [2.0, 1.0, 0.5])  # × parent scale / scale
