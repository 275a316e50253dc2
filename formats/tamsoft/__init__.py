"""Tamsoft engine formats (Senran Kagura and other titles; PC/Vita little-endian, PS3/360 big-endian).

- ``tmd0``: models, version 0x0100 (draw list, rigs, materials, vertices, bones)
- ``cat``: the CAT container that ships models and textures, with its name list
- ``names``: the bone name hash and names files
- ``convert``: tmd0 (+ texture CAT) ↔ the neutral ``Scene``
"""
