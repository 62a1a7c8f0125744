"""Where the error starts: every device operator replayed in onnxruntime on its own device inputs.

In: the original ONNX model, a device dump tree (dump_mode all; or output, where an op's inputs are its producers'
dumped outputs), the ground truth and the compiler's graph JSON. Out: one row per device operator in execution order
with three measures side by side: *inherited* (the device inputs against their ground truth: error that arrived),
*own* (the device output against the original region replayed on those device inputs: error the operator adds) and
*total* (device output against ground truth, what `dumpcmp compare` shows), a verdict per operator (`origin`, `adds`,
`inherited`, `ok`, `not replayed`) and a statement of where the error starts, or that it accumulates with no single
origin. `dumpcmp.debug.region` finds the original nodes a device op stands for and cuts them out as a runnable
sub-model; `feeds` decodes the device tensors into the original layout, shape and dtype; `replay` runs the regions, a
bounded batch at a time.
"""

from dumpcmp.debug.region import OriginalModel, Region, RegionError, cut_region, region_of, to_onnx
from dumpcmp.debug.locate.feeds import decode, device_feeds, device_tensor
from dumpcmp.debug.locate.core import LocateResult, LocateRow, RangeExit, locate, locate_runs, range_exit
from dumpcmp.debug.locate.sigmastar import locate_sigmastar

__all__ = ["OriginalModel", "Region", "RegionError", "cut_region", "region_of", "to_onnx", "decode",
           "device_feeds", "device_tensor", "LocateResult", "LocateRow", "RangeExit", "locate", "locate_runs",
           "locate_sigmastar", "range_exit"]
