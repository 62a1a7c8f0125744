#include "dumpcmp/stats.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>

#include "dumpcmp/parallel.hpp"

namespace dumpcmp {

namespace {

struct Partial {
    std::uint64_t count = 0, nan = 0, pos_inf = 0, neg_inf = 0, zero = 0;
    bool any = false;  // a non-NaN value seen (max and min hold it)
    float max = 0, min = 0;
    double sum = 0, sumsq = 0;
};

void accumulate(const float* v, std::size_t n, Partial& p) {
    double sum = 0, sumsq = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const float x = v[i];
        if (std::isnan(x)) {
            ++p.nan;
            continue;
        }
        if (std::isinf(x)) ++(x > 0 ? p.pos_inf : p.neg_inf);
        if (x == 0.0f) ++p.zero;
        if (!p.any) {
            p.max = p.min = x;
            p.any = true;
        } else {
            p.max = std::max(p.max, x);
            p.min = std::min(p.min, x);
        }
        const double d = x;
        sum += d;
        sumsq += d * d;
    }
    p.count += n;
    p.sum += sum;
    p.sumsq += sumsq;
}

void merge(Partial& into, const Partial& p) {
    into.count += p.count;
    into.nan += p.nan;
    into.pos_inf += p.pos_inf;
    into.neg_inf += p.neg_inf;
    into.zero += p.zero;
    if (p.any) {
        if (!into.any) {
            into.max = p.max;
            into.min = p.min;
            into.any = true;
        } else {
            into.max = std::max(into.max, p.max);
            into.min = std::min(into.min, p.min);
        }
    }
    into.sum += p.sum;
    into.sumsq += p.sumsq;
}

// Windows per round of parallel work: their partials are merged in window order before the next round.
constexpr std::size_t kRound = 256;

}  // namespace

TensorStats tensor_stats(const TensorSource& s, unsigned threads) {
    const std::uint64_t n = s.count();
    const std::uint64_t windows = (n + kStatsWindow - 1) / kStatsWindow;
    std::vector<Partial> partials(static_cast<std::size_t>(std::min<std::uint64_t>(kRound, windows)));
    Partial total;
    for (std::uint64_t round = 0; round < windows; round += kRound) {
        const auto in_round = static_cast<std::size_t>(std::min<std::uint64_t>(kRound, windows - round));
        parallel_for(in_round, [&](std::size_t k) {
            thread_local SourceScratch scratch;
            const std::uint64_t first = (round + k) * kStatsWindow;
            const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(kStatsWindow, n - first));
            partials[k] = Partial{};
            accumulate(s.read_float32(first, count, scratch), count, partials[k]);
        }, threads);
        for (std::size_t k = 0; k < in_round; ++k) merge(total, partials[k]);
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    TensorStats out;
    out.count = total.count;
    out.nan = total.nan;
    out.pos_inf = total.pos_inf;
    out.neg_inf = total.neg_inf;
    out.zero = total.zero;
    const bool has_nan = total.nan > 0;
    out.max = has_nan || !total.any ? nan : static_cast<double>(total.max);
    out.min = has_nan || !total.any ? nan : static_cast<double>(total.min);
    out.mean = has_nan || n == 0 ? nan : total.sum / static_cast<double>(n);
    out.l2norm = has_nan ? nan : std::sqrt(total.sumsq);
    return out;
}

std::vector<StatsOutcome> stats_many(const std::vector<std::shared_ptr<TensorSource>>& sources, unsigned threads) {
    std::vector<StatsOutcome> out(sources.size());
    auto run_one = [&](std::size_t i, unsigned inner) {
        try {
            sources[i]->prefault();
            out[i].stats = tensor_stats(*sources[i], inner);
            out[i].ok = true;
        } catch (const std::exception& e) {
            out[i].error = e.what();
        }
    };
    std::vector<std::size_t> small, large;
    for (std::size_t i = 0; i < sources.size(); ++i)
        (sources[i]->count() > 4 * kStatsWindow ? large : small).push_back(i);
    parallel_for(small.size(), [&](std::size_t k) { run_one(small[k], 1); }, threads);
    for (std::size_t i : large) run_one(i, threads);
    return out;
}

}  // namespace dumpcmp
