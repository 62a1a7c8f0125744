# The typing stub of the compiled core, kept by hand from pybind11-stubgen's output (after changing a binding:
#   pip install pybind11-stubgen && pybind11-stubgen dumpcmp._core -o /tmp/stubs, then carry the changes over).
# The core's areas are submodules (_core.dump, _core.metrics, ...). They are declared here as classes whose
# functions are staticmethods: one .pyi cannot declare submodules, and a stub package (_core/__init__.pyi plus one
# stub an area, stubgen's output) would claim `import dumpcmp._core.dump` works, which it does not (pybind11
# submodules are attributes, not importable modules). Attribute access, the only way the package uses them,
# type-checks the same either way. tests/core/test_core.py checks that every class lists exactly its submodule's names.
"""
dumpcmp's C++ core (private: use the dumpcmp package): one submodule per area; __version__, DumpError and the
process-wide settings (num_threads, set_num_threads, simd_level) at the top.
"""
from __future__ import annotations
import collections.abc
from dumpcmp.errors import DumpError
import numpy
import numpy.typing
import typing
__all__: list[str] = ['DumpError', 'compare', 'detail', 'dtype', 'dump', 'graph', 'histogram', 'layout', 'metrics', 'num_threads', 'scan', 'set_num_threads', 'simd_level', 'table']
def num_threads() -> int:
    """
    Threads the core uses for one big job.
    """
