"""`dumpcmp extract MODEL --list -f GRAPH`: time against the length of a chain of compiler-inserted Casts.

    python bench/bench_extract_list.py                    # chains of 2,000, 4,000 and 8,000 Casts
    python bench/bench_extract_list.py --sizes 500 1000   # smoke size

The model is a chain of Relu layers; its graph JSON runs them with one long chain of inserted Cast ops (an empty
`_datadump_original_op_names`) between the first two, as a compiler that inserts casts at every precision change
could. Each Cast's output is followed back to the tensor it holds; the time should grow with the chain's length,
not with its square. Prints seconds per size (best of `--repeat`) and the ratio to the previous size.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time


def make_case(folder: str, casts: int, layers: int = 50) -> tuple[str, str]:
    import onnx
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"relu_{i}") for i in range(layers)]
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("t0", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info(f"t{layers}", TensorProto.FLOAT, [1, 4])])
    model_path = os.path.join(folder, "chain.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), model_path)

    def desc() -> dict:
        return {"dtype": "DT_FLOAT", "layout": "ND", "shape": {"dim": [1, 4]},
                "attr": [{"key": "origin_shape", "value": {"list": {"i": [1, 4], "val_type": "VT_LIST_INT"}}}]}

    def op(name: str, op_type: str, n: int, source: str | None, originals: list[str] | None) -> dict:
        o = {"name": name, "type": op_type, "id": n, "output_desc": [desc()], "attr": []}
        if source is not None:
            o["input"] = [f"{source}:0"]
        if originals is not None:
            lst = {"val_type": "VT_LIST_STRING"}
            if originals:
                lst["s"] = originals
            o["attr"].append({"key": "_datadump_original_op_names", "value": {"list": lst}})
        return o

    ops = [op("t0", "Data", 0, None, None), op("relu_0", "Relu", 1, "t0", ["relu_0"])]
    prev = "relu_0"
    for c in range(casts):
        ops.append(op(f"cast_{c}", "Cast", len(ops), prev, []))
        prev = f"cast_{c}"
    for i in range(1, layers):
        ops.append(op(f"relu_{i}", "Relu", len(ops), prev, [f"relu_{i}"]))
        prev = f"relu_{i}"
    json_path = os.path.join(folder, "chain.json")
    with open(json_path, "w") as f:
        json.dump({"name": "chain", "graph": [{"name": "g0", "op": ops}]}, f)
    return model_path, json_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2000, 4000, 8000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from dumpcmp.debug.extract import list_layers

    previous: tuple[float, int] | None = None
    with tempfile.TemporaryDirectory(prefix="bench_extract_list.") as tmp:
        for n in args.sizes:
            model, graph = make_case(tmp, n)
            best = float("inf")
            for _ in range(args.repeat):
                start = time.perf_counter()
                layers = list_layers(model, graph)
                best = min(best, time.perf_counter() - start)
            ratio = "" if previous is None else f"  x{best / previous[0]:.2f} for x{n / previous[1]:.2f} Casts"
            print(f"{n:>7} Casts, {len(layers)} layers: {best:.3f} s{ratio}")
            previous = best, n


if __name__ == "__main__":
    main()
