"""ONNX models -> ground truth. In: a model and its inputs. Out: every node's output as .npy (golden), the model's
order, value types and subgraphs for the stages that replay or lower it.

- `model`: loading a model and the facts every stage reads from it (inputs, node names, execution order,
  constants, value types, subgraphs);
- `inputs`: the data it runs on (`-i` sources, preprocessing scripts, random data, `--shape`), one dict a sample;
- `runner`: onnxruntime sessions exposing chosen outputs, and `require_onnx` for the optional extra;
- `golden`: `dump_golden` / `golden_from_sources`, writing the ground truth and its index;
- `controlflow`: static Ifs inlined so that golden and simulate name the same layers.

Needs the `onnx` extra (`pip install 'dumpcmp[onnx]'`) to run anything; importing this package does not load it.
"""

from dumpcmp.onnx.controlflow import inline_static_ifs
from dumpcmp.onnx.golden import (
    CONSTANT_NOTE,
    DEFAULT_BATCH_BYTES,
    INPUT_OP_TYPE,
    RUN_NAME,
    GoldenRun,
    dump_golden,
    golden_from_sources,
    sanitize_name,
)
from dumpcmp.onnx.inputs import (
    IMAGE_LIST_SUFFIXES,
    InputPlan,
    apply_shapes,
    check_input,
    free_dims_note,
    load_array,
    load_preprocess,
    load_sample,
    parse_shapes,
    plan_inputs,
    preprocess_image,
    random_input,
    sample_feeds,
    with_free_dims_hint,
)
from dumpcmp.onnx.model import (
    ModelInput,
    constant_tensors,
    execution_order,
    external_files,
    load_model,
    load_model_with_weights,
    model_inputs,
    name_nodes,
    node_name,
    subgraph_note,
    subgraph_outer_names,
    subgraphs,
    tensor_nbytes,
    value_types,
)
from dumpcmp.onnx.runner import Runner, require_onnx

__all__ = [
    "CONSTANT_NOTE", "DEFAULT_BATCH_BYTES", "IMAGE_LIST_SUFFIXES", "INPUT_OP_TYPE", "RUN_NAME", "GoldenRun",
    "InputPlan", "ModelInput", "Runner", "apply_shapes", "check_input", "constant_tensors", "dump_golden",
    "execution_order", "external_files", "free_dims_note", "golden_from_sources", "inline_static_ifs", "load_array",
    "load_model", "load_model_with_weights", "load_preprocess", "load_sample", "model_inputs", "name_nodes",
    "node_name", "parse_shapes", "plan_inputs", "preprocess_image", "random_input", "require_onnx", "sample_feeds",
    "sanitize_name", "subgraph_note", "subgraph_outer_names", "subgraphs", "tensor_nbytes", "value_types",
    "with_free_dims_hint",
]
