#include "metrics_exact.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "dumpcmp/dtype.hpp"
#include "numpy_logf.hpp"
#include "simd.hpp"
#include "simd_pack.hpp"

#if DUMPCMP_HAVE_X86_LEVELS
#include <immintrin.h>
#endif

// One rounding per operation (see metrics.cpp): the levels must give the same bits. The only fused multiply-adds
// are explicit: div_const's, whose result is the correctly rounded quotient, as a division's is, NumPy's log's
// (numpy_log8), one rounding each on every level, and sub_d's a * 1 - b, which is a - b.
#pragma GCC optimize("fp-contract=off")
// Vectors passed by value between inlined functions of this file only (see metrics.cpp).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace dumpcmp::detail {

namespace {

typedef float F8 __attribute__((vector_size(32)));
typedef double D4 __attribute__((vector_size(32)));
typedef std::int32_t I8 __attribute__((vector_size(32)));
typedef std::uint32_t U8 __attribute__((vector_size(32)));

// NumPy's pairwise leaf is 128 elements: eight interleaved sums of sixteen values, one F8 here.
constexpr std::size_t kLeaf = 128;
constexpr std::size_t kLeaves = kF32SumBlock / kLeaf;  // 64, a power of two: NumPy's tree above them is balanced
static_assert(kLeaves * kLeaf == kF32SumBlock && (kLeaves & (kLeaves - 1)) == 0, "a balanced tree of whole leaves");

DUMPCMP_AI F8 splat(float v) noexcept { return F8{} + v; }
DUMPCMP_AI I8 splat_i(std::int32_t v) noexcept { return I8{} + v; }
DUMPCMP_AI D4 splat_d(double v) noexcept { return D4{} + v; }
DUMPCMP_AI U8 bits(F8 v) noexcept { return (U8)v; }
DUMPCMP_AI F8 vabs(F8 v) noexcept { return (F8)(bits(v) & 0x7FFFFFFFu); }
// The NaN-propagating max of values >= 0 (sign bit clear, NaN included): their bit patterns order as integers.
DUMPCMP_AI I8 max_bits(I8 m, F8 v) noexcept {
    const I8 b = (I8)v;
    return m > b ? m : b;
}
// The largest of max_bits's eight lanes, as the float it is: a copy out first, so that the loop's vector stays in
// a register (indexing it in place made GCC keep it on the stack, a store and reload on every iteration).
DUMPCMP_AI float max_lane(I8 m) noexcept {
    std::int32_t lanes[8];
    std::memcpy(lanes, &m, sizeof lanes);
    std::int32_t best = lanes[0];
    for (int j = 1; j < 8; ++j) best = lanes[j] > best ? lanes[j] : best;
    float f;
    std::memcpy(&f, &best, sizeof f);
    return f;
}
DUMPCMP_AI F8 mask_and(I8 keep, F8 v) noexcept { return (F8)((I8)v & keep); }

// ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), NumPy's combination of a leaf's eight sums.
DUMPCMP_AI float leaf_sum(F8 r) noexcept {
    const F8 a = r + __builtin_shufflevector(r, r, 1, 0, 3, 2, 5, 4, 7, 6);
    const F8 b = a + __builtin_shufflevector(a, a, 2, 3, 0, 1, 6, 7, 4, 5);
    return b[0] + b[4];
}
// The balanced tree over a block's leaves: what pairwise_sum_f32 does above 128 elements for n = kF32SumBlock.
inline float tree_sum(float* leaves) noexcept {
    for (std::size_t n = kLeaves; n > 1; n /= 2)
        for (std::size_t i = 0; i < n / 2; ++i) leaves[i] = leaves[2 * i] + leaves[2 * i + 1];
    return leaves[0];
}

#if DUMPCMP_HAVE_X86_LEVELS
DUMPCMP_TARGET_AVX2 inline F8 halves8(const std::uint8_t* p) noexcept {
    return (F8)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
DUMPCMP_TARGET_AVX2 inline D4 widen_lo_avx2(F8 v) noexcept { return (D4)_mm256_cvtps_pd(_mm256_castps256_ps128((__m256)v)); }
DUMPCMP_TARGET_AVX2 inline D4 widen_hi_avx2(F8 v) noexcept {
    return (D4)_mm256_cvtps_pd(_mm256_extractf128_ps((__m256)v, 1));
}
DUMPCMP_TARGET_AVX2 inline F8 fma_avx2(F8 a, F8 b, F8 c) noexcept {
    return (F8)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
}
// a - b computed as a * 1 - b: the same bits (a * 1 is exact, then one rounding), on the FMA pipes. The standard
// deviation's loop is bound by the add pipes (converts, subtractions, sums) while the FMA pipes idle: measured 4%
// faster for pass 1.
DUMPCMP_TARGET_AVX2 inline D4 sub_fma_avx2(D4 a, D4 b) noexcept {
    return (D4)_mm256_fmsub_pd((__m256d)a, _mm256_set1_pd(1.0), (__m256d)b);
}
DUMPCMP_TARGET_AVX2 inline bool any_avx2(I8 m) noexcept { return _mm256_movemask_ps((__m256)m) != 0; }
// a / b through r = float32(1 / b): q = a r, the remainder a - q b (exact, one FMA), q + remainder * r. For b
// and a / b in the normal range this is the correctly rounded quotient (Markstein's correction; checked against
// the divider on every float32 mantissa of a for 40,000 divisors): the same bits as a / b, without the divider.
DUMPCMP_TARGET_AVX2 inline F8 div_fma_avx2(F8 a, F8 b, F8 r) noexcept {
    const __m256 q = _mm256_mul_ps((__m256)a, (__m256)r);
    return (F8)_mm256_fmadd_ps(_mm256_fnmadd_ps(q, (__m256)b, (__m256)a), (__m256)r, q);
}
#endif

// V3: the AVX2 level (F16C and AVX2 instructions); otherwise baseline x86-64 (or any other CPU).
template <bool Half, bool V3>
DUMPCMP_AI F8 load8(const std::uint8_t* base, std::size_t i) noexcept {
    F8 v;
    if constexpr (!Half) {
        std::memcpy(&v, base + 4 * i, sizeof v);
    } else if constexpr (V3) {
#if DUMPCMP_HAVE_X86_LEVELS
        v = halves8(base + 2 * i);
#endif
    } else {
        for (std::size_t j = 0; j < 8; ++j) {
            std::uint16_t h;
            std::memcpy(&h, base + 2 * (i + j), sizeof h);
            v[j] = half_to_float(h);
        }
    }
    return v;
}
template <bool V3>
DUMPCMP_AI D4 widen_lo(F8 v) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (V3) return widen_lo_avx2(v);
#endif
    return __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3), D4);
}
template <bool V3>
DUMPCMP_AI D4 widen_hi(F8 v) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (V3) return widen_hi_avx2(v);
#endif
    return __builtin_convertvector(__builtin_shufflevector(v, v, 4, 5, 6, 7), D4);
}
template <bool V3>
DUMPCMP_AI D4 sub_d(D4 a, D4 b) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (V3) return sub_fma_avx2(a, b);
#endif
    return a - b;
}
template <bool V3>
DUMPCMP_AI bool any(I8 m) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (V3) return any_avx2(m);
#endif
    return ((m[0] | m[1]) | (m[2] | m[3]) | (m[4] | m[5]) | (m[6] | m[7])) != 0;
}

