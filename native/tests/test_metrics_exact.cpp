// The default mode's register kernels (metrics_exact.cpp) against the plain arrays they replace: every float32
// term computed by scalar float arithmetic into an array, the array summed by pairwise_sum_f32 (which the Python
// tests hold to NumPy 1.x bit for bit). Every sum must be the same bits, stage 2's with the scalar numpy_logf
// (numpy_logf.hpp), itself checked on arguments where np.log (NumPy 1.26.4, AVX2) is not the correctly rounded
// log. CTest runs this at the CPU's level and again with
// DUMPCMP_SIMD=scalar, so both compiled copies meet the same reference (and the division through a reciprocal of
// the AVX2 copy meets the divider's quotient).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "../src/metrics_exact.hpp"
#include "../src/numpy_logf.hpp"
#include "dumpcmp/dtype.hpp"
#include "dumpcmp/metrics.hpp"

using namespace dumpcmp;

#include "check.hpp"

namespace {

constexpr std::size_t kN = kF32SumBlock;

bool same(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

struct Block {
    std::vector<float> x, y;             // the values compared
    std::vector<std::uint8_t> sx, sy;    // their storage
    bool hx = false, hy = false;
    detail::ExactSide side_x() const { return {sx.data(), hx}; }
    detail::ExactSide side_y() const { return {sy.data(), hy}; }
};

// v's storage; a float16 side's values become the float16 ones.
std::vector<std::uint8_t> store(std::vector<float>& v, bool half) {
    std::vector<std::uint8_t> out(v.size() * (half ? 2 : 4));
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (half) {
            const std::uint16_t h = float_to_half(v[i]);
            v[i] = half_to_float(h);
            std::memcpy(&out[2 * i], &h, 2);
        } else {
            std::memcpy(&out[4 * i], &v[i], 4);
        }
    }
    return out;
}

Block make(std::mt19937& gen, float scale, float noise, bool hx, bool hy) {
    std::normal_distribution<float> normal(0.0f, 1.0f);
    Block b;
    b.x.resize(kN);
    b.y.resize(kN);
    for (std::size_t i = 0; i < kN; ++i) {
        b.y[i] = normal(gen) * scale;
        b.x[i] = b.y[i] + normal(gen) * noise * scale;
    }
    b.y[17] = 0.0f;    // |y| <= EPS: relative term 0
    b.x[33] = -0.0f;   // a signed zero through the cosine's division
    b.hx = hx;
    b.hy = hy;
    b.sx = store(b.x, hx);
    b.sy = store(b.y, hy);
    return b;
}

float sum_of(const std::vector<float>& t) { return pairwise_sum_f32(t.data(), t.size()); }

void check_pass1(const Block& b) {
    std::vector<float> rel(kN), ad(kN), sd(kN), xx(kN), yy(kN);
    float max_ad = 0.0f, max_rel = 0.0f;
    for (std::size_t i = 0; i < kN; ++i) {
        const float x = b.x[i], y = b.y[i];
        const float d = std::fabs(x - y);
        ad[i] = d;
        sd[i] = d * d;
        xx[i] = x * x;
        yy[i] = y * y;
        const float r = std::fabs(x / y - 1.0f);
        rel[i] = std::fabs(y) > static_cast<float>(kMetricEps) ? r : 0.0f;
        max_ad = std::max(max_ad, ad[i]);
        max_rel = std::max(max_rel, rel[i]);
    }
    detail::ExactPass1 o;
    detail::exact_pass1(b.side_x(), b.side_y(), 0.5, -0.25, o);
    CHECK(same(o.sums.rel, sum_of(rel)));
    CHECK(same(o.sums.ad, sum_of(ad)));
    CHECK(same(o.sums.sd, sum_of(sd)));
    CHECK(same(o.sums.xx, sum_of(xx)));
    CHECK(same(o.sums.yy, sum_of(yy)));
    CHECK(same(o.max_ad, max_ad) && same(o.max_rel, max_rel));
    CHECK(o.min_x == *std::min_element(b.x.begin(), b.x.end()) && o.max_y == *std::max_element(b.y.begin(), b.y.end()));
    double s1 = 0.0, s2 = 0.0;
    for (float v : b.x) {
        s1 += v - 0.5;
        s2 += (v - 0.5) * (v - 0.5);
    }
    CHECK(std::fabs(o.s1x - s1) <= 1e-9 * std::fabs(s2) && std::fabs(o.s2x - s2) <= 1e-12 * s2);
}

KldParams params_for(const Block& b) {
    KldParams k;
    k.needed = true;
    k.kld = k.cosine = true;
    k.stage = 1;
    const auto [mnx, mxx] = std::minmax_element(b.x.begin(), b.x.end());
    const auto [mny, mxy] = std::minmax_element(b.y.begin(), b.y.end());
    k.offset_x = *mnx;
    k.divisor_x = static_cast<float>(*mxx - *mnx);
    k.offset_y = *mny;
    k.divisor_y = static_cast<float>(*mxy - *mny);
    std::vector<float> xx(kN), yy(kN);
    for (std::size_t i = 0; i < kN; ++i) {
        xx[i] = b.x[i] * b.x[i];
        yy[i] = b.y[i] * b.y[i];
    }
    k.nx32 = std::sqrt(sum_of(xx));
    k.ny32 = std::sqrt(sum_of(yy));
    return k;
}

float kld_value(float v, double offset, double divisor) {
    const float u = (v - static_cast<float>(offset)) / static_cast<float>(divisor);
    const auto floor = static_cast<float>(kKldFloorEps);
    return u < floor ? floor : u;
}

void check_stages(const Block& b) {
    KldParams k = params_for(b);
    CHECK(detail::exact_stages_ok(k));
    std::vector<float> p(kN), q(kN), c(kN);
    for (std::size_t i = 0; i < kN; ++i) {
        p[i] = kld_value(b.x[i], k.offset_x, k.divisor_x);
        q[i] = kld_value(b.y[i], k.offset_y, k.divisor_y);
        c[i] = (b.x[i] / k.nx32) * (b.y[i] / k.ny32);
    }
    detail::ExactStage1 s;
    detail::exact_stage1(b.side_x(), b.side_y(), k, s);
    CHECK(same(s.p, sum_of(p)) && same(s.q, sum_of(q)) && same(s.c, sum_of(c)));
    // the signed zero of element 33 survives the division: x = -0 gives a -0 or +0 term as y's sign says
    CHECK(std::signbit(c[33]) == std::signbit(-0.0f / k.nx32 * (b.y[33] / k.ny32)));

    k.stage = 2;
    auto check_stage2 = [&](float sp, float sq) {
        k.sp32 = sp;
        k.sq32 = sq;
        CHECK(detail::exact_stages_ok(k));
        std::vector<float> t(kN);
        for (std::size_t i = 0; i < kN; ++i) {
            const float pp = p[i] / k.sp32, qq = q[i] / k.sq32;
            t[i] = pp * detail::numpy_logf(pp / qq);
        }
        CHECK(same(detail::exact_stage2(b.side_x(), b.side_y(), k), sum_of(t)));
    };
    check_stage2(s.p, s.q);
    // sums that put some ratios P / Q below the normal range, then some above it (to inf): the kernels' per-lane
    // log for the groups holding them
    check_stage2(0x1p59f, 0x1p-59f);
    check_stage2(0x1p-50f, 0x1p58f);
}

float from_bits(std::uint32_t b) {
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
}

// np.log's float32 results (NumPy 1.26.4 on an AVX2 CPU), four of them an ulp from the correctly rounded log, two
// for subnormal arguments; then the vectorised products against the scalar function on special and random values.
void check_numpy_logf() {
    const std::pair<std::uint32_t, std::uint32_t> np_log[] = {
        {0x41f9852du, 0x405c2a93u}, {0x42a7fac1u, 0x408dc841u}, {0x424c6008u, 0x407bc121u},
        {0x41991fb4u, 0x403cea62u}, {0x000116c2u, 0xc2b834f2u}, {0x0020aac8u, 0xc2b16788u},
        {0x3f800000u, 0x00000000u}, {0x40000000u, 0x3f317218u}, {0x3f000000u, 0xbf317218u}};
    for (const auto [x, want] : np_log) CHECK(same(detail::numpy_logf(from_bits(x)), from_bits(want)));
    const float inf = std::numeric_limits<float>::infinity();
    CHECK(detail::numpy_logf(0.0f) == -inf && detail::numpy_logf(-0.0f) == -inf && detail::numpy_logf(inf) == inf);
    CHECK(std::isnan(detail::numpy_logf(-1.0f)) && std::isnan(detail::numpy_logf(std::nanf(""))));

    std::mt19937 gen(5);
    std::vector<float> p(1003), r(1003), out(1003);
    for (std::size_t i = 0; i < r.size(); ++i) {
        p[i] = std::uniform_real_distribution<float>(0.0f, 1.0f)(gen);
        r[i] = from_bits(static_cast<std::uint32_t>(gen()));  // every sign, exponent and special value
    }
    r[8] = 0.0f;
    r[9] = inf;
    r[10] = 1e-42f;
    for (std::size_t i = 24; i < 64; ++i) r[i] = std::fabs(r[i]);  // groups with no special lane
    detail::numpy_log_products(p.data(), r.data(), out.data(), r.size());
    for (std::size_t i = 0; i < r.size(); ++i) {
        const float want = p[i] * detail::numpy_logf(r[i]);
        CHECK(same(out[i], want) || (std::isnan(out[i]) && std::isnan(want)));
    }
}

}  // namespace

