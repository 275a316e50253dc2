from dataclasses import replace

import numpy as np
import pytest
from retro_models.formats.errors import FormatError
from retro_models.formats.scene import (
    Animation,
    Channel,
    Scene,
    Skeleton,
    axis_matrix,
    compose,
    keys_digest,
    matrix_to_quat,
    quat_multiply,
    quat_to_matrix,
    tree_order,
    validate,
)


def test_quaternion_matrix_round_trip():
    rng = np.random.default_rng(1)
    q = rng.normal(size=(200, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    q *= np.sign(q[:, :1])
    assert np.allclose(matrix_to_quat(quat_to_matrix(q)), q, atol=1e-12)
    # The product of quaternions is the product of their matrices.
    a, b = q[:100], q[100:]
    assert np.allclose(quat_to_matrix(quat_multiply(a, b)), quat_to_matrix(a) @ quat_to_matrix(b))


def test_axis_matrix_matches_blender_convention():
    m = axis_matrix("-Z", "Y")  # the OBJ importer's default
    assert np.array_equal(m[:3, :3] @ [0, 0, -1], [0, 1, 0])  # file forward -> Blender forward (Y)
    assert np.array_equal(m[:3, :3] @ [0, 1, 0], [0, 0, 1])  # file up -> Blender up (Z)
    assert np.array_equal(axis_matrix("Y", "Z"), np.eye(4))


def test_local_rest_inverts_world_chain():
    local = compose([[0, 0, 0], [0, 1, 0], [0, 2, 0]], [[1, 0, 0, 0], [0.7071, 0.7071, 0, 0], [1, 0, 0, 0]])
    parents = np.array([-1, 0, 1])
    world = local.copy()
    for i in (1, 2):
        world[i] = world[parents[i]] @ local[i]
    sk = Skeleton("s", ["a", "b", "c"], parents, world)
    assert np.allclose(sk.local_rest(), local)


def test_world_from_local_follows_the_tree_in_any_order():
    from retro_models.formats.scene import compose, world_from_local

    rng = np.random.default_rng(1)
    quats = rng.normal(size=(4, 4))
    local = compose(rng.normal(size=(4, 3)), quats / np.linalg.norm(quats, axis=1, keepdims=True))
    parents = np.array([2, -1, 1, 0])  # node 0's parent comes after it in the file
    world = world_from_local(local[None], parents)[0]
    np.testing.assert_allclose(world[1], local[1])
    np.testing.assert_allclose(world[2], local[1] @ local[2])
    np.testing.assert_allclose(world[0], local[1] @ local[2] @ local[0])
    np.testing.assert_allclose(world[3], world[0] @ local[3])


def test_keys_digest_sees_every_bit_of_the_keys():
    times = np.array([0.0, 1.5, 3.0])
    values = np.array([[0.25, -1.0], [0.5, 0.0], [1.0 / 3.0, 2.0]])
    handles = np.stack([np.broadcast_to(times[:, None], (3, 2)), values], axis=-1)
    channel = Channel("bone", "b", "location", times, values, "BEZIER", handles - 0.5, handles + 0.5)
    digest = keys_digest(channel)
    assert keys_digest(replace(channel, target="other", extras={"x": 1})) == digest  # the keys alone
    assert keys_digest(replace(channel, values=values.astype(np.float32).astype(np.float64))) != digest
    same_in_float32 = replace(channel, times=times.astype(np.float32), handles_left=handles - np.float32(0.5))
    assert keys_digest(same_in_float32) == digest  # values, not their dtype
    edits = {
        "a time": replace(channel, times=times + [0, 0, 1e-12]),
        "a value's sign bit": replace(channel, values=np.where(values == 0.0, -0.0, values)),
        "the interpolation": replace(channel, interpolation="LINEAR"),
        "no handles": replace(channel, handles_left=None, handles_right=None),
        "a handle": replace(channel, handles_right=handles + [[[0, 0]], [[0, 0]], [[0, 1e-9]]]),
        "a key less": replace(
            channel, times=times[:2], values=values[:2], handles_left=None, handles_right=None
        ),
    }
    for what, edited in edits.items():
        assert keys_digest(edited) != digest, what


def test_keys_digest_of_a_channel_without_keys():
    """Found by the fuzzer: a BTP or TMD track with no keys made the digest's reshape fail."""
    from retro_models.formats.scene import Channel, keys_digest

    empty = Channel("BONE", "b", "location", np.zeros(0), np.zeros((0, 3)))
    assert keys_digest(empty) != keys_digest(Channel("BONE", "b", "location", np.zeros(1), np.zeros((1, 3))))


def test_tree_order_by_depth_then_file_order():
    # 0 ─ 3 ─ 1, 0 ─ 4, root 2 ─ 5: depth 0: 0, 2; depth 1: 3, 4, 5; depth 2: 1.
    assert tree_order(np.array([-1, 3, -1, 0, 0, 2])) == [0, 2, 3, 4, 5, 1]
    assert tree_order(np.arange(-1, 999)) == list(range(1000))  # a chain: one node per depth
    assert tree_order(np.zeros(0, np.int32)) == []
    for cycle in ([1, 0], [0], [-1, 2, 1]):
        with pytest.raises(ValueError, match="cycle"):
            tree_order(np.array(cycle))


def test_validate_names_the_first_bad_key_part():
    """Every channel is checked at once; the error still names the first bad part, channel by channel."""
    times = np.arange(3.0)
    good = Channel("bone", "a", "location", times, np.zeros((3, 3)))
    bad_handles = Channel("bone", "b", "scale", times, np.ones((3, 3)), "BEZIER", np.zeros((3, 3, 2)), None)
    bad_handles.handles_right = np.zeros((3, 3, 2))
    bad_handles.handles_right[1, 2, 1] = np.inf
    bad_times = Channel("bone", "c", "location", np.array([0.0, 2e6]), np.zeros((2, 3)))
    for channels, expected in (
        ([good, bad_handles, bad_times], "bone 'b' scale: key handles: 1 non-finite"),
        ([good, bad_times, bad_handles], "bone 'c' location: key times must be finite"),
    ):
        with pytest.raises(FormatError, match=expected):
            validate(Scene("s", animations=[Animation("run", channels)]))
    validate(Scene("s", animations=[Animation("run", [good])]))
