#include "dumpcmp/metrics.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "dumpcmp/parallel.hpp"
#include "kld_hooks.hpp"
#include "simd.hpp"

#if DUMPCMP_HAVE_X86_LEVELS
#include <immintrin.h>
#endif

// The vector helpers below pass 64-byte vectors by value between functions of one translation unit, all inlined;
// GCC's note that this ABI differs with and without AVX-512 concerns no interface.
#pragma GCC diagnostic ignored "-Wpsabi"
// One rounding per operation everywhere: with contraction, the AVX2 and AVX-512 instantiations (simd.hpp) would
// fuse multiply-adds the baseline one cannot, and the same data would give different last bits on different CPUs.
// The tests compare the levels bit for bit.
#pragma GCC optimize("fp-contract=off")

namespace dumpcmp {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Independent accumulators per lane: the compiler turns the lane loop into SIMD without reassociating anything,
// so the summation order is fixed by this code and not by the instruction set.
constexpr std::size_t kLanes = 8;
// accumulate() cuts longer inputs into blocks of this size and merges them, which bounds the rounding of the
// shifted sums below whatever the caller passes.
constexpr std::size_t kBlock = kDefaultChunkElements;

const char* const kMetricNames[kMetricCount] = {
    "CosineSimilarity",        "MaxAbsoluteError",   "AccumulatedRelativeError", "RelativeEuclideanDistance",
    "KullbackLeiblerDivergence", "StandardDeviation", "MeanAbsoluteError",        "RootMeanSquareError",
    "MaxRelativeError",        "MeanRelativeError",
};

// max that lets a NaN in and never out, like np.max.
inline double sticky_max(double m, double v) noexcept { return (v > m || v != v) ? v : m; }

// Eight lanes of doubles as a GCC/Clang vector: one zmm with AVX-512, two ymm with AVX2, four xmm on baseline
// x86-64. The lane structure, not the instruction set, fixes the summation order, so every level of simd.hpp
// gives the same bits (no FMA contraction: see the pragma at the top). Element i of a block always lands in lane
// i % 8, in element order.
typedef double VD __attribute__((vector_size(64)));
typedef float VF16 __attribute__((vector_size(64)));            // 16 float32: min/max need no promotion
typedef float VF8 __attribute__((vector_size(32)));
typedef std::uint32_t VW16 __attribute__((vector_size(64)));    // bit patterns of VF16
typedef std::int32_t VI16 __attribute__((vector_size(64)));     // comparison masks of VF16
typedef std::uint16_t VH16 __attribute__((vector_size(32)));    // 16 raw float16 patterns
typedef long long VM __attribute__((vector_size(64)));          // comparison masks of VD
typedef unsigned long long VU __attribute__((vector_size(64)));
static_assert(sizeof(VD) / sizeof(double) == kLanes, "one vector per lane set");
constexpr std::size_t kWide = 16;  // elements per step: one VF16, two VD
// Software prefetch distance in elements. The loops are compute-heavy enough that the hardware prefetcher alone
// falls behind on data from DRAM; a prefetch past the end of a block is harmless (prefetches never fault).
constexpr std::size_t kPrefetchAhead = 1024;

// Scalar minus vector broadcasts; subtracting +0 is exact for every v (-0 included), so it folds to a broadcast.
// (An initialiser list is built lane by lane, every time, inside the loops.)
inline VD splat(double v) noexcept { return v - VD{}; }
inline VD vabs(const VD& v) noexcept { return (VD)((VU)v & (VU{} + 0x7FFFFFFFFFFFFFFFull)); }
inline VD select(const VM& mask, const VD& a, const VD& b) noexcept { return (VD)(((VU)mask & (VU)a) | (~(VU)mask & (VU)b)); }
// Comparisons. GCC 12 lowers a comparison of 64-byte vectors element by element (scalar code) when the target has
// no 64-byte registers, but compares 32-byte halves natively; so below AVX-512 the halves are compared and the
// masks joined (the join is free: a 64-byte vector lives in two registers there).
typedef double VD4 __attribute__((vector_size(32)));
typedef long long VM4 __attribute__((vector_size(32)));
typedef float VF8h __attribute__((vector_size(32)));
typedef std::int32_t VI8h __attribute__((vector_size(32)));
typedef std::uint32_t VW8h __attribute__((vector_size(32)));

template <bool Wide>
__attribute__((always_inline)) inline VM less(const VD& a, const VD& b) noexcept {
    if constexpr (Wide) {
        return a < b;
    } else {
        const VD4 al = __builtin_shufflevector(a, a, 0, 1, 2, 3), ah = __builtin_shufflevector(a, a, 4, 5, 6, 7);
        const VD4 bl = __builtin_shufflevector(b, b, 0, 1, 2, 3), bh = __builtin_shufflevector(b, b, 4, 5, 6, 7);
        const VM4 lo = al < bl, hi = ah < bh;
        return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
    }
}
template <bool Wide>
__attribute__((always_inline)) inline VM less(const VM& a, const VM& b) noexcept {
    if constexpr (Wide) {
        return a < b;
    } else {
        const VM4 al = __builtin_shufflevector(a, a, 0, 1, 2, 3), ah = __builtin_shufflevector(a, a, 4, 5, 6, 7);
        const VM4 bl = __builtin_shufflevector(b, b, 0, 1, 2, 3), bh = __builtin_shufflevector(b, b, 4, 5, 6, 7);
        const VM4 lo = al < bl, hi = ah < bh;
        return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7);
    }
}
template <bool Wide>
__attribute__((always_inline)) inline VI16 less(const VF16& a, const VF16& b) noexcept {
    if constexpr (Wide) {
        return a < b;
    } else {
        const VF8h al = __builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7);
        const VF8h ah = __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15);
        const VF8h bl = __builtin_shufflevector(b, b, 0, 1, 2, 3, 4, 5, 6, 7);
        const VF8h bh = __builtin_shufflevector(b, b, 8, 9, 10, 11, 12, 13, 14, 15);
        const VI8h lo = al < bl, hi = ah < bh;
        return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    }
}
template <bool Wide>
__attribute__((always_inline)) inline VI16 equal(const VW16& a, std::uint32_t b) noexcept {
    if constexpr (Wide) {
        return a == b;
    } else {
        const VW8h al = __builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7);
        const VW8h ah = __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15);
        const VI8h lo = al == b, hi = ah == b;
        return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    }
}

