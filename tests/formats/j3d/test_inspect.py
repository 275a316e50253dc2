"""Summaries of the hand-built files (the corpus ones are in test_corpus.py)."""

import pytest
from j3d_fixtures import bck_bytes, bmt_bytes, bpk_bytes, brk_bytes, btk_bytes, btp_bytes
from retro_models.formats.errors import FormatError
from retro_models.formats.j3d import inspect


@pytest.mark.parametrize(
    "build, expected",
    [
        (
            bck_bytes,
            ["J3D bck1", "loop: loop, length 30 frames", "joints: 2", "10 rotation", "split tangents on 1"],
        ),
        (btk_bytes, ["texture matrices: 1", "materials: mat[1]", "2^2"]),
        (brk_bytes, ["register colours: 1", "konst colours: 1", "m1[1]", "m2[2]"]),
        (btp_bytes, ["patterns: m1[0] 3 frames", "once then reset"]),
        (bpk_bytes, ["material colours: 1", "materials: m1"]),
        (bmt_bytes, ["J3D bmt3", "materials: m1", "textures: t I8 8×4 CLAMP"]),
    ],
)
def test_summaries(build, expected):
    data = build()
    assert inspect.detect(data, "x")
    text = inspect.summarize(data, "x")
    for line in expected:
        assert line in text


def test_not_j3d():
    assert not inspect.detect(b"\x00\x20\xaf\x30", "x.tpl")
    with pytest.raises(FormatError):
        inspect.summarize(b"J3D2zzzz" + bytes(24), "x")
