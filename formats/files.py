"""Files on disk as the families use them: case-insensitive look-ups, and writing all files or none."""

from __future__ import annotations

import errno
import os


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def files_in(folder: str, extension: str | tuple[str, ...] = "") -> dict[str, str]:
    """Lower-cased file name → path of the files in ``folder`` ending with ``extension`` (any case; a
    tuple: any of them).

    The games' folders mix the case of names; when two names differ only in case, the first in
    sorted order wins.
    """
    try:
        names = sorted(os.listdir(folder or "."), reverse=True)
    except OSError:
        return {}
    return {n.lower(): os.path.join(folder, n) for n in names if n.lower().endswith(extension)}


def search_folders(model_path: str, texture_folder: str = "") -> list[str]:
    """Where the files a model names are looked for, in order: its own folder, then the Texture Folder."""
    return [os.path.dirname(model_path), *([texture_folder] if texture_folder else [])]


def find_file(folders: list[str], name: str) -> str | None:
    """The file ``name`` (any case) in the first of ``folders`` that holds one."""
    return next((found for f in folders if (found := files_in(f).get(name.lower()))), None)


def write_files(files: dict[str, bytes]) -> list[str]:
    """Write every file or none; returns the paths written.

    Each file goes to a temporary name first; then the old files are moved
    aside and the new ones renamed into place. If any step fails, the old
    files are put back and the temporary ones removed.
    """
    suffix = f".{os.getpid()}.tmp"
    for path in files:
        if os.path.isdir(path):
            raise IsADirectoryError(errno.EISDIR, "a folder has the name of a file to write", path)
    temporary: list[str] = []
    moved: list[str] = []  # old files moved aside, restored on failure
    placed: list[str] = []
    path = ""
    try:
        for path, data in files.items():
            temporary.append(path + suffix)
            with open(path + suffix, "wb") as f:
                f.write(data)
        for path in files:
            if os.path.exists(path):
                os.replace(path, path + ".old" + suffix)
                moved.append(path)
            os.replace(path + suffix, path)
            placed.append(path)
    except BaseException as e:
        for placed_path in placed:
            os.remove(placed_path)
        for moved_path in moved:
            os.replace(moved_path + ".old" + suffix, moved_path)
        if isinstance(e, OSError) and e.errno is not None:
            # The user's path, not the temporary name the step used.
            raise type(e)(e.errno, e.strerror, path) from e
        raise
    finally:
        for temp in temporary:
            if os.path.exists(temp):
                os.remove(temp)
    for path in moved:
        os.remove(path + ".old" + suffix)
    return list(files)