inline VF16 select16(const VI16& mask, const VF16& a, const VF16& b) noexcept {
    return (VF16)(((VW16)mask & (VW16)a) | (~(VW16)mask & (VW16)b));
}

// Selections are written two ways with the same result: vector ?: becomes single min/max/masked instructions with
// AVX-512 but is split into scalar code for 64-byte vectors on narrower targets, where and/or masks lower well.
// Wide is true in the AVX-512 instantiation only.
template <bool Wide>
__attribute__((always_inline)) inline VD pick(const VM& mask, const VD& a, const VD& b) noexcept {
    if constexpr (Wide) return mask ? a : b;
    else return select(mask, a, b);
}
template <bool Wide>
__attribute__((always_inline)) inline VF16 pick16(const VI16& mask, const VF16& a, const VF16& b) noexcept {
    if constexpr (Wide) return mask ? a : b;
    else return select16(mask, a, b);
}
// NaN-propagating max for values that are >= 0 or NaN with the sign bit clear (|.| results): their bit patterns
// order as integers the way the values do, and NaN patterns sit above +inf.
template <bool Wide>
__attribute__((always_inline)) inline VD vsticky_max_nonneg(const VD& m, const VD& v) noexcept {
    return pick<Wide>(less<Wide>((VM)m, (VM)v), v, m);
}
#if DUMPCMP_HAVE_X86_LEVELS
// AVX-512 forms of a few steps, the same values bit for bit; GCC 12 makes several instructions of each generic
// form. Not always_inline (their callers are generic templates) but inlined into the AVX-512 kernels all the same.
// The zero-masked intrinsics: the plain ones start from an undefined register, which GCC 12 warns about.
DUMPCMP_TARGET_AVX512 inline VD low_half_avx512(const VF16& f) noexcept {
    return (VD)_mm512_maskz_cvtps_pd(0xFF, (__m256)__builtin_shufflevector(f, f, 0, 1, 2, 3, 4, 5, 6, 7));
}
DUMPCMP_TARGET_AVX512 inline VD high_half_avx512(const VF16& f) noexcept {
    return (VD)_mm512_maskz_cvtps_pd(0xFF, (__m256)__builtin_shufflevector(f, f, 8, 9, 10, 11, 12, 13, 14, 15));
}
// floor(log2 v) of a positive normal v, exact: the biased exponent less 1023.
DUMPCMP_TARGET_AVX512 inline VD exponent_avx512(const VD& v) noexcept {
    return (VD)_mm512_maskz_getexp_pd(0xFF, (__m512d)v);
}
#endif
template <bool Wide>
__attribute__((always_inline)) inline VD low_half(const VF16& f) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (Wide) return low_half_avx512(f);
#endif
    return __builtin_convertvector(__builtin_shufflevector(f, f, 0, 1, 2, 3, 4, 5, 6, 7), VD);
}
template <bool Wide>
__attribute__((always_inline)) inline VD high_half(const VF16& f) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (Wide) return high_half_avx512(f);
#endif
    return __builtin_convertvector(__builtin_shufflevector(f, f, 8, 9, 10, 11, 12, 13, 14, 15), VD);
}

// IEEE binary16 -> binary32 on 16 lanes with integer operations only: exact, the same bits as half_to_float
// (NaN payloads kept) on every level, and independent of the MXCSR denormal modes.
__attribute__((always_inline)) inline VF16 halves_to_floats(const VH16& raw) noexcept {
    const VW16 h = __builtin_convertvector(raw, VW16);
    const VW16 sign = (h & 0x8000u) << 16;
    const VW16 exp = h & 0x7C00u;
    const VW16 mant = h & 0x3FFu;
    const VW16 normal = ((h & 0x7FFFu) << 13) + (112u << 23);
    const VW16 special = (mant << 13) | 0x7F800000u;
    // Subnormals: mant * 2^-24, exact in float32 (an integer below 2^10 times a power of two).
    const VF16 sub_value = __builtin_convertvector((VI16)mant, VF16) * 5.9604644775390625e-08f;
    const VW16 sub = (VW16)sub_value;
    // Only the narrow levels decode this way (AVX-512 has F16C below): and/or masks, compared by halves.
    const VW16 is_sub = (VW16)equal<false>(exp, 0u), is_special = (VW16)equal<false>(exp, 0x7C00u);
    const VW16 bits = (is_sub & sub) | (~is_sub & ((is_special & special) | (~is_special & normal)));
    return (VF16)(bits | sign);
}

// Where a block's values come from: float32 storage read in place, or float16 storage decoded in registers (no
// buffer round trip). Both read through memcpy: any alignment.
struct F32Source {
    const std::uint8_t* base;
    __attribute__((always_inline)) VF16 load16(std::size_t i) const noexcept {
        VF16 v;
        std::memcpy(&v, base + 4 * i, sizeof v);
        return v;
    }
    float at(std::size_t i) const noexcept {
        float f;
        std::memcpy(&f, base + 4 * i, sizeof f);
        return f;
    }
    F32Source offset(std::size_t i) const noexcept { return {base + 4 * i}; }
    F32Source wide() const noexcept { return *this; }
    __attribute__((always_inline)) void prefetch(std::size_t i) const noexcept { __builtin_prefetch(base + 4 * i); }
};
// Wide sources are only used inside the AVX-512 kernels (their load16 carries that target).
struct F16Source;
#if DUMPCMP_HAVE_X86_LEVELS
// The AVX-512 conversion, one instruction for 16 elements. It equals halves_to_floats on every non-NaN input
// (denormal modes do not apply to it; the tests compare the paths) and quiets signalling NaNs, which the metrics
// only count.
struct F16WideSource {
    const std::uint8_t* base;
    DUMPCMP_TARGET_AVX512 VF16 load16(std::size_t i) const noexcept {
        // The zero-masked form: the plain one starts from an undefined register, which GCC 12 warns about.
        return (VF16)_mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + 2 * i)));
    }
    float at(std::size_t i) const noexcept {
        std::uint16_t h;
        std::memcpy(&h, base + 2 * i, sizeof h);
        return half_to_float(h);
    }
    void prefetch(std::size_t i) const noexcept { __builtin_prefetch(base + 2 * i); }
};
#endif

