#include "dumpcmp/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "dumpcmp/parallel.hpp"

namespace dumpcmp {

namespace {

constexpr std::size_t kWindow = std::size_t{1} << 16;

// Work split: one task per thread, each taking every `tasks`-th window, with its own partial result; partials of
// integers and min/max merge to the same result whatever the thread count.
unsigned task_count(std::uint64_t n, unsigned threads) {
    if (threads == 0) threads = num_threads();
    const std::uint64_t windows = (n + kWindow - 1) / kWindow;
    return static_cast<unsigned>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(threads, windows)));
}

template <class PerWindow>
void for_windows(const TensorSource& s, unsigned task, unsigned tasks, PerWindow&& per_window) {
    SourceScratch scratch;
    const std::uint64_t n = s.count();
    for (std::uint64_t first = std::uint64_t{task} * kWindow; first < n; first += std::uint64_t{tasks} * kWindow) {
        const auto len = static_cast<std::size_t>(std::min<std::uint64_t>(kWindow, n - first));
        per_window(s.read_float32(first, len, scratch), len, first);
    }
}

void count_special(double v, ValueRange& r) {
    if (std::isnan(v)) {
        ++r.nan;
    } else if (v > 0) {
        ++r.pos_inf;
    } else {
        ++r.neg_inf;
    }
}

void merge(ValueRange& into, const ValueRange& part) {
    if (part.finite > 0) {
        if (into.finite == 0) {
            into.min = part.min;
            into.max = part.max;
        } else {
            into.min = std::min(into.min, part.min);
            into.max = std::max(into.max, part.max);
        }
    }
    into.finite += part.finite;
    into.nan += part.nan;
    into.pos_inf += part.pos_inf;
    into.neg_inf += part.neg_inf;
}

// numpy.histogram's bins: edges as np.linspace makes them (i * step + lo, the last exactly hi); a value's bin is
// estimated from its scaled offset and corrected against the edges, so it is the bin NumPy's own correction gives
// (edge[i] <= v < edge[i + 1], the last bin closed) whatever the rounding of the estimate.
struct Bins {
    double lo, hi, scale;
    std::size_t n;
    std::vector<double> edges;
    Bins(double lo_, double hi_, std::size_t n_)
        : lo(lo_), hi(hi_), scale(static_cast<double>(n_) / (hi_ - lo_)), n(n_), edges(n_ + 1) {
        const double step = (hi - lo) / static_cast<double>(n);
        for (std::size_t i = 0; i < n; ++i) edges[i] = static_cast<double>(i) * step + lo;
        edges[n] = hi;
    }
    // How far, in bins, the scaled offset and the computed edges can be from exact: a few ulps of the largest
    // magnitude in the range, measured in bin widths (large when the range is narrow next to its magnitude).
    double margin() const {
        const double eps = std::numeric_limits<double>::epsilon();
        const double magnitude = std::max(std::fabs(lo), std::fabs(hi));
        return 16.0 * eps * static_cast<double>(n) * (magnitude / (hi - lo) + 1.0);
    }
    // v in [lo, hi]. A value whose scaled offset lies farther than the margin from both edges of its bin is in that
    // bin; only one close to an edge is checked against the edges.
    std::size_t of(double v) const {
        const double t = (v - lo) * scale;
        auto i = static_cast<std::size_t>(static_cast<std::int64_t>(t));
        const double frac = t - static_cast<double>(i);
        if (frac > safe && frac < 1.0 - safe && i < n) return i;
        if (i >= n) i = n - 1;
        const double* e = edges.data();
        i -= static_cast<std::size_t>(v < e[i]);
        i += static_cast<std::size_t>(i != n - 1 && v >= e[i + 1]);
        return i;
    }
    double safe = margin();
};

// A window's range, careful path: the finite values' min/max and count, NaN/inf counted apart.
void window_range_checked(const float* v, std::size_t len, ValueRange& r) {
    double mn = std::numeric_limits<double>::infinity(), mx = -mn;
    std::uint64_t finite = 0;
    for (std::size_t i = 0; i < len; ++i) {
        const double d = v[i];
        if (std::isfinite(d)) {
            mn = d < mn ? d : mn;
            mx = d > mx ? d : mx;
            ++finite;
        } else {
            count_special(d, r);
        }
    }
    if (finite > 0) {
        ValueRange part;
        part.min = mn;
        part.max = mx;
        part.finite = finite;
        merge(r, part);
    }
}

// A window's range: a loop the compiler vectorizes (min, max and a count of values beyond the float range, in
// float32), and the careful loop only for windows holding NaN or inf.
void window_range(const float* v, std::size_t len, ValueRange& r) {
    constexpr float big = std::numeric_limits<float>::max();
    float mn = std::numeric_limits<float>::infinity(), mx = -mn;
    std::uint32_t special = 0;
    for (std::size_t i = 0; i < len; ++i) {
        const float x = v[i];
        mn = x < mn ? x : mn;
        mx = x > mx ? x : mx;
        special += !(x >= -big && x <= big);  // NaN and +-inf
    }
    if (special != 0) {
        window_range_checked(v, len, r);
        return;
    }
    if (len == 0) return;
    ValueRange part;
    part.min = mn;
    part.max = mx;
    part.finite = len;
    merge(r, part);
}

}  // namespace

