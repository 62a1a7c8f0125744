"""File name schemes: hand-written examples from the spec and the seeds, round trips, sanitising, newest-wins,
hashed names with a mapping file."""

from __future__ import annotations

import csv
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dumpcmp.dumps import naming
from dumpcmp.errors import NamingError
from dumpcmp.dumps.naming import ConvertedName, DeviceDumpName, FftsSuffix, FrameworkDumpName

# (file name, scheme, fields the parse must give) -- written by hand from the spec's and the seeds' tables
EXAMPLES = [
    # the seed's conversion example (an offline model dump: 4 fields)
    ("Pooling.pool1.1147.1589195081588018", naming.DEVICE,
     dict(op_type="Pooling", op_name="pool1", task_id=1147, timestamp=1589195081588018, stream_id=None,
          dump_number=None, ffts=None)),
    # task_id then stream_id, as current runtimes write it
    ("Conv2D.conv1_Conv2D.12.3.1700000000000001", naming.DEVICE,
     dict(op_type="Conv2D", op_name="conv1_Conv2D", task_id=12, stream_id=3, timestamp=1700000000000001,
          dump_number=None)),
    # the spec's newer form with a dump number
    ("MatMul.fc-1.7.42.5.1700000000000002", naming.DEVICE,
     dict(op_type="MatMul", op_name="fc-1", dump_number=7, task_id=42, stream_id=5, timestamp=1700000000000002)),
    # the spec's FFTS+ suffix on the 6-field form
    ("Add.add_1.0.4.2.1700000000000003.FFTSPLUS.11.1.0", naming.DEVICE,
     dict(op_type="Add", op_name="add_1", dump_number=0, task_id=4, stream_id=2, timestamp=1700000000000003,
          ffts=FftsSuffix("FFTSPLUS", 11, 1, 0))),
    # msaccucmp's FFTS+ example (task type number 4) on the 5-field form
    ("Conv2D.partition0_rank2_sgt_graph_0_Conv2D_lxslice0.2.9.1670205071724946.4.487.0.0", naming.DEVICE,
     dict(op_name="partition0_rank2_sgt_graph_0_Conv2D_lxslice0", task_id=2, stream_id=9,
          timestamp=1670205071724946, ffts=FftsSuffix("4", 487, 0, 0))),
    # FFTS+ suffix on the 4-field form
    ("Relu.relu.3.1700000000000004.FFTSPLUS.1.2.3", naming.DEVICE,
     dict(task_id=3, stream_id=None, timestamp=1700000000000004, ffts=FftsSuffix("FFTSPLUS", 1, 2, 3))),
    ("conv1.0.1589195081588018.pb", naming.PB,
     dict(op_name="conv1", output_index=0, timestamp=1589195081588018, extension="pb")),
    ("res2a_branch1.0.1589195081588018.quant", naming.QUANT,
     dict(op_name="res2a_branch1", output_index=0, timestamp=1589195081588018, extension="quant")),
    ("resnet_v1_50_conv1_Conv2D.1.1589195081588018.npy", naming.NPY,
     dict(op_name="resnet_v1_50_conv1_Conv2D", output_index=1, timestamp=1589195081588018, extension="npy")),
    ("Pooling.pool1.1147.1589195081588018.output.0.npy", naming.CONVERTED,
     dict(original="Pooling.pool1.1147.1589195081588018", kind="output", index=0, shape=None)),
    ("Conv2D.conv1.3.1589195081588018.input.1.1x3x224x224.npy", naming.CONVERTED,
     dict(original="Conv2D.conv1.3.1589195081588018", kind="input", index=1, shape=(1, 3, 224, 224))),
    # a 1-D shape must not turn the file into ground truth with index 0 and "timestamp" 224
    ("Relu.relu.3.1700000000000004.output.0.224.npy", naming.CONVERTED,
     dict(original="Relu.relu.3.1700000000000004", kind="output", index=0, shape=(224,))),
]


