// The metrics kernel without Python, meant to run under AddressSanitizer and UBSan: every tail length of the
// sixteen-element steps, both term modes (the original's float32 terms and --precise), float16 decoded in registers,
// all-zero sides, NaN/inf, thread counts, and the float32 terms against plain scalar float arithmetic.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dumpcmp/dtype.hpp"
#include "dumpcmp/metrics.hpp"

using namespace dumpcmp;

#include "check.hpp"

namespace {

const std::uint8_t* bytes(const std::vector<float>& v) { return reinterpret_cast<const std::uint8_t*>(v.data()); }

MetricResult run(const std::vector<float>& x, const std::vector<float>& y, bool precise, unsigned threads = 1,
                 std::size_t chunk = kDefaultChunkElements) {
    CompareOptions o;
    o.precise = precise;
    o.threads = threads;
    o.chunk_elements = chunk;
    return compare(bytes(x), DataType::FLOAT, bytes(y), DataType::FLOAT, x.size(), o);
}

bool same_bits(const MetricResult& a, const MetricResult& b) {
    for (int i = 0; i < kMetricCount; ++i)
        if (format_metric(i, a) != format_metric(i, b) ||
            std::memcmp(&a.values[static_cast<std::size_t>(i)], &b.values[static_cast<std::size_t>(i)],
                        sizeof(double)) != 0)
            return false;
    return true;
}

// Within one float32 step of `want` (two roundings of nearly the same double sum).
bool within_step(double got, double want) {
    const double step = std::ldexp(1.0, std::ilogb(want) - 23);
    return std::fabs(got - want) <= step;
}

}  // namespace

int main() {
    std::mt19937 gen(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);

    // Every tail length around the steps of 16, both modes: the float32 terms of AccumulatedRelativeError and
    // MaxAbsoluteError against scalar float arithmetic summed in double.
    for (std::size_t n = 1; n <= 70; ++n) {
        std::vector<float> x(n), y(n);
        for (std::size_t i = 0; i < n; ++i) {
            y[i] = normal(gen) * 2.0f;
            x[i] = y[i] * (1.0f + normal(gen) * 1e-6f);
        }
        double rel = 0.0, sq = 0.0;
        float max_abs = 0.0f;
        for (std::size_t i = 0; i < n; ++i) {
            const float d = std::fabs(x[i] - y[i]);
            max_abs = d > max_abs ? d : max_abs;
            sq += static_cast<double>(d * d);
            if (std::fabs(y[i]) > static_cast<float>(kMetricEps))
                rel += static_cast<double>(std::fabs(x[i] / y[i] - 1.0f));
        }
        const MetricResult r = run(x, y, false);
        CHECK(r.value(Metric::MaxAbsoluteError) == static_cast<double>(max_abs));
        CHECK(rel == 0.0 || within_step(r.value(Metric::AccumulatedRelativeError), rel));
        const float mean_sq = static_cast<float>(sq / static_cast<double>(n));
        CHECK(sq == 0.0 || within_step(r.value(Metric::RootMeanSquareError), static_cast<double>(std::sqrt(mean_sq))));
        const MetricResult p = run(x, y, true);
        CHECK(p.precise && !r.precise);
        CHECK(format_metric(4, r) != "NaN" && format_metric(4, p) != "NaN");
    }

    // Thread counts and chunking by whole windows: the same bits in both modes.
    {
        const std::size_t n = 200'003;
        std::vector<float> x(n), y(n);
        for (std::size_t i = 0; i < n; ++i) {
            y[i] = normal(gen);
            x[i] = y[i] + normal(gen) * 0.01f;
        }
        for (bool precise : {false, true}) {
            const MetricResult one = run(x, y, precise, 1, 4096);
            CHECK(same_bits(one, run(x, y, precise, 2, 4096)));
            CHECK(same_bits(one, run(x, y, precise, 3, 4096)));
        }
        // float16 storage decoded in registers equals the float32 path on the same values
        std::vector<std::uint16_t> h(n);
        std::vector<float> hx(n);
        for (std::size_t i = 0; i < n; ++i) {
            h[i] = float_to_half(x[i]);
            hx[i] = half_to_float(h[i]);
        }
        CompareOptions o;
        const MetricResult a = compare(reinterpret_cast<const std::uint8_t*>(h.data()), DataType::FLOAT16, bytes(y),
                                       DataType::FLOAT, n, o);
        CHECK(same_bits(a, run(hx, y, false)));
    }

    // All-zero sides: KLD is a number; two zero tensors are uniform (KLD 0) with the literal cosine "1.0".
    {
        std::vector<float> z(37, 0.0f), v(37);
        for (float& f : v) f = normal(gen);
        const MetricResult zv = run(z, v, false), vz = run(v, z, false), zz = run(z, z, false);
        const double kld = zv.value(Metric::KullbackLeiblerDivergence);
        CHECK(std::isfinite(kld) && kld > 0);
        CHECK(std::isfinite(vz.value(Metric::KullbackLeiblerDivergence)));
        CHECK(format_metric(0, zv) == "NaN" && format_metric(0, vz) == "NaN");
        CHECK(format_metric(4, zz) == "0.000000" && format_metric(0, zz) == "1.0");
    }

    // NaN and inf: computed values printed as Python prints them, never the "not computed" marker.
    {
        std::vector<float> x(40), y(40);
        for (std::size_t i = 0; i < x.size(); ++i) x[i] = y[i] = normal(gen);
        x[13] = std::numeric_limits<float>::quiet_NaN();
        const MetricResult r = run(x, y, false);
        for (int i = 0; i < kMetricCount; ++i) CHECK(format_metric(i, r).find("nan") != std::string::npos);
        x[13] = std::numeric_limits<float>::infinity();
        const MetricResult s = run(x, y, false);
        CHECK(format_metric(1, s) == "inf" && format_metric(0, s) == "nan" && format_metric(4, s) == "nan");
        CHECK(format_metric(5, s).rfind("(inf;nan),(", 0) == 0);
    }

    if (failures == 0) std::printf("test_metrics: all checks passed\n");
    return failures == 0 ? 0 : 1;
}
