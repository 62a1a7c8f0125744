"""The compiled core, imported once, with a clear message when it has not been built."""

from __future__ import annotations

try:
    from dumpcmp import _core as core
except ImportError as error:  # pragma: no cover - only on a broken install
    raise ImportError(
        "dumpcmp's C++ core (dumpcmp._core) is not built or does not load. Install the package with "
        "`pip install .` (or `pip install -e .` for development) from the source tree; "
        f"the import failed with: {error}"
    ) from error

__all__ = ["core"]
