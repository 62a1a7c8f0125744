// The comparison metrics of the original compare tool, as streaming accumulators.
//
// x is "My Output" (the device side), y is "Ground Truth". Both sides reach the kernel as float32 values; the
// partials' sums are kept in double, and the default mode also keeps the original's float32 sums (NumPy 1.x's
// blocked pairwise sums, below), from which its printed metrics come. By default every per-element term (x*y, x^2, |x - y|, its square, |x/y - 1|, KLD's
// normalised and clamped values) is rounded to float32 element by element, as the original tool's NumPy float32
// arithmetic does, and the finished sums are rounded to float32 where the original's result is a float32; with
// `precise` the terms stay in double (the values of earlier dumpcmp versions).
// A tensor is cut into chunks by the caller; each chunk gives a MetricPartial, and partials are merged in chunk
// order, so a result depends on the chunk size but never on the number of threads.
//
// Two passes: pass 1 (accumulate/merge) gives every metric except KullbackLeiblerDivergence, whose min-max
// normalisation needs each side's min and max before it can start; pass 2 (accumulate_kld/merge) runs over the same
// chunks with the KldParams that pass 1 produced. A caller that does not want KLD skips pass 2.
//
// NaN or inf in the data reach the metrics as they reach NumPy's (NaN-propagating max, as np.max); printing spells
// such a computed value `nan`/`inf` as Python's "%.6f" does, and keeps `NaN` for "not computed".
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dumpcmp/dtype.hpp"