struct F16Source {
    const std::uint8_t* base;
    __attribute__((always_inline)) VF16 load16(std::size_t i) const noexcept {
        VH16 h;
        std::memcpy(&h, base + 2 * i, sizeof h);
        return halves_to_floats(h);
    }
    float at(std::size_t i) const noexcept {
        std::uint16_t h;
        std::memcpy(&h, base + 2 * i, sizeof h);
        return half_to_float(h);
    }
    F16Source offset(std::size_t i) const noexcept { return {base + 2 * i}; }
    __attribute__((always_inline)) void prefetch(std::size_t i) const noexcept { __builtin_prefetch(base + 2 * i); }
#if DUMPCMP_HAVE_X86_LEVELS
    F16WideSource wide() const noexcept { return {base}; }
#endif
};

struct Lanes {
    VD sx, sxx_c, sxx;
    VD sy, syy_c, syy;
    VD sxy, sad, ssd, mad, srel, mrel;
    VF16 minx, maxx, miny, maxy;

    Lanes() noexcept
        : sx{}, sxx_c{}, sxx{}, sy{}, syy_c{}, syy{}, sxy{}, sad{}, ssd{}, mad{}, srel{}, mrel{},
          minx(VF16{} + std::numeric_limits<float>::infinity()), maxx(VF16{} - std::numeric_limits<float>::infinity()),
          miny(minx), maxy(maxx) {}
};

// Pairwise over the lanes, in a fixed order.
inline double lane_sum(const VD& v) noexcept {
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}
inline double lane_max(const VD& v) noexcept {
    double m = v[0];
    for (std::size_t j = 1; j < kLanes; ++j) m = sticky_max(m, v[j]);
    return m;
}
inline double lane_min_plain(const VF16& v) noexcept {
    float m = v[0];
    for (std::size_t j = 1; j < kWide; ++j) m = v[j] < m ? v[j] : m;
    return m;
}
inline double lane_max_plain(const VF16& v) noexcept {
    float m = v[0];
    for (std::size_t j = 1; j < kWide; ++j) m = v[j] > m ? v[j] : m;
    return m;
}

struct StepConstants {
    VD kx, ky, eps, one;
};

// The sums of eight elements (one per lane).
template <bool Wide>
__attribute__((always_inline)) inline void step8(Lanes& a, const VD& x, const VD& y, const StepConstants& c) noexcept {
    // Sums of deviations from the block's first finite value: the variance from them loses at most about
    // log2(block) bits, unlike sum(x^2) - n*mean^2 (which fails on large constant data).
    const VD dx = x - c.kx, dy = y - c.ky;
    a.sx += dx;
    a.sxx_c += dx * dx;
    a.sy += dy;
    a.syy_c += dy * dy;
    a.sxx += x * x;
    a.syy += y * y;
    a.sxy += x * y;
    const VD d = vabs(x - y);
    a.sad += d;
    a.ssd += d * d;
    a.mad = vsticky_max_nonneg<Wide>(a.mad, d);
    // Every lane divides, unconditionally (no branch); lanes with |y| <= EPS are then replaced by 0, whatever
    // inf or NaN their division gave.
    const VM counted = less<Wide>(c.eps, vabs(y));
    const VD r = pick<Wide>(counted, vabs(x / y - c.one), VD{});
    a.srel += r;
    a.mrel = vsticky_max_nonneg<Wide>(a.mrel, r);
}

// Min and max stay in float32 (exact, 16 lanes); NaN never enters them: the counts report it.
template <bool Wide>
__attribute__((always_inline)) inline void minmax16(Lanes& a, const VF16& x, const VF16& y) noexcept {
    a.minx = pick16<Wide>(less<Wide>(x, a.minx), x, a.minx);
    a.maxx = pick16<Wide>(less<Wide>(a.maxx, x), x, a.maxx);
    a.miny = pick16<Wide>(less<Wide>(y, a.miny), y, a.miny);
    a.maxy = pick16<Wide>(less<Wide>(a.maxy, y), y, a.maxy);
}

// The last rest (< 8) elements of eight lanes: a step on a copy, keeping only the lanes that saw real elements.
template <bool Wide>
__attribute__((always_inline)) inline void step8_partial(Lanes& a, const VD& x, const VD& y, const StepConstants& c,
                                                         std::size_t rest) noexcept {
    Lanes b = a;
    step8<Wide>(b, x, y, c);
    VM keep{};
    for (std::size_t j = 0; j < kLanes; ++j) keep[j] = j < rest ? -1 : 0;
    auto take = [&keep](VD& to, const VD& from) { to = select(keep, from, to); };
    take(a.sx, b.sx); take(a.sxx_c, b.sxx_c); take(a.sxx, b.sxx);
    take(a.sy, b.sy); take(a.syy_c, b.syy_c); take(a.syy, b.syy);
    take(a.sxy, b.sxy); take(a.sad, b.sad); take(a.ssd, b.ssd); take(a.mad, b.mad); take(a.srel, b.srel);
    take(a.mrel, b.mrel);
}

