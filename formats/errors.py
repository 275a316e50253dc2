"""The add-on's errors: every failure a user can meet is one of these.

- ``FormatError``: a file does not match its format (bad input). It names the file, the byte
  offset and the problem; a converter or the scene check (``formats.scene.validate``) that
  finds the problem after reading names the field instead of an offset.
- ``ExportError``: Blender data that a format cannot hold or that cannot be written; the
  message names the object, bone, image or action and why.
- ``SelectionError``: the selection holds nothing a file applies to (an animation import
  with no armature, a material animation with no matching material).

The operators report all three the same way and leave Blender's data as it was.
"""

from __future__ import annotations


class RetroError(Exception):
    """Base of the add-on's errors: the message is what the user reads."""


class FormatError(RetroError, ValueError):
    """A file does not match its format: names the file, the offset and the problem."""

    def __init__(self, filename: str, offset: int | None, message: str):
        """``offset`` None: the problem is in a value read earlier, which ``message`` names (a field)."""
        self.filename = filename
        self.offset = offset
        self.problem = message
        where = "" if offset is None else f" at offset {offset} (0x{offset:X}):"
        super().__init__(f"{filename}:{where} {message}")


class ExportError(RetroError, ValueError):
    """Blender or Scene data a format cannot hold (a name too long, a mesh too big…); names the object."""


class SelectionError(RetroError):
    """The selection holds nothing a file applies to; names the file and what is missing."""