// a / b for a divisor b fixed over the block, r = float32(1 / b); b within [2^-60, 2^60] (const_divisor_ok), and
// a / b never -0 where it is used (the KLD's values are floored). It takes three operations on the FMA pipes instead
// of the divider: the kernels divide on both, as many divisions on each as keeps the two busy (measured).
template <bool V3>
DUMPCMP_AI F8 div_const(F8 a, F8 b, F8 r) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (V3) return div_fma_avx2(a, b, r);
#endif
    (void)r;
    return a / b;
}

// ---- pass 1 ----

struct Terms {
    F8 rel, ad, sd, xx, yy;
};
// The original's float32 terms of eight elements; |y| <= EPS lanes get relative error 0 whatever their division
// gave (every lane divides: no branch).
DUMPCMP_AI Terms pass1_terms(F8 x, F8 y, F8 eps, F8 one) noexcept {
    Terms t;
    const F8 d = vabs(x - y);
    t.ad = d;
    t.sd = d * d;
    t.xx = x * x;
    t.yy = y * y;
    t.rel = mask_and(eps < vabs(y), vabs(x / y - one));
    return t;
}

template <bool HX, bool HY, bool V3>
DUMPCMP_AI void pass1_sums(const std::uint8_t* bx, const std::uint8_t* by, ExactPass1& o) noexcept {
    float leaves[5][kLeaves];
    const F8 eps = splat(static_cast<float>(kMetricEps)), one = splat(1.0f);  // EPS = 2^-52: exact in float32
    I8 mad = I8{}, mrel = I8{};
    for (std::size_t leaf = 0; leaf < kLeaves; ++leaf) {
        const std::size_t first = leaf * kLeaf;
        Terms a = pass1_terms(load8<HX, V3>(bx, first), load8<HY, V3>(by, first), eps, one);
        I8 lad = (I8)a.ad, lrel = (I8)a.rel;
        for (std::size_t i = first + 8; i < first + kLeaf; i += 8) {
            const Terms t = pass1_terms(load8<HX, V3>(bx, i), load8<HY, V3>(by, i), eps, one);
            lad = max_bits(lad, t.ad);
            lrel = max_bits(lrel, t.rel);
            a.rel += t.rel;
            a.ad += t.ad;
            a.sd += t.sd;
            a.xx += t.xx;
            a.yy += t.yy;
        }
        mad = max_bits(mad, (F8)lad);
        mrel = max_bits(mrel, (F8)lrel);
        leaves[0][leaf] = leaf_sum(a.rel);
        leaves[1][leaf] = leaf_sum(a.ad);
        leaves[2][leaf] = leaf_sum(a.sd);
        leaves[3][leaf] = leaf_sum(a.xx);
        leaves[4][leaf] = leaf_sum(a.yy);
    }
    o.sums = {tree_sum(leaves[0]), tree_sum(leaves[1]), tree_sum(leaves[2]), tree_sum(leaves[3]),
              tree_sum(leaves[4])};
    o.max_ad = max_lane(mad);
    o.max_rel = max_lane(mrel);
}

