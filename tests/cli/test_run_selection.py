"""Every command that reads a dump tree takes the same run selection (--iteration/--time/--device/--model/--model-id,
--gt-sample), and a tree of several runs never stops one after its work: bisect on a device run of two samples
names the layer and locates it in both, histogram draws one folder a run; messages name the options, not Python
functions."""

from __future__ import annotations

import shlex
import sys

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from dumpcmp.cli import main  # noqa: E402
from dumpcmp.cli.dispatch import build_parser  # noqa: E402

SELECTION = ["--iteration", "1", "--time", "20260101000000", "--device", "0", "--model", "net", "--model-id", "1",
             "--gt-sample", "1"]


@pytest.fixture(scope="module")
def two_samples(tmp_path_factory):
    """A network, its ground truth for two samples (gt/0, gt/1), a faulty device copy and a device run of both."""
    from helpers.locate_nets import build_net, net_input, plant_fault
    from dumpcmp.device.simulate import simulate
    from dumpcmp.onnx.golden import dump_golden

    base = tmp_path_factory.mktemp("runs")
    model = build_net(base / "net.onnx", attention=False)
    m = onnx.load(str(model))  # ending at the logits: a saturated softmax would hide the fault
    del m.graph.node[-1]
    m.graph.output[0].name = "logits"
    onnx.save(m, model)
    xs = [net_input(), (net_input() * 0.5 + 0.25).astype(np.float32)]
    (base / "xs").mkdir()
    for k, x in enumerate(xs):
        np.save(base / "xs" / f"{k}.npy", x)
        dump_golden(model, {"x": x}, base / "gt" / str(k))
    (base / "device").mkdir()
    faulty = plant_fault(model, base / "device" / "net.onnx", "b1a_w", noise=3.0)
    sim = simulate(faulty, base / "dump", precision="fp16", samples=[{"x": x} for x in xs], model_name="net")
    return {"base": base, "model": model, "faulty": faulty, "gt": base / "gt", "dump": base / "dump",
            "json": sim.json_path}


@pytest.mark.parametrize("command", ["compare", "locate", "report", "histogram", "extract", "bisect"])
def test_every_command_reading_a_tree_takes_the_same_selection(command):
    needs = {"compare": ["-l", "d", "-r", "g"], "locate": ["m.onnx", "-l", "d", "-r", "g", "-f", "j", "-o", "o"],
             "report": ["-l", "d", "-r", "g", "-o", "r.html"], "histogram": ["d"], "extract": ["m.onnx"],
             "bisect": ["m.onnx", "--run", "x {dump}", "-r", "g", "-o", "o"]}
    args = build_parser().parse_args([command, *needs[command], *SELECTION])
    assert (args.data_index, args.time, args.device_id, args.model_name, args.model_id, args.gt_sample) == \
        (1, "20260101000000", 0, "net", 1, 1)


def test_bisect_on_a_run_of_two_samples_names_and_locates_the_layer(two_samples, tmp_path, capsys):
    # was: the layer found, then exit 2 "holds 2 runs; select one or use locate_runs()"
    base = two_samples["base"]
    command = f"{shlex.quote(sys.executable)} -m dumpcmp simulate {{model}} --precision fp16 " \
              f"-i x={shlex.quote(str(base / 'xs'))} --acl-json {{acl_json}} -o {{dump}}"
    args = ["bisect", str(two_samples["model"]), "--run", command, "-r", str(two_samples["gt"]), "--device-model",
            str(two_samples["faulty"])]
    assert main(args + ["-o", str(tmp_path / "all")]) == 0
    out = capsys.readouterr()
    assert "first layer below the threshold 0.99: b1a_convb1a_bn" in out.out
    assert "iteration 0: the error starts at b1a_convb1a_bn" in out.out
    assert "iteration 1: the error starts at b1a_convb1a_bn" in out.out
    assert "locate_runs" not in out.out + out.err
    # --iteration 1: only that run, compared with sample folder 1/ (its own cosine, not the other sample's)
    assert main(args + ["-o", str(tmp_path / "one"), "--iteration", "1"]) == 0
    one = capsys.readouterr().out
    from dumpcmp.comparison.compare import compare

    expected = compare(two_samples["dump"], two_samples["gt"], fusion_json=two_samples["json"], data_index=1)
    cosine = next(r.cosine for r in expected.rows if r.pair is not None and r.pair.npu_op == "b1a_convb1a_bn"
                  and r.pair.kind == "output")
    assert f"b1a_convb1a_bn (b1a_conv, b1a_bn), cosine {cosine:.6f}" in one
    assert "iteration 0" not in one and "--iteration 1 -o" in one
    # a resumed bisect must compare the same runs
    assert main(args + ["-o", str(tmp_path / "one"), "--iteration", "0"]) == 2
    assert "another selection" in capsys.readouterr().err


