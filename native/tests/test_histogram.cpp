// Histograms without Python, meant to run under AddressSanitizer/UBSan: bins against a direct reference (every value
// placed by a search over numpy.histogram's edges), NaN/inf, values on the edges, windows across threads, a narrow
// range far from zero, and the top errors.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "dumpcmp/histogram.hpp"

using namespace dumpcmp;

#include "check.hpp"

// The reference: edges as numpy.linspace makes them, a value's bin by binary search (last bin closed).
static std::vector<std::uint64_t> reference(const std::vector<float>& v, std::size_t bins, double lo, double hi) {
    std::vector<double> e(bins + 1);
    const double step = (hi - lo) / static_cast<double>(bins);
    for (std::size_t i = 0; i < bins; ++i) e[i] = static_cast<double>(i) * step + lo;
    e[bins] = hi;
    std::vector<std::uint64_t> c(bins, 0);
    for (float f : v) {
        const double d = f;
        if (!(d >= lo && d <= hi)) continue;
        auto it = std::upper_bound(e.begin(), e.end(), d);
        auto i = static_cast<std::size_t>(it - e.begin()) - 1;
        if (i == bins) i = bins - 1;
        ++c[i];
    }
    return c;
}

static TensorSource source(const std::vector<float>& v) {
    return TensorSource(reinterpret_cast<const std::uint8_t*>(v.data()), DataType::FLOAT, v.size());
}

int main() {
    std::mt19937 gen(5);
    std::normal_distribution<float> normal;
    std::vector<float> v(300001);
    for (auto& x : v) x = normal(gen) * 3.0f;
    v[17] = std::numeric_limits<float>::quiet_NaN();
    v[200000] = std::numeric_limits<float>::infinity();
    v[5] = -std::numeric_limits<float>::infinity();
    for (unsigned threads : {1u, 2u, 3u}) {
        const Histogram h = histogram_auto(source(v), 97, threads);
        CHECK(h.range.nan == 1 && h.range.pos_inf == 1 && h.range.neg_inf == 1 && h.range.finite == v.size() - 3);
        CHECK(h.counts == reference(v, 97, h.lo, h.hi));
        CHECK(h.below == 0 && h.above == 0);
        const Histogram part = histogram(source(v), 10, -1.0, 2.0, threads);
        CHECK(part.counts == reference(v, 10, -1.0, 2.0));
        std::uint64_t below = 0, above = 0;
        for (float f : v) {
            below += std::isfinite(f) && f < -1.0f;
            above += std::isfinite(f) && f > 2.0f;
        }
        CHECK(part.below == below && part.above == above);
    }
    // a narrow range far from zero: most values sit on or next to an edge
    std::uniform_real_distribution<float> tiny(0.0f, 0.05f);
    std::vector<float> w(50000);
    for (auto& x : w) x = 12345.0f + tiny(gen);
    for (std::size_t bins : {3u, 256u, 10000u}) {
        const Histogram h = histogram_auto(source(w), bins, 2);
        CHECK(h.counts == reference(w, bins, h.lo, h.hi));
    }
    // a constant tensor and an empty one
    std::vector<float> c(10, 2.5f), none;
    const Histogram hc = histogram_auto(source(c), 4, 1);
    CHECK(hc.lo == 2.0 && hc.hi == 3.0 && hc.counts[2] == 10);
    const Histogram hn = histogram_auto(source(none), 4, 1);
    CHECK(hn.range.finite == 0 && hn.counts == std::vector<std::uint64_t>(4, 0));
    // top errors: the largest first, ties by index
    std::vector<float> x(1000, 0.0f), y(1000, 0.0f);
    x[10] = 5.0f;
    x[20] = -7.0f;
    y[30] = 5.0f;
    y[40] = std::numeric_limits<float>::quiet_NaN();
    const auto top = top_errors(source(x), source(y), 3, 2);
    CHECK(top.size() == 3 && top[0].index == 20 && top[1].index == 10 && top[2].index == 30);
    CHECK(top[0].abs_error == 7.0 && top[0].x == -7.0f && top[0].y == 0.0f);
    return failures == 0 ? 0 : 1;
}