// Eight double lanes combined as a leaf's eight sums are. Always inlined, like every helper here that takes vectors
// by value: a call between the AVX2 copy and code compiled without AVX would pass them differently (a lambda did,
// at -O0).
DUMPCMP_AI double lane_sum(D4 lo, D4 hi) noexcept {
    return ((lo[0] + lo[1]) + (lo[2] + lo[3])) + ((hi[0] + hi[1]) + (hi[2] + hi[3]));
}

// One side's min and max (NaN never enters: v < mn is false for it) and its float64 sums of (v - k) and
// (v - k)^2 in eight lanes (element i in lane i % 8), combined as pairwise_sum_f32 combines a leaf's.
template <bool Half, bool V3>
DUMPCMP_AI void pass1_side(const std::uint8_t* base, double k, float& mn_out, float& mx_out, double& s1_out,
                           double& s2_out) noexcept {
    F8 mn = splat(std::numeric_limits<float>::infinity()), mx = splat(-std::numeric_limits<float>::infinity());
    D4 s1l = D4{}, s1h = D4{}, s2l = D4{}, s2h = D4{};
    const D4 kk = splat_d(k);
    for (std::size_t i = 0; i < kF32SumBlock; i += 8) {
        const F8 v = load8<Half, V3>(base, i);
        mn = v < mn ? v : mn;
        mx = mx < v ? v : mx;
        const D4 dl = sub_d<V3>(widen_lo<V3>(v), kk), dh = sub_d<V3>(widen_hi<V3>(v), kk);
        s1l += dl;
        s1h += dh;
        s2l += dl * dl;
        s2h += dh * dh;
    }
    float a = mn[0], b = mx[0];
    for (int j = 1; j < 8; ++j) {
        a = mn[j] < a ? mn[j] : a;
        b = mx[j] > b ? mx[j] : b;
    }
    mn_out = a;
    mx_out = b;
    s1_out = lane_sum(s1l, s1h);
    s2_out = lane_sum(s2l, s2h);
}

