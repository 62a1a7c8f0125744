"""Per-layer histograms: binned counts of a tensor's values (and of its ground truth), drawn one PNG per layer.

In: a TensorSource (a dump tensor through its layout plan, or a ground-truth array), or a compared row. Out: `Hist`
records computed by the C++ core (`bins`), the layers of a dump or a comparison to draw (`layers`) and the PNG files
(`plot`).
"""

from dumpcmp.output.histogram.bins import (
    DEFAULT_BINS,
    Hist,
    common_range,
    histogram,
    lookup_min_max,
    pair_histograms,
    read_min_max,
    row_sources,
    top_errors,
)

__all__ = ["DEFAULT_BINS", "Hist", "common_range", "histogram", "lookup_min_max", "pair_histograms", "read_min_max",
           "row_sources", "top_errors"]
