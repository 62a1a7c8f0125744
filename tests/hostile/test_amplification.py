"""What a dump header may cost (issue #33, amplification): every limit of docs/formats.md#limits, the header at the
limit read as before, one over it refused by the reader before anything is allocated, with the file and the limit
named and exit code 2, in both formats. Headers are built with protobuf's own serializer (helpers.dumpproto)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from helpers.dumpproto import DumpData, current_format

from dumpcmp.dumps.dump import open_dump
from dumpcmp.errors import DumpError
from dumpcmp.support.native import core

# The limits as docs/formats.md#limits states them.
MAX_HEADER = 16 << 20
MAX_TENSORS = 65536
MAX_ATTRS = 65536
MAX_DIMS = 64
MAX_STRING = 1 << 20

NAME = "Conv2D.conv1.3.1700000000000000"
ONE = np.float32(1).tobytes()


def base(**strings: str) -> DumpData:
    m = DumpData()
    m.version = strings.get("version", "2.0")
    m.op_name = strings.get("op_name", "conv1")
    return m


def add_output(m: DumpData, shape=(1,)) -> object:
    o = m.output.add()
    o.data_type, o.format, o.size = 1, 2, 4 * int(np.prod(shape))
    o.shape.dim.extend(shape)
    return o


def write(tmp_path: Path, data: bytes, folder: str = "dev") -> Path:
    d = tmp_path / folder
    d.mkdir(exist_ok=True)
    p = d / NAME
    p.write_bytes(data)
    return p


def dumpcmp(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-m", "dumpcmp", *args], capture_output=True, text=True, env=env,
                          timeout=300)


def refused(path: Path, *words: str) -> None:
    """The reader and `dumpcmp info` both refuse the file, naming it and the limit."""
    with pytest.raises(DumpError) as e:
        open_dump(path)
    message = str(e.value)
    assert str(path) in message and "Limits in docs/formats.md" in message, message
    for w in words:
        assert w in message, message
    r = dumpcmp("info", os.fspath(path))
    assert r.returncode == 2, r
    assert "Traceback" not in r.stderr and message in r.stderr, r.stderr


# --- tensors per dump ------------------------------------------------------------------------------------------------

def tensors_dump(n: int) -> bytes:
    """n tensors spread over the four kinds: a quarter each of inputs, outputs, buffers and workspaces."""
    m = base()
    payloads: list[bytes] = []
    kinds = [n // 4 + (1 if i < n % 4 else 0) for i in range(4)]
    for _ in range(kinds[0]):
        i = m.input.add()
        i.data_type, i.format, i.size = 1, 2, 4
        i.shape.dim.append(1)
        payloads.append(ONE)
    for _ in range(kinds[1]):
        add_output(m)
        payloads.append(ONE)
    for _ in range(kinds[2]):
        m.buffer.add().size = 1
        payloads.append(b"\0")
    for _ in range(kinds[3]):
        m.space.add().size = 1
        payloads.append(b"\0")
    # the raw segments: inputs, outputs, buffers, workspaces in that order, which is the order appended
    return current_format(m, payloads)


def test_tensors_at_the_limit_are_read(tmp_path):
    d = open_dump(write(tmp_path, tensors_dump(MAX_TENSORS)))
    assert len(d.tensors()) == MAX_TENSORS
    assert d.outputs[-1].array().tolist() == [1.0] and d.workspaces[-1].raw().tolist() == [0]


@pytest.mark.parametrize("n", [MAX_TENSORS + 1, 1_000_000])
def test_more_tensors_are_refused(tmp_path, n):
    refused(write(tmp_path, tensors_dump(n)), f"more than {MAX_TENSORS} tensors")


# --- dimensions per shape, dim_range entries ----------------------------------------------------------------------

@pytest.mark.parametrize("field", ["shape", "original_shape", "dim_range"])
def test_dimensions_at_the_limit_are_read_and_one_more_is_refused(tmp_path, field):
    for n in (MAX_DIMS, MAX_DIMS + 1):
        m = base()
        o = add_output(m)
        if field == "shape":
            o.shape.ClearField("dim")
            o.shape.dim.extend([1] * n)
        elif field == "original_shape":
            o.original_shape.dim.extend([1] * n)
        else:
            for _ in range(n):
                r = o.dim_range.add()
                r.dim_start, r.dim_end = 0, 1
        path = write(tmp_path, current_format(m, [ONE]), folder=f"{field}{n}")
        if n == MAX_DIMS:
            t = open_dump(path).outputs[0]
            assert t.array().reshape(-1).tolist() == [1.0]
            got = {"shape": t.shape, "original_shape": t.original_shape, "dim_range": t.desc.dim_range}[field]
            assert len(got) == MAX_DIMS
        else:
            words = ["output 0 has more than 64 dim_range entries"] if field == "dim_range" else \
                [f"output 0 {field} has more than 64 dimensions"]
            refused(path, *words)


def test_a_huge_shape_is_refused_before_it_is_held(tmp_path):
    """The issue's kind of header: one shape of millions of dimensions (2.4 GB in compare before)."""
    m = base()
    o = add_output(m)
    o.shape.ClearField("dim")
    o.shape.dim.extend([1] * 3_000_000)
    refused(write(tmp_path, current_format(m, [ONE])), "more than 64 dimensions")


