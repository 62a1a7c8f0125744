"""Property tests over dumpcmp's public entry points with inputs built structurally by Hypothesis: dump headers with
arbitrary dtypes, formats and shapes (huge, zero, more than 64 dimensions, values that read as negative), data cut
short or extended, arbitrary bytes; .npy headers with hostile shapes and descrs; graph JSON and acl.json with deep
nesting, huge numbers and wrong types. Each goes through open_dump and `.array()`, layout.convert, compare (with and
without a fusion JSON), the single-op detail export and `dumpcmp info` / `dumpcmp acl-json check`.

The property: a call succeeds or raises `dumpcmp.DumpcmpError` (the CLI exits 0, 1 or 2 without a traceback);
nothing else escapes, and nothing is written outside the example's output folder (inputs unchanged, the working
directory and the temporary folder left empty). The byte-level mutation loop is tests/hostile/fuzz_harness.py
(tests/hostile/test_fuzz.py); its per-dump walk (`run_case`) is reused here.

Examples per property: DUMPCMP_FUZZ_CASES / 30 (default 3000 -> 100); `DUMPCMP_FUZZ_CASES=30000` runs 1,000 each.
Each property also runs at scale in the slow suite (`python -m pytest -m slow`): DUMPCMP_FUZZ_CASES / 30 examples
there too, 20000 / 30 by default.
Runs are derandomized (the same examples every run) and keep no example database. Numerical warnings on hostile
data are not findings and are ignored inside the calls (as the harness does with PYTHONWARNINGS=ignore).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from helpers.dumpproto import DumpData, current_format  # noqa: E402
from fuzz_harness import INTERESTING, run_case  # noqa: E402
from helpers.hostile import DUMP_NAME, GT_NAME, dump_bytes, npy_header  # noqa: E402

from dumpcmp import DumpcmpError, _core, compare  # noqa: E402
from dumpcmp.dumps import layout
from dumpcmp.cli import main  # noqa: E402
from dumpcmp.dumps.ground_truth import dtype_name, plain_npy  # noqa: E402
from dumpcmp.comparison.single_op import compare_op  # noqa: E402

CASES = max(10, int(os.environ.get("DUMPCMP_FUZZ_CASES", "3000")) // 30)
FUZZ = settings(max_examples=CASES, deadline=None, derandomize=True, database=None, print_blob=True,
                suppress_health_check=list(HealthCheck))

U64 = 2**64 - 1
I32 = (-2**31, 2**31 - 1)

# --- a sandbox per example: inputs, an output folder, the working directory and the temporary folder ------------------


class Sandbox:
    """A fresh folder per example with `dev/` (device dumps), `gt/` (ground truth), `cfg/` (JSON files) and `out/`;
    the working directory and tempfile's folder point into it while the entry points run."""

    def __init__(self, root: Path) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="ex-", dir=root))
        self.dev, self.gt, self.cfg, self.out = (self.root / n for n in ("dev", "gt", "cfg", "out"))
        self.cwd, self.tmp = self.root / "cwd", self.root / "tmp"
        for d in (self.dev, self.gt, self.cfg, self.out, self.cwd, self.tmp):
            d.mkdir()

    def inputs(self) -> dict[str, bytes]:
        return {os.fspath(p.relative_to(self.root)): p.read_bytes() if p.is_file() else b"<dir>"
                for d in (self.dev, self.gt, self.cfg) for p in sorted(d.rglob("*"))}

    @contextlib.contextmanager
    def running(self):
        """Run the entry points here; afterwards check that nothing was written outside out/."""
        before = self.inputs()
        old_cwd, old_tmp = os.getcwd(), tempfile.tempdir
        os.chdir(self.cwd)
        tempfile.tempdir = os.fspath(self.tmp)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield self
        finally:
            os.chdir(old_cwd)
            tempfile.tempdir = old_tmp
        assert self.inputs() == before, "an input was changed or a file written among the inputs"
        assert not any(self.cwd.iterdir()), f"written to the working directory: {list(self.cwd.iterdir())}"
        assert not any(self.tmp.iterdir()), f"left in the temporary folder: {list(self.tmp.iterdir())}"
        assert sorted(p.name for p in self.root.iterdir()) == ["cfg", "cwd", "dev", "gt", "out", "tmp"]
        shutil.rmtree(self.root)