template <bool Wide, class SX, class SY>
__attribute__((always_inline)) inline void lanes_body(SX x, SY y, std::size_t n, double kx, double ky, Lanes& out) {
    // A local copy stays in registers; through the reference every step would store all lanes.
    Lanes a = out;
    const StepConstants c{splat(kx), splat(ky), splat(kMetricEps), splat(1.0)};
    std::size_t i = 0;
    for (; i + kWide <= n; i += kWide) {
        x.prefetch(i + kPrefetchAhead);
        y.prefetch(i + kPrefetchAhead);
        const VF16 fx = x.load16(i), fy = y.load16(i);
        minmax16<Wide>(a, fx, fy);
        step8<Wide>(a, low_half<Wide>(fx), low_half<Wide>(fy), c);
        step8<Wide>(a, high_half<Wide>(fx), high_half<Wide>(fy), c);
    }
    if (i < n) {
        // Padding repeats the tail's first element, which leaves min and max as they are.
        const std::size_t rest = n - i;
        VF16 fx, fy;
        for (std::size_t j = 0; j < kWide; ++j) {
            fx[j] = x.at(i + (j < rest ? j : 0));
            fy[j] = y.at(i + (j < rest ? j : 0));
        }
        minmax16<Wide>(a, fx, fy);
        if (rest >= kLanes) {
            step8<Wide>(a, low_half<Wide>(fx), low_half<Wide>(fy), c);
            if (rest > kLanes) step8_partial<Wide>(a, high_half<Wide>(fx), high_half<Wide>(fy), c, rest - kLanes);
        } else {
            step8_partial<Wide>(a, low_half<Wide>(fx), low_half<Wide>(fy), c, rest);
        }
    }
    out = a;
}

// log(p / q) on vectors for the KLD pass (std::log does not vectorise without -ffast-math), with one division:
// p = 2^ep mp, q = 2^eq mq with mantissas in [1, 2); mp is halved or doubled until m = mp/mq is in about
// [sqrt(1/2), sqrt(2)], then log(p/q) = (ep - eq) ln 2 + 2 atanh(s) with s = (mp - mq)/(mp + mq) = (m - 1)/(m + 1).
// |s| <= 0.1716 (s^2 <= 0.0295), so the atanh series to s^15 is within 0.0295^8/17 = 3.3e-14 relative: a log error
// below 1.2e-14, eight orders under the printed digits. Valid for positive normal finite p and q,
// which is all the KLD pass produces (values in [2^-23, 1]).
__attribute__((always_inline)) inline VD exponent_of(const VU& bits) noexcept {
    // The biased exponent as a double without an int64 -> double conversion (absent before AVX-512DQ).
    return (VD)((bits >> 52) | (VU{} + 0x4330000000000000ull)) - splat(4503599627370496.0);
}
__attribute__((always_inline)) inline VD mantissa_of(const VU& bits) noexcept {
    return (VD)((bits & (VU{} + 0x000FFFFFFFFFFFFFull)) | (VU{} + 0x3FF0000000000000ull));
}
template <bool Wide>
__attribute__((always_inline)) inline VD log_ratio(const VD& p, const VD& q) noexcept {
    const VU pb = (VU)p, qb = (VU)q;
    VD e;
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (Wide) e = exponent_avx512(p) - exponent_avx512(q);  // both exact: the same difference
    else
#endif
        e = exponent_of(pb) - exponent_of(qb);
    VD mp = mantissa_of(pb);
    const VD mq = mantissa_of(qb);
    const VM high = less<Wide>(mq * 1.4142135623730951, mp);
    const VM low = less<Wide>(mp * 1.4142135623730951, mq);
    mp = pick<Wide>(high, mp * 0.5, pick<Wide>(low, mp * 2.0, mp));
    e = pick<Wide>(high, e + 1.0, pick<Wide>(low, e - 1.0, e));
    const VD s = (mp - mq) / (mp + mq);
    const VD z = s * s;
    // Estrin's scheme: the same number of operations as Horner's, a third of its dependency chain, which is
    // what bounds this loop.
    const VD z2 = z * z;
    const VD z4 = z2 * z2;
    const VD c01 = z * (1.0 / 3) + 1.0;
    const VD c23 = z * (1.0 / 7) + 1.0 / 5;
    const VD c45 = z * (1.0 / 11) + 1.0 / 9;
    const VD c67 = z * (1.0 / 15) + 1.0 / 13;
    const VD poly = (c23 * z2 + c01) + (c67 * z2 + c45) * z4;
    return e * 0.6931471805599453 + 2.0 * s * poly;
}

// The test hook's counters (kld_hooks.hpp): one relaxed add per block, nothing per element.
std::atomic<std::uint64_t> g_kld_close{0}, g_kld_general{0};

struct KldLanes {
    VD sp{}, sq{}, sa{};
    std::uint64_t general = 0;  // groups of 16 that took log_ratio (the test hook counts them)
};

struct KldConstants {
    VD ox, ix, oy, iy, floor, close_limit;
};

template <bool Wide>
__attribute__((always_inline)) inline void kld_normalise(const VD& x, const VD& y, const KldConstants& c, VD& p,
                                                         VD& q) noexcept {
    p = (x - c.ox) * c.ix;
    q = (y - c.oy) * c.iy;
    p = pick<Wide>(less<Wide>(p, c.floor), c.floor, p);
    q = pick<Wide>(less<Wide>(q, c.floor), c.floor, q);
}

template <bool Wide>
__attribute__((always_inline)) inline void kld_step(KldLanes& a, const VD& x, const VD& y, const KldConstants& c) noexcept {
    VD p, q;
    kld_normalise<Wide>(x, y, c, p, q);
    a.sp += p;
    a.sq += q;
    a.sa += p * log_ratio<Wide>(p, q);
}

// The fast form of log(p / q) for p and q within about 3% of each other, which is what comparing a tensor with
// a close copy of itself gives nearly everywhere. log(p/q) = 2 atanh(s) with s = (p - q)/(p + q) = num/den,
// without a double division (the divider is what bounds log_ratio): a float32 reciprocal r of den (relative error
// <= 2u + u^2, u = 2^-24), s0 = num*r, then one Newton correction s = s0 + (num - s0*den)*r. The product s0*den is
// num within 2u, so the subtraction is exact (Sterbenz) and the error of s is the square of the seed's plus three
// double roundings: |s - num/den| <= |s| (4u^2 + 3*2^-53), about 1.5e-14 relative. The form is taken when
// |s0| <= 1/64 in all sixteen lanes, so z = s^2 <= 2^-12 (1 + 5u) and the atanh series to z^3 is within
// z^4/9 < 4e-16 relative. log_ratio's own error is of the same order (its series stops at 3.3e-14), so both forms
// agree to about 5e-14 relative, eight orders below the printed digits; the tests check both against float64
// NumPy and each other.
constexpr double kCloseLimit = 1.0 / 64;
__attribute__((always_inline)) inline VD log_ratio_close(const VD& num, const VD& den, const VD& r,
                                                         const VD& s0) noexcept {
    const VD s = s0 + (num - s0 * den) * r;
    const VD z = s * s;
    const VD poly = ((z * (2.0 / 7) + 2.0 / 5) * z + 2.0 / 3) * z + 2.0;
    return s * poly;
}