def test_histogram_of_a_tree_of_two_runs(two_samples, tmp_path, capsys):
    # was: exit 2 "holds 2 runs; select one (device_id=, model_name=, data_index=, ...) or use compare_runs()"
    common = [str(two_samples["dump"]), "-r", str(two_samples["gt"]), "-f", str(two_samples["json"]), "--quiet"]
    assert main(["histogram", *common, "-o", str(tmp_path / "h")]) == 0
    folders = sorted(p.name for p in (tmp_path / "h").iterdir())
    assert folders == ["run_it0", "run_it1"]  # the short run suffix compare's result files get
    assert all(len(list((tmp_path / "h" / f).glob("*.png"))) > 5 for f in folders)
    assert main(["histogram", *common, "-o", str(tmp_path / "one"), "--iteration", "1", "--gt-sample", "0"]) == 0
    assert len(list((tmp_path / "one").glob("*.png"))) > 5 and not any(p.is_dir() for p in (tmp_path / "one").iterdir())
    # without ground truth too
    assert main(["histogram", str(two_samples["dump"]), "--quiet", "-o", str(tmp_path / "d"), "--iteration", "0"]) == 0
    assert not any(p.is_dir() for p in (tmp_path / "d").iterdir())
    assert main(["histogram", str(two_samples["dump"]), "--quiet", "-o", str(tmp_path / "x"), "--iteration", "7"]) == 2
    assert "no left dump run matches" in capsys.readouterr().err


def test_messages_name_the_options(two_samples, tmp_path, capsys):
    from dumpcmp.comparison.compare import compare
    from dumpcmp.errors import DumpcmpError

    with pytest.raises(DumpcmpError) as error:
        compare(two_samples["dump"], two_samples["gt"], fusion_json=two_samples["json"])
    assert "holds 2 runs; select one with --iteration, --time, --device, --model or --model-id" in str(error.value)
    assert "compare_runs" not in str(error.value)
    assert main(["compare", "-l", str(two_samples["dump"]), "-r", str(two_samples["gt"]), "-f",
                 str(two_samples["json"]), "-d", "b0_add", "-o", str(tmp_path / "d")]) == 2
    assert "select one with --iteration" in capsys.readouterr().err
    # compare -d and --locate pair with --gt-sample as the table does
    assert main(["compare", "-l", str(two_samples["dump"]), "-r", str(two_samples["gt"]), "-f",
                 str(two_samples["json"]), "-d", "b0_add", "-o", str(tmp_path / "d1"), "--iteration", "1",
                 "--gt-sample", "0", "--quiet"]) == 0


def test_histogram_never_writes_through_a_planted_run_folder_link(two_samples, tmp_path, capsys):
    out, victim = tmp_path / "h", tmp_path / "victim"
    out.mkdir()
    victim.mkdir()
    from dumpcmp.dumps.naming import run_path
    from dumpcmp.dumps.scan import scan

    runs = [g.key.describe() for g in scan(two_samples["dump"])]
    (out / run_path("run", runs[1], runs).name).symlink_to(victim)
    assert main(["histogram", str(two_samples["dump"]), "--quiet", "--force", "-o", str(out)]) == 2
    assert "is a symbolic link" in capsys.readouterr().err
    assert not any(victim.iterdir()) and len(list(out.iterdir())) == 1  # nothing made before the refusal
