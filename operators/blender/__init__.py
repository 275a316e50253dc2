"""The Blender side of every format: build Blender data from a Scene and extract a Scene back.

Written once for all formats, one module per kind of datablock, each with its build side and
its extract side next to each other:

- ``build`` / ``extract``: the orchestrators (``build_scene``, ``add_animations``,
  ``replace_animations``, ``replace_materials``; ``extract_scene``);
- ``image``, ``material``, ``armature``, ``mesh``: the datablocks, with the channels keyed on
  them (bone channels ⇄ pose bones, material channels ⇄ node trees, visibility and shape keys);
- ``animation``: Scene animations ⇄ actions (F-curves, loops, close keys) and the one decision
  whether a channel was edited (F-curve digests);
- ``records``: what each action records of its Scene animation (``AnimationRecord``,
  ``ChannelRecord``), through the extras codec;
- ``hooks``: the looks a family registers (material-channel shading hooks);
- ``props``: the names of the custom properties the builder leaves for the extractor;
- ``compat``: Blender version differences and shared Blender facts;
- ``objects``: which objects belong together (armatures and the meshes they deform).
"""