namespace dumpcmp {

inline constexpr double kMetricEps = 2.220446049250313e-16;        // float64 machine epsilon, the spec's EPS
inline constexpr double kKldFloorEps = 1.1920928955078125e-07;     // float32 epsilon: KLD's floor after normalising
inline constexpr int kMetricCount = 10;

// The spec's column order; the value is the `-alg` index.
enum class Metric : int {
    CosineSimilarity = 0,
    MaxAbsoluteError = 1,
    AccumulatedRelativeError = 2,
    RelativeEuclideanDistance = 3,
    KullbackLeiblerDivergence = 4,
    StandardDeviation = 5,
    MeanAbsoluteError = 6,
    RootMeanSquareError = 7,
    MaxRelativeError = 8,
    MeanRelativeError = 9,
};

// Bit i selects metric i.
using MetricMask = std::uint32_t;
inline constexpr MetricMask kAllMetrics = (1u << kMetricCount) - 1u;
constexpr MetricMask metric_bit(Metric m) noexcept { return 1u << static_cast<int>(m); }

// nullptr outside 0..9.
const char* metric_name(int index) noexcept;

// What one side contributes.
struct SidePartial {
    double mean = 0.0;     // of the elements seen (Chan's merge keeps it well conditioned)
    double m2 = 0.0;       // sum of squared deviations from `mean`
    double sum_sq = 0.0;   // sum of x^2 (cosine, RelativeEuclideanDistance, SQNR)
    double min = 0.0;      // NaN elements are left out; nan counts decide at the end
    double max = 0.0;
    std::uint64_t nan = 0;
    std::uint64_t pos_inf = 0;
    std::uint64_t neg_inf = 0;
};

// The original's float32 sums are NumPy 1.x's: `np.sum` of a contiguous float32 array reduces blocks of
// kF32SumBlock elements (the ufunc buffer), each with NumPy's pairwise summation in float32 (pairwise_sum_f32),
// and adds the block sums one after another in float32. The default mode keeps each block's float32 sums of the
// terms the original sums (F32BlockSums) and adds them in block order at the end; a chunk boundary must therefore
// fall on a multiple of kF32SumBlock elements for the sums to be the original's (the engine's windows do).
inline constexpr std::size_t kF32SumBlock = 8192;
// NumPy's pairwise float32 sum of a[0..n): fewer than 8 elements in order; up to 128 in eight interleaved partial
// sums r[j] += a[i + j], combined as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), the rest added in order;
// longer runs split at n/2 rounded down to a multiple of 8, the halves summed alike and added.
float pairwise_sum_f32(const float* a, std::size_t n) noexcept;
// NumPy 1.x's np.sum of a contiguous float32 array: pairwise_sum_f32 over blocks of kF32SumBlock, added in order.
float numpy_sum_f32(const float* a, std::size_t n) noexcept;

// One block's float32 sums of the original's per-element terms.
struct F32BlockSums {
    float rel = 0.0f;  // |x/y - 1| where |y| > EPS, else 0
    float ad = 0.0f;   // |x - y|
    float sd = 0.0f;   // (x - y)^2
    float xx = 0.0f;   // x^2
    float yy = 0.0f;   // y^2
};

// Pass-1 accumulator of one chunk (or of several merged). Value-initialised = empty.
struct MetricPartial {
    std::uint64_t count = 0;
    SidePartial x, y;
    double sum_xy = 0.0;
    double sum_abs_diff = 0.0;   // sum |x - y|
    double sum_sq_diff = 0.0;    // sum (x - y)^2
    double max_abs_diff = 0.0;   // NaN-propagating
    double sum_rel = 0.0;        // sum of (|x/y - 1| where |y| > EPS, else 0)
    double max_rel = 0.0;        // NaN-propagating
    std::vector<F32BlockSums> f32_blocks;  // default mode only: one entry per kF32SumBlock elements, in order
};

// Fold n element pairs into `into` (which may already hold earlier elements).
void accumulate(const float* x, const float* y, std::size_t n, MetricPartial& into, bool precise = false);
// `into` followed by `next`, in that order: merging partials in chunk order makes results reproducible.
void merge(MetricPartial& into, const MetricPartial& next);

// Pass 2: the KLD sums over min-max normalised values p = max((x - offset) / divisor, kKldFloorEps), same for q.
struct KldParams {
    bool needed = false;  // false when pass 1 already decides KLD (NaN/inf data, nothing to compare)
    bool precise = false; // float64 terms; otherwise (x - offset) / divisor and the clamp are float32 operations
    double offset_x = 0.0, divisor_x = 1.0;
    double offset_y = 0.0, divisor_y = 1.0;
    // The default mode's exact passes (the engine runs them; 0 = the sums above only, as `precise` does):
    // stage 1 keeps the float32 block sums of p and q (when `kld`) and of the cosine's terms
    // float32(x / nx) * float32(y / ny) (when `cosine`); stage 2 those of P log(P / Q) with P = float32(p / sp32),
    // Q = float32(q / sq32), every operation in float32, as the original's NumPy code does.
    int stage = 0;
    bool kld = false, cosine = false;
    float nx32 = 0.0f, ny32 = 0.0f;  // the cosine's float32 norms
    float sp32 = 0.0f, sq32 = 0.0f;  // stage 2: the float32 sums of p and q
};
struct KldPartial {
    double sum_p = 0.0;
    double sum_q = 0.0;
    double sum_p_log_pq = 0.0;  // sum p * log(p / q); KLD = that / sum_p + log(sum_q / sum_p)
    // The exact stages' float32 block sums (one per kF32SumBlock elements, in order): p, q, cosine terms, KLD terms.
    std::vector<float> p_blocks, q_blocks, c_blocks, t_blocks;
};
// The float32 sum of a stage's block sums, added in order (NumPy 1.x's blocks).
float fold_blocks(const std::vector<float>& blocks) noexcept;
// The default mode's cosine norms when its terms are to be summed (finite data, neither side zero): nx32, ny32.
bool cosine_terms_wanted(const MetricPartial& pass1, float& nx32, float& ny32);

// An all-zero side is no exception: its values are all clamped to kKldFloorEps (a uniform distribution).
KldParams kld_params(const MetricPartial& pass1, bool precise = false) noexcept;
void accumulate_kld(const float* x, const float* y, std::size_t n, const KldParams& params, KldPartial& into);
void merge(KldPartial& into, const KldPartial& next);

struct MetricOptions {
    MetricMask metrics = kAllMetrics;  // metrics left out come back NaN
    bool scalar = false;               // a 0-d tensor: CosineSimilarity is 1
    bool both_bool = false;            // both sides BOOL: only CosineSimilarity and RelativeEuclideanDistance
    bool precise = false;              // the partials hold float64 terms: no float32 rounding of the results
};

struct MetricResult {
    MetricMask metrics = 0;  // the selection the result was made for
    MetricMask undefined = 0;  // selected but not computed (an all-zero side's cosine): printed `NaN`
    bool cosine_zero_norms = false;  // both norms below EPS: cosine 1, which the original prints as "1.0"
    bool scalar = false;
    bool precise = false;
    bool both_bool = false;
    // Indexed by Metric. values[StandardDeviation] is NaN: that metric is the four numbers below.
    std::array<double, kMetricCount> values{};
    double mean_x = 0.0, std_x = 0.0, mean_y = 0.0, std_y = 0.0;  // population (ddof 0)
    double mse = 0.0;
    double sqnr_db = 0.0;  // 10*log10(sum y^2 / sum (x-y)^2); +inf when x == y
    double min_x = 0.0, max_x = 0.0, min_y = 0.0, max_y = 0.0;
    std::uint64_t count = 0;
    std::uint64_t nan_x = 0, inf_x = 0, nan_y = 0, inf_y = 0;

