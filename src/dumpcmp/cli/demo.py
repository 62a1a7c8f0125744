"""`dumpcmp demo`: the whole job on a machine without an accelerator, in one command.

It builds a small but real network in code (ONNX: convolutions with batch norm and ReLU, max pooling, a residual
add, global pooling, a Gemm and a softmax; fixed seed), writes its fp32 ground truth with onnxruntime
(`dumpcmp golden`), simulates an int8 (or fp16) accelerator run with the device's layouts and a compiler-style
graph JSON in which ops are fused (`dumpcmp simulate`), compares every operator (`dumpcmp compare -f`), writes
result.csv and the element-level detail of the worst layer, replays every operator on its own device inputs to say
where the error starts (`dumpcmp locate`, locate.csv), and prints the commands that do the same on your data.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dumpcmp.support.files import atomic_write, atomic_write_text
from dumpcmp.errors import ConfigError, DumpcmpError

DESCRIPTION = """`dumpcmp demo [-o DIR]`: ground truth, a simulated int8 device run and the full comparison of a small
network, in one command, without an accelerator (needs the onnx extra: pip install "dumpcmp[onnx]")."""
SEED = 2026


def build_model(path: Path, seed: int = SEED) -> Path:
    """A ResNet-like block network, written as ONNX (opset 13, IR version 8 so any onnxruntime reads it)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    inits: list[Any] = []

    def weight(name: str, shape: tuple[int, ...], scale: float = 1.0) -> str:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(shape) * scale / np.sqrt(fan_in)).astype(np.float32), name))
        return name

    def bn(name: str, c: int) -> list[str]:
        names = [f"{name}_scale", f"{name}_bias", f"{name}_mean", f"{name}_var"]
        values = [rng.uniform(0.8, 1.2, c), rng.normal(0, 0.1, c), rng.normal(0, 0.1, c), rng.uniform(0.5, 1.5, c)]
        inits.extend(numpy_helper.from_array(v.astype(np.float32), n) for n, v in zip(names, values))
        return names

    nodes = [
        helper.make_node("Conv", ["input", weight("conv1_w", (24, 3, 3, 3), 1.4)], ["conv1_out"], name="conv1",
                         pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["conv1_out", *bn("bn1", 24)], ["bn1_out"], name="bn1"),
        helper.make_node("Relu", ["bn1_out"], ["relu1_out"], name="relu1"),
        helper.make_node("MaxPool", ["relu1_out"], ["pool1_out"], name="pool1", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["pool1_out", weight("conv2_w", (24, 24, 3, 3), 1.4)], ["conv2_out"],
                         name="conv2", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["conv2_out", *bn("bn2", 24)], ["bn2_out"], name="bn2"),
        helper.make_node("Relu", ["bn2_out"], ["relu2_out"], name="relu2"),
        helper.make_node("Conv", ["relu2_out", weight("conv3_w", (24, 24, 3, 3), 1.4)], ["conv3_out"],
                         name="conv3", pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["conv3_out", *bn("bn3", 24)], ["bn3_out"], name="bn3"),
        helper.make_node("Add", ["bn3_out", "pool1_out"], ["add1_out"], name="add1"),
        helper.make_node("Relu", ["add1_out"], ["relu3_out"], name="relu3"),
        helper.make_node("GlobalAveragePool", ["relu3_out"], ["gap_out"], name="gap"),
        helper.make_node("Flatten", ["gap_out"], ["flat_out"], name="flatten"),
        helper.make_node("Gemm", ["flat_out", weight("fc_w", (10, 24), 3.0), weight("fc_b", (10,), 0.1)],
                         ["fc_out"], name="fc", transB=1),
        helper.make_node("Softmax", ["fc_out"], ["prob"], name="prob", axis=1),
    ]
    # One channel far larger than the others, as trained networks sometimes have: it comes out of bn3 (a large
    # bias), and the classifier ignores it (zero weights). Per-tensor int8 quantization of the Gemm's input spends
    # its range on that channel, the others lose their precision, and the classifier's output drifts: the layer
    # the demo finds.
    by_name = {t.name: i for i, t in enumerate(inits)}
    bias = numpy_helper.to_array(inits[by_name["bn3_bias"]]).copy()
    bias[7] = 400.0
    inits[by_name["bn3_bias"]] = numpy_helper.from_array(bias, "bn3_bias")
    fc = numpy_helper.to_array(inits[by_name["fc_w"]]).copy()
    fc[:, 7] = 0.0
    inits[by_name["fc_w"]] = numpy_helper.from_array(fc, "fc_w")

    graph = helper.make_graph(
        nodes, "demo_net",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, 10])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="dumpcmp-demo")
    model.ir_version = 8
    onnx.checker.check_model(model)
    # whole or not at all: a full disk leaves no 0-byte model
    atomic_write(path, lambda f: f.write(model.SerializeToString()))
    return path


