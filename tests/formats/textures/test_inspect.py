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
