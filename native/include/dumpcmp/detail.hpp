// Single-operator detail export: every element of one compared tensor pair, as CSV text or .npy columns.
//
// x is the NPU dump side, y the ground truth; both are TensorSources already in the compared order (the plain
// NCHW/NCDHW order, a device layout decoded by the source's plan). The element range is cut into blocks of a fixed
// number of rows; threads take blocks in order, decode and format one block at a time into their own buffer, and
// append it to its file when every earlier block has been written, so memory is a few blocks per thread whatever
// the tensor size, and the files do not depend on the thread count.
//
// Every file is first written under a temporary name in the same folder and renamed only when all of them are
// complete: an error or a cancellation leaves no partial files behind.
//
// Cells: values are the float32 values both sides were decoded to, printed like "%.6f" (exactly rounded, as printf
// does); NaN is "NaN", infinities "inf" and "-inf" (the metrics' spelling). AbsoluteError is |x - y| and
// RelativeError |x - y| / |y|, both evaluated in double from the float32 values; RelativeError is undefined ("-" in
// CSV, NaN in .npy) where the ground truth is 0, NaN or inf.
#pragma once
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "dumpcmp/source.hpp"

namespace dumpcmp {

// An output file that cannot be created, written or renamed. The message names the file and the system's reason.
class OutputError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The export was cancelled through DetailOptions::cancel; no file was left behind.
class DetailCancelled : public std::runtime_error {
public:
    DetailCancelled() : std::runtime_error("detail export cancelled") {}
};

enum class DetailFormat { csv, npy };

// The .npy columns, in this order in DetailOptions::npy_paths.
enum class NpyColumn : int { index = 0, coordinates, npu, ground_truth, abs_error, rel_error };
inline constexpr std::size_t kNpyColumns = 6;

inline constexpr std::uint64_t kDefaultDetailRows = 1000000;   // the original tool's rows per CSV file
inline constexpr std::size_t kDefaultDetailBlockRows = 1 << 15;

struct DetailOptions {
    // Coordinates: the compared shape, padded with trailing 1s to at least 4 axes. Its product must equal count().
    std::vector<std::int64_t> shape;
    DetailFormat format = DetailFormat::csv;
    // CSV: the final paths of the detail files, file k holding rows [k * max_rows, (k + 1) * max_rows); their number
    // must be detail_file_count(count, max_rows). The caller names them (file name rules live in Python).
    std::vector<std::string> csv_paths;
    std::uint64_t max_rows = kDefaultDetailRows;
    std::string coordinate_header = "N C H W";  // the second CSV column's title
    // npy: one path per NpyColumn.
    std::array<std::string, kNpyColumns> npy_paths;
    std::string summary_path;  // empty: no summary file
    std::string top_path;      // empty: no top-N file
    std::size_t top_n = 20;
    // The summary's NPUDump, GroundTruth and Format lines.
    std::string npu_name, ground_truth_name, layout_name;
    unsigned threads = 0;  // 0 = num_threads()
    std::size_t block_rows = kDefaultDetailBlockRows;  // rows formatted at a time by one thread
    const std::atomic<bool>* cancel = nullptr;  // polled between blocks; set -> DetailCancelled
};

// One element of a top-N list.
struct DetailEntry {
    std::uint64_t index = 0;  // flat index in the compared order
    float npu = 0.0f, ground_truth = 0.0f;
    double abs_error = 0.0;
    double rel_error = 0.0;   // NaN where undefined
    bool rel_defined = false;
};

struct DetailSummary {
    std::uint64_t total_count = 0;
    // Over all elements, NaN-propagating (a NaN error anywhere makes both NaN, as np.min/np.max). NaN when empty.
    double min_abs_error = 0.0, max_abs_error = 0.0;
    // Over the elements whose relative error is defined; NaN when there is none.
    double min_rel_error = 0.0, max_rel_error = 0.0;
    std::uint64_t rel_count = 0;  // elements with a defined relative error
};

struct DetailResult {
    DetailSummary summary;
    // Largest first; NaN counts as larger than any number (an element that became NaN is the worst error); ties go
    // to the lower flat index. top_rel holds only elements whose relative error is defined.
    std::vector<DetailEntry> top_abs, top_rel;
    std::vector<std::string> files;  // every file written, final paths
};

// Detail files a tensor of `count` elements needs at `max_rows` rows per file (at least one: an empty tensor gets
// a file with just the header). Throws std::invalid_argument for max_rows == 0.
std::uint64_t detail_file_count(std::uint64_t count, std::uint64_t max_rows);

// Writes everything DetailOptions asks for. Throws std::invalid_argument for inconsistent options (counts, shape,
// paths), OutputError for I/O failures, DetailCancelled on cancellation; in every case no output file is left.
// Existing files at the final paths are replaced: whether that is allowed is the caller's decision.
DetailResult export_detail(const TensorSource& x, const TensorSource& y, const DetailOptions& options);

// The "%.6f" text of v with NaN/inf spelled as the detail files do; writes at most kMaxFixedChars characters at
// `out` and returns the end. Exposed for tests.
inline constexpr std::size_t kMaxFixedChars = 320;  // -1.8e308 in fixed notation with 6 decimals fits
char* format_fixed6(double v, char* out);

}  // namespace dumpcmp