@dataclass
class DemoResult:
    out: Path
    model: Path
    ground_truth: Path
    dumps: Path
    graph_json: Path
    result_csv: Path
    detail_dir: Path | None
    worst: str | None
    seconds: float
    origin: str | None = None
    """The operator `dumpcmp locate` names as where the error starts."""


def run_demo(out: str | os.PathLike[str] | None = None, *, precision: str = "int8", force: bool = False,
             threshold: float = 0.99, quiet: bool = False) -> DemoResult:
    from dumpcmp.comparison.compare import compare
    from dumpcmp.onnx.golden import dump_golden
    from dumpcmp.device.simulate import simulate
    from dumpcmp.comparison.single_op import compare_op

    start = time.perf_counter()
    import onnx  # noqa: F401  (the demo needs the onnx extra: say so before anything is written)

    out_dir = Path(out) if out is not None else _fresh_folder(Path.cwd() / "dumpcmp-demo")
    if out_dir.exists() and any(out_dir.iterdir()):
        if not force:
            raise DumpcmpError(f"{out_dir}: exists and is not empty; choose another folder or pass --force")
        _clear_demo_folder(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_dir / _MARKER, "written by dumpcmp demo; `dumpcmp demo --force` may replace this "
                      "folder's contents\n")
    say = (lambda *a: None) if quiet else print  # noqa: E731

    model = build_model(out_dir / "demo_net.onnx")
    x = np.random.default_rng(SEED).standard_normal((1, 3, 32, 32)).astype(np.float32)
    atomic_write(out_dir / "input.npy", lambda f: np.save(f, x, allow_pickle=False))
    say(f"1. model           {model}  (Conv+BN+ReLU x3, MaxPool, residual Add, GAP, Gemm, Softmax)")
    gt = out_dir / "ground_truth"
    run = dump_golden(model, {"input": x}, gt)
    say(f"2. ground truth    {gt}  ({len(run.written)} tensors, onnxruntime fp32)")
    sim = simulate(model, out_dir / "dump", precision=precision, samples=[{"input": x}], dump_mode="all",
                   json_out=out_dir / "demo_net.json")
    say(f"3. device dumps    {sim.model_dir}  ({precision} simulation, {len(sim.files)} dump files, "
        f"{len(sim.fused)} fused ops)")
    say(f"   graph JSON      {sim.json_path}")
    result = compare(out_dir / "dump", gt, fusion_json=sim.json_path)
    csv_path = result.write(out_dir / "result.csv", csv_format=True, force=True)
    say(f"4. comparison      {csv_path}")
    say("")
    say(result.summary(threshold))
    worst_rows = [r for r in result.worst(len(result.rows)) if r.pair is not None and r.pair.npu_op]
    detail_dir = None
    worst = None
    if worst_rows:
        w = worst_rows[0]
        worst = w.shown_tensor
        detail_dir = out_dir / "detail"
        detail = compare_op(out_dir / "dump", gt, w.pair.npu_op, detail_dir, kind=w.pair.kind,
                            index=w.pair.index or 0, fusion_json=sim.json_path, top_n=5, force=True)
        say("")
        say(f"5. worst tensor    {w.shown_tensor}: {detail.total_count} elements in {detail_dir}")
        from dumpcmp.comparison.detail import format_top_table

        say(format_top_table(detail, 5))
    from dumpcmp.debug.locate import locate

    located = locate(model, out_dir / "dump", gt, fusion_json=sim.json_path)
    locate_csv = located.write(out_dir / "locate.csv", force=True)
    say("")
    say(f"6. where the error starts  {locate_csv}  (every operator replayed in onnxruntime on its own device inputs)")
    say("  " + located.statement())
    origin = located.origin
    if origin is not None and origin.note:
        say("  " + origin.note)
    seconds = time.perf_counter() - start
    say("")
    say(f"Done in {seconds:.1f} s. The same step by step (each command works as printed; they write to "
        f"{out_dir / MINE}, put your own model, input and dump paths in their place):")
    for command in printed_commands(out_dir, precision, worst_rows[0].pair if worst_rows else None):
        say("  " + command)
    return DemoResult(out_dir, model, gt, out_dir / "dump", sim.json_path, csv_path, detail_dir, worst, seconds,
                      origin.op if origin is not None else None)


