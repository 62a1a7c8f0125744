#include "dumpcmp/detail.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "dumpcmp/parallel.hpp"
#include "dumpcmp/safe_file.hpp"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the .npy writer declares little-endian columns"
#endif

namespace dumpcmp {

namespace {

// ---------------------------------------------------------------------------------------------------------------
// Text

constexpr char kDigitPairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

char* put_u64(std::uint64_t v, char* out) {
    return std::to_chars(out, out + 20, v).ptr;
}

// Exactly six digits, zero-padded.
char* put_six(std::uint32_t v, char* out) {
    const std::uint32_t hi = v / 10000, mid = (v / 100) % 100, lo = v % 100;
    std::memcpy(out, kDigitPairs + 2 * hi, 2);
    std::memcpy(out + 2, kDigitPairs + 2 * mid, 2);
    std::memcpy(out + 4, kDigitPairs + 2 * lo, 2);
    return out + 6;
}

// Values below this print through exact 128-bit integer arithmetic; larger ones through std::to_chars.
constexpr double kFastFixedLimit = 17592186044416.0;  // 2^44: |v| * 10^6 stays below 2^64

}  // namespace

char* format_fixed6(double v, char* out) {
    if (std::isnan(v)) {
        std::memcpy(out, "NaN", 3);
        return out + 3;
    }
    if (std::isinf(v)) {
        if (v < 0) *out++ = '-';
        std::memcpy(out, "inf", 3);
        return out + 3;
    }
    const double a = std::fabs(v);
    if (!(a < kFastFixedLimit)) return std::to_chars(out, out + kMaxFixedChars, v, std::chars_format::fixed, 6).ptr;
    // a = m * 2^e exactly; a * 10^6 rounded half to even is what printf("%.6f") prints (it rounds the exact binary
    // value in the default rounding mode), and std::to_chars agrees.
    if (std::signbit(v)) *out++ = '-';
    std::uint64_t bits;
    std::memcpy(&bits, &a, sizeof bits);
    const auto biased = static_cast<unsigned>(bits >> 52);
    std::uint64_t scaled = 0;  // a * 10^6 rounded; zero and subnormals stay 0
    if (biased != 0) {
        // a = m / 2^shift with a 53-bit m; a < 2^44 makes shift >= 9, and from 2^-67 down the sixth decimal is 0
        const std::uint64_t m = (bits & ((std::uint64_t{1} << 52) - 1)) | (std::uint64_t{1} << 52);
        const unsigned shift = 1075u - biased;
        if (shift < 120) {
            const unsigned __int128 p = static_cast<unsigned __int128>(m) * 1000000u;
            const unsigned __int128 q = p >> shift;
            const unsigned __int128 r = p - (q << shift);
            const unsigned __int128 half = static_cast<unsigned __int128>(1) << (shift - 1);
            scaled = static_cast<std::uint64_t>(q);
            if (r > half || (r == half && (scaled & 1u))) ++scaled;
        }
    }
    out = put_u64(scaled / 1000000u, out);
    *out++ = '.';
    return put_six(static_cast<std::uint32_t>(scaled % 1000000u), out);
}

std::uint64_t detail_file_count(std::uint64_t count, std::uint64_t max_rows) {
    if (max_rows == 0) throw std::invalid_argument("a detail file holds at least one row");
    return count == 0 ? 1 : (count + max_rows - 1) / max_rows;
}

namespace {

// ---------------------------------------------------------------------------------------------------------------
// Errors and output files

[[noreturn]] void fail_io(const std::string& path, const char* doing, int err) {
    throw OutputError(path + ": cannot " + doing + ": " + std::strerror(err));
}

std::string folder_of(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) return ".";
    if (slash == 0) return "/";
    return path.substr(0, slash);
}

// Short names in the final folder (a final name may already be 254 characters, so "final + suffix" could be too
// long), unique per process and export.
std::atomic<std::uint64_t> g_export_serial{0};

class OutFile {
public:
    OutFile() = default;
    OutFile(const OutFile&) = delete;
    OutFile& operator=(const OutFile&) = delete;
    ~OutFile() {
        if (fd_ >= 0) ::close(fd_);
    }

