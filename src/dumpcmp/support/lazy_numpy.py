"""NumPy, loaded on the first use of one of its names instead of at import, for the modules every command imports.

In: nothing. Out: `np`, which from its first attribute access on gives the numpy module's names. Importing NumPy (and
starting OpenBLAS's threads) took 0.1-0.15 s of wall time and 0.3 s of CPU time, a tenth of `dumpcmp compare` on a
2 GB model whose ground truth is plain .npy files: the core reads those and the dumps itself, so that command never
needs NumPy, nor does `dumpcmp --version`. The modules `dumpcmp compare` imports take `np` from here; the others
import NumPy as usual.
"""

from __future__ import annotations

import importlib
import types
from typing import Any

__all__ = ["np"]


class _OnFirstUse(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):  # copy, pickle and inspect probe these: no NumPy for them
            raise AttributeError(name)
        value = getattr(importlib.import_module("numpy"), name)
        setattr(self, name, value)  # the next lookup of this name is a plain attribute
        return value


np: Any = _OnFirstUse("numpy")
