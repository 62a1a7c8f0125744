"""dumpcmp: find where a neural network loses accuracy, layer by layer.

Reads Ascend NPU dumps and NumPy ground truth, decodes device layouts, and compares every operator with the metrics
of Huawei's compare tool, from a C++ core that maps the files and streams through them.
"""

from __future__ import annotations

from dumpcmp.support import command_start as _command_start  # noqa: F401  (first: takes the command's signals)
from dumpcmp.support.native import core as _core
from dumpcmp.comparison.compare import ComparisonResult, Row, compare, compare_runs
from dumpcmp.dumps.dump import Dump, Tensor, TensorData, open_dump, open_dumps, write_dump
from dumpcmp.errors import ConfigError, DumpcmpError, DumpError, NamingError, NotFoundError
from dumpcmp.debug.locate import locate

__version__ = _core.__version__

__all__ = [
    "ComparisonResult",
    "Row",
    "compare",
    "compare_runs",
    "locate",
    "ConfigError",
    "Dump",
    "DumpError",
    "DumpcmpError",
    "NamingError",
    "NotFoundError",
    "Tensor",
    "TensorData",
    "__version__",
    "open_dump",
    "open_dumps",
    "write_dump",
]
