"""Simulated device dumps. In: an ONNX model, its input samples, a precision (fp16 or int8) and what to dump (an
acl.json, or a dump mode and layers). Out: dump files in the device format under
`{dump_path}/{time}/{device_id}/{model_name}/{model_id}/{data_index}/` and the compiler-style graph JSON, as a
`SimulateResult`. `run` writes them; `_lower` builds the lower-precision model, `_device` the compiled graph.
"""

from dumpcmp.device.simulate.run import (
    PRECISIONS,
    DumpConfig,
    SimulateResult,
    lower_model,
    read_acl_config,
    simulate,
    simulate_from_sources,
)

__all__ = ["PRECISIONS", "DumpConfig", "SimulateResult", "lower_model", "read_acl_config", "simulate",
           "simulate_from_sources"]