@pytest.mark.parametrize("file_name,scheme,fields", EXAMPLES, ids=[e[0][:40] for e in EXAMPLES])
def test_hand_written_examples_parse_and_build_back(file_name, scheme, fields):
    parsed = naming.parse_name(file_name)
    assert parsed.scheme == scheme
    assert naming.classify(file_name) == scheme
    for field, value in fields.items():
        assert getattr(parsed, field) == value, field
    assert parsed.build() == file_name
    assert str(parsed) == file_name


def test_parse_takes_the_base_name_of_a_path():
    parsed = naming.parse_name(os.path.join("a", "b.c", "Conv2D.conv1.3.1589195081588018"))
    assert parsed.op_name == "conv1"


def test_field_count_decides_the_layout():
    assert naming.parse_device_dump_name("T.n.1.2").fields == 4
    assert naming.parse_device_dump_name("T.n.1.2.3").fields == 5
    assert naming.parse_device_dump_name("T.n.1.2.3.4").fields == 6
    six = naming.parse_device_dump_name("T.n.1.2.3.4")
    assert (six.dump_number, six.task_id, six.stream_id, six.timestamp) == (1, 2, 3, 4)


def test_ffts_task_type_number_and_name_mean_the_same():
    assert FftsSuffix("4", 1, 0, 0).task_type_name == "FFTSPLUS"
    assert FftsSuffix("FFTSPLUS", 1, 0, 0).task_type_name == "FFTSPLUS"
    assert FftsSuffix("9", 1, 0, 0).task_type_name == "9"


@pytest.mark.parametrize("ffts", [None, FftsSuffix("FFTSPLUS", 3, 1, 0), FftsSuffix("4", 487, 2, 7)])
@pytest.mark.parametrize("stream_id,dump_number", [(None, None), (0, None), (65535, None), (3, 0), (3, 12)])
def test_device_name_round_trip_from_fields(stream_id, dump_number, ffts):
    name = DeviceDumpName("BatchMatMulV2", "layer_0-attn", 1234, 1712345678901234, stream_id, dump_number, ffts)
    assert naming.parse_device_dump_name(name.build()) == name
    assert naming.parse_name(name.build()) == name


@pytest.mark.parametrize("extension", ["pb", "quant", "npy"])
@pytest.mark.parametrize("output_index", [0, 1, 17])
def test_framework_name_round_trip_from_fields(extension, output_index):
    name = FrameworkDumpName("res4a_branch2b", output_index, 1589195081588018, extension)
    assert naming.parse_name(name.build()) == name
    assert name.key == f"res4a_branch2b.{output_index}"


@pytest.mark.parametrize("shape", [None, (7,), (1, 3, 224, 224), (2, 0, 5)])
@pytest.mark.parametrize("kind", ["input", "output"])
def test_converted_name_round_trip_and_original_device_name(kind, shape):
    original = "Conv2D.conv1.3.9.1589195081588018"
    built = naming.build_converted_name("/some/dir/" + original, kind, 2, shape)
    parsed = naming.parse_converted_name(built)
    assert parsed == ConvertedName(original, kind, 2, shape)
    assert parsed.device == naming.parse_device_dump_name(original)
    assert parsed.key == f"{original}.{kind}.2"


def test_converted_name_of_a_non_device_original_has_no_device():
    parsed = naming.parse_name("something_else.output.0.npy")
    assert parsed.scheme == naming.CONVERTED and parsed.device is None


def test_build_functions_sanitise_as_the_runtime_does():
    assert naming.build_device_dump_name("Conv 2D", "resnet/conv1.weight\\x", 3, 1700000000000000,
                                         stream_id=2) == "Conv_2D.resnet_conv1_weight_x.3.2.1700000000000000"
    assert naming.build_framework_dump_name("conv1/Relu", 0, 1700000000000000) == "conv1_Relu.0.1700000000000000.npy"
    assert naming.build_framework_dump_name("a.b", 1, 5, "pb") == "a_b.1.5.pb"


