"""Toshi engine formats of Jurassic Park: Operation Genesis (PC, little-endian).

- ``tmd``: models (skeleton, animations referencing the keyframe library, LOD meshes)
- ``tkl``: the keyframe library shared by the models of a dig site
- ``tml``: material libraries (textures and materials)
- ``strips``: triangle strips as the models store them
- ``convert``: TMD/TKL/TML ↔ the neutral ``Scene``
"""