#if DUMPCMP_HAVE_X86_LEVELS
DUMPCMP_TARGET_AVX512 inline bool any_above_avx512(const VD& a1, const VD& b1, const VD& a2, const VD& b2) noexcept {
    return (_mm512_cmp_pd_mask((__m512d)b1, (__m512d)a1, _CMP_LT_OQ) |
            _mm512_cmp_pd_mask((__m512d)b2, (__m512d)a2, _CMP_LT_OQ)) != 0;
}
#endif
// Whether a1 > b1 or a2 > b2 in any lane.
template <bool Wide>
__attribute__((always_inline)) inline bool any_above(const VD& a1, const VD& b1, const VD& a2, const VD& b2) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (Wide) return any_above_avx512(a1, b1, a2, b2);
#endif
    const VM m = less<Wide>(b1, a1) | less<Wide>(b2, a2);
    const VM4 h = __builtin_shufflevector(m, m, 0, 1, 2, 3) | __builtin_shufflevector(m, m, 4, 5, 6, 7);
    typedef long long VM2 __attribute__((vector_size(16)));
    const VM2 g = __builtin_shufflevector(h, h, 0, 1) | __builtin_shufflevector(h, h, 2, 3);
    return (g[0] | g[1]) != 0;
}

// Sixteen elements: element i + j in lane j % 8 of the low (j < 8) or high half, the same sums in the same order
// as two kld_step calls; only the log differs, and which form a group takes depends on its values alone.
template <bool Wide>
__attribute__((always_inline)) inline void kld_step16(KldLanes& a, const VF16& fx, const VF16& fy,
                                                      const KldConstants& c, bool general_only) noexcept {
    VD pl, ql, ph, qh;
    kld_normalise<Wide>(low_half<Wide>(fx), low_half<Wide>(fy), c, pl, ql);
    kld_normalise<Wide>(high_half<Wide>(fx), high_half<Wide>(fy), c, ph, qh);
    a.sp += pl;
    a.sq += ql;
    a.sp += ph;
    a.sq += qh;
    const VD numl = pl - ql, denl = pl + ql, numh = ph - qh, denh = ph + qh;
    // den is in [2^-22, 2], a normal float32 after rounding: the reciprocal seeds of all sixteen in one division.
    const VF16 den_f = __builtin_shufflevector(__builtin_convertvector(denl, VF8), __builtin_convertvector(denh, VF8),
                                               0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const VF16 r = (VF16{} + 1.0f) / den_f;
    const VD rl = low_half<Wide>(r), rh = high_half<Wide>(r);
    const VD s0l = numl * rl, s0h = numh * rh;
    if (general_only || any_above<Wide>(vabs(s0l), c.close_limit, vabs(s0h), c.close_limit)) {
        a.sa += pl * log_ratio<Wide>(pl, ql);
        a.sa += ph * log_ratio<Wide>(ph, qh);
        ++a.general;
        return;
    }
    a.sa += pl * log_ratio_close(numl, denl, rl, s0l);
    a.sa += ph * log_ratio_close(numh, denh, rh, s0h);
}

template <bool Wide, class SX, class SY>
__attribute__((always_inline)) inline void kld_body(SX x, SY y, std::size_t n, const KldParams& k, KldLanes& out) {
    KldLanes a = out;  // a local: stays in registers
    // Multiplying by the reciprocal differs from dividing by at most an ulp, far below the printed digits.
    const KldConstants c{splat(k.offset_x), splat(1.0 / k.divisor_x), splat(k.offset_y), splat(1.0 / k.divisor_y),
                         splat(kKldFloorEps), splat(kCloseLimit)};
    const bool general_only = detail::kld_general_only();
    std::size_t i = 0;
    for (; i + kWide <= n; i += kWide) {
        x.prefetch(i + kPrefetchAhead);
        y.prefetch(i + kPrefetchAhead);
        kld_step16<Wide>(a, x.load16(i), y.load16(i), c, general_only);
    }
    if (i < n) {
        // The last rest (< 16) elements: always the general form, on a copy, keeping the lanes with real elements.
        const std::size_t rest = n - i;
        VF16 fx, fy;
        for (std::size_t j = 0; j < kWide; ++j) {
            fx[j] = x.at(i + (j < rest ? j : 0));
            fy[j] = y.at(i + (j < rest ? j : 0));
        }
        auto partial = [&](const VD& vx, const VD& vy, std::size_t r) {
            KldLanes b = a;
            kld_step<Wide>(b, vx, vy, c);
            VM keep{};
            for (std::size_t j = 0; j < kLanes; ++j) keep[j] = j < r ? -1 : 0;
            a.sp = select(keep, b.sp, a.sp);
            a.sq = select(keep, b.sq, a.sq);
            a.sa = select(keep, b.sa, a.sa);
        };
        if (rest >= kLanes) {
            kld_step<Wide>(a, low_half<Wide>(fx), low_half<Wide>(fy), c);
            if (rest > kLanes) partial(high_half<Wide>(fx), high_half<Wide>(fy), rest - kLanes);
        } else {
            partial(low_half<Wide>(fx), low_half<Wide>(fy), rest);
        }
    }
    out = a;
}

// One compiled copy of each kernel per instruction-set level and source pair; simd_level() picks one.
#define DUMPCMP_KERNEL_LEVEL(suffix, is_wide, attributes)                                                              \
    template <class SX, class SY>                                                                                      \
    attributes void lanes_##suffix(SX x, SY y, std::size_t n, double kx, double ky, Lanes& out) {                      \
        if constexpr (is_wide) lanes_body<is_wide>(x.wide(), y.wide(), n, kx, ky, out);                                \
        else lanes_body<is_wide>(x, y, n, kx, ky, out);                                                                \
    }                                                                                                                  \
    template <class SX, class SY>                                                                                      \
    attributes void kld_##suffix(SX x, SY y, std::size_t n, const KldParams& k, KldLanes& out) {                       \
        if constexpr (is_wide) kld_body<is_wide>(x.wide(), y.wide(), n, k, out);                                       \
        else kld_body<is_wide>(x, y, n, k, out);                                                                       \
    }
