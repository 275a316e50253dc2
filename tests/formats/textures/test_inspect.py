"""Texture summaries for the inspection command."""

import numpy as np
import support
from retro_models.formats.textures import dds, inspect


def test_tpl_summary():
    data = support.corpus_file("tpl/mygalaxyicon.tpl").read_bytes()
    assert inspect.detect(data, "mygalaxyicon.tpl")
    text = inspect.summarize(data, "mygalaxyicon.tpl")
    assert "TPL" in text and "64×64 I8" in text and "wrap clamp/clamp" in text and "1 mip level" in text


def test_dds_summary():
    data = dds.encode(np.zeros((8, 4, 4), np.uint8), "DXT5")
    assert inspect.detect(data, "a.dds") and not inspect.detect(b"TML1" + bytes(8), "a.tml")
    text = inspect.summarize(data, "a.dds")
    assert "4×8 DXT5" in text and "1 mip level" in text
    assert "A 0xFF000000" in inspect.summarize(
        dds.encode_uncompressed(np.zeros((2, 2, 4), np.uint8)), "b.dds"
    )


def test_gxt_files_are_summarised():
    import struct

    from retro_models.formats import inspect as inspect_command
    from retro_models.formats.textures import gxm

    # One 8×8 swizzled U8U8U8U8_ABGR texture, written by hand: header, record, data.
    data_offset, texels = 0x40, bytes(8 * 8 * 4)
    header = struct.pack("<4s7I", b"GXT\0", 0x10000003, 1, data_offset, len(texels), 0, 0, 0)
    record = struct.pack("<IIiIIIHHB3s", data_offset, len(texels), -1, 0, 0, 0x0C000000, 8, 8, 1, bytes(3))
    data = header + record + texels
    assert gxm.format_name(0x0C000000).startswith("U8U8U8U8")
    text = inspect_command.summarize(data, "icon.gxt")
    assert "GXT" in text and "8" in text and "U8U8U8U8" in text
