"""Users' Python files loaded as modules (format converters, custom algorithms): each under a private module name
made from its path, so two folders' files of one name never collide; whatever its import raises becomes one
`ConfigError` naming the file."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path
from types import ModuleType

from dumpcmp.errors import ConfigError

__all__ = ["import_user_file"]


def import_user_file(path: Path, prefix: str, what: str) -> ModuleType:
    """The module of the user's file `path` (named `{prefix}_{hash of its path}_{stem}`); ConfigError "{path}: cannot
    import the {what}: ..." when it does not import."""
    digest = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:12]
    try:
        spec = importlib.util.spec_from_file_location(f"{prefix}_{digest}_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ImportError("not a Python module")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM (files.Terminated): the run ends
        raise
    except BaseException as error:  # a user's file may raise anything while importing (sys.exit too)
        raise ConfigError(f"{path}: cannot import the {what}: {type(error).__name__}: {error}") from error
    return module
