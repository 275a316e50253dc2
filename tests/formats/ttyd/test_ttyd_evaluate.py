"""The evaluator against values worked out by hand from the fixture's deltas."""

import numpy as np
import pytest
import ttyd_fixtures as F
from retro_models.formats.ttyd import model as fmt
from retro_models.formats.ttyd.evaluate import (
    Evaluator,
    euler_zyx,
    local_time,
    node_matrix,
    texcoord_matrix,
    world_matrices,
)


@pytest.fixture(scope="module")
def model() -> fmt.Model:
    return fmt.read(F.build())


@pytest.fixture(scope="module")
def walk(model) -> Evaluator:
    return Evaluator(model, model.animations[0].data)


def test_vertex_deltas_are_linear(walk):
    pose = walk.at([0.0, 5.0, 10.0])
    # vertex 1 moves +16/16 in x, vertex 2 moves -8/16 in y over keyframe 1 (0 → 10)
    np.testing.assert_allclose(pose.positions[:, 1], [[1, 0, 0], [1.5, 0, 0], [2, 0, 0]])
    np.testing.assert_allclose(pose.positions[:, 2], [[1, 2, 0], [1, 1.75, 0], [1, 1.5, 0]])
    np.testing.assert_allclose(pose.positions[:, [0, 3]], np.broadcast_to(F.POSITIONS[::3], (3, 2, 3)))


def test_node_hermite_with_tangents(walk):
    # float 25: base 1, delta 32/16 = 2, start slope tan 45° = 1 per frame, end slope 0, 10 frames
    # u = 0.5: 1 + 2·0.5 + 10·1·(0.125 − 0.5 + 0.5) = 3.25; u = 0.25: 1 + 2·0.15625 + 10·0.140625
    pose = walk.at([0.0, 2.5, 5.0, 10.0])
    np.testing.assert_allclose(pose.node_floats[:, 25], [1.0, 2.71875, 3.25, 3.0])


def test_node_linear_when_tangent_out_is_90(walk):
    # float 33: delta 80/16 = 5 with tangent_out 90: the game blends linearly
    np.testing.assert_allclose(walk.at([0.0, 2.5, 5.0, 10.0]).node_floats[:, 33], [0, 1.25, 2.5, 5])


def test_texture_and_visibility_apply_once_reached(walk):
    pose = walk.at([0.0, 9.99, 10.0, 15.0])
    assert pose.frame_offsets[:, 0].tolist() == [0, 0, 1, 1]
    np.testing.assert_allclose(pose.translate[:, 0, 0], [0.25, 0.25, 0.75, 0.75])
    assert pose.visibility[:, 1].tolist() == [True, True, False, False]
    assert pose.visibility[:, 0].all()


def test_time_wraps_and_clamps(walk):
    anim = walk.anim
    np.testing.assert_allclose(local_time(anim, [-3.0, 5.0, 20.0, 25.0, 45.0]), [0, 5, 0, 5, 5])
    np.testing.assert_allclose(walk.at([25.0]).node_floats, walk.at([5.0]).node_floats)
    np.testing.assert_allclose(walk.at([-3.0]).node_floats, walk.at([0.0]).node_floats)


def test_world_matrices_follow_the_tree(model, walk):
    world = world_matrices(model, walk.at([10.0]).node_floats)[0]
    np.testing.assert_allclose(world[0, :3, 3], [0, 3, 0])  # body: translation y 1 + 2
    rotation = np.radians(5.0)  # node float 33 is body rotation B x, 80/16 degrees
    np.testing.assert_allclose(
        world[0, 1:3, 1:3],
        [[np.cos(rotation), -np.sin(rotation)], [np.sin(rotation), np.cos(rotation)]],
        atol=1e-12,
    )
    np.testing.assert_allclose(world[1], np.eye(4))


def one_float_animation(model, entries, times, loop=0, end=20.0) -> fmt.AnimationData:
    """Node deltas ``entries`` (step, value, in, out) all in the last keyframe."""
    anim = fmt.AnimationData()
    anim.base = np.array([(loop, 0.0, end)], fmt.BASE_DTYPE)
    anim.keyframes = np.zeros(len(times), fmt.KEYFRAME_DTYPE)
    anim.keyframes["time"] = times
    anim.keyframes["node_count"][-1] = len(entries)
    anim.node_deltas = np.array(entries, fmt.NODE_DELTA_DTYPE)
    return anim


def test_single_keyframe_applies_in_full(model):
    evaluator = Evaluator(model, one_float_animation(model, [(25, 16, 30, 30)], [7.0]))
    np.testing.assert_allclose(evaluator.at([0.0, 3.0, 50.0]).node_floats[:, 25], [2.0, 2.0, 2.0])


