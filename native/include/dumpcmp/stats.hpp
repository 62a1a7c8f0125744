// One tensor's statistics in one pass: max, min, mean, L2 norm and the NaN / +inf / -inf / zero counts, read in
// the compared order through the same sources (layout plans, every data type) as the comparison.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dumpcmp/source.hpp"

namespace dumpcmp {

// Every element is taken as float32 (as TensorSource::read_float32 gives it: the comparison's values). Max and min
// are exact; NaN in the tensor makes max, min, mean and L2 norm NaN (NumPy's np.max/np.mean rule); infinities
// count as they are. The sums (mean, L2 norm) are float64 sums of the float32 values: each window of
// kStatsWindow elements summed in order, the windows' sums added in window order, so the result is the same
// whatever the number of threads.
struct TensorStats {
    std::uint64_t count = 0;
    double max = 0, min = 0, mean = 0, l2norm = 0;
    std::uint64_t nan = 0, pos_inf = 0, neg_inf = 0, zero = 0;
};

constexpr std::size_t kStatsWindow = 65536;

TensorStats tensor_stats(const TensorSource& s, unsigned threads);

// Many tensors: small ones side by side (one thread each), large ones one after another on all threads. Each
// outcome is the statistics, or the error text of a tensor that could not be read.
struct StatsOutcome {
    bool ok = false;
    TensorStats stats;
    std::string error;
};
std::vector<StatsOutcome> stats_many(const std::vector<std::shared_ptr<TensorSource>>& sources, unsigned threads);

}  // namespace dumpcmp
