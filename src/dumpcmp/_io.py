"""Writing the user's files safely: whole or not at all, and never over an existing file unless asked."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO, Callable

from .errors import DumpcmpError


def atomic_write(path: str | os.PathLike[str], write: Callable[[IO[bytes]], object], *, force: bool = True,
                 what: str = "file") -> Path:
    """Call `write(f)` on a temporary file beside `path`, then rename it into place.

    An error or Ctrl-C (anything raised) removes the temporary file and leaves `path` as it was. Without `force`, an
    existing `path` is an error (checked before anything is written).
    """
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise DumpcmpError(f"{path}: the folder {folder} does not exist")
    if not force and path.exists():
        raise DumpcmpError(f"{path}: exists; choose another name or pass --force to replace the {what}")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:100]}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return path


def atomic_write_text(path: str | os.PathLike[str], text: str, *, force: bool = True, what: str = "file") -> Path:
    """`atomic_write` of a text (UTF-8, newlines as given)."""
    return atomic_write(path, lambda f: f.write(text.encode("utf-8")), force=force, what=what)