int main() {
    check_numpy_logf();
    std::mt19937 gen(11);
    for (int storage = 0; storage < 4; ++storage) {
        const bool hx = storage & 1, hy = storage & 2;
        // close tensors (the log's series form), distant ones (its general form), large and small magnitudes
        // (within float16's range), unrelated ones (ratios p / q spread wide)
        for (const auto [scale, noise] :
             {std::pair{2.0f, 1e-3f}, {1.0f, 0.3f}, {2e3f, 1e-2f}, {1e-3f, 2e-2f}, {1.0f, 30.0f}}) {
            const Block b = make(gen, scale, noise, hx, hy);
            check_pass1(b);
            check_stages(b);
        }
    }
    // The KLD's divisors outside [2^-60, 2^60] are left to the caller's arrays (div_const is exact only within);
    // the cosine's divide on the divider, exact for any divisor: its terms overflow as the reference's do.
    const Block b = make(gen, 1.0f, 0.3f, false, true);
    KldParams k = params_for(b);
    k.nx32 = 0x1p-70f;
    CHECK(detail::exact_stages_ok(k));
    std::vector<float> c(kN);
    for (std::size_t i = 0; i < kN; ++i) c[i] = (b.x[i] / k.nx32) * (b.y[i] / k.ny32);
    detail::ExactStage1 s;
    detail::exact_stage1(b.side_x(), b.side_y(), k, s);
    CHECK(same(s.c, sum_of(c)));
    k.divisor_x = 0x1p-70;
    CHECK(!detail::exact_stages_ok(k));

    if (failures == 0) std::printf("test_metrics_exact: all checks passed\n");
    return failures == 0 ? 0 : 1;
}