template <bool HX, bool HY, bool V3>
DUMPCMP_AI void pass1_body(const std::uint8_t* bx, const std::uint8_t* by, double kx, double ky,
                           ExactPass1& o) noexcept {
    pass1_sums<HX, HY, V3>(bx, by, o);
    pass1_side<HX, V3>(bx, kx, o.min_x, o.max_x, o.s1x, o.s2x);
    pass1_side<HY, V3>(by, ky, o.min_y, o.max_y, o.s1y, o.s2y);
}

// ---- stage 1: p, q and the cosine's terms ----

struct Stage1Constants {
    F8 ox, dx, rx, oy, dy, ry, floor, nx, ny;  // rx, ry: float32 reciprocals of the divisors
};
template <bool V3>
DUMPCMP_AI F8 kld_value(F8 v, F8 offset, F8 divisor, F8 reciprocal, F8 floor) noexcept {
    const F8 u = div_const<V3>(v - offset, divisor, reciprocal);
    return u < floor ? floor : u;  // NaN stays NaN, as in np.maximum
}

// float32(x / nx) * float32(y / ny), both on the divider (the KLD's four divisions keep the FMA pipes busy); a
// zero's sign kept (a sum of zeros prints its sign).
DUMPCMP_AI F8 cosine_term(F8 x, F8 y, const Stage1Constants& c) noexcept {
    return (x / c.nx) * (y / c.ny);
}

template <bool HX, bool HY, bool V3, bool Kld, bool Cos>
DUMPCMP_AI void stage1_body(const std::uint8_t* bx, const std::uint8_t* by, const Stage1Constants& c,
                            ExactStage1& o) noexcept {
    float leaves[3][kLeaves];
    for (std::size_t leaf = 0; leaf < kLeaves; ++leaf) {
        // NumPy starts a leaf's sums with its first values (a -0 kept), then adds.
        F8 sp = F8{}, sq = F8{}, sc = F8{};
        const std::size_t first = leaf * kLeaf;
        {
            const F8 x = load8<HX, V3>(bx, first), y = load8<HY, V3>(by, first);
            if constexpr (Kld) {
                sp = kld_value<V3>(x, c.ox, c.dx, c.rx, c.floor);
                sq = kld_value<V3>(y, c.oy, c.dy, c.ry, c.floor);
            }
            if constexpr (Cos) sc = cosine_term(x, y, c);
        }
        for (std::size_t i = first + 8; i < first + kLeaf; i += 8) {
            const F8 x = load8<HX, V3>(bx, i), y = load8<HY, V3>(by, i);
            if constexpr (Kld) {
                sp += kld_value<V3>(x, c.ox, c.dx, c.rx, c.floor);
                sq += kld_value<V3>(y, c.oy, c.dy, c.ry, c.floor);
            }
            if constexpr (Cos) sc += cosine_term(x, y, c);
        }
        leaves[0][leaf] = leaf_sum(sp);
        leaves[1][leaf] = leaf_sum(sq);
        leaves[2][leaf] = leaf_sum(sc);
    }
    if constexpr (Kld) {
        o.p = tree_sum(leaves[0]);
        o.q = tree_sum(leaves[1]);
    }
    if constexpr (Cos) o.c = tree_sum(leaves[2]);
}

// ---- stage 2: P log(P / Q) ----