def good_dump(box: Sandbox) -> None:
    (box.dev / DUMP_NAME).write_bytes(dump_bytes())


def good_truth(box: Sandbox) -> None:
    np.save(box.gt / GT_NAME, np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2))


def api(call, *args, **kwargs) -> None:
    """The property for an API call: success or DumpcmpError (not even an OSError: every file here is readable)."""
    try:
        call(*args, **kwargs)
        event(f"{call.__name__}: ok")
    except DumpcmpError:
        event(f"{call.__name__}: DumpcmpError")


def cli(argv: list[str]) -> int:
    """The property for the CLI: exit 0, 1 or 2, and never a traceback on stderr. stdout and stderr are as strict as
    an en_US.UTF-8 locale makes them (a StringIO, or C.UTF-8, would take text that is not UTF-8)."""
    err_bytes = io.BytesIO()
    strict = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    strict_err = io.TextIOWrapper(err_bytes, encoding="utf-8", errors="strict")
    try:
        with contextlib.redirect_stderr(strict_err), contextlib.redirect_stdout(strict):
            rc = main(argv)
    except SystemExit as stop:  # argparse
        rc = stop.code if isinstance(stop.code, int) else 2
    strict_err.flush()
    err = io.StringIO(err_bytes.getvalue().decode("utf-8"))
    event(f"dumpcmp {argv[0]}: exit {rc}")
    assert rc in (0, 1, 2), (argv, rc, err.getvalue()[-2000:])
    assert "Traceback" not in err.getvalue(), err.getvalue()[-2000:]
    if rc == 2 and err.getvalue():
        assert err.getvalue().startswith(("dumpcmp", "usage: dumpcmp")), err.getvalue()[-2000:]
    return rc


# --- strategies: dumps ---------------------------------------------------------------------------------------------

dims = st.one_of(st.integers(0, 4), st.sampled_from(INTERESTING), st.integers(0, U64),
                 st.sampled_from([2**63, 2**64 - 2, 2**64 - 16]))  # negative as int64
shapes = st.one_of(st.lists(st.integers(0, 5), max_size=6), st.lists(dims, max_size=8),
                   st.builds(lambda n, d: [d] * n, st.integers(60, 80), st.sampled_from([0, 1, 2])))
data_types = st.one_of(st.integers(-1, 45), st.integers(*I32))
formats = st.one_of(st.sampled_from([0, 1, 2, 3, 4, 29, 30, 32, 33, 2, 3]), st.integers(-1, 50), st.integers(*I32))
names = st.one_of(st.sampled_from(["conv1", "", "../../x", "a/b", "-d", "\n", "é", "a" * 300]), st.text(max_size=20))
sizes = st.one_of(st.none(), st.sampled_from(INTERESTING), st.integers(0, U64))

BITS = {t["value"]: t["bits"] for t in _core.dtype.data_types()}
PLAIN_OF = {"NCHW": "NCHW", "ND": "ND", "NC1HWC0": "NCHW", "NC1HWC0_C04": "NCHW", "FRACTAL_Z": "NCHW",
            "FRACTAL_Z_C04": "NCHW", "NDC1HWC0": "NCDHW", "FRACTAL_Z_3D": "NCDHW", "FRACTAL_NZ": "ND"}
FORMAT_NUMBER = _core.dtype.formats()


def nbytes(dtype: int, shape) -> int:
    count = 1
    for d in shape:
        count *= d
    return (count * BITS.get(dtype, 32) + 7) // 8


