"""The evaluator against values worked out by hand from the note's formulas."""

import numpy as np
import pytest
from j3d_fixtures import bck_bytes, bpk_bytes, brk_bytes, btk_bytes, btp_bytes
from retro_models.formats.j3d import bck, bpk, brk, btk, btp, evaluate
from retro_models.formats.j3d.container import Keys


def test_hermite_by_hand():
    # keys (0, 1, d 0) → (10, 2, d 0.05); at u = 0.5: h00 = h01 = 0.5, h11 = −0.125
    keys = Keys(np.array([0.0, 10.0]), np.array([1.0, 2.0]), np.array([0.0, 0.05]), np.array([0.0, 0.05]))
    values = evaluate.hermite(keys, [-5.0, 0.0, 5.0, 10.0, 12.0])
    assert values.tolist() == pytest.approx([1.0, 1.0, 1.5 - 0.0625, 2.0, 2.0])
    # u = 0.25: h00 = 0.84375, h01 = 0.15625, h11 = 0.015625 − 0.0625 = −0.046875
    assert evaluate.hermite(keys, [2.5])[0] == pytest.approx(0.84375 + 2 * 0.15625 + 0.05 * 10 * -0.046875)


def test_hermite_uses_out_tangent_of_k0_and_in_tangent_of_k1():
    keys = Keys(np.array([0.0, 4.0]), np.array([0.0, 0.0]), np.array([99.0, 2.0]), np.array([1.0, 99.0]))
    # v = d0·L·h10 + d1·L·h11 at u = 0.5: 1·4·0.125 + 2·4·(−0.125)
    assert evaluate.hermite(keys, [2.0])[0] == pytest.approx(0.5 - 1.0)


def test_empty_and_single_tracks():
    empty = Keys(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0))
    assert evaluate.hermite(empty, [0.0, 3.0], default=1.0).tolist() == [1.0, 1.0]
    single = Keys(np.zeros(1), np.array([4.5]), np.zeros(1), np.zeros(1))
    assert evaluate.hermite(single, [-1.0, 100.0]).tolist() == [4.5, 4.5]


def test_bck_values():
    model = bck.read(bck_bytes())
    result = evaluate.evaluate_bck(model, [-1.0, 0.0, 5.0, 10.0, 25.0])
    assert result["scale"].shape == (5, 2, 3)
    assert result["scale"][:, 0, 0].tolist() == pytest.approx([1.0, 1.0, 1.4375, 2.0, 2.0])
    unit = 2.0 * 180.0 / 32768.0  # frac 1
    # raw at frame 10 (u = 0.5, L = 20): 16384·0.5 + 100·20·0.125 + (−50)·20·(−0.125) = 8567
    assert result["rotation"][3, 1, 1] == pytest.approx(8567 * unit)
    assert result["rotation"][4, 1, 1] == pytest.approx(180.0)
    assert result["rotation"][0, 1, 1] == 0.0
    assert result["rotation"][2, 0, 2] == pytest.approx(8192 * unit)  # 90°
    assert result["translation"][2, 1].tolist() == [5.0, 0.0, -3.5]
    assert result["scale"][2, 1].tolist() == [1.0, 1.0, 1.0]


def test_btk_values():
    model = btk.read(btk_bytes())
    result = evaluate.evaluate_btk(model, [5.0])
    unit = 4.0 * 180.0 / 32768.0  # frac 2
    assert result["rotation"][0, 0, 2] == pytest.approx(2048 * unit)  # halfway, zero tangents
    assert result["translation"][0, 0].tolist() == [0.25, 0.0, 0.0]


def test_colour_values_are_clamped_then_truncated():
    model = brk.read(brk_bytes())
    result = evaluate.evaluate_brk(model, [0.0, 5.0, 10.0, 2.0])
    register = result["register"][:, 0]
    # R: −100 → 2000 with zero tangents: 950 at frame 5, 2000 clamps to 1023
    assert register[:, 0].tolist() == [-100, 950, 1023, int(-100 + 2100 * (3 * 0.04 - 2 * 0.008))]
    assert register[0, 1:].tolist() == [50, 60, 255]
    konst = result["konst"][:, 0]
    assert konst[:, 3].tolist() == [0, 255, 255, 150]  # 0 → 300 over 4 frames, clamped to 255
    assert konst[0, :3].tolist() == [1, 2, 3]


def test_bpk_values():
    model = bpk.read(bpk_bytes())
    colours = evaluate.evaluate_bpk(model, [0.0, 4.0, 8.0])
    # R: (0, 0, out 51) → (8, 255, in 0): at u = 0.5: 127.5 + 51·8·0.125 = 178.5 → 178
    assert colours[:, 0, 0].tolist() == [0, 178, 255]
    assert colours[0, 0, 1:].tolist() == [10, 20, 255]


def test_btp_index_lookup():
    model = btp.read(btp_bytes())
    indices = evaluate.evaluate_btp(model, [-1.0, 0.0, 0.9, 1.0, 2.0, 2.5, 3.0, 50.0])
    assert indices[:, 0].tolist() == [2, 2, 2, 5, 7, 7, 7, 7]


def test_evaluate_dispatch():
    assert evaluate.evaluate(btp.read(btp_bytes()), [0]).shape == (1, 1)
    with pytest.raises(TypeError):
        evaluate.evaluate(object(), [0])
