"""The Blender side of every format: build Blender data from a Scene and extract a Scene back."""
