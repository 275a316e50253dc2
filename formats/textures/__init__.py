"""Texture codecs shared by the format families: TML rasters, DDS, GameCube GX texels and TPL files."""
