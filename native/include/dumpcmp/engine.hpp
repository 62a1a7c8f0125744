// The comparison engine: metrics over two TensorSources, streamed in fixed windows on all cores.
//
// Windows are a fixed number of elements whatever the thread count, their partial results are merged in window
// order, so a result does not depend on how many threads ran. Memory is a few windows per thread.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "dumpcmp/metrics.hpp"
#include "dumpcmp/source.hpp"

namespace dumpcmp {

// Metrics of x ("My Output", the device side) against y ("Ground Truth"). Both must have the same count().
MetricResult compare_sources(const TensorSource& x, const TensorSource& y, const CompareOptions& options);

// Many pairs at once: small pairs run side by side (one thread each), large ones one after another on all threads.
// One pair's failure is reported in its slot and never stops the others.
struct CompareJob {
    std::shared_ptr<const TensorSource> x, y;
    CompareOptions options;  // options.threads is ignored: the batch decides
};
struct JobOutcome {
    bool ok = false;
    MetricResult result{};
    std::string error;
};
std::vector<JobOutcome> compare_many(const std::vector<CompareJob>& jobs, unsigned threads = 0);

// Elements from which a pair gets all threads to itself instead of sharing the batch.
inline constexpr std::uint64_t kLargePairElements = std::uint64_t{1} << 22;

}  // namespace dumpcmp
