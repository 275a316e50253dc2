"""Fuzzing the file readers and the Blender import: see __main__.py for how to run it."""