DUMPCMP_KERNEL_LEVEL(scalar, false, )
#if DUMPCMP_HAVE_X86_LEVELS
DUMPCMP_KERNEL_LEVEL(avx2, false, DUMPCMP_TARGET_AVX2)
DUMPCMP_KERNEL_LEVEL(avx512, true, DUMPCMP_TARGET_AVX512)
#endif
#undef DUMPCMP_KERNEL_LEVEL

template <class SX, class SY>
void block_lanes(SX x, SY y, std::size_t n, double kx, double ky, Lanes& out) {
    switch (detail::simd_level()) {
#if DUMPCMP_HAVE_X86_LEVELS
        case detail::SimdLevel::avx512: return lanes_avx512(x, y, n, kx, ky, out);
        case detail::SimdLevel::avx2: return lanes_avx2(x, y, n, kx, ky, out);
#endif
        default: return lanes_scalar(x, y, n, kx, ky, out);
    }
}

template <class SX, class SY>
void kld_block(SX x, SY y, std::size_t n, const KldParams& k, KldPartial& into) {
    KldLanes a;
    switch (detail::simd_level()) {
#if DUMPCMP_HAVE_X86_LEVELS
        case detail::SimdLevel::avx512: kld_avx512(x, y, n, k, a); break;
        case detail::SimdLevel::avx2: kld_avx2(x, y, n, k, a); break;
#endif
        default: kld_scalar(x, y, n, k, a); break;
    }
    const std::uint64_t groups = (n + kWide - 1) / kWide;
    g_kld_general.fetch_add(a.general + (n % kWide != 0), std::memory_order_relaxed);
    g_kld_close.fetch_add(groups - a.general - (n % kWide != 0), std::memory_order_relaxed);
    KldPartial part;
    part.sum_p = lane_sum(a.sp);
    part.sum_q = lane_sum(a.sq);
    part.sum_p_log_pq = lane_sum(a.sa);
    merge(into, part);
}

template <class S>
double first_finite(S v, std::size_t n) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        const float f = v.at(i);
        if (std::isfinite(f)) return f;
    }
    return 0.0;
}

template <class S>
void count_non_finite(S v, std::size_t n, SidePartial& s) noexcept {
    for (std::size_t i = 0; i < n; ++i) {
        const float f = v.at(i);
        if (std::isnan(f)) ++s.nan;
        else if (f == std::numeric_limits<float>::infinity()) ++s.pos_inf;
        else if (f == -std::numeric_limits<float>::infinity()) ++s.neg_inf;
    }
}

void merge_side(SidePartial& a, const SidePartial& b, double na, double nb) noexcept {
    // Chan et al.'s pairwise update of mean and sum of squared deviations.
    const double n = na + nb;
    const double delta = b.mean - a.mean;
    a.mean += delta * (nb / n);
    a.m2 += b.m2 + delta * delta * (na * nb / n);
    a.sum_sq += b.sum_sq;
    a.min = b.min < a.min ? b.min : a.min;
    a.max = b.max > a.max ? b.max : a.max;
    a.nan += b.nan;
    a.pos_inf += b.pos_inf;
    a.neg_inf += b.neg_inf;
}

template <class SX, class SY>
void block_partial(SX x, SY y, std::size_t n, MetricPartial& p) {
    const double kx = first_finite(x, n), ky = first_finite(y, n);
    Lanes a;
    block_lanes(x, y, n, kx, ky, a);

    const double dn = static_cast<double>(n);
    p.count = n;
    auto side = [dn](SidePartial& s, double k, const VD& s1v, const VD& s2v, const VD& sqv, const VF16& mnv,
                     const VF16& mxv) {
        const double s1 = lane_sum(s1v), s2 = lane_sum(s2v);
        s.mean = k + s1 / dn;
        const double m2 = s2 - s1 * (s1 / dn);
        s.m2 = m2 < 0.0 ? 0.0 : m2;  // rounding only; keeps NaN
        s.sum_sq = lane_sum(sqv);
        s.min = lane_min_plain(mnv);
        s.max = lane_max_plain(mxv);
    };
    side(p.x, kx, a.sx, a.sxx_c, a.sxx, a.minx, a.maxx);
    side(p.y, ky, a.sy, a.syy_c, a.syy, a.miny, a.maxy);
    // A squared sum of finite float32 values cannot overflow a double, so a non-finite one means NaN/inf input.
    if (!std::isfinite(p.x.sum_sq)) count_non_finite(x, n, p.x);
    if (!std::isfinite(p.y.sum_sq)) count_non_finite(y, n, p.y);
    p.sum_xy = lane_sum(a.sxy);
    p.sum_abs_diff = lane_sum(a.sad);
    p.sum_sq_diff = lane_sum(a.ssd);
    p.max_abs_diff = lane_max(a.mad);
    p.sum_rel = lane_sum(a.srel);
    p.max_rel = lane_max(a.mrel);
}

// Blocks of at most kBlock elements, merged in order: what accumulate() does for float32 arrays, for any sources.
template <class SX, class SY>
void accumulate_sources(SX x, SY y, std::size_t n, MetricPartial& into) {
    for (std::size_t first = 0; first < n; first += kBlock) {
        MetricPartial block;
        block_partial(x.offset(first), y.offset(first), std::min(kBlock, n - first), block);
        merge(into, block);
    }
}