    // `final_path` is only for messages; data goes to `temp_path`.
    void create(const std::string& temp_path, const std::string& final_path) {
        final_ = final_path;
        fd_ = create_exclusive(temp_path);  // never through a planted symlink, never over an existing file
        if (fd_ < 0) fail_io(final_path, "create the file", errno);
    }
    void write_all(const char* p, std::size_t n) {
        while (n > 0) {
            const ssize_t w = ::write(fd_, p, n);
            if (w < 0) {
                if (errno == EINTR) continue;
                fail_io(final_, "write", errno);
            }
            p += w;
            n -= static_cast<std::size_t>(w);
        }
    }
    void pwrite_all(const void* data, std::size_t n, std::uint64_t offset) {
        const char* p = static_cast<const char*>(data);
        while (n > 0) {
            const ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
            if (w < 0) {
                if (errno == EINTR) continue;
                fail_io(final_, "write", errno);
            }
            p += w;
            n -= static_cast<std::size_t>(w);
            offset += static_cast<std::uint64_t>(w);
        }
    }
    void close() {
        if (fd_ < 0) return;
        const int fd = fd_;
        fd_ = -1;
        // a delayed write error (NFS, quota) shows up here
        if (::close(fd) != 0 && errno != EINTR) fail_io(final_, "write", errno);
    }

private:
    int fd_ = -1;
    std::string final_;
};

// The temporary names of one export, and their fate: renamed on commit, removed otherwise.
class TempSet {
public:
    explicit TempSet(std::vector<std::string> finals) : finals_(std::move(finals)) {
        serial_ = g_export_serial.fetch_add(1);
        token_ = random_token();
        created_.assign(finals_.size(), 0);
    }
    TempSet(const TempSet&) = delete;
    TempSet& operator=(const TempSet&) = delete;
    ~TempSet() {
        if (committed_) return;
        for (std::size_t k = 0; k < finals_.size(); ++k)
            if (created_[k]) ::unlink(temp(k).c_str());
    }

    std::string temp(std::size_t k) const {
        return folder_of(finals_[k]) + "/.dumpcmp-core-" + std::to_string(::getpid()) + "-" + token_ + "-" +
               std::to_string(serial_) + "-" + std::to_string(k) + ".tmp";
    }
    const std::string& final_path(std::size_t k) const { return finals_[k]; }
    // Marked before the open, so a failed open is also cleaned up (unlink of a missing file is harmless).
    void mark_created(std::size_t k) { created_[k] = 1; }

