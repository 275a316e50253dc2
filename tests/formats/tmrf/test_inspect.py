"""The summary of the inspection command."""

import pytest
import tmrf_fixtures as fx
from retro_models.formats.errors import FormatError
from retro_models.formats.tmrf import inspect


def test_detect():
    assert inspect.detect(fx.full_file(), "a.tmdl")
    assert not inspect.detect(b"TDPMediX", "a.tmdl")


def test_summary_lists_strings_tree_counts_and_hints():
    text = inspect.summarize(fx.full_file(), "a.tmdl")
    lines = text.splitlines()
    assert lines[0] == "a.tmdl: TMRF version 1 (1971 bytes)"
    assert "strings (38, pool 340 bytes): 'TableOfContents'" in lines[1]
    assert "    AX3Skeleton 'skel' at 1108 (76 bytes, DTL 'Hints'): 2 bones" in lines
    assert (
        "      AX3SkeletalDeform at 1260 (68 bytes, DTL 'Hints'): skeleton 'skel', 2 bindings, 2 blends, 3 weights"
        in lines
    )
    assert "        HighCompressedTangentVectors at 1656 (6 bytes, DTL 'Hints')" in lines
    assert any(
        "AX3FrameAnimation 'walk'" in line and "2 frames at 24 fps, 2 bones, flags [0, 223]" in line
        for line in lines
    )
    assert any("'run' on skeleton 'skel', 1.5 s, 1 bones, 2 keys" in line for line in lines)
    assert "    AX3FrameAnimation/SInt16: 2" in lines
    assert lines[-1].startswith("  warning: unknown resource type 'Mystery'")


def test_summary_of_a_broken_file_is_a_format_error():
    with pytest.raises(FormatError):
        inspect.summarize(fx.full_file()[:100], "cut.tmdl")
