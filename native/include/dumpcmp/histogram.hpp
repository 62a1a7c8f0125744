// Binned histograms of one tensor, and the largest element errors of a pair, in bounded memory.
//
// A histogram takes at most two passes over the compared order of a TensorSource (window by window, on all
// threads): pass one finds the range of the finite values and counts NaN and inf, pass two counts the finite values
// into equal-width bins over a range (pass one's, or one the caller gives: the other side's, or tensor_min_max.txt's).
// The bins are numpy.histogram's: edges lo + i * (hi - lo) / bins, every bin half open except the last, which holds
// hi; the bin of a value is computed from the scaled offset and corrected against the edges, as NumPy does, so the
// counts are the same as NumPy's on the float64 values. Values are read as float32 (as the detail export reads them).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dumpcmp/source.hpp"

namespace dumpcmp {

struct ValueRange {
    double min = 0.0;  // of the finite values; min > max when there are none
    double max = -1.0;
    std::uint64_t finite = 0, nan = 0, pos_inf = 0, neg_inf = 0;
};

struct Histogram {
    double lo = 0.0, hi = 1.0;           // the binned range
    std::vector<std::uint64_t> counts;   // one per bin
    std::uint64_t below = 0, above = 0;  // finite values outside [lo, hi]
    ValueRange range;                    // of the whole tensor (pass one, or counted along in pass two)
};

// Pass one: range and NaN/inf counts.
ValueRange value_range(const TensorSource& s, unsigned threads = 0);

// Pass two: `bins` (>= 1) equal bins over [lo, hi] (lo < hi, both finite); the range is counted along.
Histogram histogram(const TensorSource& s, std::size_t bins, double lo, double hi, unsigned threads = 0);

// Both passes: the range is the data's own; a single value v is binned over [v - 0.5, v + 0.5] and a tensor with
// no finite value over [0, 1], as numpy.histogram does.
Histogram histogram_auto(const TensorSource& s, std::size_t bins, unsigned threads = 0);

struct ElementError {
    std::uint64_t index;  // in the compared order
    float x, y;           // device, ground truth
    double abs_error;     // |x - y|
};

// The `n` largest |x - y| over elements whose difference is finite, largest first (ties: lower index first).
std::vector<ElementError> top_errors(const TensorSource& x, const TensorSource& y, std::size_t n,
                                     unsigned threads = 0);

}  // namespace dumpcmp
