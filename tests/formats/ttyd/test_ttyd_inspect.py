"""Detection and summary of TTYD models."""

import struct

import pytest
import ttyd_fixtures as F
from retro_models.formats.errors import FormatError
from retro_models.formats.ttyd import inspect


def test_detects_the_fixture_and_not_other_files():
    data = F.build()
    assert inspect.detect(data, "c_test")
    assert not inspect.detect(data[:0x100], "short")
    assert not inspect.detect(b"\x00\x20\xaf\x30" + bytes(0x200), "a.tpl")
    moved = bytearray(data)
    struct.pack_into(">I", moved, 0x14C, 0x1B4)  # the shapes must start right after the header
    assert not inspect.detect(bytes(moved), "other")


def test_summary_lists_header_shapes_groups_textures_animations():
    text = inspect.summarize(F.build(), "c_test")
    for expected in (
        "TTYD model 'c_test'",
        "textures from c_test_tex-",
        "body: 4 vertices, 2 triangles, 1 subshapes, samplers [0], opaque, cull none",
        "root (node 0, visibility 0)",
        "  body (node 24, visibility 1, shape 'body')",
        "tex_b: TPL image 1",
        "walk: loop 0–20 (60 fps), 2 keyframes; deltas: 2 position, 1 texture, 1 visibility, 2 node; 1 8-byte records",
        "idle: no data",
    ):
        assert expected in text


def test_summary_of_a_broken_file_is_a_format_error():
    with pytest.raises(FormatError):
        inspect.summarize(F.build()[:0x300], "cut")