template <bool V3>
DUMPCMP_AI F8 fma8(F8 a, F8 b, F8 c) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (V3) return fma_avx2(a, b, c);
#endif
    F8 r;
    for (int j = 0; j < 8; ++j) r[j] = std::fma(a[j], b[j], c[j]);
    return r;
}
// numpy_logf.hpp's log of eight positive normal float32 values, the same operations in the same order.
template <bool V3>
DUMPCMP_AI F8 numpy_log8(F8 x) noexcept {
    using L = NumpyLogf;
    const U8 b = bits(x);
    F8 e = __builtin_convertvector((I8)(b >> 23) - 126, F8);
    F8 m = (F8)((b & 0x7FFFFFu) | (126u << 23));
    const I8 low = m <= L::sqrt1_2;
    m = low ? m + m : m;
    e = low ? e - 1.0f : e;
    const F8 f = m - 1.0f;
    F8 n = fma8<V3>(splat(L::p[5]), f, splat(L::p[4]));
    F8 d = fma8<V3>(splat(L::q[5]), f, splat(L::q[4]));
    for (int k = 3; k >= 0; --k) {
        n = fma8<V3>(n, f, splat(L::p[k]));
        d = fma8<V3>(d, f, splat(L::q[k]));
    }
    return fma8<V3>(e, splat(L::ln2), n / d);
}
// Lanes outside the positive normal range (NaN included), which numpy_log8 does not take.
DUMPCMP_AI I8 not_normal(F8 r) noexcept {
    return ~((r >= std::numeric_limits<float>::min()) & (r <= std::numeric_limits<float>::max()));
}
// p * log(r) of eight lanes, any r.
template <bool V3>
DUMPCMP_AI F8 p_log_r(F8 p, F8 r) noexcept {
    if (!any<V3>(not_normal(r))) return p * numpy_log8<V3>(r);
    F8 l;
    for (int j = 0; j < 8; ++j) l[j] = numpy_logf(r[j]);
    return p * l;
}

struct Stage2Constants {
    F8 ox, dx, rx, oy, dy, ry, floor, sp, sq, rsq;  // P's division by sp on the divider, Q's on the FMA pipes
};

// A leaf in two loops over a stack buffer: the quotients first, then the logs. In one loop the chain of four
// divisions and the log is longer than the out-of-order window can overlap (measured 1.4x slower).
template <bool HX, bool HY, bool V3>
DUMPCMP_AI float stage2_leaf(const std::uint8_t* bx, const std::uint8_t* by, std::size_t first,
                             const Stage2Constants& c) noexcept {
    F8 pv[kLeaf / 8], rv[kLeaf / 8];
    // The ratios' bits as int32: positive normal floats are [0x00800000, 0x7F7FFFFF], negatives are negative. Two
    // integer min/max per group are cheaper than not_normal's two compares and an or.
    I8 lo = splat_i(0x7FFFFFFF), hi = splat_i(-0x7FFFFFFF - 1);
    for (std::size_t j = 0; j < kLeaf / 8; ++j) {
        const F8 x = load8<HX, V3>(bx, first + 8 * j), y = load8<HY, V3>(by, first + 8 * j);
        const F8 p = kld_value<V3>(x, c.ox, c.dx, c.rx, c.floor) / c.sp;
        const F8 q = div_const<V3>(kld_value<V3>(y, c.oy, c.dy, c.ry, c.floor), c.sq, c.rsq);
        pv[j] = p;
        rv[j] = p / q;
        const I8 b = (I8)rv[j];
        lo = lo < b ? lo : b;
        hi = hi > b ? hi : b;
    }
    F8 st;
    const I8 odd = (lo < 0x00800000) | (hi > 0x7F7FFFFF);
    if (!any<V3>(odd)) {  // every ratio positive normal: always, but for NaN data or extreme sums
        st = pv[0] * numpy_log8<V3>(rv[0]);
        for (std::size_t j = 1; j < kLeaf / 8; ++j) st += pv[j] * numpy_log8<V3>(rv[j]);
    } else {
        st = p_log_r<V3>(pv[0], rv[0]);
        for (std::size_t j = 1; j < kLeaf / 8; ++j) st += p_log_r<V3>(pv[j], rv[j]);
    }
    return leaf_sum(st);
}