ValueRange value_range(const TensorSource& s, unsigned threads) {
    const unsigned tasks = task_count(s.count(), threads);
    std::vector<ValueRange> parts(tasks);
    parallel_for(tasks, [&](std::size_t t) {
        ValueRange& r = parts[t];
        for_windows(s, static_cast<unsigned>(t), tasks,
                    [&](const float* v, std::size_t len, std::uint64_t) { window_range(v, len, r); });
    }, tasks);
    ValueRange out;
    for (const auto& p : parts) merge(out, p);
    return out;
}

namespace {

// Pass two; `known`: the range pass one found (else it is counted along).
Histogram count_bins(const TensorSource& s, std::size_t bins, double lo, double hi, unsigned threads,
                     const ValueRange* known) {
    const Bins b(lo, hi, bins);
    const unsigned tasks = task_count(s.count(), threads);
    std::vector<Histogram> parts(tasks);
    parallel_for(tasks, [&](std::size_t t) {
        Histogram& h = parts[t];
        // two interleaved count arrays: runs of values in one bin do not wait on the previous increment
        std::vector<std::uint64_t> counts(2 * bins, 0);
        std::uint64_t* c0 = counts.data();
        std::uint64_t* c1 = c0 + bins;
        std::uint64_t below = 0, above = 0;
        for_windows(s, static_cast<unsigned>(t), tasks, [&](const float* v, std::size_t len, std::uint64_t) {
            if (known == nullptr) window_range(v, len, h.range);
            for (std::size_t i = 0; i < len; ++i) {
                const double d = v[i];
                if (!(d >= lo && d <= hi)) {  // NaN, inf and values outside the bins
                    below += d < lo;
                    above += d > hi;
                    continue;
                }
                ++((i & 1) ? c1 : c0)[b.of(d)];
            }
        });
        h.below = below;
        h.above = above;
        h.counts.assign(bins, 0);
        for (std::size_t i = 0; i < bins; ++i) h.counts[i] = counts[i] + counts[bins + i];
    }, tasks);
    Histogram out;
    out.lo = lo;
    out.hi = hi;
    out.counts.assign(bins, 0);
    for (const auto& p : parts) {
        for (std::size_t i = 0; i < bins; ++i) out.counts[i] += p.counts[i];
        out.below += p.below;
        out.above += p.above;
        merge(out.range, p.range);
    }
    if (known != nullptr) out.range = *known;
    // infinities compare outside every finite range: they are counted in the range, not below/above
    out.below -= out.range.neg_inf;
    out.above -= out.range.pos_inf;
    return out;
}

}  // namespace

Histogram histogram(const TensorSource& s, std::size_t bins, double lo, double hi, unsigned threads) {
    if (bins == 0) throw std::invalid_argument("a histogram needs at least one bin");
    if (!(std::isfinite(lo) && std::isfinite(hi) && lo < hi))
        throw std::invalid_argument("histogram range must be finite with lo < hi, not [" + std::to_string(lo) + ", " +
                                    std::to_string(hi) + "]");
    return count_bins(s, bins, lo, hi, threads, nullptr);
}

Histogram histogram_auto(const TensorSource& s, std::size_t bins, unsigned threads) {
    const ValueRange r = value_range(s, threads);
    double lo = 0.0, hi = 1.0;
    if (r.finite > 0) {
        lo = r.min;
        hi = r.max;
        if (!(lo < hi)) {
            lo -= 0.5;
            hi += 0.5;
        }
    }
    if (bins == 0) throw std::invalid_argument("a histogram needs at least one bin");
    return count_bins(s, bins, lo, hi, threads, &r);
}

std::vector<ElementError> top_errors(const TensorSource& x, const TensorSource& y, std::size_t n, unsigned threads) {
    if (x.count() != y.count())
        throw std::invalid_argument("the two sides have " + std::to_string(x.count()) + " and " +
                                    std::to_string(y.count()) + " elements");
    if (n == 0) return {};
    // a min-heap of the n largest so far: the root is the one to drop first
    auto worse = [](const ElementError& a, const ElementError& b) {
        return a.abs_error != b.abs_error ? a.abs_error > b.abs_error : a.index < b.index;
    };
    const unsigned tasks = task_count(x.count(), threads);
    std::vector<std::vector<ElementError>> parts(tasks);
    parallel_for(tasks, [&](std::size_t t) {
        auto& heap = parts[t];
        SourceScratch sy;
        for_windows(x, static_cast<unsigned>(t), tasks, [&](const float* xs, std::size_t len, std::uint64_t first) {
            const float* ys = y.read_float32(first, len, sy);
            for (std::size_t i = 0; i < len; ++i) {
                const double e = std::fabs(static_cast<double>(xs[i]) - static_cast<double>(ys[i]));
                if (!std::isfinite(e)) continue;
                const ElementError cand{first + i, xs[i], ys[i], e};
                if (heap.size() < n) {
                    heap.push_back(cand);
                    std::push_heap(heap.begin(), heap.end(), worse);
                } else if (worse(cand, heap.front())) {
                    std::pop_heap(heap.begin(), heap.end(), worse);
                    heap.back() = cand;
                    std::push_heap(heap.begin(), heap.end(), worse);
                }
            }
        });
    }, tasks);
    std::vector<ElementError> all;
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    std::sort(all.begin(), all.end(), worse);
    if (all.size() > n) all.resize(n);
    return all;
}

}  // namespace dumpcmp