@pytest.mark.parametrize("raw,expected", [
    ("conv1/Conv2D", "conv1_Conv2D"), ("a.b.c", "a_b_c"), ("x\\y", "x_y"), ("ResNet 50", "ResNet_50"),
    ("already_fine-1", "already_fine-1"), ("a/.\\ b", "a____b"), ("", ""),
])
def test_sanitize_replaces_dot_slashes_and_spaces(raw, expected):
    assert naming.sanitize(raw) == expected
    # whatever the input, the result is made of what it was minus the four characters
    assert not set(naming.sanitize(raw)) & set("./\\ ")


def test_is_sanitized_is_the_spec_alphabet():
    assert naming.is_sanitized("conv1_Conv2D-x9")
    for bad in ("conv1.x", "a b", "a/b", "名前", ""):
        assert not naming.is_sanitized(bad)


def test_timestamps():
    assert naming.is_timestamp("1589195081588018")
    fullwidth = "".join(chr(ord(c) + 0xFEE0) for c in "1589195081588018")
    for bad in ("158919508158801", "15891950815880180", "15891950815880a8", fullwidth):
        assert not naming.is_timestamp(bad)
    now = naming.timestamp_now()
    assert naming.is_timestamp(str(now))


@pytest.mark.parametrize("name", [
    "Conv2D.conv1.3",                            # too few fields
    "Conv2D.conv1.3.4.5.6.7",                    # 7 fields: no layout has them
    "Conv2D.conv1.x.1589195081588018",           # task id not a number
    "Conv2D.conv1.3.15891950815880x8",           # timestamp not a number
    ".conv1.3.1589195081588018",                 # empty op type
    "Conv2D..3.1589195081588018",                # empty op name
    "Conv2D.conv1.3.1589195081588018.FFTS+.1.2.3",  # bad task type
    "Conv2D.conv1.3.1589195081588018.4.x.2.3",   # FFTS+ context not a number
    "Conv2D.conv1.٣.1589195081588018",           # non-ASCII digit
])
def test_device_names_that_fit_no_scheme(name):
    with pytest.raises(NamingError) as error:
        naming.parse_device_dump_name(name)
    assert repr(name) in str(error.value) and "{op_type}" in str(error.value)
    assert naming.classify(name) is None
    with pytest.raises(NamingError, match="fits no naming scheme"):
        naming.parse_name(name)


@pytest.mark.parametrize("name", [
    "conv1.0.npy", "conv1.x.1589195081588018.npy", "conv1.0.1589195081588018.npz", "conv1.0.158919508158801a.pb",
    "a.b.0.1589195081588018.quant", "mapping.csv", "README", "123456", "conv1.output.npy", "x.output.0.1x.npy",
])
def test_other_names_that_fit_no_scheme(name):
    assert naming.classify(name) is None
    with pytest.raises(NamingError) as error:
        naming.parse_name(name)
    assert repr(name) in str(error.value) and "expected" in str(error.value)


def test_specific_parsers_reject_other_schemes():
    with pytest.raises(NamingError, match="pb"):
        naming.parse_framework_dump_name("Conv2D.conv1.3.1589195081588018")
    with pytest.raises(NamingError, match="npy"):
        naming.parse_framework_dump_name("conv1.0.1589195081588018.pb", extensions=("npy",))
    with pytest.raises(NamingError, match="converted"):
        naming.parse_converted_name("conv1.0.1589195081588018.npy")


@pytest.mark.parametrize("make", [
    lambda: DeviceDumpName("A.B", "x", 1, 2),
    lambda: DeviceDumpName("A", "", 1, 2),
    lambda: DeviceDumpName("A", "x/y", 1, 2),
    lambda: DeviceDumpName("A", "x", -1, 2),
    lambda: DeviceDumpName("A", "x", 1, 2, dump_number=3),      # dump number needs a stream id
    lambda: DeviceDumpName("A", "x", True, 2),
    lambda: FrameworkDumpName("a", 0, 1, "txt"),
    lambda: ConvertedName("orig", "weight", 0),
    lambda: ConvertedName("orig", "output", 0, ()),
    lambda: FftsSuffix("FFTS+", 0, 0, 0),
])
def test_fields_that_cannot_make_a_name_are_refused(make):
    with pytest.raises(NamingError):
        make()