    void commit() {
        for (std::size_t k = 0; k < finals_.size(); ++k) {
            if (!created_[k]) throw std::logic_error("detail export: file " + finals_[k] + " was never written");
            if (::rename(temp(k).c_str(), finals_[k].c_str()) != 0) {
                const int err = errno;
                // leave no half-renamed set: the ones already renamed go too
                for (std::size_t j = 0; j < k; ++j) ::unlink(finals_[j].c_str());
                for (std::size_t j = k; j < finals_.size(); ++j) ::unlink(temp(j).c_str());
                committed_ = true;
                fail_io(finals_[k], "rename the finished file into place", err);
            }
        }
        committed_ = true;
    }

private:
    std::vector<std::string> finals_;
    std::vector<char> created_;
    std::uint64_t serial_ = 0;
    std::string token_;  // unpredictable: a name cannot be planted ahead
    bool committed_ = false;
};

// ---------------------------------------------------------------------------------------------------------------
// Errors and top lists

// NaN ranks above every number; equal errors go to the lower index.
inline bool ranks_before(double ea, std::uint64_t ia, double eb, std::uint64_t ib) noexcept {
    const bool an = std::isnan(ea), bn = std::isnan(eb);
    if (an || bn) return an && bn ? ia < ib : an;
    if (ea != eb) return ea > eb;
    return ia < ib;
}

struct EntryBefore {
    bool by_rel;
    double key(const DetailEntry& e) const noexcept { return by_rel ? e.rel_error : e.abs_error; }
    bool operator()(const DetailEntry& a, const DetailEntry& b) const noexcept {
        return ranks_before(key(a), a.index, key(b), b.index);
    }
};

// The best `n` entries seen so far; front() is the one that goes first when a better entry comes.
class TopHeap {
public:
    TopHeap(std::size_t n, bool by_rel) : n_(n), before_{by_rel} { heap_.reserve(n); }
    void offer(const DetailEntry& e) {
        if (n_ == 0) return;
        if (heap_.size() < n_) {
            heap_.push_back(e);
            std::push_heap(heap_.begin(), heap_.end(), before_);
        } else if (before_(e, heap_.front())) {
            std::pop_heap(heap_.begin(), heap_.end(), before_);
            heap_.back() = e;
            std::push_heap(heap_.begin(), heap_.end(), before_);
        }
    }
    // Cheap pre-check for the hot loop: could an entry with this error and index get in?
    bool wants(double err, std::uint64_t index) const noexcept {
        if (n_ == 0) return false;
        if (heap_.size() < n_) return true;
        const DetailEntry& w = heap_.front();
        return ranks_before(err, index, before_.key(w), w.index);
    }
    const std::vector<DetailEntry>& entries() const noexcept { return heap_; }

private:
    std::size_t n_;
    EntryBefore before_;
    std::vector<DetailEntry> heap_;
};

// NaN-propagating min/max, as np.min/np.max.
struct Range {
    double lo = std::numeric_limits<double>::infinity();
    double hi = -std::numeric_limits<double>::infinity();
    bool nan = false;
    std::uint64_t count = 0;
    void add(double v) noexcept {
        ++count;
        if (std::isnan(v)) {
            nan = true;
            return;
        }
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    void merge(const Range& o) noexcept {
        count += o.count;
        nan = nan || o.nan;
        lo = std::min(lo, o.lo);
        hi = std::max(hi, o.hi);
    }
    double min() const noexcept { return count == 0 || nan ? std::numeric_limits<double>::quiet_NaN() : lo; }
    double max() const noexcept { return count == 0 || nan ? std::numeric_limits<double>::quiet_NaN() : hi; }
};

// ---------------------------------------------------------------------------------------------------------------
// Coordinates: an odometer over the padded shape that keeps the text of all axes but the last.

class Coordinates {
public:
    explicit Coordinates(const std::vector<std::int64_t>& dims) : dims_(dims), at_(dims.size(), 0) {}

    void seek(std::uint64_t flat) {
        for (std::size_t a = dims_.size(); a-- > 0;) {
            const auto d = static_cast<std::uint64_t>(dims_[a]);
            at_[a] = static_cast<std::int64_t>(d == 0 ? 0 : flat % d);
            flat = d == 0 ? 0 : flat / d;
        }
        rebuild();
    }
    void next() {
        std::size_t a = dims_.size() - 1;
        if (++at_[a] < dims_[a]) return;
        at_[a] = 0;
        while (a-- > 0) {
            if (++at_[a] < dims_[a]) break;
            at_[a] = 0;
        }
        rebuild();
    }
    char* put(char* out) const {
        std::memcpy(out, lead_, lead_len_);
        return put_u64(static_cast<std::uint64_t>(at_.back()), out + lead_len_);
    }
    const std::vector<std::int64_t>& at() const noexcept { return at_; }

private:
    void rebuild() {
        char* p = lead_;
        for (std::size_t a = 0; a + 1 < at_.size(); ++a) {
            p = put_u64(static_cast<std::uint64_t>(at_[a]), p);
            *p++ = ' ';
        }
        lead_len_ = static_cast<std::size_t>(p - lead_);
    }