def set_num_threads(n: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Set the thread count (0 = DUMPCMP_NUM_THREADS or the hardware's).
    """
def simd_level() -> str:
    """
    The instruction set the hot loops run with here: scalar, avx2 or avx512 (DUMPCMP_SIMD lowers it).
    """
class dtype:
    """The spec's data types and formats; decoding and encoding device storage."""
    @staticmethod
    def data_types() -> list:
        """
        The spec's data types: value, name, storage bits, how they reach NumPy.
        """
    @staticmethod
    def formats() -> dict:
        """
        The spec's formats: name -> number.
        """
    @staticmethod
    def decode(data_type: str, raw: numpy.typing.NDArray[numpy.uint8], count: typing.SupportsInt | typing.SupportsIndex) -> numpy.ndarray:
        """
        Decode `count` elements of device storage into dumpcmp's NumPy representation of the type.
        """
    @staticmethod
    def encode(data_type: str, values: numpy.ndarray) -> numpy.typing.NDArray[numpy.uint8]:
        """
        Encode values (in dumpcmp's NumPy representation of the type) into device storage bytes.
        """
class dump:
    """Dump files: read (DumpFile, TensorDesc, read_headers) and write (write_dump)."""
    class TensorDesc:
        """
        One input, output, buffer or workspace of a dump: metadata only.
        """
        @property
        def address(self) -> int:
            ...
        @property
        def arg_index(self) -> int:
            ...
        @property
        def data_type(self) -> str:
            ...
        @property
        def data_type_value(self) -> int:
            ...
        @property
        def dim_range(self) -> list[tuple[int, int]]:
            ...
        @property
        def element_count(self) -> int:
            ...
        @property
        def file_offset(self) -> int:
            ...
        @property
        def format(self) -> str:
            ...
        @property
        def format_value(self) -> int:
            ...
        @property
        def index(self) -> int:
            ...
        @property
        def input_type(self) -> int:
            ...
        @property
        def kind(self) -> str:
            ...
        @property
        def offset(self) -> int:
            ...
        @property
        def original_op(self) -> typing.Any:
            ...
        @property
        def original_shape(self) -> typing.Any:
            ...
        @property
        def shape(self) -> tuple:
            ...
        @property
        def size(self) -> int:
            ...
        @property
        def sub_format(self) -> int:
            ...
        @property
        def sub_type(self) -> int:
            ...
    class DumpFile:
        """
        A dump file: header parsed, tensor bytes mapped on first use.
        """
        def __init__(self, path: str) -> None:
            ...
        def array(self, kind: str, index: typing.SupportsInt | typing.SupportsIndex) -> numpy.ndarray:
            """
            The tensor as stored (device layout and shape), zero-copy for NumPy's own dtypes (read-only).
            """
        def check(self, kind: str, index: typing.SupportsInt | typing.SupportsIndex) -> str:
            """
            Empty string if the tensor's bytes fit its dtype and shape, else why not.
            """
        def raw(self, kind: str, index: typing.SupportsInt | typing.SupportsIndex) -> numpy.ndarray:
            """
            The tensor's raw bytes, zero-copy (read-only).
            """
        def tensor(self, kind: str, index: typing.SupportsInt | typing.SupportsIndex) -> dump.TensorDesc:
            ...
        def tensors(self, kind: str) -> list[dump.TensorDesc]:
            ...
        @property
        def attrs(self) -> list[tuple[str, str]]:
            ...
        @property
        def dfx_message(self) -> bytes:
            ...
        @property
        def dump_time(self) -> int:
            ...
        @property
        def file_size(self) -> int:
            ...
        @property
        def header_size(self) -> int:
            ...
        @property
        def legacy(self) -> bool:
            ...
        @property
        def op_name(self) -> str:
            ...
        @property
        def path(self) -> str:
            ...
        @property
        def version(self) -> str:
            ...
    class DumpHead:
        """
        A dump's header kept small (read_heads): its inputs and outputs, every field of theirs; of the buffers and workspaces their count only. Tensor bytes are read on first use, as a DumpFile's.
        """
        def array(self, kind: str, index: typing.SupportsInt | typing.SupportsIndex) -> numpy.ndarray:
            """
            The tensor as stored (device layout and shape), zero-copy for NumPy's own dtypes (read-only).
            """
        def check(self, kind: str, index: typing.SupportsInt | typing.SupportsIndex) -> str:
            """
            Empty string if the tensor's bytes fit its dtype and shape, else why not.
            """
        def count(self, kind: str) -> int:
            """
            How many tensors of this kind the dump has (buffers and workspaces too).
            """
        def raw(self, kind: str, index: typing.SupportsInt | typing.SupportsIndex) -> numpy.ndarray:
            """
            The tensor's raw bytes, zero-copy (read-only).
            """
        def tensor(self, kind: str, index: typing.SupportsInt | typing.SupportsIndex) -> dump.TensorDesc:
            ...
        def tensors(self, kind: str) -> list[dump.TensorDesc]:
            """
            The inputs or outputs (ValueError for buffers and workspaces: not kept).
            """
        @property
        def file_size(self) -> int:
            ...
        @property
        def header_size(self) -> int:
            ...
        @property
        def legacy(self) -> bool:
            ...
        @property
        def path(self) -> str:
            ...
    @staticmethod
    def read_headers(paths: collections.abc.Sequence[str], threads: typing.SupportsInt | typing.SupportsIndex = 0) -> list:
        """
        Read many dump headers in parallel: a DumpFile, or the error text, per path.
        """
    @staticmethod
    def read_heads(paths: collections.abc.Sequence[str], threads: typing.SupportsInt | typing.SupportsIndex = 0) -> list:
        """
        Read many dump headers in parallel, each kept small: a DumpHead, or the error text, per path.
        """
    @staticmethod
    def write_dump(path: str, version: str, dump_time: typing.SupportsInt | typing.SupportsIndex, op_name: str, attrs: collections.abc.Sequence[tuple[str, str]], dfx_message: str, tensors: list) -> None:
        """
        Write a current-format dump. Each tensor is a dict with its metadata and a contiguous `data` buffer holding its device storage bytes.
        """
class metrics:
    """The ten metrics of one tensor pair (MetricResult, compare_arrays) and the benchmarks' read probe."""
    class MetricResult:
        """
        Metrics of one tensor pair (x = My Output, y = Ground Truth). Metrics left out are NaN.
        """
        def __getstate__(self) -> tuple:
            ...
        def __setstate__(self, arg0: tuple) -> None:
            ...
        def __repr__(self) -> str:
            ...
        def format(self, index: typing.SupportsInt | typing.SupportsIndex) -> str:
            """
            Metric `index` as the original tool prints it.
            """
        def formatted(self) -> list[str]:
            """
            The selected metrics as the original tool prints them, in column order.
            """
        def value(self, index: typing.SupportsInt | typing.SupportsIndex) -> typing.Any:
            """
            Value of metric `index` (StandardDeviation: the 4-tuple).
            """
        def values(self) -> list:
            """
            Values of the selected metrics in column order (StandardDeviation: a 4-tuple).
            """
        @property
        def accumulated_relative_error(self) -> float:
            ...
        @property
        def both_bool(self) -> bool:
            ...
        @property
        def precise(self) -> bool:
            """Computed with float64 per-element terms (--precise)."""
        @property
        def cosine_similarity(self) -> float:
            ...
        @property
        def count(self) -> int:
            ...
        @property
        def inf_x(self) -> int:
            ...
        @property
        def inf_y(self) -> int:
            ...
        @property
        def kullback_leibler_divergence(self) -> float:
            ...
        @property
        def max_absolute_error(self) -> float:
            ...
        @property
        def max_relative_error(self) -> float:
            ...
        @property
        def max_x(self) -> float:
            ...
        @property
        def max_y(self) -> float:
            ...
        @property
        def mean_absolute_error(self) -> float:
            ...
        @property
        def mean_relative_error(self) -> float:
            ...
        @property
        def mean_x(self) -> float:
            ...
        @property
        def mean_y(self) -> float:
            ...
        @property
        def metrics(self) -> list[int]:
            """
            Indices of the selected metrics, in column order.
            """
        @property
        def min_x(self) -> float:
            ...
        @property
        def min_y(self) -> float:
            ...
        @property
        def mse(self) -> float:
            ...
        @property
        def nan_x(self) -> int:
            ...
        @property
        def nan_y(self) -> int:
            ...
        @property
        def relative_euclidean_distance(self) -> float:
            ...
        @property
        def root_mean_square_error(self) -> float:
            ...
        @property
        def scalar(self) -> bool:
            ...
        @property
        def sqnr_db(self) -> float:
            ...
        @property
        def standard_deviation(self) -> tuple[float, float, float, float]:
            """
            (mean_x, std_x, mean_y, std_y), population statistics
            """
        @property
        def std_x(self) -> float:
            ...
        @property
        def std_y(self) -> float:
            ...
    @staticmethod
    def metric_names() -> list[str]:
        """
        The ten built-in metrics in column order (index = position).
        """
    @staticmethod
    def format_metric(index: typing.SupportsInt | typing.SupportsIndex, result: metrics.MetricResult) -> str:
        """
        Metric `index` of `result` as the original tool prints it.
        """
    @staticmethod
    def compare_arrays(x: numpy.ndarray, y: numpy.ndarray, *, metrics: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, threads: typing.SupportsInt | typing.SupportsIndex = 0, x_data_type: str | None = None, y_data_type: str | None = None, count: typing.SupportsInt | typing.SupportsIndex | None = None, scalar: bool | None = None, chunk_elements: typing.SupportsInt | typing.SupportsIndex = 65536, precise: bool = False) -> metrics.MetricResult:
        """
        Compare x (My Output) with y (Ground Truth): whole arrays, or raw device bytes with a data type name.
        """
    @staticmethod
    def read_probe(data: numpy.ndarray, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> int:
        """
        Read every byte of a contiguous buffer on `threads` threads (the benchmarks' memory-speed probe).
        """
class layout:
    """Device layout conversions: compiled plans (LayoutPlan) and the shapes they produce."""
    class LayoutPlan:
        """
        A compiled layout conversion (see dumpcmp/layout.hpp).
        """
        def __init__(self, src_format: str, src_shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], dst_format: str, dst_shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], groups: typing.SupportsInt | typing.SupportsIndex, elem_size: typing.SupportsInt | typing.SupportsIndex) -> None:
            ...
        def decode_range(self, src: numpy.ndarray, first: typing.SupportsInt | typing.SupportsIndex, count: typing.SupportsInt | typing.SupportsIndex) -> numpy.ndarray:
            """
            Destination elements [first, first+count) (row-major order of the plain destination).
            """
        def run(self, src: numpy.ndarray, dst: numpy.ndarray, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
            """
            Convert src into dst (both C-contiguous, elem_size bytes per element; dst is fully written).
            """
        def source_indices(self, first: typing.SupportsInt | typing.SupportsIndex, count: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.uint64]:
            """
            Source element index of each destination element [first, first+count).
            """
        @property
        def dst_count(self) -> int:
            ...
        @property
        def dst_format(self) -> str:
            ...
        @property
        def dst_shape(self) -> tuple:
            ...
        @property
        def elem_size(self) -> int:
            ...
        @property
        def encode(self) -> bool:
            ...
        @property
        def groups(self) -> int:
            ...
        @property
        def kernel(self) -> str:
            """
            which loop nest runs the plan: runs, tiles or elements
            """
        @property
        def src_count(self) -> int:
            ...
        @property
        def src_format(self) -> str:
            ...
        @property
        def src_shape(self) -> tuple:
            ...
    @staticmethod
    def infer_shape(src_format: str, src_shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], dst_format: str, original_shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], groups: typing.SupportsInt | typing.SupportsIndex = 1, padded: bool = False, original_format: str = '') -> tuple:
        """
        The plain shape a conversion produces (see infer_plain_shape in layout.hpp).
        """
    @staticmethod
    def device_shape(device_format: str, plain_format: str, plain_shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], c0: typing.SupportsInt | typing.SupportsIndex, groups: typing.SupportsInt | typing.SupportsIndex = 1) -> tuple:
        """
        The device shape encoding a plain tensor produces.
        """
    @staticmethod
    def supported_pairs() -> list:
        """
        (source, destination) format pairs the codec converts.
        """
    @staticmethod
    def is_device_format(arg0: str) -> bool:
        ...