template <bool V3>
DUMPCMP_AI void log_products_body(const float* p, const float* r, float* out, std::size_t n) noexcept {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        F8 pv, rv;
        std::memcpy(&pv, p + i, sizeof pv);
        std::memcpy(&rv, r + i, sizeof rv);
        const F8 t = p_log_r<V3>(pv, rv);
        std::memcpy(out + i, &t, sizeof t);
    }
    for (; i < n; ++i) out[i] = p[i] * numpy_logf(r[i]);
}

template <bool HX, bool HY, bool V3>
DUMPCMP_AI float stage2_body(const std::uint8_t* bx, const std::uint8_t* by, const Stage2Constants& c) noexcept {
    float leaves[kLeaves];
    for (std::size_t leaf = 0; leaf < kLeaves; ++leaf) leaves[leaf] = stage2_leaf<HX, HY, V3>(bx, by, leaf * kLeaf, c);
    return tree_sum(leaves);
}

// ---- one compiled copy per level and storage pair ----

#define DUMPCMP_EXACT_LEVEL(suffix, V3, attributes)                                                              \
    template <bool HX, bool HY>                                                                                  \
    attributes void pass1_##suffix(const std::uint8_t* bx, const std::uint8_t* by, double kx, double ky,         \
                                   ExactPass1& o) {                                                              \
        pass1_body<HX, HY, V3>(bx, by, kx, ky, o);                                                               \
    }                                                                                                            \
    template <bool HX, bool HY, bool Kld, bool Cos>                                                              \
    attributes void stage1_##suffix(const std::uint8_t* bx, const std::uint8_t* by, const Stage1Constants& c,    \
                                    ExactStage1& o) {                                                            \
        stage1_body<HX, HY, V3, Kld, Cos>(bx, by, c, o);                                                         \
    }                                                                                                            \
    template <bool HX, bool HY>                                                                                  \
    attributes float stage2_##suffix(const std::uint8_t* bx, const std::uint8_t* by, const Stage2Constants& c) { \
        return stage2_body<HX, HY, V3>(bx, by, c);                                                               \
    }                                                                                                            \
    attributes void log_products_##suffix(const float* p, const float* r, float* out, std::size_t n) {           \
        log_products_body<V3>(p, r, out, n);                                                                     \
    }
DUMPCMP_EXACT_LEVEL(base, false, )
#if DUMPCMP_HAVE_X86_LEVELS
DUMPCMP_EXACT_LEVEL(avx2, true, DUMPCMP_TARGET_AVX2)
#endif
#undef DUMPCMP_EXACT_LEVEL

// The AVX-512 level runs the AVX2 code: NumPy's leaves are eight lanes wide, which is one ymm.
bool use_avx2() noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    return simd_level() != SimdLevel::scalar;
#else
    return false;
#endif
}

template <bool B>
using Flag = std::integral_constant<bool, B>;
// fn(Flag<x.half>, Flag<y.half>).
template <class Fn>
DUMPCMP_AI void by_storage(ExactSide x, ExactSide y, Fn&& fn) {
    if (x.half) {
        if (y.half) fn(Flag<true>{}, Flag<true>{});
        else fn(Flag<true>{}, Flag<false>{});
    } else {
        if (y.half) fn(Flag<false>{}, Flag<true>{});
        else fn(Flag<false>{}, Flag<false>{});
    }
}

bool const_divisor_ok(float b) noexcept {
    const float a = std::fabs(b);
    return a >= 0x1p-60f && a <= 0x1p60f;
}
// The divisors that div_const takes (the cosine's and P's divide on the divider, exact for any divisor).
bool stage1_divisors_ok(const KldParams& k) noexcept {
    return !k.kld ||
           (const_divisor_ok(static_cast<float>(k.divisor_x)) && const_divisor_ok(static_cast<float>(k.divisor_y)));
}
bool stage2_divisors_ok(const KldParams& k) noexcept {
    return const_divisor_ok(static_cast<float>(k.divisor_x)) && const_divisor_ok(static_cast<float>(k.divisor_y)) &&
           const_divisor_ok(k.sq32);
}