MINE = "step-by-step"
"""The sub-folder the printed commands write to: fresh names, so they run as printed, once after each demo."""


def printed_commands(out_dir: Path, precision: str, worst: Any = None) -> list[str]:
    """The CLI commands that redo the demo's job one step at a time, each writing under out_dir/MINE.

    The simulated dumps go to a folder of their own (one run, so `compare -d` needs no --time) and dump inputs and
    outputs (`--dump-mode all`, as the demo does and as the acl.json it prints asks the NPU)."""
    q = shlex.quote  # a folder with a space in its name still gives commands that run as printed
    model, data, mine = q(str(out_dir / "demo_net.onnx")), q(f"input={out_dir / 'input.npy'}"), out_dir / MINE
    gt, dump, graph = q(str(mine / "ground_truth")), q(str(mine / "dump")), q(str(mine / "demo_net.json"))
    lines = [
        f"dumpcmp golden {model} -i {data} -o {gt}",
        f"dumpcmp acl-json new --model demo_net --path /your/dump/path --mode all -o {q(str(mine / 'acl.json'))}"
        "  # then run on the NPU",
        f"dumpcmp simulate {model} --precision {precision} --dump-mode all -i {data} -o {dump} "
        f"--json-out {graph}  # without an NPU",
        f"dumpcmp compare -l {dump} -r {gt} -f {graph} -o {q(str(mine / 'result.csv'))}",
        f"dumpcmp locate {model} -l {dump} -r {gt} -f {graph} -o {q(str(mine / 'locate'))}",
    ]
    if worst is not None:
        lines.append(f"dumpcmp compare -l {dump} -r {gt} -f {graph} -d {q(worst.shown_op)} -t {worst.kind} "
                     f"-i {worst.index or 0} -o {q(str(mine / 'detail'))}")
    return lines


_MARKER = ".dumpcmp-demo"
_DEMO_ITEMS = ("demo_net.onnx", "demo_net.json", "input.npy", "ground_truth", "dump", "result.csv", "detail",
               "locate.csv", MINE, _MARKER)


def _clear_demo_folder(folder: Path) -> None:
    """--force replaces what an earlier demo wrote, in a folder the demo marked as its own; nothing else."""
    if not (folder / _MARKER).is_file():
        raise ConfigError(f"{folder}: not a folder an earlier `dumpcmp demo` wrote (no {_MARKER} in it); "
                          f"choose an empty folder")
    unknown = [p.name for p in folder.iterdir() if p.name not in _DEMO_ITEMS]
    if unknown:
        raise ConfigError(f"{folder}: holds files the demo did not write ({', '.join(sorted(unknown)[:5])}); "
                          f"choose an empty folder")
    for name in _DEMO_ITEMS:
        p = folder / name
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


def _fresh_folder(base: Path) -> Path:
    if not base.exists():
        return base
    for k in range(2, 1000):
        candidate = base.with_name(f"{base.name}-{k}")
        if not candidate.exists():
            return candidate
    raise DumpcmpError(f"{base}: too many demo folders here already")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="run the whole job on a built-in network (no accelerator needed)",
                       description=DESCRIPTION)
    p.add_argument("-o", "--output", metavar="DIR",
                   help="folder for everything (default: a new dumpcmp-demo folder here)")
    p.add_argument("--precision", choices=("int8", "fp16"), default="int8", help="the simulated device run")
    p.add_argument("--threshold", type=float, default=0.99, help="cosine similarity below which a layer is bad")
    p.add_argument("--force", action="store_true", help="replace an earlier demo in DIR")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    run_demo(args.output, precision=args.precision, force=args.force, threshold=args.threshold)
    return 0