@st.composite
def plausible(draw):
    """A tensor as the device writes it (a plain shape encoded into a device layout, the bytes that fit), with
    maybe one field made hostile: (data_type, format, shape, original_shape, size or None, payload, plain)."""
    name = draw(st.sampled_from(sorted(PLAIN_OF)))
    dtype = draw(st.sampled_from([1, 2, 3, 4, 12, 27, 28, 33]))
    plain = PLAIN_OF[name]
    rank = {"NCHW": 4, "NCDHW": 5}.get(plain) or draw(st.integers(1, 4))
    shape = draw(st.lists(st.integers(0, 7), min_size=rank, max_size=rank))
    dev = shape
    if name != plain:
        c0 = 4 if "C04" in name else (32 if BITS[dtype] == 8 else 16)
        try:
            dev = list(layout.device_shape(name, plain, shape, c0=c0))
        except DumpcmpError:
            pass
    want = nbytes(dtype, dev)
    seed = draw(st.integers(0, 2**32 - 1))
    payload = np.random.default_rng(seed).integers(0, 256, want, dtype=np.uint8).tobytes() if want < 1 << 20 else b""
    fields = [dtype, FORMAT_NUMBER[name], dev, shape, None, payload]
    k = draw(st.integers(0, 17))  # 0-5: one field hostile; else as written
    if k < 6:
        fields[k] = draw([data_types, formats, shapes, shapes, sizes, st.binary(max_size=64)][k])
    return (*fields, (plain, shape, dtype))