def test_ground_truth_key_sanitises_the_op_name():
    assert naming.ground_truth_key("conv1/Relu", 0) == "conv1_Relu.0"
    assert naming.ground_truth_key("fc.1", 2) == FrameworkDumpName("fc_1", 2, 5).key


def test_newest_wins_per_key():
    names = [naming.parse_name(n) for n in (
        "conv1.0.1589195081588018.npy", "conv1.0.1589195081588999.npy", "conv1.0.1589195081588500.npy",
        "conv1.1.1589195081588000.npy", "relu.0.1589195081580000.npy")]
    best = naming.newest_by_key(names, key=lambda n: n.key, timestamp=lambda n: n.timestamp)
    assert {k: v.timestamp for k, v in best.items()} == {
        "conv1.0": 1589195081588999, "conv1.1": 1589195081588000, "relu.0": 1589195081580000}


def test_newest_wins_ties_do_not_depend_on_order():
    items = [("k", 5, "b"), ("k", 5, "c"), ("k", 5, "a"), ("k", 4, "z")]
    for order in (items, items[::-1], items[1:] + items[:1]):
        best = naming.newest_by_key(order, key=lambda t: t[0], timestamp=lambda t: t[1], tie=lambda t: t[2])
        assert best["k"] == ("k", 5, "c")


# --- hashed names ---------------------------------------------------------------------------------------------------

def long_dump_name(n: int = 300) -> str:
    op = "encoder_layer_" + "x" * n
    return f"BatchMatMul.{op}.7.3.1700000000000000"


def test_short_names_are_kept_and_no_mapping_is_written(tmp_path):
    name = "Conv2D.conv1.3.1589195081588018"
    assert naming.safe_file_name(name, tmp_path) == name
    assert not (tmp_path / naming.MAPPING_FILE).exists()
    name254 = "a" * 254
    assert naming.safe_file_name(name254, tmp_path) == name254


def test_long_name_is_hashed_and_mapped_round_trip(tmp_path):
    name = long_dump_name()
    short = naming.safe_file_name(name, tmp_path)
    assert short != name and naming.is_hashed_name(short) and len(short) == 20
    assert short == naming.hashed_name(name)
    # the file can be created under that name, and resolves back through the folder's mapping
    (tmp_path / short).write_bytes(b"")
    mapping = naming.read_mapping(tmp_path)
    assert naming.resolve_hashed(short, mapping) == name
    assert naming.parse_name(naming.resolve_hashed(short, mapping)).op_name.startswith("encoder_layer_")
    # the row is plain two-column CSV, no header, as msaccucmp reads it
    with open(tmp_path / naming.MAPPING_FILE, newline="") as handle:
        assert list(csv.reader(handle)) == [[short, name]]


def test_hashing_is_idempotent_and_distinct_names_get_distinct_rows(tmp_path):
    a, b = long_dump_name(300), long_dump_name(301)
    sa = naming.safe_file_name(a, tmp_path)
    assert naming.safe_file_name(a, tmp_path) == sa
    sb = naming.safe_file_name(b, tmp_path)
    assert sa != sb
    assert naming.read_mapping(tmp_path / naming.MAPPING_FILE) == {sa: a, sb: b}
    assert len((tmp_path / naming.MAPPING_FILE).read_text().splitlines()) == 2


def test_threshold_is_255_characters_or_bytes(tmp_path):
    assert naming.safe_file_name("a" * 255, tmp_path) != "a" * 255
    # 128 two-byte characters: 128 characters but 256 UTF-8 bytes
    wide = "é" * 128
    assert naming.safe_file_name(wide, tmp_path) == naming.hashed_name(wide)