template <class SX, class SY>
void accumulate_kld_sources(SX x, SY y, std::size_t n, const KldParams& params, KldPartial& into) {
    if (!params.needed) return;
    for (std::size_t first = 0; first < n; first += kBlock)
        kld_block(x.offset(first), y.offset(first), std::min(kBlock, n - first), params, into);
}

std::string fixed(double v, int decimals) {
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

}  // namespace

namespace detail {

bool kld_general_only() noexcept {
    static const bool general = [] {
        const char* v = std::getenv("DUMPCMP_KLD");
        return v != nullptr && std::strcmp(v, "general") == 0;
    }();
    return general;
}

KldGroupCounts kld_group_counts() noexcept {
    return {g_kld_close.load(std::memory_order_relaxed), g_kld_general.load(std::memory_order_relaxed)};
}

void reset_kld_group_counts() noexcept {
    g_kld_close.store(0, std::memory_order_relaxed);
    g_kld_general.store(0, std::memory_order_relaxed);
}

}  // namespace detail

const char* metric_name(int index) noexcept {
    return index >= 0 && index < kMetricCount ? kMetricNames[index] : nullptr;
}

void accumulate(const float* x, const float* y, std::size_t n, MetricPartial& into) {
    accumulate_sources(F32Source{reinterpret_cast<const std::uint8_t*>(x)},
                       F32Source{reinterpret_cast<const std::uint8_t*>(y)}, n, into);
}

void merge(MetricPartial& into, const MetricPartial& next) {
    if (next.count == 0) return;
    if (into.count == 0) {
        into = next;
        return;
    }
    const double na = static_cast<double>(into.count), nb = static_cast<double>(next.count);
    merge_side(into.x, next.x, na, nb);
    merge_side(into.y, next.y, na, nb);
    into.count += next.count;
    into.sum_xy += next.sum_xy;
    into.sum_abs_diff += next.sum_abs_diff;
    into.sum_sq_diff += next.sum_sq_diff;
    into.max_abs_diff = sticky_max(into.max_abs_diff, next.max_abs_diff);
    into.sum_rel += next.sum_rel;
    into.max_rel = sticky_max(into.max_rel, next.max_rel);
}

KldParams kld_params(const MetricPartial& t) noexcept {
    KldParams k;
    const bool finite = t.x.nan + t.x.pos_inf + t.x.neg_inf + t.y.nan + t.y.pos_inf + t.y.neg_inf == 0;
    const bool zero_x = t.x.min == 0.0 && t.x.max == 0.0;
    const bool zero_y = t.y.min == 0.0 && t.y.max == 0.0;
    k.needed = t.count > 0 && finite && !zero_x && !zero_y;
    if (!k.needed) return k;
    // max == min leaves the values unchanged (offset 0, divisor 1), as the spec says.
    if (t.x.max > t.x.min) {
        k.offset_x = t.x.min;
        k.divisor_x = t.x.max - t.x.min;
    }
    if (t.y.max > t.y.min) {
        k.offset_y = t.y.min;
        k.divisor_y = t.y.max - t.y.min;
    }
    return k;
}

void accumulate_kld(const float* x, const float* y, std::size_t n, const KldParams& params, KldPartial& into) {
    accumulate_kld_sources(F32Source{reinterpret_cast<const std::uint8_t*>(x)},
                           F32Source{reinterpret_cast<const std::uint8_t*>(y)}, n, params, into);
}

void merge(KldPartial& into, const KldPartial& next) noexcept {
    into.sum_p += next.sum_p;
    into.sum_q += next.sum_q;
    into.sum_p_log_pq += next.sum_p_log_pq;
}

MetricResult finalize(const MetricPartial& t, const KldPartial* kld, const MetricOptions& options) {
    MetricResult r;
    r.metrics = options.metrics & kAllMetrics;
    r.scalar = options.scalar;
    r.both_bool = options.both_bool;
    r.values.fill(kNaN);
    r.count = t.count;
    r.nan_x = t.x.nan;
    r.inf_x = t.x.pos_inf + t.x.neg_inf;
    r.nan_y = t.y.nan;
    r.inf_y = t.y.pos_inf + t.y.neg_inf;
    r.mean_x = r.std_x = r.mean_y = r.std_y = kNaN;
    r.mse = r.sqnr_db = kNaN;
    r.min_x = r.max_x = r.min_y = r.max_y = kNaN;
    if (t.count == 0) return r;  // nothing to compare: every metric is undefined

    const double n = static_cast<double>(t.count);
    // np.min/np.max semantics: NaN wins.
    r.min_x = t.x.nan ? kNaN : t.x.min;
    r.max_x = t.x.nan ? kNaN : t.x.max;
    r.min_y = t.y.nan ? kNaN : t.y.min;
    r.max_y = t.y.nan ? kNaN : t.y.max;
    auto want = [&](Metric m) { return (r.metrics & metric_bit(m)) != 0; };
    auto set = [&](Metric m, double v) {
        if (want(m)) r.values[static_cast<std::size_t>(m)] = v;
    };

    // 0: cosine similarity
    {
        double v;
        const double nx = std::sqrt(t.x.sum_sq), ny = std::sqrt(t.y.sum_sq);
        if (options.scalar) v = 1.0;
        else if (nx <= kMetricEps && ny < kMetricEps) v = 1.0;
        else if (std::sqrt(nx) <= kMetricEps || std::sqrt(ny) <= kMetricEps) v = kNaN;  // one side all zero
        else {
            const double c = t.sum_xy / (nx * ny);
            v = c > 1.0 ? 1.0 : c;  // keeps NaN
        }
        set(Metric::CosineSimilarity, v);
    }
    // 3: relative Euclidean distance
    {
        const double s = t.y.sum_sq;
        set(Metric::RelativeEuclideanDistance, std::sqrt(s) <= kMetricEps ? 0.0 : std::sqrt(t.sum_sq_diff / s));
    }
    if (options.both_bool) return r;  // bool tensors get those two only

    set(Metric::MaxAbsoluteError, t.max_abs_diff);
    set(Metric::AccumulatedRelativeError, t.sum_rel);
    set(Metric::MeanAbsoluteError, t.sum_abs_diff / n);
    set(Metric::RootMeanSquareError, std::sqrt(t.sum_sq_diff / n));
    set(Metric::MaxRelativeError, t.max_rel);
    set(Metric::MeanRelativeError, t.sum_rel / n);
    r.mse = t.sum_sq_diff / n;
    r.sqnr_db = t.sum_sq_diff == 0.0 ? kInf : 10.0 * std::log10(t.y.sum_sq / t.sum_sq_diff);

    if (want(Metric::StandardDeviation)) {
        // IEEE semantics of mean/std over data with NaN or inf (what NumPy gives), then the well-conditioned sums.
        auto stats = [n](const SidePartial& s, double& mean, double& stdev) {
            if (s.nan || (s.pos_inf && s.neg_inf)) {
                mean = stdev = kNaN;
            } else if (s.pos_inf || s.neg_inf) {
                mean = s.pos_inf ? kInf : -kInf;
                stdev = kNaN;
            } else {
                mean = s.mean;
                stdev = std::sqrt(s.m2 / n);
            }
        };
        stats(t.x, r.mean_x, r.std_x);
        stats(t.y, r.mean_y, r.std_y);
    }

    if (want(Metric::KullbackLeiblerDivergence)) {
        const KldParams k = kld_params(t);
        double v = kNaN;
        if (k.needed && kld != nullptr) {
            const double sp = kld->sum_p, sq = kld->sum_q;
            v = kld->sum_p_log_pq / sp + std::log1p((sq - sp) / sp);
            // KL divergence of two distributions is >= 0; a negative value is rounding of a zero divergence.
            v = v < 0.0 ? 0.0 : v;
        }
        set(Metric::KullbackLeiblerDivergence, v);
    }
    return r;
}

