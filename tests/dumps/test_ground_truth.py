"""The one ground-truth reader (`dumpcmp.dumps.ground_truth`): a ground-truth file read through the comparison's,
single-op compare's, locate's and extract's paths gives the same array, and a broken file the same error."""

import os
from types import SimpleNamespace

import numpy as np
import pytest

import dumpcmp
from dumpcmp import _core as core
from dumpcmp.comparison import compare as compare_module
from dumpcmp.comparison import single_op
from dumpcmp.debug.extract import data as extract_data
from dumpcmp.debug.locate import core as locate_core
from dumpcmp.dumps.dump import TensorData
from dumpcmp.dumps.ground_truth import framework_output, ground_truth_data, ground_truth_source
from dumpcmp.dumps.scan import scan_ground_truth
from dumpcmp.errors import DumpcmpError, DumpError

T0 = 1700000000000000


def _source_values(source) -> np.ndarray:
    """The values of an engine source in its compared order (every element here is nonzero and finite)."""
    zeros = core.compare.source_from_array(np.zeros(source.count, np.float64))
    got = np.empty(source.count, np.float64)
    for i, value, _, _ in core.histogram.top_errors(source, zeros, source.count):
        got[i] = value
    return got


def _paths(entry, op: str, index: int):
    """What each reader makes of one ground-truth file: name -> a zero-argument call giving a float64 array."""
    pair = SimpleNamespace(ground_truth_ref=entry, skip_reason=None)
    gt = SimpleNamespace(get=lambda node, idx: entry if (node, idx) == (op, index) else None)
    return {
        "compare": lambda: _source_values(compare_module.ground_truth_source(entry)[0]),
        "single-op": lambda: _source_values(single_op.ground_truth_source(entry)[0]),
        "single-op layout change": lambda: np.asarray(single_op._ground_truth_array_data(pair), np.float64),
        "locate": lambda: np.asarray(locate_core._truth(pair), np.float64),
        "locate mapped": lambda: np.asarray(ground_truth_data(entry), np.float64),  # locate's files of 16 MiB up
        "extract": lambda: np.asarray(extract_data.ground_truth(gt, op, index, None, None), np.float64),
    }


def _entry(folder, op: str, index: int):
    entry = scan_ground_truth(folder).get(op, index)
    assert entry is not None
    return entry


def test_a_npy_reads_the_same_through_every_path(tmp_path, rng):
    truth = (rng.standard_normal((2, 3, 4, 5)) + 10).astype(np.float32)
    np.save(tmp_path / f"conv1.0.{T0}.npy", truth)
    entry = _entry(tmp_path, "conv1", 0)
    for name, read in _paths(entry, "conv1", 0).items():
        got = read()
        np.testing.assert_array_equal(got.reshape(-1), truth.reshape(-1).astype(np.float64), err_msg=name)
    assert ground_truth_source(entry)[1:] == ((2, 3, 4, 5), "float32")


def test_a_fortran_npy_takes_numpys_path_with_the_same_values(tmp_path, rng):
    truth = np.asfortranarray((rng.standard_normal((3, 4)) + 10).astype(np.float32))
    np.save(tmp_path / f"fc.0.{T0}.npy", truth)
    entry = _entry(tmp_path, "fc", 0)
    for name, read in _paths(entry, "fc", 0).items():
        np.testing.assert_array_equal(read().reshape(-1), np.ascontiguousarray(truth).reshape(-1), err_msg=name)


@pytest.mark.parametrize("index, want", [(0, 0), (1, 1), (3, 0)])
def test_one_output_index_rule_for_framework_dumps(tmp_path, rng, index, want):
    # output {index} of the dump, output 0 when the dump has fewer (extract took the last one before)
    outs = [(rng.standard_normal((2, 3)) + 10 * (i + 1)).astype(np.float32) for i in range(2)]
    dumpcmp.write_dump(tmp_path / f"split.{index}.{T0}.pb", op_name="split", outputs=[TensorData(o) for o in outs])
    entry = _entry(tmp_path, "split", index)
    assert framework_output(entry.open(), index, entry.path)[0] == want
    paths = _paths(entry, "split", index)
    for name in ("compare", "single-op", "locate", "extract"):
        np.testing.assert_array_equal(paths[name]().reshape(-1), outs[want].reshape(-1), err_msg=name)
    # single-op's layout change needs an array: the dump's tensor is refused, naming the file
    with pytest.raises(DumpcmpError, match="a layout change needs a .npy ground truth"):
        paths["single-op layout change"]()


