"""The game's pose and skinning (formats/toshi/evaluate.py), checked against values made here."""

import copy

import demo_creature
import numpy as np
import pytest
from retro_models.formats.curves import slerp
from retro_models.formats.scene import compose, matrix_to_quat, quat_to_matrix, world_from_local
from retro_models.formats.toshi import convert, evaluate, tkl, tmd


@pytest.fixture(scope="module")
def demo():
    files = demo_creature.demo_files()
    return tmd.read(files["demo.tmd"]), tkl.read(files["demo.tkl"])


def _rotate_z(angle: float) -> np.ndarray:
    """Quaternion (w x y z) of a rotation by ``angle`` about Z."""
    return np.array([np.cos(angle / 2), 0.0, 0.0, np.sin(angle / 2)])


def _random_rest(model: tmd.TMD, seed: int = 3) -> tmd.TMD:
    """The model with random rigid bind matrices, the node records' rest values made to match."""
    rng = np.random.default_rng(seed)
    model = copy.deepcopy(model)
    n = len(model.nodes)
    q = rng.normal(size=(n, 4))
    local = compose(rng.normal(size=(n, 3)), q / np.linalg.norm(q, axis=1, keepdims=True))
    bind = world_from_local(local, model.nodes["parent"])
    model.nodes["bind"] = tmd.flatten(bind)
    model.nodes["inverse_bind"] = tmd.flatten(np.linalg.inv(bind))
    model.nodes["translation"] = local[:, :3, 3]
    model.nodes["rotation"] = matrix_to_quat(local)[:, [1, 2, 3, 0]]
    return model


def _keyed(model: tmd.TMD, flags: int, translations, rotations, times=(0.0, 1.0)):
    """A model with one animation whose every node has ``flags`` and keys at ``times``.

    ``translations`` (K, N, 3) and ``rotations`` (K, N, 4, x y z w) hold the key values per key
    and node; returns the model and its keyframe library.
    """
    model = copy.deepcopy(model)
    translations = np.asarray(translations, np.float32)
    rotations = np.asarray(rotations, np.float32)
    k, n = translations.shape[:2]
    library = tkl.TKL(tkl.name_field("test"), translations.reshape(-1, 3), rotations.reshape(-1, 4))
    model.channels = []
    for node in range(n):
        keys = np.zeros(k, tmd.KEY_DTYPE)
        keys["time"] = times
        keys["position"] = keys["rotation"] = np.arange(k) * n + node
        model.channels.append(tmd.Channel(flags, keys))
    model.animations = model.animations[:1]
    model.animations[0].channels = np.arange(n, dtype=np.int32)
    return model, library


def test_rest_records_match_bind_matrices(demo):
    model, _ = demo
    np.testing.assert_allclose(evaluate.rest_world(model), tmd.matrices(model.nodes["bind"]), atol=1e-5)


@pytest.mark.parametrize("time", [-1.0, 0.0, 0.4, 2.0])
def test_rest_keys_give_bind_matrices(demo, time):
    model = _random_rest(demo[0])
    rest = np.stack([model.nodes["translation"]] * 2), np.stack([model.nodes["rotation"]] * 2)
    keyed, library = _keyed(model, tmd.CHANNEL_TRANSLATION_ROTATION, *rest)
    np.testing.assert_allclose(
        evaluate.pose(keyed, library, 0, time), tmd.matrices(model.nodes["bind"]), atol=1e-5
    )


def test_slerp_midpoint_and_clamped_ends():
    """The game's rotation between keys is the shared slerp (formats.curves)."""
    key_times = np.array([1.0, 2.0])
    quats = np.stack([_rotate_z(0.0), _rotate_z(np.pi / 2)])
    got = slerp(key_times, quats, [0.0, 1.0, 1.5, 1.25, 2.0, 9.0])
    expected = np.stack([_rotate_z(a) for a in (0, 0, np.pi / 4, np.pi / 8, np.pi / 2, np.pi / 2)])
    np.testing.assert_allclose(got, expected, atol=1e-12)
    # A key stored as -q is the same rotation: the shorter arc is taken.
    flipped = slerp(key_times, quats * [[1], [-1]], [1.5])
    np.testing.assert_allclose(quat_to_matrix(flipped), quat_to_matrix(expected[2:3]), atol=1e-12)


def test_slerp_keys_sharing_a_time_hold_the_later_one_from_then_on():
    quats = np.stack([_rotate_z(a) for a in (0.0, 0.5, 1.0, 1.5)])
    middle = slerp([0.0, 1.0, 1.0, 2.0], quats, [1.0, 1.5])
    np.testing.assert_allclose(middle, [_rotate_z(1.0), _rotate_z(1.25)], atol=1e-12)
    end = slerp([0.0, 1.0, 1.0], quats[:3], [1.0, 1.5])
    np.testing.assert_allclose(end, [_rotate_z(1.0), _rotate_z(1.0)], atol=1e-12)


def test_lerp_between_keys_and_repeated_time():
    got = evaluate.lerp([0.0, 1.0, 1.0, 3.0], [[0.0], [2.0], [5.0], [9.0]], [0.5, 1.0, 2.0, 4.0, -1.0])
    np.testing.assert_allclose(got[:, 0], [1.0, 5.0, 7.0, 9.0, 0.0])


