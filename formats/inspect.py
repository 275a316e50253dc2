"""Print a readable summary of any supported file, without Blender.

    python -m formats.inspect FILE [FILE ...]

(run from the add-on folder). The file's family comes from the registry (by extension,
then by content, looking inside Yaz0/Yay0); its ``summarize`` gives the text. An archive
lists its tree and what each member is.
"""

from __future__ import annotations

import sys
from pathlib import Path

from . import archives
from .errors import FormatError
from .registry import family_for


def summarize(data: bytes, name: str) -> str:
    family = family_for(name, data)
    if archives.is_archive(data) or not archives.is_compressed(data):  # an archive lists its own wrapping
        return family.summarize(data, name)
    plain = archives.unwrap(data, name)  # a compressed model or animation: summarise what it holds
    return f"{name}: {data[:4].decode()}-compressed, {len(data)} bytes\n" + family.summarize(plain, name)


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
