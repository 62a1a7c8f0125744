"""The command-line options every command that gives advice or gates shares (compare, report), and the advice
thresholds they set."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from dumpcmp.output.advice import RULES, Thresholds

_HELP = {
    "rmse": "int16-layer: RootMeanSquareError, in int8 levels of the tensor's range ((max - min) / 255), above "
            "which a layer is advised 16 bit (default 0.5)",
    "conv_input_range": "wide-conv-input: max - min of a convolution input above which it is advised 16 bit "
                        "(default 30)",
    "outlier_share": "int8-outliers: share of values in the central part of the range that flags outliers "
                     "(default 0.95)",
    "outlier_ratio": "int8-outliers: the central part is 1/RATIO of the range (default 8)",
    "single_share": "single-layer/drift: share of the final cosine drop one layer must add to be named (default 0.5)",
}


def add_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("advice and gates")
    defaults = Thresholds()
    for name, text in _HELP.items():
        g.add_argument("--advice-" + name.replace("_", "-"), dest="advice_" + name, type=float,
                       default=getattr(defaults, name), metavar="X", help=text)
    g.add_argument("--min-max", metavar="TXT", help="a calibrator's tensor_min_max.txt (wide-conv-input reads it)")
    if "--locate" not in p._option_string_actions:  # compare has its own (MODEL.onnx, adding columns)
        g.add_argument("--locate", metavar="MODEL.onnx|JSON",
                       help="run dumpcmp locate on the ONNX model (needs -f, except with a SigmaStar dump), or read "
                            "a locate result: "
                            "`dumpcmp locate --json` output or a JSON list of {op, own_cosine, inherited_cosine, "
                            "total_cosine, verdict}; the report then shows own vs inherited error")
    g.add_argument("--fail-below", action="append", metavar="[METRIC=]X",
                   help="exit 1 when a compared tensor's METRIC is below X (failing layers listed); METRIC: a metric "
                        "column, built-in or a custom algorithm's (default CosineSimilarity); repeatable")
    g.add_argument("--fail-above", action="append", metavar="METRIC=X",
                   help="exit 1 when a compared tensor's METRIC (an error column, built-in or a custom algorithm's) "
                        "is above X; repeatable")
    g.add_argument("--fail-on", action="append", metavar="RULE",
                   help=f"exit 1 when an advice rule triggers ({', '.join(RULES)}, or any), or when a compared "
                        f"tensor's cell in the extra metric column RULE (a custom algorithm's) is NaN; repeatable")
    g.add_argument("--json", dest="json_path", metavar="FILE",
                   help="write the verdict, advice and gate as JSON (- for standard output)")


def thresholds(args: argparse.Namespace) -> Thresholds:
    t = Thresholds(cosine=getattr(args, "threshold", 0.99))
    for name in _HELP:
        setattr(t, name, getattr(args, "advice_" + name))
    return t


def is_model(path: str | None) -> bool:
    return path is not None and Path(path).suffix.lower() == ".onnx"


def write_json(path: str, payload: Any, *, force: bool) -> None:
    import sys

    from dumpcmp.support.files import atomic_write_text

    text = json.dumps(payload, indent=2, allow_nan=False) + "\n"
    if path == "-":
        sys.stdout.write(text)
    else:
        atomic_write_text(path, text, force=force, what="JSON file")