std::string format_metric(int index, const MetricResult& r) {
    if (index < 0 || index >= kMetricCount)
        throw std::out_of_range("metric index " + std::to_string(index) + " is not in 0..9");
    const auto m = static_cast<Metric>(index);
    const bool selected = (r.metrics & metric_bit(m)) != 0;
    if (m == Metric::StandardDeviation) {
        if (!selected || r.both_bool || r.count == 0) return "NaN";
        auto one = [](double v) {
            if (!std::isfinite(v)) return std::string("NaN");
            return fixed(std::fabs(v) < 0.001 ? 0.0 : v, 3);
        };
        return "(" + one(r.mean_x) + ";" + one(r.std_x) + "),(" + one(r.mean_y) + ";" + one(r.std_y) + ")";
    }
    const double v = r.values[static_cast<std::size_t>(index)];
    if (m == Metric::KullbackLeiblerDivergence) {
        if (std::isnan(v)) return "NaN";
        if (std::isinf(v)) return v > 0 ? "inf" : "NaN";
        return fixed(std::fabs(v) < kMetricEps ? 0.0 : v, 6);
    }
    if (!std::isfinite(v)) return "NaN";
    return fixed(v, 6);
}

namespace {

// Calls fn(source_x, source_y) for elements [first, first + count): float32 and float16 storage are read in place
// (float16 decoded in registers); other types are decoded into the calling thread's buffer, whose size is one chunk.
template <class Fn>
void with_sources(const std::uint8_t* x, DataType tx, const std::uint8_t* y, DataType ty, std::uint64_t first,
                  std::size_t count, Fn&& fn) {
    thread_local std::vector<float> bx, by;
    auto side = [first, count](const std::uint8_t* base, DataType t, std::vector<float>& buffer, auto&& next) {
        if (t == DataType::FLOAT) return next(F32Source{base + 4 * first});
        if (t == DataType::FLOAT16) return next(F16Source{base + 2 * first});
        if (buffer.size() < count) buffer.resize(count);
        decode_to_float32(t, base, first, count, buffer.data());
        return next(F32Source{reinterpret_cast<const std::uint8_t*>(buffer.data())});
    };
    side(x, tx, bx, [&](auto sx) { side(y, ty, by, [&](auto sy) { fn(sx, sy); }); });
}

}  // namespace

void accumulate_stored(const std::uint8_t* x, DataType tx, const std::uint8_t* y, DataType ty, std::uint64_t first,
                       std::size_t n, MetricPartial& into) {
    with_sources(x, tx, y, ty, first, n, [&](auto sx, auto sy) { accumulate_sources(sx, sy, n, into); });
}

void accumulate_kld_stored(const std::uint8_t* x, DataType tx, const std::uint8_t* y, DataType ty,
                           std::uint64_t first, std::size_t n, const KldParams& params, KldPartial& into) {
    with_sources(x, tx, y, ty, first, n,
                 [&](auto sx, auto sy) { accumulate_kld_sources(sx, sy, n, params, into); });
}

std::uint64_t read_probe(const std::uint8_t* data, std::uint64_t bytes, unsigned threads) {
    constexpr std::size_t kProbeChunk = std::size_t{1} << 20;
    const std::uint64_t words = bytes / 8;
    const std::uint64_t chunks = (words + kProbeChunk - 1) / kProbeChunk;
    std::vector<std::uint64_t> sums(static_cast<std::size_t>(chunks), 0);
    parallel_for(static_cast<std::size_t>(chunks), [&](std::size_t c) {
        const std::uint64_t first = c * kProbeChunk;
        const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(kProbeChunk, words - first));
        std::uint64_t acc[4] = {0, 0, 0, 0};
        const std::uint8_t* p = data + first * 8;
        std::size_t i = 0;
        for (; i + 4 <= count; i += 4)
            for (std::size_t j = 0; j < 4; ++j) {
                std::uint64_t w;
                std::memcpy(&w, p + 8 * (i + j), 8);
                acc[j] += w;
            }
        for (; i < count; ++i) {
            std::uint64_t w;
            std::memcpy(&w, p + 8 * i, 8);
            acc[0] += w;
        }
        sums[c] = acc[0] + acc[1] + acc[2] + acc[3];
    }, threads);
    std::uint64_t total = 0;
    for (std::uint64_t s : sums) total += s;
    for (std::uint64_t i = words * 8; i < bytes; ++i) total += data[i];
    return total;
}

}  // namespace dumpcmp