// A divisor and its float32 reciprocal.
std::pair<F8, F8> divisor(double b) noexcept {
    const auto f = static_cast<float>(b);
    return {splat(f), splat(1.0f / f)};
}

}  // namespace

void exact_pass1(ExactSide x, ExactSide y, double kx, double ky, ExactPass1& out) {
    const bool v3 = use_avx2();
    by_storage(x, y, [&](auto hx, auto hy) {
        constexpr bool HX = decltype(hx)::value, HY = decltype(hy)::value;
#if DUMPCMP_HAVE_X86_LEVELS
        if (v3) return pass1_avx2<HX, HY>(x.base, y.base, kx, ky, out);
#endif
        pass1_base<HX, HY>(x.base, y.base, kx, ky, out);
    });
    (void)v3;
}

bool exact_stages_ok(const KldParams& k) noexcept {
    return k.stage == 1 ? stage1_divisors_ok(k) : stage2_divisors_ok(k);
}

void exact_stage1(ExactSide x, ExactSide y, const KldParams& k, ExactStage1& out) {
    const auto [dx, rx] = divisor(k.divisor_x);
    const auto [dy, ry] = divisor(k.divisor_y);
    const Stage1Constants c{splat(static_cast<float>(k.offset_x)), dx, rx, splat(static_cast<float>(k.offset_y)),
                            dy, ry, splat(static_cast<float>(kKldFloorEps)), splat(k.nx32), splat(k.ny32)};
    const bool v3 = use_avx2();
    auto run = [&](auto kld, auto cos) {
        constexpr bool Kld = decltype(kld)::value, Cos = decltype(cos)::value;
        by_storage(x, y, [&](auto hx, auto hy) {
            constexpr bool HX = decltype(hx)::value, HY = decltype(hy)::value;
#if DUMPCMP_HAVE_X86_LEVELS
            if (v3) return stage1_avx2<HX, HY, Kld, Cos>(x.base, y.base, c, out);
#endif
            stage1_base<HX, HY, Kld, Cos>(x.base, y.base, c, out);
        });
    };
    if (k.kld && k.cosine) run(Flag<true>{}, Flag<true>{});
    else if (k.kld) run(Flag<true>{}, Flag<false>{});
    else if (k.cosine) run(Flag<false>{}, Flag<true>{});
    (void)v3;
}

float exact_stage2(ExactSide x, ExactSide y, const KldParams& k) {
    const auto [dx, rx] = divisor(k.divisor_x);
    const auto [dy, ry] = divisor(k.divisor_y);
    const auto [sq, rsq] = divisor(k.sq32);
    const Stage2Constants c{splat(static_cast<float>(k.offset_x)), dx, rx, splat(static_cast<float>(k.offset_y)),
                            dy, ry, splat(static_cast<float>(kKldFloorEps)), splat(k.sp32), sq, rsq};
    const bool v3 = use_avx2();
    float r = 0.0f;
    by_storage(x, y, [&](auto hx, auto hy) {
        constexpr bool HX = decltype(hx)::value, HY = decltype(hy)::value;
#if DUMPCMP_HAVE_X86_LEVELS
        if (v3) {
            r = stage2_avx2<HX, HY>(x.base, y.base, c);
            return;
        }
#endif
        r = stage2_base<HX, HY>(x.base, y.base, c);
    });
    (void)v3;
    return r;
}

void numpy_log_products(const float* p, const float* r, float* out, std::size_t n) {
#if DUMPCMP_HAVE_X86_LEVELS
    if (use_avx2()) return log_products_avx2(p, r, out, n);
#endif
    log_products_base(p, r, out, n);
}

}  // namespace dumpcmp::detail