@st.composite
def tensors(draw):
    """(data_type, format, shape, original_shape, size or None, payload, plain or None) of one tensor."""
    if draw(st.integers(0, 2)):
        return draw(plausible())
    dtype, fmt, shape = draw(data_types), draw(formats), draw(shapes)
    want = nbytes(dtype, shape)
    payload = draw(st.one_of(
        st.just(b"\x00" * want if want <= 1 << 14 else b""),  # the size the header implies (or none when huge)
        st.binary(max_size=64),
        st.builds(lambda n: bytes(range(256)) * (n // 256) + bytes(n % 256), st.integers(0, 4096))))
    original = draw(st.one_of(st.none(), shapes))
    return dtype, fmt, shape, original, draw(sizes), payload, None


def add(tensor, fields):
    dtype, fmt, shape, original, size, payload, _ = fields
    tensor.data_type, tensor.format, tensor.size = dtype, fmt, len(payload) if size is None else size
    tensor.shape.dim.extend(shape)
    if original is not None:
        tensor.original_shape.dim.extend(original)
    return payload


@st.composite
def dumps(draw):
    """(file bytes, ground truth array or None): a DumpData header built with protobuf, the tensors' bytes, then
    maybe cut or extended; the ground truth fits the first output when it was written as the device would."""
    m = DumpData()
    m.version = draw(st.sampled_from(["2.0", "", "1.0", "9"]))
    m.op_name = draw(st.one_of(st.just("conv1"), names))
    m.dump_time = draw(st.integers(0, U64))
    ins = [draw(tensors()) for _ in range(draw(st.integers(0, 1)))]
    outs = [draw(tensors()) for _ in range(draw(st.sampled_from([1, 1, 1, 2, 0])))]
    payloads = [add(m.input.add(), t) for t in ins] + [add(m.output.add(), t) for t in outs]
    for _ in range(draw(st.sampled_from([0, 0, 0, 1]))):
        b = m.buffer.add()
        b.buffer_type, b.size = draw(st.integers(*I32)), draw(st.integers(0, U64))
    data = current_format(m, payloads)
    tail = draw(st.sampled_from(["keep"] * 5 + ["cut", "extend", "length"]))
    if tail == "cut":
        data = data[:draw(st.integers(0, len(data)))]
    elif tail == "extend":
        data += draw(st.binary(min_size=1, max_size=64))
    elif tail == "length":  # the 8-byte header length says something else
        data = draw(st.sampled_from(INTERESTING + [len(data)])).to_bytes(8, "little") + data[8:]
    truth = None
    if outs and outs[0][6] is not None:
        plain, shape, dtype = outs[0][6]
        truth = np.random.default_rng(7).standard_normal(shape).astype(np.float16 if dtype == 2 else np.float32)
    return data, truth


dump_files = st.one_of(dumps(), dumps(), dumps(), st.tuples(st.binary(max_size=300), st.none()))


def walk_dump(box: Sandbox, data: bytes, truth: np.ndarray | None = None) -> None:
    """The harness's walk (open_dump, every tensor's array, layout.convert, compare, detail) plus the ground-truth
    compare with and without fusion JSON and `dumpcmp info`."""
    path = box.dev / DUMP_NAME
    path.write_bytes(data)
    good_truth(box) if truth is None else np.save(box.gt / GT_NAME, truth)
    with box.running():
        run_case(path, box.out, 0)  # k=0: the compare and the detail export run too
        api(compare, box.dev, box.gt, quiet=True, threads=1)
        api(compare_op, box.dev, box.gt, "conv1", box.out / "d", threads=1, max_lines=50)
        cli(["info", os.fspath(path)])
        cli(["info", "--json", os.fspath(path)])


@FUZZ
@given(case=dump_files)
@example(case=(dump_bytes(shape=(2**62, 2), dtype=3, size=0, payload=b""), None))
@example(case=(dump_bytes(shape=(8, 14, 16, 0), dtype=2, payload=b""), np.zeros((8, 14, 16, 0), np.float16)))
@example(case=(dump_bytes(shape=(1,) * 70, payload=b"\x00\x00\x80\x3f"), None))
def test_hostile_dumps_through_every_entry_point(tmp_path, case):
    walk_dump(Sandbox(tmp_path), *case)


# --- strategies: .npy ground truth -----------------------------------------------------------------------------------

def latin1(n):
    return st.text(st.characters(max_codepoint=255), max_size=n)


npy_dims = st.one_of(st.integers(-3, 5), st.sampled_from([0, 2**31, 2**40, 2**62, 2**63, 2**64, -2**63, 10**30]))
descrs = st.one_of(st.sampled_from(["<f4", "<f2", ">f8", "|i1", "<i8", "|b1", "|O", "<U3", "|V0", "|V7", "<c8",
                                    "<M8[s]", "|S0", "float32", "<f3", "", "[('a', '<f4')]"]), latin1(6))


@st.composite
def npys(draw):
    shape = draw(st.one_of(
        st.builds(lambda ds: "(%s)" % "".join(f"{d}, " for d in ds), st.lists(npy_dims, max_size=5)),
        st.builds(lambda n: "(%s)" % ("1, " * n), st.integers(60, 70)),
        st.sampled_from(["()", "(1,)", "None", "[1, 2]", "(1.5,)", "('a',)", "((1,),)", "(" * 50, "{}"]),
        latin1(12)))
    descr = draw(descrs)
    head = npy_header(shape, descr.replace("'", "")) if not descr.startswith("[") else npy_header(shape, "<f4")
    if descr.startswith("["):
        head = head.replace(b"'<f4'", descr.encode())
    version = draw(st.sampled_from([b"\x01\x00", b"\x01\x00", b"\x02\x00", b"\x03\x00", b"\x09\x09"]))
    if version != b"\x01\x00":  # a 4-byte header length
        text = head[10:]
        head = b"\x93NUMPY" + version + len(text).to_bytes(4, "little") + text
    if draw(st.booleans()):  # the header length lies
        width = 2 if version == b"\x01\x00" else 4
        head = head[:8] + draw(st.integers(0, 256**width - 1)).to_bytes(width, "little") + head[8 + width:]
    data = draw(st.one_of(st.binary(max_size=64), st.builds(lambda n: b"\x00" * n, st.integers(0, 8192))))
    return head + data


@st.composite
def plausible_npys(draw):
    """A .npy file numpy itself wrote for the ground truth (shape and dtype arbitrary), maybe cut or extended."""
    shape = draw(st.one_of(st.just([1, 2, 2, 2]),  # the good dump's shape: the detail export runs through
                           st.lists(st.integers(0, 6), max_size=draw(st.sampled_from([4, 4, 1, 6])))))
    dtype = draw(st.sampled_from(["<f4", "<f2", ">f4", "<f8", "|i1", "<i8", "|b1", "<c8", "|u1", "<U2", "|V3"]))
    buf = io.BytesIO()
    np.save(buf, np.zeros(shape, dtype=dtype))
    data = buf.getvalue()
    tail = draw(st.sampled_from(["keep", "keep", "cut", "extend"]))
    if tail == "cut":
        data = data[:draw(st.integers(0, len(data)))]
    elif tail == "extend":
        data += draw(st.binary(min_size=1, max_size=16))
    return data


NPY_FILES = st.one_of(npys(), plausible_npys(), plausible_npys(), st.binary(max_size=200))


@FUZZ
@given(data=NPY_FILES)
@example(data=npy_header("(1099511627776,)") + b"\x00" * 16)
@example(data=b"")
@example(data=npy_header("()")[:8] + b"\x01\x00" + npy_header("()")[10:])  # header length 1: a TokenError escaped
@example(data=npy_header("(0, 9223372036854775808, )"))  # 0 bytes as the header says; numpy's mmap overflowed
def test_hostile_npy_ground_truth(tmp_path, data):
    box = Sandbox(tmp_path)
    good_dump(box)
    path = box.gt / GT_NAME
    path.write_bytes(data)
    with box.running():
        api(compare, box.dev, box.gt, quiet=True, threads=1)
        api(compare_op, box.dev, box.gt, "conv1", box.out / "d", threads=1, max_lines=50)
        cli(["info", os.fspath(path)])
        cli(["info", "--json", os.fspath(box.gt)])


PLAIN_NPY_FILES = st.one_of(npys(), plausible_npys(), st.binary(max_size=200))


@FUZZ
@given(data=PLAIN_NPY_FILES)
@example(data=npy_header("(3, True, )") + b"\x00" * 12)
def test_plain_npy_is_numpys_reading_or_none(tmp_path, data):
    # What the core maps without NumPy (scan.plain_npy) is what np.load maps: the same numbers from the same byte.
    path = tmp_path / "t.npy"
    path.write_bytes(data)
    got = plain_npy(path)
    event(f"plain: {got is not None}")
    if got is None:
        return
    want = np.load(path, mmap_mode="r", allow_pickle=False)
    assert (got.shape, dtype_name(got.data_type), got.offset) == (want.shape, want.dtype.name, want.offset)
    assert want.dtype.byteorder in "<|=" and want.flags.c_contiguous and want.size > 0


# --- strategies: JSON (graph JSON for -f, acl.json) -------------------------------------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.sampled_from([10**400, -10**400, 2**64, -1]),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=10))
json_values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                            st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                           max_leaves=20)


def deep(depth: int, kind: str) -> str:
    return "[" * depth + "]" * depth if kind == "list" else '{"a":' * depth + "1" + "}" * depth


def hostile(good, extra=()):
    """A valid value or a hostile one of any type."""
    return st.one_of(st.just(good), st.just(good), st.just(good), json_values,
                     st.sampled_from([None, 10**400, -1, 2**63, "", [], {}, *extra]))


@st.composite
def graph_docs(draw):
    """A graph JSON document (the `atc --mode=1` schema) whose fields are valid or hostile."""
    attr = {"key": draw(hostile("_datadump_original_op_names")),
            "value": draw(hostile({"list": {"val_type": "VT_LIST_STRING", "s": ["conv1"]}}))}
    desc = {"dtype": draw(hostile("DT_FLOAT")), "layout": draw(hostile("NCHW")),
            "shape": draw(hostile({"dim": [1, 2, 2, 2]}, [{"dim": [2**63, -5]}, {"dim": ["a"]}]))}
    op = {"name": draw(hostile("conv1")), "type": draw(hostile("Conv2D")), "id": draw(hostile(3)),
          "input": draw(hostile(["x:0"])), "attr": draw(hostile([attr])), "output_desc": draw(hostile([desc])),
          "input_desc": draw(hostile([desc]))}
    graph = {"name": draw(hostile("g0")), "op": draw(hostile([op]))}
    return {"name": draw(hostile("model")), "version": draw(hostile(2)), "graph": draw(hostile([graph]))}


def _insert_escape(text: str, k: int, escape: str) -> str:
    """`text` with a \\u escape put just inside its k-th string (modulo their number): a lone surrogate, a pair."""
    quotes = [i for i, c in enumerate(text) if c == '"' and (i == 0 or text[i - 1] != "\\")][::2]
    if not quotes:
        return text
    at = quotes[k % len(quotes)] + 1
    return text[:at] + escape + text[at:]


def json_bytes(docs):
    """Encoded JSON: the document as is, with a byte-order mark, cut short, deeply nested, or bytes."""
    return st.one_of(
        st.builds(lambda d: json.dumps(d).encode(), docs),
        st.builds(lambda d: b"\xef\xbb\xbf" + json.dumps(d).encode(), docs),
        st.builds(lambda d, f: json.dumps(d).encode()[: int(f * len(json.dumps(d)))], docs, st.floats(0, 1)),
        st.builds(lambda n, k: deep(n, k).encode(), st.integers(200, 300_000), st.sampled_from(["list", "dict"])),
        st.builds(lambda v: json.dumps(v).encode(), json_values),
        st.sampled_from([b'{"graph": [{"op": [{"name": 1e99999}]}]}', b"1" * 5000, b"\x00", b'{"\xff": 1}', b""]),
        st.builds(lambda d, k, e: _insert_escape(json.dumps(d), k, e).encode(), docs, st.integers(0, 50),
                  st.sampled_from(["\\udcff", "\\ud800", "\\ude00\\ud83d", "\\ud83d\\ude00", "\\u00e9"])),
        st.binary(max_size=100))


@FUZZ
@given(data=json_bytes(graph_docs()))
@example(data=deep(100_000, "dict").encode())
def test_hostile_graph_json_through_compare(tmp_path, data):
    box = Sandbox(tmp_path)
    good_dump(box)
    good_truth(box)
    fusion = box.cfg / "graph.json"
    fusion.write_bytes(data)
    with box.running():
        api(compare, box.dev, box.gt, fusion_json=fusion, quiet=True, threads=1)
        api(compare_op, box.dev, box.gt, "conv1", box.out / "d", fusion_json=fusion, threads=1, max_lines=50)
        cli(["compare", "-l", os.fspath(box.dev), "-r", os.fspath(box.gt), "-f", os.fspath(fusion),
             "-o", os.fspath(box.out / "r.csv")])


@st.composite
def acl_docs(draw):
    entry = draw(hostile({"model_name": "resnet50"}, [{"model_name": "m", "layer": ["a", 1, None]},
                                                      {"layer": ["A"], "watcher_nodes": [None, "C"]}]))
    dump = {"dump_list": draw(hostile([entry])), "dump_path": draw(hostile("dumps", ["/", "../..", "\x00"])),
            "dump_mode": draw(hostile("output", ["all", "input"])), "dump_op_switch": draw(hostile("off", [True])),
            "dump_scene": draw(hostile("watcher", ["aic_err_brief_dump", "lite_exception"])),
            "dump_debug": draw(hostile("off", ["on"])), "dump_data": draw(hostile("tensor", ["stats"]))}
    keys = draw(st.lists(st.sampled_from(sorted(dump)), unique=True))
    body = {k: dump[k] for k in keys}
    return {draw(st.one_of(st.sampled_from(["dump", "dump", "Dump", ""]), st.text(max_size=6))): draw(hostile(body))}


@FUZZ
@given(data=json_bytes(acl_docs()))
@example(data=b"\xef\xbb\xbf" + b'{"dump": {"dump_list": [], "dump_path": "x"}}')
@example(data=deep(200_000, "list").encode())
def test_hostile_acl_json_check(tmp_path, data):
    box = Sandbox(tmp_path)
    path = box.cfg / "acl.json"
    path.write_bytes(data)
    with box.running():
        cli(["acl-json", "check", os.fspath(path)])


# --- the same properties at scale, for the slow suite -------------------------------------------------------------

AT_SCALE = settings(FUZZ, max_examples=max(10, int(os.environ.get("DUMPCMP_FUZZ_CASES", "20000")) // 30))


def at_scale(quick, **strategies):
    """The property of `quick` (its body and its explicit examples) over AT_SCALE's examples, marked slow."""
    return pytest.mark.slow(AT_SCALE(given(**strategies)(quick.hypothesis.inner_test)))


test_hostile_dumps_at_scale = at_scale(test_hostile_dumps_through_every_entry_point, case=dump_files)
test_hostile_npy_ground_truth_at_scale = at_scale(test_hostile_npy_ground_truth, data=NPY_FILES)
test_plain_npy_at_scale = at_scale(test_plain_npy_is_numpys_reading_or_none, data=PLAIN_NPY_FILES)
test_hostile_graph_json_at_scale = at_scale(test_hostile_graph_json_through_compare, data=json_bytes(graph_docs()))
test_hostile_acl_json_at_scale = at_scale(test_hostile_acl_json_check, data=json_bytes(acl_docs()))