    std::vector<std::int64_t> dims_;
    std::vector<std::int64_t> at_;
    char lead_[21 * 64];
    std::size_t lead_len_ = 0;
};

constexpr std::size_t kMaxAxes = 64;

std::string coordinates_text(const std::vector<std::int64_t>& dims, std::uint64_t flat) {
    Coordinates c(dims);
    c.seek(flat);
    char buf[21 * kMaxAxes + 21];
    return std::string(buf, c.put(buf));
}

// ---------------------------------------------------------------------------------------------------------------
// .npy

std::string npy_header(const char* descr, std::uint64_t rows, std::size_t cols) {
    std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + (cols == 0 ? std::string(",") : ", " + std::to_string(cols)) + "), }";
    // magic (6) + version (2) + length (2) + dict + padding + '\n', a multiple of 64 as numpy writes it
    const std::size_t unpadded = 10 + dict.size() + 1;
    dict.append((64 - unpadded % 64) % 64, ' ');
    dict.push_back('\n');
    std::string h("\x93NUMPY\x01\x00", 8);
    const auto len = static_cast<std::uint16_t>(dict.size());
    h.push_back(static_cast<char>(len & 0xff));
    h.push_back(static_cast<char>(len >> 8));
    return h + dict;
}

// ---------------------------------------------------------------------------------------------------------------
// The export

struct FilePlan {
    std::uint64_t n = 0;
    std::uint64_t files = 1;
    std::uint64_t rows_per_file = 0;
    std::uint64_t blocks_per_full_file = 1;
    std::uint64_t blocks = 0;
    std::size_t block_rows = 0;