@pytest.mark.parametrize(
    "flags, keeps_translation, keeps_rotation",
    [
        (tmd.CHANNEL_ROTATION, True, False),
        (tmd.CHANNEL_TRANSLATION_ROTATION, False, False),
        (tmd.CHANNEL_UNUSED, True, True),
        (tmd.CHANNEL_TRANSLATION, False, True),
    ],
)
def test_channel_flags_choose_what_stays_at_rest(demo, flags, keeps_translation, keeps_rotation):
    model = _random_rest(demo[0])
    n = len(model.nodes)
    moved_t = np.tile(np.arange(n)[:, None] * [0.0, 1.0, 0.0] + [1.0, 2.0, 3.0], (2, 1, 1))
    moved_q = np.tile(_rotate_z(0.7)[[1, 2, 3, 0]], (2, n, 1))
    keyed, library = _keyed(model, flags, moved_t, moved_q)
    translation, rotation = evaluate.local_pose(keyed, library, 0, 0.5)
    rest_t, rest_q = evaluate.rest_local(model)
    np.testing.assert_allclose(translation[0], rest_t if keeps_translation else moved_t[0], atol=1e-6)
    expected_q = rest_q if keeps_rotation else np.tile(_rotate_z(0.7), (n, 1))
    np.testing.assert_allclose(quat_to_matrix(rotation[0]), quat_to_matrix(expected_q), atol=1e-6)


def test_pose_chains_keys_through_the_hierarchy(demo):
    model = _random_rest(demo[0])
    n = len(model.nodes)
    rng = np.random.default_rng(5)
    t = rng.normal(size=(2, n, 3))
    q = rng.normal(size=(2, n, 4))
    q /= np.linalg.norm(q, axis=2, keepdims=True)
    keyed, library = _keyed(model, tmd.CHANNEL_TRANSLATION_ROTATION, t, q, times=(0.0, 2.0))
    world = evaluate.pose(keyed, library, 0, [0.0, 1.0, 2.0])
    assert world.shape == (3, n, 4, 4)
    for k, time in ((0, 0.0), (2, 2.0)):
        local = compose(t[k // 2], q[k // 2][:, [3, 0, 1, 2]])
        chained = local.copy()
        for i, parent in enumerate(model.nodes["parent"].tolist()):
            if parent >= 0:
                chained[i] = chained[parent] @ local[i]
        np.testing.assert_allclose(world[k], chained, atol=1e-5)
        np.testing.assert_allclose(evaluate.pose(keyed, library, 0, time), chained, atol=1e-5)
    # Halfway: the root's translation is the mean of its keys.
    root = int(np.flatnonzero(model.nodes["parent"] < 0)[0])
    np.testing.assert_allclose(world[1, root, :3, 3], t[:, root].mean(axis=0), atol=1e-6)


def test_without_library_everything_rests(demo):
    model, _ = demo
    np.testing.assert_allclose(evaluate.pose(model, None, 0, 0.3), evaluate.rest_world(model))


def test_missing_library_entry_is_reported(demo):
    model, library = demo
    short = tkl.TKL(library.name_field, library.positions[:1], library.rotations[:1])
    with pytest.raises(ValueError, match="outside the keyframe library"):
        evaluate.pose(model, short, 0, 0.0)


def test_skin_at_bind_pose_gives_stored_positions(demo):
    model, _ = demo
    bind = tmd.matrices(model.nodes["bind"])
    for li, lod in enumerate(model.lods):
        for mi, mesh in enumerate(lod.meshes):
            stored = np.concatenate([p.vertices["position"] for p in mesh.pieces])
            np.testing.assert_allclose(evaluate.skin(model, li, mi, bind), stored, atol=1e-5)


def test_skin_follows_a_rigid_motion_and_a_single_bone(demo):
    model, library = demo
    bind = tmd.matrices(model.nodes["bind"])
    motion = compose(np.array([0.5, -1.0, 2.0]), _rotate_z(1.1))
    stored = np.concatenate([p.vertices["position"] for p in model.lods[0].meshes[0].pieces])
    moved = evaluate.skin(model, 0, 0, motion @ bind)
    np.testing.assert_allclose(moved, stored @ motion[:3, :3].T + motion[:3, 3], atol=1e-5)
    # Only one node moves: vertices weighted to it alone follow it, the others not at all.
    _, joints, weights = evaluate.vertex_joints(model.lods[0].meshes[0], len(model.nodes))
    node = int(joints[0, 0])
    world = bind.copy()
    world[node] = motion @ bind[node]
    moved = evaluate.skin(model, 0, 0, world)
    only = (weights[:, 0] == 1.0) & (joints[:, 0] == node)
    untouched = ((joints != node) | (weights == 0)).all(axis=1)
    assert only.any() and untouched.any()
    np.testing.assert_allclose(moved[only], stored[only] @ motion[:3, :3].T + motion[:3, 3], atol=1e-5)
    np.testing.assert_allclose(moved[untouched], stored[untouched], atol=1e-6)


def test_vertex_joints_agree_with_the_importer(demo):
    model, library = demo
    scene = convert.to_scene(model, library)
    meshes = iter(scene.meshes)
    for lod in model.lods:
        for mesh in lod.meshes:
            imported = next(meshes)
            _, joints, weights = evaluate.vertex_joints(mesh, len(model.nodes))
            np.testing.assert_array_equal(joints, imported.skin_joints)
            np.testing.assert_allclose(weights, imported.skin_weights, atol=1e-7)