# --- attributes ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [MAX_ATTRS, MAX_ATTRS + 1])
def test_attributes(tmp_path, n):
    m = base()
    add_output(m)
    for i in range(n):
        a = m.attr.add()
        a.name = "a"
    path = write(tmp_path, current_format(m, [ONE]))
    if n == MAX_ATTRS:
        assert len(open_dump(path).attrs) == MAX_ATTRS
    else:
        refused(path, f"more than {MAX_ATTRS} attributes")


# --- strings -------------------------------------------------------------------------------------------------------

def with_string(field: str, text: str) -> bytes:
    m = base(**({field: text} if field in ("version", "op_name") else {}))
    o = add_output(m)
    if field == "original_op.name":
        o.original_op.name = text
    elif field in ("attr name", "attr value"):
        a = m.attr.add()
        a.name, a.value = ("n", text) if field == "attr value" else (text, "v")
    elif field == "dfx_message":
        m.dfx_message = text
    return current_format(m, [ONE])


@pytest.mark.parametrize("field", ["op_name", "version", "original_op.name", "attr name", "attr value",
                                   "dfx_message"])
def test_strings_at_the_limit_are_read_and_one_byte_more_is_refused(tmp_path, field):
    at = write(tmp_path, with_string(field, "x" * MAX_STRING), folder="at")
    d = open_dump(at)
    got = {"op_name": lambda: d.op_name, "version": lambda: d.version,
           "original_op.name": lambda: d.outputs[0].original_op["name"],
           "attr name": lambda: d.attrs[0][0], "attr value": lambda: d.attrs[0][1],
           "dfx_message": lambda: core.dump.DumpFile(os.fsencode(at)).dfx_message}[field]()
    assert len(got) == MAX_STRING
    over = write(tmp_path, with_string(field, "x" * (MAX_STRING + 1)), folder="over")
    where = "output 0 original_op.name" if field == "original_op.name" else field
    refused(over, f"{where} holds {MAX_STRING + 1} bytes, over {MAX_STRING}")


# --- header bytes --------------------------------------------------------------------------------------------------

def header_of(size: int) -> bytes:
    """A current-format dump whose header is exactly `size` bytes: one output, then an unknown field as padding
    (a reader skips it, but it is part of the header)."""
    m = base()
    add_output(m)
    head = m.SerializeToString()
    pad = size - len(head) - 1 - 4  # tag of field 15 (1 byte) and a 4-byte length varint
    assert pad >= 1 << 21
    length = bytes([(pad & 0x7F) | 0x80, ((pad >> 7) & 0x7F) | 0x80, ((pad >> 14) & 0x7F) | 0x80, pad >> 21])
    head += b"\x7a" + length + b"\0" * pad
    assert len(head) == size
    return len(head).to_bytes(8, "little") + head + ONE


def test_a_header_at_the_byte_limit_is_read_and_one_byte_more_is_refused(tmp_path):
    at = write(tmp_path, header_of(MAX_HEADER), folder="at")
    d = open_dump(at)
    assert d.header_size == MAX_HEADER and d.outputs[0].array().tolist() == [1.0]
    over = write(tmp_path, header_of(MAX_HEADER + 1), folder="over")
    refused(over, f"the header length {MAX_HEADER + 1} in the first 8 bytes is over {MAX_HEADER} bytes")


def legacy(attrs: int, data: bytes) -> bytes:
    """An old-format file: one DumpData message, the tensor's bytes inline, then `attrs` attributes of 1 MiB."""
    m = DumpData()
    m.op_name = "conv1"
    o = m.output.add()
    o.data_type, o.format, o.data = 4, 2, data  # UINT8
    o.shape.dim.append(len(data))
    for i in range(attrs):
        a = m.attr.add()
        a.name, a.value = f"a{i}", "x" * MAX_STRING
    return m.SerializeToString()