def test_last_pose_holds_after_the_last_keyframe(model):
    evaluator = Evaluator(model, one_float_animation(model, [(25, 16, 0, 0)], [0.0, 10.0], end=10.0))
    np.testing.assert_allclose(evaluator.at([10.0, 100.0]).node_floats[:, 25], [2.0, 2.0])


@pytest.mark.parametrize("tangent_out", [89, -89])
def test_tangent_out_89_is_linear(model, tangent_out):
    evaluator = Evaluator(model, one_float_animation(model, [(25, 32, 40, tangent_out)], [0.0, 10.0]))
    np.testing.assert_allclose(evaluator.at([5.0]).node_floats[0, 25], 2.0)


def test_running_index_and_repeated_entries(model):
    # steps 24, 1, 0: floats 24, 25, 25 — the two deltas on float 25 add up (16 + 16)/16
    evaluator = Evaluator(
        model, one_float_animation(model, [(24, 8, 0, 0), (1, 16, 0, 0), (0, 16, 0, 0)], [0.0, 4.0])
    )
    pose = evaluator.at([4.0]).node_floats[0]
    np.testing.assert_allclose(pose[[24, 25]], [0.5, 3.0])


def test_first_keyframe_waits_for_its_time(model):
    anim = one_float_animation(model, [(25, 16, 0, 0)], [5.0, 10.0])
    anim.keyframes["node_count"] = [1, 0]
    evaluator = Evaluator(model, anim)
    np.testing.assert_allclose(evaluator.at([0.0, 4.9, 5.0, 7.0]).node_floats[:, 25], [1, 1, 2, 2])


def test_visibility_zero_still_advances_the_index(model):
    anim = fmt.AnimationData()
    anim.base = np.array([(0, 0.0, 10.0)], fmt.BASE_DTYPE)
    anim.keyframes = np.zeros(1, fmt.KEYFRAME_DTYPE)
    anim.keyframes["visibility_count"] = 2
    anim.visibility_deltas = np.array([(0, 0), (1, -1)], fmt.VISIBILITY_DELTA_DTYPE)
    assert Evaluator(model, anim).at([0.0]).visibility[0].tolist() == [True, False]


def test_node_matrix_centres_and_rotations():
    node = np.zeros(24)
    node[0:3], node[3:6], node[11], node[12] = (1, 2, 3), (2, 1, 1), 90.0, 1.0  # B z 90°, rotation centre x 1
    # (1,0,0) → scale (2,0,0) → −centre (1,0,0) → Rz90 (0,1,0) → +centre (1,1,0) → +t (2,3,3)
    np.testing.assert_allclose(node_matrix(node) @ [1, 0, 0, 1], [2, 3, 3, 1], atol=1e-12)
    doubled = node.copy()
    doubled[11], doubled[8] = 0.0, 45.0  # rotation A is applied doubled
    np.testing.assert_allclose(node_matrix(doubled), node_matrix(node), atol=1e-12)
    scaled = np.zeros(24)
    scaled[3:6], scaled[15] = (2, 1, 1), 1.0  # scale about x = 1: the origin goes to −1
    np.testing.assert_allclose(node_matrix(scaled) @ [0, 0, 0, 1], [-1, 0, 0, 1])
    pivot = np.zeros(24)
    pivot[3:6], pivot[18:21], pivot[21:24] = 1.0, (0, 5, 0), (0, 0, 7)  # rotation/scale translations
    np.testing.assert_allclose(node_matrix(pivot) @ [0, 0, 0, 1], [0, 5, 7, 1])


def test_segment_scale_compensation():
    node = np.zeros(24)
    node[3:6] = 1.0
    np.testing.assert_allclose(
        node_matrix(node, parent_scale=np.array([2.0, 2.0, 4.0])) @ [2, 2, 4, 1], [1, 1, 1, 1]
    )


def test_euler_order_is_x_then_y_then_z():
    rotation = euler_zyx(np.array([90.0, 0.0, 90.0]))
    np.testing.assert_allclose(rotation[:3, :3] @ [0, 0, 1], [1, 0, 0], atol=1e-12)
    np.testing.assert_allclose(rotation[:3, :3] @ [0, 1, 0], [0, 0, 1], atol=1e-12)


def test_texcoord_matrix():
    m = texcoord_matrix([0.25, 0.0], [2.0, 1.0], 0.0)
    np.testing.assert_allclose(m @ [0.5, 0.5, 1], [1.25, 0.5, 1])
    rotated = texcoord_matrix([0.0, 0.0], [1.0, 1.0], 90.0)  # −90° about the centre
    np.testing.assert_allclose(rotated @ [1.0, 0.5, 1], [0.5, 0.0, 1], atol=1e-12)