def test_suffix_is_kept_on_hashed_output_names(tmp_path):
    name = "x" * 300 + "_output_0_summary.txt"
    short = naming.safe_file_name(name, tmp_path / "new", suffix="_summary.txt")
    assert short == naming.hashed_name(name) + "_summary.txt"
    assert naming.read_mapping(tmp_path / "new")[short] == name


def test_safe_file_name_refuses_paths(tmp_path):
    with pytest.raises(NamingError, match="path"):
        naming.safe_file_name("a/b", tmp_path)


def test_read_mapping_missing_file_is_empty(tmp_path):
    assert naming.read_mapping(tmp_path) == {}
    assert naming.read_mapping(tmp_path / "nothing.csv") == {}


def test_read_mapping_bad_rows_raise_or_are_reported(tmp_path):
    path = tmp_path / naming.MAPPING_FILE
    path.write_text("123,Conv2D.conv1.3.1589195081588018\n456\n\n789,Add.add.1.1589195081588018,extra\n"
                    "999,Relu.relu.2.1589195081588018\n")
    with pytest.raises(NamingError, match=r"line 2"):
        naming.read_mapping(path)
    problems: list[str] = []
    assert naming.read_mapping(path, problems) == {"123": "Conv2D.conv1.3.1589195081588018",
                                                   "999": "Relu.relu.2.1589195081588018"}
    assert len(problems) == 2 and "line 2" in problems[0] and "line 4" in problems[1]
    assert all(str(path) in p for p in problems)


def test_resolve_hashed_unknown_name(tmp_path):
    with pytest.raises(NamingError, match="no row"):
        naming.resolve_hashed("123", {"456": "x"})


def test_hash_collision_with_another_name_is_refused(tmp_path):
    name = long_dump_name()
    short = naming.hashed_name(name)
    (tmp_path / naming.MAPPING_FILE).write_text(f"{short},some.other.name.1\n")
    with pytest.raises(NamingError, match="another name"):
        naming.safe_file_name(name, tmp_path)


# --- properties -----------------------------------------------------------------------------------------------------

spec_names = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1,
                     max_size=40)
numbers = st.integers(min_value=0, max_value=2**64)
fftss = st.none() | st.builds(FftsSuffix, st.sampled_from(["FFTSPLUS", "0", "1", "4", "AICORE"]), numbers, numbers,
                               numbers)


@given(op_type=spec_names, op_name=spec_names, task=numbers, ts=numbers, stream=st.none() | numbers,
       dump_number=st.none() | numbers, ffts=fftss)
def test_any_device_name_round_trips(op_type, op_name, task, ts, stream, dump_number, ffts):
    if stream is None:
        dump_number = None
    name = DeviceDumpName(op_type, op_name, task, ts, stream, dump_number, ffts)
    built = name.build()
    assert naming.parse_name(built) == name
    assert naming.classify(built) == naming.DEVICE


@given(op_name=spec_names, index=numbers, ts=numbers, ext=st.sampled_from(["pb", "quant", "npy"]))
def test_any_framework_name_round_trips(op_name, index, ts, ext):
    name = FrameworkDumpName(op_name, index, ts, ext)
    assert naming.parse_name(name.build()) == name


@given(st.text(alphabet="Aa0_.-x/\\ é", max_size=60) |
       st.lists(st.sampled_from(["Conv2D", "conv1", "0", "17", "1700000000000000", "FFTSPLUS", "npy", "pb", "output",
                                 "input", "1x3", "", "a b"]), max_size=11).map(".".join))
def test_parse_either_refuses_or_gives_a_name_that_parses_to_itself(text):
    # whatever the input, a name fits a scheme (and its canonical form parses back the same) or NamingError says why
    try:
        parsed = naming.parse_name(text)
    except NamingError as error:
        assert "expected" in str(error)
        return
    assert naming.parse_name(parsed.build()) == parsed