def test_old_format_counts_the_header_without_its_inline_data(tmp_path):
    """An old-format file of 20 MB inline data is read; one whose other bytes pass the limit is refused."""
    big = write(tmp_path, legacy(0, bytes(range(256)) * (20 << 12)), folder="big")
    d = open_dump(big)
    assert d.legacy and d.outputs[0].size == 20 << 20 and d.outputs[0].array()[257] == 1
    assert open_dump(write(tmp_path, legacy(15, b"\1" * 64), folder="at")).legacy  # 15 MiB and a little
    over = write(tmp_path, legacy(17, b"\1" * 64), folder="over")
    refused(over, "old-format dump", f"the header holds more than {MAX_HEADER} bytes besides tensor data")


# --- through the commands ------------------------------------------------------------------------------------------

def test_compare_and_view_report_the_limit(tmp_path):
    """compare: the dump over a limit is one failed row naming the limit (the run goes on); view: exit 2, nothing
    written."""
    dev = write(tmp_path, tensors_dump(MAX_TENSORS + 1)).parent
    gt = tmp_path / "gt"
    gt.mkdir()
    np.save(gt / "conv1.0.1700000000000000.npy", np.ones(1, np.float32))
    r = dumpcmp("compare", "-l", os.fspath(dev), "-r", os.fspath(gt), "-o", os.fspath(tmp_path / "r.csv"))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r
    assert f"more than {MAX_TENSORS} tensors" in (tmp_path / "r.csv").read_text()
    r = dumpcmp("view", os.fspath(dev / NAME), "-o", os.fspath(tmp_path / "view"))
    assert r.returncode == 2 and f"{dev / NAME}: the header holds more than {MAX_TENSORS} tensors" in r.stderr, r
    assert not (tmp_path / "view").exists()


def test_a_refused_header_costs_no_memory(tmp_path):
    """The issue's 13 MB header of a million tensors took 3.7 GB; refused, it costs what the interpreter does (the
    bound leaves a tenfold margin over the ~70 MB of a bare `dumpcmp info`)."""
    path = write(tmp_path, tensors_dump(1_000_000))
    probe = textwrap.dedent("""
        import sys
        from dumpcmp.cli.dispatch import main
        try:
            code = main(sys.argv[1:])
        except SystemExit as e:
            code = e.code
        # VmHWM, the peak of this process's own memory: ru_maxrss also keeps the parent's size at the fork
        with open("/proc/self/status") as f:
            peak = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
        print(code, peak, file=sys.stderr)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run([sys.executable, "-c", probe, "info", "--json", os.fspath(path)], capture_output=True,
                       text=True, env=env, timeout=300)
    code, rss_kib = r.stderr.split()[-2:]
    assert int(rss_kib) < 700 * 1024, r.stderr
    assert json.loads(r.stdout)["ok"] is False and code == "2", r


# --- the writer keeps to the reader's limits -----------------------------------------------------------------------

@pytest.mark.parametrize("case", ["tensors", "attributes", "op_name", "dims"])
def test_write_dump_refuses_what_the_reader_would(tmp_path, case):
    """A dump dumpcmp writes is one it reads back: write_dump refuses a header over a limit, naming the file and
    the limit, and leaves nothing behind; at the limit it writes and reads back."""
    from dumpcmp import DumpError, TensorData, open_dump, write_dump

    def kwargs(over: int) -> dict:
        one = np.zeros(1, np.float32)
        if case == "tensors":
            return {"outputs": [one] * (MAX_TENSORS + over)}
        if case == "attributes":
            return {"outputs": [one], "attrs": [("k", "v")] * (MAX_ATTRS + over)}
        if case == "op_name":
            return {"outputs": [one], "op_name": "x" * (MAX_STRING + over)}
        return {"outputs": [TensorData(one, original_shape=(1,) * (MAX_DIMS + over))]}

    path = tmp_path / NAME
    with pytest.raises(DumpError, match=r"more than the \d+ dumpcmp reads") as caught:
        write_dump(path, **kwargs(1))
    assert str(path) in str(caught.value)
    assert list(tmp_path.iterdir()) == []
    write_dump(path, **kwargs(0))
    assert open_dump(path).op_name is not None