    // Rows of block b: its file, its first row, its row count; `first_of_file`/`last_of_file` for open/close.
    struct Block {
        std::uint64_t file, first;
        std::size_t rows;
        bool first_of_file, last_of_file;
    };
    std::uint64_t file_rows(std::uint64_t f) const {
        return std::min(rows_per_file, n - std::min(n, f * rows_per_file));
    }
    std::uint64_t file_blocks(std::uint64_t f) const {
        const std::uint64_t r = file_rows(f);
        return r == 0 ? 1 : (r + block_rows - 1) / block_rows;
    }
    Block block(std::uint64_t b) const {
        const std::uint64_t f = b / blocks_per_full_file, j = b % blocks_per_full_file;
        const std::uint64_t first = f * rows_per_file + j * block_rows;
        const std::uint64_t end = std::min({first + block_rows, (f + 1) * rows_per_file, n});
        return {f, first, static_cast<std::size_t>(end > first ? end - first : 0), j == 0, j + 1 == file_blocks(f)};
    }
};

FilePlan make_file_plan(std::uint64_t n, std::uint64_t rows_per_file, std::size_t block_rows) {
    FilePlan p;
    p.n = n;
    p.rows_per_file = rows_per_file;
    p.block_rows = block_rows;
    p.files = detail_file_count(n, rows_per_file);
    p.blocks_per_full_file = (rows_per_file + block_rows - 1) / block_rows;
    p.blocks = (p.files - 1) * p.blocks_per_full_file + p.file_blocks(p.files - 1);
    return p;
}

struct Worker {
    Worker(std::size_t top_n) : top_abs(top_n, false), top_rel(top_n, true) {}
    SourceScratch sx, sy;
    std::vector<double> abs_err, rel_err;
    std::vector<char> text;
    std::vector<std::int64_t> index_col;
    std::vector<std::int32_t> coord32;
    std::vector<std::int64_t> coord64;
    std::vector<float> f32;
    Range abs_range, rel_range;
    std::uint64_t rel_count = 0;  // elements with a defined relative error
    TopHeap top_abs, top_rel;
};

// Beyond float32's range the cast is undefined behaviour; the column holds inf there, as NumPy's cast does.
inline float to_float32(double v) noexcept {
    constexpr double top = std::numeric_limits<float>::max();
    if (v > top || v < -top) {
        // values that round to FLT_MAX under round-to-nearest still do
        const double limit = 3.4028235677973366e+38;  // FLT_MAX + half an ulp
        if (v < limit && v > -limit) return v > 0 ? std::numeric_limits<float>::max() : -std::numeric_limits<float>::max();
        return v > 0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
    }
    return static_cast<float>(v);
}

// The original tool's element errors, in float32 as NumPy computes them on float32 arrays: |x - y| and
// |x - y| / |y|. The relative error is shown where it is finite (not where the ground truth is 0, or an inf/NaN
// makes it inf or NaN).
inline float abs_error32(float x, float y) noexcept { return std::fabs(x - y); }
inline float rel_error32(float x, float y) noexcept { return abs_error32(x, y) / std::fabs(y); }
inline bool rel_defined(float x, float y) noexcept { return std::isfinite(rel_error32(x, y)); }

// Errors of one block into w.abs_err / w.rel_err (NaN where undefined), folded into ranges and top lists. The
// summary's ranges count an inf or NaN error as 0, as the original's nan_to_num does before its min and max.
void block_errors(const float* xs, const float* ys, std::size_t n, std::uint64_t first, Worker& w) {
    if (w.abs_err.size() < n) {
        w.abs_err.resize(n);
        w.rel_err.resize(n);
    }
    for (std::size_t i = 0; i < n; ++i) {
        const double ae = abs_error32(xs[i], ys[i]);
        w.abs_err[i] = ae;
        w.abs_range.add(std::isfinite(ae) ? ae : 0.0);
        double re = std::numeric_limits<double>::quiet_NaN();
        const bool defined = rel_defined(xs[i], ys[i]);
        const double re32 = rel_error32(xs[i], ys[i]);
        w.rel_range.add(std::isfinite(re32) ? re32 : 0.0);
        if (defined) {
            re = re32;
            ++w.rel_count;
        }
        w.rel_err[i] = re;
        const std::uint64_t idx = first + i;
        if (w.top_abs.wants(ae, idx)) w.top_abs.offer({idx, xs[i], ys[i], ae, re, defined});
        if (defined && w.top_rel.wants(re, idx)) w.top_rel.offer({idx, xs[i], ys[i], ae, re, defined});
    }
}

// The longest row: index, axes, four values and separators.
std::size_t max_row_chars(std::size_t axes) { return 21 + 21 * axes + 4 * (kMaxFixedChars + 2) + 8; }

// Python's '%.6f': as format_fixed6, with NaN as 'nan'.
char* format_py6(double v, char* out) {
    if (std::isnan(v)) {
        std::memcpy(out, "nan", 3);
        return out + 3;
    }
    return format_fixed6(v, out);
}

// Rows of one block into w.text; returns the characters written.
std::size_t format_rows(const float* xs, const float* ys, std::size_t n, std::uint64_t first, Coordinates& coords,
                        Worker& w, std::size_t row_limit) {
    coords.seek(first);
    std::vector<char>& t = w.text;
    std::size_t used = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (t.size() - used < row_limit) t.resize(std::max(t.size() * 2, used + row_limit));
        char* p = t.data() + used;
        p = put_u64(first + i, p);
        *p++ = ',';
        p = coords.put(p);
        *p++ = ',';
        // As the original writes them: a TAB after every number; an inf or NaN absolute error reads nan, an
        // undefined relative error '-' (no TAB).
        p = format_py6(xs[i], p);
        *p++ = '\t';
        *p++ = ',';
        p = format_py6(ys[i], p);
        *p++ = '\t';
        *p++ = ',';
        const double ae = w.abs_err[i];
        p = std::isfinite(ae) ? format_py6(ae, p) : format_py6(std::numeric_limits<double>::quiet_NaN(), p);
        *p++ = '\t';
        *p++ = ',';
        if (rel_defined(xs[i], ys[i])) {
            p = format_py6(w.rel_err[i], p);
            *p++ = '\t';
        } else {
            *p++ = '-';
        }
        *p++ = '\n';
        used = static_cast<std::size_t>(p - t.data());
        coords.next();
    }
    return used;
}

// Runs fn(worker, block) for every block on `threads` threads, blocks handed out in order. The first exception
// stops the others and is rethrown; `stop` lets waiting workers notice it.
template <class Fn>
void run_blocks(std::uint64_t blocks, unsigned threads, std::vector<Worker>& workers, std::atomic<bool>& stop,
                Fn&& fn) {
    std::atomic<std::uint64_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto work = [&](std::size_t wi) {
        for (;;) {
            const std::uint64_t b = next.fetch_add(1, std::memory_order_relaxed);
            if (b >= blocks || stop.load(std::memory_order_relaxed)) return;
            try {
                fn(workers[wi], b);
            } catch (...) {
                std::lock_guard<std::mutex> lock(error_mutex);
                if (!error) error = std::current_exception();
                stop.store(true);
                return;
            }
        }
    };
    ThreadGroup pool;  // a thread the system refuses leaves its blocks to the others (worker 0 always runs)
    for (unsigned i = 1; i < threads; ++i)
        if (!pool.spawn([&work, i] { work(i); })) break;
    work(0);
    pool.join();
    if (error) std::rethrow_exception(error);
}

void check_options(const TensorSource& x, const TensorSource& y, const DetailOptions& o,
                   std::vector<std::int64_t>& dims) {
    if (x.count() != y.count())
        throw std::invalid_argument("element counts differ: NPU dump " + std::to_string(x.count()) +
                                    ", ground truth " + std::to_string(y.count()));
    if (o.shape.size() > kMaxAxes) throw std::invalid_argument("a shape of more than 64 axes");
    std::uint64_t product = 1;
    for (std::int64_t d : o.shape) {
        if (d < 0) throw std::invalid_argument("negative dimension in the compared shape");
        product *= static_cast<std::uint64_t>(d);
    }
    if (product != x.count())
        throw std::invalid_argument("the compared shape has " + std::to_string(product) + " elements, the tensors " +
                                    std::to_string(x.count()));
    dims = o.shape;
    while (dims.size() < 4) dims.push_back(1);
    if (o.block_rows == 0) throw std::invalid_argument("a block holds at least one row");
    if (o.format == DetailFormat::csv) {
        const std::uint64_t files = detail_file_count(x.count(), o.max_rows);
        if (o.csv_paths.size() != files)
            throw std::invalid_argument(std::to_string(x.count()) + " rows at " + std::to_string(o.max_rows) +
                                        " a file need " + std::to_string(files) + " detail file names, got " +
                                        std::to_string(o.csv_paths.size()));
        if (o.coordinate_header.find_first_of(",\n\r") != std::string::npos)
            throw std::invalid_argument("the coordinate header cannot hold a comma or a line break");
    } else {
        for (const std::string& p : o.npy_paths)
            if (p.empty()) throw std::invalid_argument("every .npy column needs a path");
    }
}

std::vector<DetailEntry> sorted_top(const std::vector<Worker>& workers, bool by_rel, std::size_t n) {
    std::vector<DetailEntry> all;
    for (const Worker& w : workers) {
        const auto& e = (by_rel ? w.top_rel : w.top_abs).entries();
        all.insert(all.end(), e.begin(), e.end());
    }
    // a strict total order (indices are unique), so the merge does not depend on which worker held what
    std::sort(all.begin(), all.end(), EntryBefore{by_rel});
    if (all.size() > n) all.resize(n);
    return all;
}

std::string summary_text(const DetailSummary& s, const DetailOptions& o) {
    char buf[kMaxFixedChars + 1];
    auto num = [&](double v) { return std::string(buf, format_py6(v, buf)); };
    std::string t;
    t += "TotalCount:" + std::to_string(s.total_count) + "\n";
    t += "NPUDump:" + o.npu_name + "\n";
    t += "GroundTruth:" + o.ground_truth_name + "\n";
    t += "Format:" + o.layout_name + "\n";
    t += "MinAbsoluteError:" + num(s.min_abs_error) + "\n";
    t += "MaxAbsoluteError:" + num(s.max_abs_error) + "\n";
    t += "MinRelativeError:" + num(s.min_rel_error) + "\n";
    t += "MaxRelativeError:" + num(s.max_rel_error) + "\n";
    return t;
}

std::string top_text(const DetailResult& r, const std::vector<std::int64_t>& dims, const DetailOptions& o) {
    std::string t = "TopBy,Rank,Index," + o.coordinate_header + ",NPUDump,GroundTruth,AbsoluteError,RelativeError\n";
    char buf[kMaxFixedChars + 1];
    auto num = [&](double v) { return std::string(buf, format_fixed6(v, buf)); };
    auto rows = [&](const std::vector<DetailEntry>& list, const char* by) {
        for (std::size_t k = 0; k < list.size(); ++k) {
            const DetailEntry& e = list[k];
            t += std::string(by) + "," + std::to_string(k + 1) + "," + std::to_string(e.index) + "," +
                 coordinates_text(dims, e.index) + "," + num(e.npu) + "," + num(e.ground_truth) + "," +
                 num(e.abs_error) + "," + (e.rel_defined ? num(e.rel_error) : std::string("-")) + "\n";
        }
    };
    rows(r.top_abs, "AbsoluteError");
    rows(r.top_rel, "RelativeError");
    return t;
}

void write_small_file(TempSet& temps, std::size_t k, const std::string& text) {
    temps.mark_created(k);
    OutFile f;
    f.create(temps.temp(k), temps.final_path(k));
    f.write_all(text.data(), text.size());
    f.close();
}

void check_cancel(const DetailOptions& o) {
    if (o.cancel != nullptr && o.cancel->load(std::memory_order_relaxed)) throw DetailCancelled();
}

}  // namespace