class compare:
    """Comparison sides (TensorSource from a dump, an array or a file) and comparing them, one pair or many."""
    class TensorSource:
        """
        One side of a comparison: stored bytes, data type, and the layout plan to walk them.
        """
        @property
        def count(self) -> int:
            """
            elements in the compared order
            """
        @property
        def data_type(self) -> str:
            ...
        @property
        def has_plan(self) -> bool:
            ...
        @property
        def stored_bytes(self) -> int:
            """
            bytes of the stored tensor it reads
            """
    @staticmethod
    def source_from_dump(file: dump.DumpFile | dump.DumpHead, kind: str, index: typing.SupportsInt | typing.SupportsIndex, dst_format: str | None = None, dst_shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, groups: typing.SupportsInt | typing.SupportsIndex = 1) -> compare.TensorSource:
        """
        A dump tensor as a comparison side; with dst_format/dst_shape it is read through a layout plan (device layout -> plain, cropped). A DumpHead (read_heads) reads as the DumpFile of its file.
        """
    @staticmethod
    def dump_tensor_facts(items: list) -> list:
        """
        Per (DumpFile or DumpHead, kind, index): (data type name, format name, shape, original shape or None, address, sub_format, problem: empty when the bytes fit) as TensorDesc and DumpFile.check give them, or None (no such tensor, an unknown data type or format, any error: ask that one through the general path).
        """
    @staticmethod
    def sources_from_dumps(items: list) -> list:
        """
        source_from_dump for many tensors in one call: per (file, kind, index, dst_format, dst_shape, groups) (source, count, stored_bytes), or None where it fails (source_from_dump then gives that one's error).
        """
    @staticmethod
    def source_from_array(array: numpy.ndarray, data_type: str | None = None) -> compare.TensorSource:
        """
        A NumPy array (e.g. a memory-mapped .npy) as a comparison side, in its own row-major order.
        """
    @staticmethod
    def source_from_file(path: str, offset: typing.SupportsInt | typing.SupportsIndex, data_type: str, count: typing.SupportsInt | typing.SupportsIndex) -> compare.TensorSource:
        """
        count elements of a data type stored as it is compared (a name of data_types(): FLOAT, FLOAT16, BOOL, ...) at byte offset of a file (a .npy's data after its header), mapped here: one open and one mapping, no NumPy.
        """
    @staticmethod
    def npy_sources(paths: collections.abc.Sequence[str], data_types: collections.abc.Mapping[str, str]) -> list:
        """
        Plain .npy files as comparison sides, one call for many: per path (source, shape, data type name) where the header is one NumPy writes (descr a key of data_types, which names its data type; C order; the size agreeing), else None.
        """
    @staticmethod
    def npy_heads(paths: collections.abc.Sequence[str], data_types: dict) -> list:
        """
        The headers of plain .npy files, by npy_sources' rule (a header up to 64 KiB), nothing mapped (one open and one 4096-byte read a file): per path (data type name, shape, data offset, descr), else None.
        """
    @staticmethod
    def compare_sources(x: compare.TensorSource, y: compare.TensorSource, *, metrics: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, threads: typing.SupportsInt | typing.SupportsIndex = 0, scalar: bool = False, chunk_elements: typing.SupportsInt | typing.SupportsIndex = 65536, precise: bool = False) -> metrics.MetricResult:
        ...
    @staticmethod
    def compare_many(pairs: list, metrics: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex] | None = None, threads: typing.SupportsInt | typing.SupportsIndex = 0, precise: bool = False) -> list:
        """
        Compare (x, y, scalar) source pairs; small pairs in parallel, large ones on all threads. Returns a MetricResult or the error text per pair.
        """
    @staticmethod
    def float32_windows(x: compare.TensorSource, y: compare.TensorSource, callback: collections.abc.Callable, threads: typing.SupportsInt | typing.SupportsIndex = 0, chunk_elements: typing.SupportsInt | typing.SupportsIndex = 65536) -> None:
        """
        Both sides' windows of chunk_elements in the compared order, decoded to float32 on up to `threads` threads: callback(window_index, x_window, y_window) (1-D float32 copies) once per window, in window order, on the calling thread. An exception in the callback stops the windows and is raised as it is.
        """
    @staticmethod
    def stats_many(sources: list, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> list:
        """
        Each source's statistics in one pass, in the compared order (its layout plan): a dict with count, max, min, mean, l2norm (float32 values, float64 sums; NaN in the tensor makes the four NaN) and nan_count, pos_inf_count, neg_inf_count, zero_count; or the error text of a source that could not be read.
        """
class detail:
    """Element-level detail files (export_detail) and how they print values."""
    class OutputError(OSError):
        pass
    @staticmethod
    def file_count(count: typing.SupportsInt | typing.SupportsIndex, max_rows: typing.SupportsInt | typing.SupportsIndex) -> int:
        """
        Detail CSV files for `count` rows at `max_rows` rows a file (at least one).
        """
    @staticmethod
    def format_fixed6(value: typing.SupportsFloat | typing.SupportsIndex) -> str:
        """
        A value as the detail files print it: '%.6f', NaN as 'NaN', infinities as 'inf'/'-inf'.
        """
    @staticmethod
    def export_detail(x: compare.TensorSource, y: compare.TensorSource, *, shape: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], format: str = 'csv', csv_paths: collections.abc.Sequence[str] = [], max_rows: typing.SupportsInt | typing.SupportsIndex = 1000000, coordinate_header: str = 'N C H W', npy_paths: collections.abc.Sequence[str] | None = None, summary_path: str = '', top_path: str = '', top_n: typing.SupportsInt | typing.SupportsIndex = 20, npu_name: str = '', ground_truth_name: str = '', layout_name: str = '', threads: typing.SupportsInt | typing.SupportsIndex = 0, block_rows: typing.SupportsInt | typing.SupportsIndex = 32768) -> dict:
        """
        Write the element-level detail of x (NPU dump) against y (ground truth); the dumpcmp.detail module names the files. Returns the summary numbers, the top lists as (index, npu, ground_truth, abs_error, rel_error or None) tuples and the files written. Nothing is left behind on error or Ctrl-C.
        """
