"""Builders for small compiler graph JSON documents (the `atc --mode=1` schema), for tests.

Only what the tests need; the shapes of the values follow the real files (see shared/fixtures): typed attribute
values, lists with `val_type`, `"name:index"` inputs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Sequence

ABSENT = object()

_TESTS = Path(__file__).resolve().parents[1]


def fixture_path(name: str = "atc_model_ascend310.json") -> Path | None:
    """The shared real fixture, wherever this checkout sits (main checkout or a worktree); None if absent."""
    candidates = []
    if os.environ.get("DUMPCMP_FIXTURES"):
        candidates.append(Path(os.environ["DUMPCMP_FIXTURES"]))
    root = _TESTS.parent
    candidates += [root.parent / "shared" / "fixtures", root.parent.parent / "shared" / "fixtures", _TESTS / "data"]
    for directory in candidates:
        if (directory / name).is_file():
            return directory / name
    return None


def s(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"s": value}}


def i(key: str, value: int | str) -> dict[str, Any]:
    return {"key": key, "value": {"i": value}}


def b(key: str, value: bool) -> dict[str, Any]:
    return {"key": key, "value": {"b": value}}


def list_s(key: str, items: Sequence[str]) -> dict[str, Any]:
    # The real files drop the element field of an empty list and keep only val_type.
    lst: dict[str, Any] = {"val_type": "VT_LIST_STRING"}
    if items:
        lst["s"] = list(items)
    return {"key": key, "value": {"list": lst}}


def list_i(key: str, items: Sequence[int]) -> dict[str, Any]:
    lst: dict[str, Any] = {"val_type": "VT_LIST_INT"}
    if items:
        lst["i"] = list(items)
    return {"key": key, "value": {"list": lst}}


def desc(
    dtype: str = "DT_FLOAT16",
    layout: str = "NC1HWC0",
    shape: Sequence[int] = (1, 1, 4, 4, 16),
    origin_name: str | None = None,
    origin_index: int | None = None,
    origin_format: str | None = None,
    ge_origin_format: str | None = "NCHW",
    origin_shape: Sequence[int] | None = (1, 16, 4, 4),
) -> dict[str, Any]:
    attrs = []
    if origin_name is not None:
        attrs.append(s("_datadump_origin_name", origin_name))
    if origin_index is not None:
        attrs.append(i("_datadump_origin_output_index", origin_index))
    if origin_format is not None:
        attrs.append(s("_datadump_origin_format", origin_format))
    if ge_origin_format is not None:
        attrs.append(s("origin_format", ge_origin_format))
    if origin_shape is not None:
        attrs.append(list_i("origin_shape", origin_shape))
    return {"dtype": dtype, "layout": layout, "shape": {"dim": list(shape)}, "attr": attrs}


def op(
    name: str,
    op_type: str,
    op_id: int | None,
    inputs: Iterable[str] = (),
    originals: Any = ABSENT,
    outputs: int | Sequence[dict[str, Any]] = 1,
    input_descs: Sequence[dict[str, Any]] | None = None,
    l1: str | None = None,
    multiop: bool | None = None,
) -> dict[str, Any]:
    attrs: list[dict[str, Any]] = []
    if originals is not ABSENT:
        attrs.append(list_s("_datadump_original_op_names", originals))
    if l1 is not None:
        attrs.append(s("_L1_fusion_sub_graph_no", l1))
    if multiop is not None:
        attrs.append(b("_datadump_is_multiop", multiop))
    result: dict[str, Any] = {"name": name, "type": op_type, "attr": attrs}
    if op_id is not None:
        result["id"] = op_id
    inputs = list(inputs)
    if inputs:
        result["input"] = inputs
    result["output_desc"] = [desc() for _ in range(outputs)] if isinstance(outputs, int) else list(outputs)
    if input_descs is not None:
        result["input_desc"] = list(input_descs)
    return result


def document(*ops: dict[str, Any], name: str = "g0", model: str = "model") -> dict[str, Any]:
    return {"name": model, "version": 2, "graph": [{"name": name, "op": list(ops)}]}


def schema_sample(*more: dict[str, Any]) -> dict[str, Any]:
    """A small document using most of the schema's fields (an explicit origin with its format and shape, an absent
    optional input and a control edge, L1 fusion, multi-op, an inserted op), then `more` ops."""
    out = desc(origin_name="a", origin_index=0, origin_format="NCHW", origin_shape=(1, 16, 4, 4))
    return document(
        op("a", "Data", 0),
        op("b", "Conv2D", 1, inputs=["a:0", "", "c:-1"], originals=["x", "y"], outputs=[out],
           input_descs=[desc()], l1="3", multiop=True),
        op("trans_TransData_1", "TransData", 2, inputs=["b:0"], originals=[]),
        *more,
    )


def write(path: Path, doc: Any) -> Path:
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    return path