def _same_error_everywhere(entry, op: str, index: int, error_type, match: str) -> None:
    messages = {}
    for name, read in _paths(entry, op, index).items():
        with pytest.raises(error_type) as caught:
            read()
        messages[name] = str(caught.value)
    assert len(set(messages.values())) == 1, messages
    assert match in next(iter(messages.values()))
    assert next(iter(messages.values())).startswith(entry.path + ": ")


def test_a_truncated_npy_gives_the_same_error_through_every_path(tmp_path):
    # Hand-made: a version 1.0 header saying float32 (2, 3) (24 bytes of data), and only 8 bytes after it.
    header = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    header += b" " * (64 - 10 - len(header) - 1) + b"\n"
    path = tmp_path / f"relu.0.{T0}.npy"
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + b"\x00" * 8)
    with pytest.raises(ValueError):  # what np.load made of it on locate's path before: no file named
        np.load(path, allow_pickle=False)
    entry = _entry(tmp_path, "relu", 0)
    _same_error_everywhere(entry, "relu", 0, DumpError, "its header says float32 [2, 3] (24 bytes) but the file "
                                                        "holds 8 bytes of data")


def test_a_npy_with_bytes_past_its_data_gives_the_same_error_through_every_path(tmp_path):
    path = tmp_path / f"relu.0.{T0}.npy"
    np.save(path, np.ones((2, 3), np.float32))
    with open(path, "ab") as f:
        f.write(b"\x00" * 4)
    np.testing.assert_array_equal(np.load(path), np.ones((2, 3)))  # np.load alone reads it without a word
    _same_error_everywhere(_entry(tmp_path, "relu", 0), "relu", 0, DumpError, "but the file holds 28 bytes")


def test_a_dump_without_outputs_gives_the_same_error_through_every_path(tmp_path):
    dumpcmp.write_dump(tmp_path / f"none.0.{T0}.pb", op_name="none", outputs=[])
    entry = _entry(tmp_path, "none", 0)
    _same_error_everywhere(entry, "none", 0, DumpcmpError, "the dump holds no output")


def test_locate_reads_small_files_whole_and_large_ones_mapped(tmp_path, rng):
    truth = rng.standard_normal((4, 4)).astype(np.float32)
    np.save(tmp_path / f"a.0.{T0}.npy", truth)
    entry = _entry(tmp_path, "a", 0)
    size = os.path.getsize(entry.path)
    whole = ground_truth_data(entry, whole_below=size + 1)
    mapped = ground_truth_data(entry, whole_below=size)
    assert not isinstance(whole, np.memmap) and isinstance(mapped, np.memmap)
    np.testing.assert_array_equal(whole, truth)
    np.testing.assert_array_equal(mapped, truth)


def test_the_histogram_draws_a_ground_truth_folder_by_the_same_rule(tmp_path, rng):
    # `dumpcmp histogram GT_FOLDER`: each file as the comparison reads it (output 1 of a dump named for output 1;
    # it drew output 0 before the readers were unified)
    from dumpcmp.output.histogram.layers import dump_layers

    outs = [(rng.standard_normal((2, 3)) + 10 * (i + 1)).astype(np.float32) for i in range(2)]
    dumpcmp.write_dump(tmp_path / f"split.1.{T0}.pb", op_name="split", outputs=[TensorData(o) for o in outs])
    truth = (rng.standard_normal((4,)) + 5).astype(np.float32)
    np.save(tmp_path / f"relu.0.{T0}.npy", truth)
    layers = {layer.name: layer for layer in dump_layers(tmp_path)}
    assert not any(layer.error for layer in layers.values())
    np.testing.assert_array_equal(_source_values(layers["split.1"].device), outs[1].reshape(-1))
    np.testing.assert_array_equal(_source_values(layers["relu.0"].device), truth)
    np.testing.assert_array_equal(_source_values(dump_layers(tmp_path / f"relu.0.{T0}.npy").__next__().device),
                                  truth)