class graph:
    """The compiler's graph JSON, read in one pass."""
    @staticmethod
    def read_graph_json(data: bytes, op_cls: typing.Any, desc_cls: typing.Any, ref_cls: typing.Any, attrs_as: typing.Any = None) -> tuple | str | None:
        """
        (ops, graph names, model name, in order, by name) of a graph JSON's bytes, the ops made as graph_json's Op, TensorDesc and InputRef records in file order, each op's position its place in the file, `in order` true when that is the execution order (by graph, then id), `by name` {name: op} in file order when no two ops share a name (else None); a str, the error's text after the file's name, for a document that is not a graph file as graph_json's rules say; None for text that is not JSON as dumpcmp.support.jsonfile reads it (invalid, too deep, an unpaired surrogate escape: jsonfile words why). `attrs_as`: None keeps each record's `attrs` dict; any other object is every record's `attrs` instead (the attributes still read and checked: the other fields and the errors are the same).
        """
class histogram:
    """Value ranges, histograms and the largest errors of tensors."""
    @staticmethod
    def value_range(source: compare.TensorSource, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> dict:
        """
        Pass one over a tensor: min and max of the finite values, counts of finite, NaN, +inf, -inf.
        """
    @staticmethod
    def histogram(source: compare.TensorSource, bins: typing.SupportsInt | typing.SupportsIndex, range: tuple[typing.SupportsFloat, typing.SupportsFloat] | None = None, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> dict:
        """
        Counts of the finite values in `bins` equal bins (numpy.histogram's) over `range` or the data's own range (then two passes), with the range and NaN/inf counts of the whole tensor.
        """
    @staticmethod
    def top_errors(x: compare.TensorSource, y: compare.TensorSource, n: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> list:
        """
        The n largest |x - y| (finite ones), largest first: (index, x, y, abs_error) tuples.
        """
class scan:
    """One folder of a dump tree listed and its names parsed (issue #35)."""
    @staticmethod
    def list_folder(folder: str, dump_entry: typing.Any, device_name: typing.Any, ffts_suffix: typing.Any, ground_truth_entry: typing.Any, framework_name: typing.Any, probe: bool = False, check_devices: bool = True) -> tuple:
        """
        (error, subdirs, skipped, others, devices, in_order, framework) of one folder, as the scan sees it: error the strerror text that stopped the listing (then the rest is None), else None; subdirs the names of its folders (links followed); skipped (name, reason) for special files, files that do not stat and dump or ground-truth names that are not readable; others the names of the other files, for the Python rules (mapping.csv, hashed, statistics, converted, names of no scheme, numbers past 64 bits); devices the DumpEntry of each device dump (the classes given), sorted by DumpEntry.order if in_order; framework the GroundTruthEntry of each {op_name}.{output_index}.{timestamp}.pb|quant|npy file, sorted by the bytes of {op_name}.{output_index}. Files named .dumpcmp-*.tmp are left out.
        With probe (does the folder hold a readable device dump?): when it does, devices is the first such
        entry alone and subdirs, skipped, others and framework are empty; else the whole answer.
        Without check_devices, device dumps are not checked readable (the caller opens each: its open says).
        """
    @staticmethod
    def parse_name(name: str, device_name: typing.Any, ffts_suffix: typing.Any, framework_name: typing.Any) -> typing.Any:
        """
        The device dump and framework name rules (naming.parse_name's, which calls this): `name` (no '/') as a device_name (with an ffts_suffix) or a framework_name (the classes given), or None if it is neither.
        """
    @staticmethod
    def read_records(entries: list, indent: typing.SupportsInt | typing.SupportsIndex = 0, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> list:
        """
        `dumpcmp info --json`'s records of device dumps (DumpEntry objects: path and parsed name), each header
        read here (in parallel, `threads` 0 = all cores) and its record written as jsonfile.dumps_text writes it, no
        DumpFile made for it: a list of (start, stop, text, None) for records [start, stop) joined by ',\\n'
        (every line after a record's first `indent` levels in), and (i, i + 1, None, the DumpFile or the error
        text) for a record left to Python (text that is not plain printable ASCII, numbers past 64 bits,
        OpDebug dumps) or a file that does not open, in order.
        """
class table:
    """The result file's CSV text made in the core (issue #35)."""
    @staticmethod
    def csv_text(rows: collections.abc.Iterable, safe: collections.abc.Callable, line_end: str) -> str:
        """
        Rows of cells as the csv module writes them (QUOTE_MINIMAL, ',' and '"', rows ending in `line_end`), each cell first passed through `safe` where its first character or a ';' says it may change it.
        """
    @staticmethod
    def formula_like(cell: str) -> bool:
        """
        A formula character (= + - % @ or a full-width = + -) at the start of `cell` or right after a ';', behind any TABs, CRs or LFs: what a spreadsheet would run (output/table.py csv_safe's rule).
        """
    @staticmethod
    def row_lines(rows: collections.abc.Sequence, algorithms: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], npu_address: bool, truth_address: bool, safe: collections.abc.Callable, line_end: str) -> str:
        """
        The result file's CSV lines of Row objects (Index to CompareFailReason, without OpSequence, OverFlow, custom or extra columns): `csv_text` of their cells, made from the rows' attributes in one call.
        """
__version__: str = '0.1.0'