    double value(Metric m) const noexcept { return values[static_cast<std::size_t>(m)]; }
};

// `kld` is the pass-2 total, or nullptr when pass 2 was not run (KLD is then NaN unless params said not needed).
MetricResult finalize(const MetricPartial& pass1, const KldPartial* kld, const MetricOptions& options);

// The original tool's printed form of metric `index`: "%.6f" (a computed NaN or inf as Python prints it: `nan`,
// `inf`, `-inf`), `NaN` for a metric not computed (not selected, bool tensors, an all-zero side's cosine, no
// elements), the cosine of two zero norms as the original's literal "1.0", KLD below EPS as 0, StandardDeviation as "(mean_x;std_x),(mean_y;std_y)" with 3 decimals and
// |v| < 0.001 as 0. Throws std::out_of_range for an index outside 0..9.
std::string format_metric(int index, const MetricResult& result);

// Whole tensors (the engine over two plain sources, engine.hpp): windows of `chunk_elements` read in place or
// decoded into per-thread buffers (memory independent of n), partials merged in window order, pass 2 only when
// KLD is selected and needed.
inline constexpr std::size_t kDefaultChunkElements = std::size_t{1} << 16;

struct CompareOptions {
    MetricMask metrics = kAllMetrics;
    unsigned threads = 0;  // 0 = num_threads()
    bool scalar = false;
    bool precise = false;  // float64 per-element terms instead of the original's float32 ones
    // Results depend on the window size (rounding), never on threads. A side decoded through tile transposes whose
    // rows exceed it gets windows of whole tile blocks instead (engine.cpp), up to 4 Mi elements.
    std::size_t chunk_elements = kDefaultChunkElements;
};

// Pass 1 and pass 2 over elements [first, first + n) of two tensors in storage (any alignment): float32 and
// float16 are read in place (float16 decoded in registers), other types decoded through a per-thread buffer.
void accumulate_stored(const std::uint8_t* x, DataType tx, const std::uint8_t* y, DataType ty, std::uint64_t first,
                       std::size_t n, MetricPartial& into, bool precise = false);
void accumulate_kld_stored(const std::uint8_t* x, DataType tx, const std::uint8_t* y, DataType ty,
                           std::uint64_t first, std::size_t n, const KldParams& params, KldPartial& into);

// `x`/`y` point at n elements of their data types in device storage (any alignment). Both sides BOOL switches
// to the bool rules. Throws std::invalid_argument for a type without numeric value or a zero chunk size.
// (Defined with the streaming engine, engine.cpp: it is the engine over two plain sources.)
MetricResult compare(const std::uint8_t* x, DataType tx, const std::uint8_t* y, DataType ty, std::uint64_t n,
                     const CompareOptions& options = {});

// The memory-read probe of the benchmarks: sums `bytes` bytes as 64-bit words on `threads` threads.
std::uint64_t read_probe(const std::uint8_t* data, std::uint64_t bytes, unsigned threads);

}  // namespace dumpcmp
