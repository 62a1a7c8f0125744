"""Sub-models with their data ("Dump Network", for ONNX). In: an ONNX model, start and end layers (original node,
tensor or device op names), a device dump run with its graph JSON and optionally the ground truth. Out: one folder
`OUT/dump_result_YYYY_MM_DD_HH_MM_SS/` holding the layers between them as a runnable model with its input data,
their dump files, the expected outputs, an acl.json, export.log and commands.sh (`export`); the network's layers
for choosing names (`network`); device data found and decoded for the region's inputs (`data`).
"""

from dumpcmp.debug.extract.export import (
    BIN_DTYPES,
    ExtractResult,
    bin_dtype_of,
    extract,
    list_layers,
    load_network,
)
from dumpcmp.debug.extract.network import Layer, LayerSpan, Network

__all__ = ["BIN_DTYPES", "ExtractResult", "Layer", "LayerSpan", "Network", "bin_dtype_of", "extract", "list_layers",
           "load_network"]
