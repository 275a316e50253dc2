"""Print a readable summary of any supported file, without Blender.

    python -m formats.inspect FILE [FILE ...]

(run from the add-on folder). Each format family provides ``<family>/inspect.py``
with ``detect(data, name) -> bool`` and ``summarize(data, name) -> str``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from .errors import FormatError

# Families in the order their detectors are tried.
FAMILIES: list[str] = ["toshi", "j3d", "tmrf", "tamsoft", "ttyd", "textures"]


def summarize(data: bytes, name: str) -> str:
    package = __package__
    for family in FAMILIES:
        module = importlib.import_module(f".{family}.inspect", package)
        if module.detect(data, name):
            return module.summarize(data, name)
    raise FormatError(name, 0, f"not a supported file (starts with {data[:8]!r})")


def main(argv: list[str] | None = None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print(__doc__.strip())
        return 2
    failed = 0
    for path in paths:
        try:
            print(summarize(Path(path).read_bytes(), path))
        except (OSError, FormatError) as e:
            print(f"error: {e}", file=sys.stderr)
            failed += 1
        print()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