DetailResult export_detail(const TensorSource& x, const TensorSource& y, const DetailOptions& o) {
    std::vector<std::int64_t> dims;
    check_options(x, y, o, dims);
    const std::uint64_t n = x.count();
    unsigned threads = o.threads == 0 ? num_threads() : o.threads;

    // Every final path, in commit order: data files, then summary and top list.
    std::vector<std::string> finals;
    if (o.format == DetailFormat::csv) {
        finals = o.csv_paths;
    } else {
        finals.assign(o.npy_paths.begin(), o.npy_paths.end());
    }
    const std::size_t summary_k = o.summary_path.empty() ? SIZE_MAX : finals.size();
    if (!o.summary_path.empty()) finals.push_back(o.summary_path);
    const std::size_t top_k = o.top_path.empty() ? SIZE_MAX : finals.size();
    if (!o.top_path.empty()) finals.push_back(o.top_path);
    TempSet temps(finals);

    std::vector<Worker> workers;
    std::atomic<bool> stop{false};

    if (o.format == DetailFormat::csv) {
        const FilePlan plan = make_file_plan(n, o.max_rows, static_cast<std::size_t>(std::min<std::uint64_t>(
                                                       o.block_rows, o.max_rows)));
        threads = static_cast<unsigned>(std::min<std::uint64_t>(threads, plan.blocks));
        workers.reserve(threads);
        for (unsigned i = 0; i < threads; ++i) workers.emplace_back(o.top_n);
        const std::string header = "Index," + o.coordinate_header + ",NPUDump,GroundTruth,AbsoluteError,RelativeError\n";
        const std::size_t row_limit = max_row_chars(dims.size());

        // Blocks are written strictly in order: the writer of block b waits for block b - 1.
        std::mutex turn_mutex;
        std::condition_variable turn_cv;
        std::uint64_t turn = 0;
        OutFile current;
        auto fail = [&] {
            {
                std::lock_guard<std::mutex> lock(turn_mutex);  // so a waiter cannot miss the wake-up
                stop.store(true);
            }
            turn_cv.notify_all();
        };
        run_blocks(plan.blocks, threads, workers, stop, [&](Worker& w, std::uint64_t b) {
            try {
                check_cancel(o);
                const FilePlan::Block blk = plan.block(b);
                std::size_t used = 0;
                if (blk.rows > 0) {
                    const float* xs = x.read_float32(blk.first, blk.rows, w.sx);
                    const float* ys = y.read_float32(blk.first, blk.rows, w.sy);
                    block_errors(xs, ys, blk.rows, blk.first, w);
                    Coordinates coords(dims);
                    used = format_rows(xs, ys, blk.rows, blk.first, coords, w, row_limit);
                }
                std::unique_lock<std::mutex> lock(turn_mutex);
                turn_cv.wait(lock, [&] { return turn == b || stop.load(); });
                if (turn != b) return;  // an earlier block failed: this one is never written
                if (blk.first_of_file) {
                    const auto k = static_cast<std::size_t>(blk.file);
                    temps.mark_created(k);
                    current.create(temps.temp(k), temps.final_path(k));
                    current.write_all(header.data(), header.size());
                }
                current.write_all(w.text.data(), used);
                if (blk.last_of_file) current.close();
                ++turn;
            } catch (...) {
                fail();
                throw;
            }
            turn_cv.notify_all();
        });
        current.close();
    } else {
        const std::size_t block_rows = o.block_rows;
        const std::uint64_t blocks = (n + block_rows - 1) / block_rows;
        threads = static_cast<unsigned>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(threads, blocks)));
        workers.reserve(threads);
        for (unsigned i = 0; i < threads; ++i) workers.emplace_back(o.top_n);
        const std::size_t axes = dims.size();
        const bool wide = std::any_of(dims.begin(), dims.end(),
                                      [](std::int64_t d) { return d > std::numeric_limits<std::int32_t>::max(); });
        std::array<OutFile, kNpyColumns> files;
        std::array<std::uint64_t, kNpyColumns> base{};
        const std::array<std::pair<const char*, std::size_t>, kNpyColumns> columns{{
            {"<i8", 0}, {wide ? "<i8" : "<i4", axes}, {"<f4", 0}, {"<f4", 0}, {"<f4", 0}, {"<f4", 0}}};
        for (std::size_t c = 0; c < kNpyColumns; ++c) {
            temps.mark_created(c);
            files[c].create(temps.temp(c), temps.final_path(c));
            const std::string h = npy_header(columns[c].first, n, columns[c].second);
            files[c].write_all(h.data(), h.size());
            base[c] = h.size();
        }
        run_blocks(blocks, threads, workers, stop, [&](Worker& w, std::uint64_t b) {
            check_cancel(o);
            const std::uint64_t first = b * block_rows;
            const auto rows = static_cast<std::size_t>(std::min<std::uint64_t>(block_rows, n - first));
            const float* xs = x.read_float32(first, rows, w.sx);
            const float* ys = y.read_float32(first, rows, w.sy);
            block_errors(xs, ys, rows, first, w);
            w.index_col.resize(rows);
            for (std::size_t i = 0; i < rows; ++i) w.index_col[i] = static_cast<std::int64_t>(first + i);
            files[0].pwrite_all(w.index_col.data(), rows * 8, base[0] + first * 8);
            Coordinates coords(dims);
            coords.seek(first);
            if (wide) {
                w.coord64.resize(rows * axes);
                for (std::size_t i = 0; i < rows; ++i, coords.next())
                    std::copy(coords.at().begin(), coords.at().end(), w.coord64.begin() + static_cast<std::ptrdiff_t>(i * axes));
                files[1].pwrite_all(w.coord64.data(), rows * axes * 8, base[1] + first * axes * 8);
            } else {
                w.coord32.resize(rows * axes);
                for (std::size_t i = 0; i < rows; ++i, coords.next())
                    for (std::size_t a = 0; a < axes; ++a)
                        w.coord32[i * axes + a] = static_cast<std::int32_t>(coords.at()[a]);
                files[1].pwrite_all(w.coord32.data(), rows * axes * 4, base[1] + first * axes * 4);
            }
            files[2].pwrite_all(xs, rows * 4, base[2] + first * 4);
            files[3].pwrite_all(ys, rows * 4, base[3] + first * 4);
            w.f32.resize(rows);
            for (std::size_t i = 0; i < rows; ++i) w.f32[i] = to_float32(w.abs_err[i]);
            files[4].pwrite_all(w.f32.data(), rows * 4, base[4] + first * 4);
            for (std::size_t i = 0; i < rows; ++i) w.f32[i] = to_float32(w.rel_err[i]);
            files[5].pwrite_all(w.f32.data(), rows * 4, base[5] + first * 4);
        });
        for (auto& f : files) f.close();
    }
    check_cancel(o);

    DetailResult r;
    Range abs_range, rel_range;
    std::uint64_t rel_count = 0;
    for (const Worker& w : workers) {
        abs_range.merge(w.abs_range);
        rel_range.merge(w.rel_range);
        rel_count += w.rel_count;
    }
    r.summary.total_count = n;
    r.summary.min_abs_error = abs_range.min();
    r.summary.max_abs_error = abs_range.max();
    r.summary.min_rel_error = rel_range.min();
    r.summary.max_rel_error = rel_range.max();
    r.summary.rel_count = rel_count;
    r.top_abs = sorted_top(workers, false, o.top_n);
    r.top_rel = sorted_top(workers, true, o.top_n);

    if (summary_k != SIZE_MAX) write_small_file(temps, summary_k, summary_text(r.summary, o));
    if (top_k != SIZE_MAX) write_small_file(temps, top_k, top_text(r, dims, o));
    check_cancel(o);
    temps.commit();
    r.files = finals;
    return r;
}

}  // namespace dumpcmp
