#include "dumpcmp/metrics.hpp"

#include <charconv>
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
#include "metrics_exact.hpp"
#include "simd.hpp"
#include "simd_pack.hpp"

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

// The kernels' lane structure: eight logical double lanes (sixteen float lanes for min/max), element i of a block
// in lane i % 8, in element order, on every level. A level holds those lanes in vectors of its own width (one
// zmm, two ymm or four xmm: simd_pack.hpp), so the instruction set changes how many registers a lane set takes,
// never the arithmetic a lane sees: all levels give the same bits (no FMA contraction: see the pragma above).
template <std::size_t Bytes, detail::SimdLevel Id>
struct Level {
    static constexpr std::size_t bytes = Bytes;
    static constexpr std::size_t parts = 64 / Bytes;
    static constexpr detail::SimdLevel id = Id;
    using VD = detail::Pack<double, Bytes, parts>;
    using VM = detail::Pack<long long, Bytes, parts>;
    using VU = detail::Pack<unsigned long long, Bytes, parts>;
    using VF = detail::Pack<float, Bytes, parts>;
    using VI = detail::Pack<std::int32_t, Bytes, parts>;
    using VW = detail::Pack<std::uint32_t, Bytes, parts>;
};
using LevelScalar = Level<16, detail::SimdLevel::scalar>;  // baseline x86-64: SSE2
using LevelAvx2 = Level<32, detail::SimdLevel::avx2>;
using LevelAvx512 = Level<64, detail::SimdLevel::avx512>;
static_assert(LevelAvx2::VD::lanes == kLanes && LevelScalar::VF::lanes == 16, "the same logical lanes everywhere");
constexpr std::size_t kWide = 16;  // elements per step: one VF, two VD
// Software prefetch distance in elements. The loops are compute-heavy enough that the hardware prefetcher alone
// falls behind on data from DRAM; a prefetch past the end of a block is harmless (prefetches never fault).
constexpr std::size_t kPrefetchAhead = 1024;

typedef double VD8 __attribute__((vector_size(64)));
typedef float VF16 __attribute__((vector_size(64)));
typedef float VF8 __attribute__((vector_size(32)));
typedef double VD4 __attribute__((vector_size(32)));
typedef float VF4 __attribute__((vector_size(16)));
typedef double VD2 __attribute__((vector_size(16)));
typedef float VF2 __attribute__((vector_size(8)));
typedef long long VM4 __attribute__((vector_size(32)));
typedef long long VM2 __attribute__((vector_size(16)));
typedef std::uint16_t VH4 __attribute__((vector_size(8)));
typedef std::uint32_t VW4 __attribute__((vector_size(16)));
typedef std::int32_t VI4 __attribute__((vector_size(16)));

template <class VD>
DUMPCMP_AI VD vabs(const VD& v) noexcept {
    return detail::bitcast<double>(detail::bitcast<unsigned long long>(v) & 0x7FFFFFFFFFFFFFFFull);
}
// NaN-propagating max for values that are >= 0 or NaN with the sign bit clear (|.| results): their bit patterns
// order as integers the way the values do, and NaN patterns sit above +inf.
template <class VD>
DUMPCMP_AI VD vsticky_max_nonneg(const VD& m, const VD& v) noexcept {
    return pick(detail::bitcast<long long>(m) < detail::bitcast<long long>(v), v, m);
}

#if DUMPCMP_HAVE_X86_LEVELS
// AVX-512 and AVX2 forms of a few steps, the same values bit for bit; GCC 12 makes several instructions of each
// generic form. Not always_inline (their callers are generic templates) but inlined into their level's kernels.
// The zero-masked AVX-512 intrinsics: the plain ones start from an undefined register, which GCC 12 warns about.
DUMPCMP_TARGET_AVX512 inline VD8 low_half_avx512(const VF16& f) noexcept {
    return (VD8)_mm512_maskz_cvtps_pd(0xFF, (__m256)__builtin_shufflevector(f, f, 0, 1, 2, 3, 4, 5, 6, 7));
}
DUMPCMP_TARGET_AVX512 inline VD8 high_half_avx512(const VF16& f) noexcept {
    return (VD8)_mm512_maskz_cvtps_pd(0xFF, (__m256)__builtin_shufflevector(f, f, 8, 9, 10, 11, 12, 13, 14, 15));
}
// floor(log2 v) of a positive normal v, exact: the biased exponent less 1023.
DUMPCMP_TARGET_AVX512 inline VD8 exponent_avx512(const VD8& v) noexcept {
    return (VD8)_mm512_maskz_getexp_pd(0xFF, (__m512d)v);
}
// The F16C conversions (16 and 8 elements). They equal halves_to_floats on every non-NaN input (denormal modes do
// not apply to them; the tests compare the paths) and quiet signalling NaNs, which the metrics only count.
DUMPCMP_TARGET_AVX512 inline VF16 halves16_avx512(const std::uint8_t* p) noexcept {
    return (VF16)_mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
DUMPCMP_TARGET_AVX2 inline VF8 halves8_avx2(const std::uint8_t* p) noexcept {
    return (VF8)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
DUMPCMP_TARGET_AVX512 inline bool any_above_avx512(const VD8& a1, const VD8& b1, const VD8& a2, const VD8& b2) noexcept {
    return (_mm512_cmp_pd_mask((__m512d)b1, (__m512d)a1, _CMP_LT_OQ) |
            _mm512_cmp_pd_mask((__m512d)b2, (__m512d)a2, _CMP_LT_OQ)) != 0;
}
// GCC 12 widens a float 4-vector to doubles through the stack (two xmm conversions and a reload).
DUMPCMP_TARGET_AVX2 inline VD4 widen_avx2(const VF8& f, int high) noexcept {
    return (VD4)_mm256_cvtps_pd(high ? _mm256_extractf128_ps((__m256)f, 1) : _mm256_castps256_ps128((__m256)f));
}
DUMPCMP_TARGET_AVX2 inline VF8 narrow_avx2(const VD4& lo, const VD4& hi) noexcept {
    return (VF8)_mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps((__m256d)lo)), _mm256_cvtpd_ps((__m256d)hi),
                                     1);
}
DUMPCMP_TARGET_AVX2 inline bool any_set_avx2(const VM4& m) noexcept { return _mm256_movemask_pd((__m256d)m) != 0; }
#endif
inline VD2 widen_sse2(const VF4& f, int high) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    return (VD2)_mm_cvtps_pd(high ? _mm_movehl_ps((__m128)f, (__m128)f) : (__m128)f);
#else
    return high ? VD2{f[2], f[3]} : VD2{f[0], f[1]};
#endif
}
inline bool any_set_sse2(const VM2& m) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    return _mm_movemask_pd((__m128d)m) != 0;
#else
    return (m[0] | m[1]) != 0;
#endif
}

// Lanes 0-7 (H = 0) or 8-15 (H = 1) of sixteen floats as eight doubles, exact.
template <class L, std::size_t H>
DUMPCMP_AI typename L::VD half_of(const typename L::VF& f) noexcept {
    typename L::VD r;
    if constexpr (L::bytes == 64) {
#if DUMPCMP_HAVE_X86_LEVELS
        r.p[0] = H == 0 ? low_half_avx512(f.p[0]) : high_half_avx512(f.p[0]);
#else
        static_assert(L::bytes != 64, "no AVX-512 level here");
#endif
    } else if constexpr (L::bytes == 32) {
#if DUMPCMP_HAVE_X86_LEVELS
        // float part H holds lanes 8H..8H+7: its halves are double parts 0 and 1
        r.p[0] = widen_avx2(f.p[H], 0);
        r.p[1] = widen_avx2(f.p[H], 1);
#endif
    } else {
        r.p[0] = widen_sse2(f.p[2 * H], 0);
        r.p[1] = widen_sse2(f.p[2 * H], 1);
        r.p[2] = widen_sse2(f.p[2 * H + 1], 0);
        r.p[3] = widen_sse2(f.p[2 * H + 1], 1);
    }
    return r;
}

// Eight + eight doubles rounded to sixteen floats (lo in lanes 0-7).
template <class L>
DUMPCMP_AI typename L::VF narrow_pair(const typename L::VD& lo, const typename L::VD& hi) noexcept {
    typename L::VF r;
    if constexpr (L::bytes == 64) {
        r.p[0] = __builtin_shufflevector(__builtin_convertvector(lo.p[0], VF8), __builtin_convertvector(hi.p[0], VF8),
                                         0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    } else if constexpr (L::bytes == 32) {
#if DUMPCMP_HAVE_X86_LEVELS
        r.p[0] = narrow_avx2(lo.p[0], lo.p[1]);
        r.p[1] = narrow_avx2(hi.p[0], hi.p[1]);
#endif
    } else {
        r.p[0] = __builtin_shufflevector(__builtin_convertvector(lo.p[0], VF2), __builtin_convertvector(lo.p[1], VF2),
                                         0, 1, 2, 3);
        r.p[1] = __builtin_shufflevector(__builtin_convertvector(lo.p[2], VF2), __builtin_convertvector(lo.p[3], VF2),
                                         0, 1, 2, 3);
        r.p[2] = __builtin_shufflevector(__builtin_convertvector(hi.p[0], VF2), __builtin_convertvector(hi.p[1], VF2),
                                         0, 1, 2, 3);
        r.p[3] = __builtin_shufflevector(__builtin_convertvector(hi.p[2], VF2), __builtin_convertvector(hi.p[3], VF2),
                                         0, 1, 2, 3);
    }
    return r;
}

// IEEE binary16 -> binary32 with integer operations only: exact, the same bits as half_to_float (NaN payloads
// kept), independent of the MXCSR denormal modes. The baseline level's decoder (the others have F16C).
template <class L>
DUMPCMP_AI typename L::VF halves_to_floats(const typename L::VW& h) noexcept {
    using VW = typename L::VW;
    using VF = typename L::VF;
    const VW sign = (h & 0x8000u) << 16;
    const VW exp = h & 0x7C00u;
    const VW mant = h & 0x3FFu;
    const VW normal = ((h & 0x7FFFu) << 13) + (112u << 23);
    const VW special = (mant << 13) | 0x7F800000u;
    // Subnormals: mant * 2^-24, exact in float32 (an integer below 2^10 times a power of two).
    VF sub_value;
    DUMPCMP_EACH(L::parts, sub_value.p[k] = __builtin_convertvector((typename L::VI::V)mant.p[k], typename VF::V));
    const VW sub = detail::bitcast<std::uint32_t>(sub_value * 5.9604644775390625e-08f);
    const VW is_sub = detail::bitcast<std::uint32_t>(exp == 0u);
    const VW is_special = detail::bitcast<std::uint32_t>(exp == 0x7C00u);
    const VW bits = (is_sub & sub) | (~is_sub & ((is_special & special) | (~is_special & normal)));
    return detail::bitcast<float>(bits | sign);
}

// Where a block's values come from: float32 storage read in place, or float16 storage decoded in registers (no
// buffer round trip). Both read through memcpy: any alignment.
struct F32Source {
    const std::uint8_t* base;
    template <class L>
    DUMPCMP_AI typename L::VF load(std::size_t i) const noexcept {
        typename L::VF v;
        DUMPCMP_EACH(L::parts, std::memcpy(&v.p[k], base + 4 * (i + k * L::VF::per), sizeof v.p[k]));
        return v;
    }
    float at(std::size_t i) const noexcept {
        float f;
        std::memcpy(&f, base + 4 * i, sizeof f);
        return f;
    }
    F32Source offset(std::size_t i) const noexcept { return {base + 4 * i}; }
    void to_floats(float* out, std::size_t n) const noexcept { std::memcpy(out, base, 4 * n); }
    DUMPCMP_AI void prefetch(std::size_t i) const noexcept { __builtin_prefetch(base + 4 * i); }
};

struct F16Source {
    const std::uint8_t* base;
    template <class L>
    DUMPCMP_AI typename L::VF load(std::size_t i) const noexcept {
        typename L::VF v;
        if constexpr (L::bytes == 64) {
#if DUMPCMP_HAVE_X86_LEVELS
            v.p[0] = halves16_avx512(base + 2 * i);
#endif
            return v;
        } else if constexpr (L::bytes == 32) {
#if DUMPCMP_HAVE_X86_LEVELS
            v.p[0] = halves8_avx2(base + 2 * i);
            v.p[1] = halves8_avx2(base + 2 * (i + 8));
#endif
            return v;
        } else {
            typename L::VW w;
            DUMPCMP_EACH(L::parts, {
                VH4 h;
                std::memcpy(&h, base + 2 * (i + 4 * k), sizeof h);
                w.p[k] = __builtin_convertvector(h, VW4);
            });
            return halves_to_floats<L>(w);
        }
    }
    float at(std::size_t i) const noexcept {
        std::uint16_t h;
        std::memcpy(&h, base + 2 * i, sizeof h);
        return half_to_float(h);
    }
    F16Source offset(std::size_t i) const noexcept { return {base + 2 * i}; }
    void to_floats(float* out, std::size_t n) const { decode_to_float32(DataType::FLOAT16, base, 0, n, out); }
    DUMPCMP_AI void prefetch(std::size_t i) const noexcept { __builtin_prefetch(base + 2 * i); }
};

// The accumulators of pass 1 in four groups, which the narrow levels run as separate loops over an L1-resident
// tile (all of them at once need 32 ymm registers; AVX2 has 16). Each accumulator still sees its elements in
// element order, so the grouping changes no bit.
template <class L>
struct SideLanes {
    typename L::VD s1, s2, sq;  // sums of deviations from the block's first finite value, their squares, squares
    typename L::VF mn, mx;      // float32 min and max: exact, and NaN never enters them (the counts report it)
};
template <class L>
struct DiffLanes {
    typename L::VD sxy, sad, ssd, mad;
};
template <class L>
struct RelLanes {
    typename L::VD srel, mrel;
};
template <class L>
struct Lanes {
    SideLanes<L> x, y;
    DiffLanes<L> d;
    RelLanes<L> r;
};
template <class L>
Lanes<L> initial_lanes() noexcept {
    using VD = typename L::VD;
    using VF = typename L::VF;
    const SideLanes<L> side{VD::zero(), VD::zero(), VD::zero(), VF::splat(std::numeric_limits<float>::infinity()),
                            VF::splat(-std::numeric_limits<float>::infinity())};
    return {side, side, {VD::zero(), VD::zero(), VD::zero(), VD::zero()}, {VD::zero(), VD::zero()}};
}

template <class L>
struct StepConstants {
    typename L::VD kx, ky, eps, one;
    typename L::VF epsf, onef;
};

enum : unsigned { kGroupX = 1, kGroupY = 2, kGroupDiff = 4, kGroupRel = 8, kGroupsAll = 15 };

template <class VF>
DUMPCMP_AI VF vabsf(const VF& v) noexcept {
    return detail::bitcast<float>(detail::bitcast<std::uint32_t>(v) & 0x7FFFFFFFu);
}

// The per-element terms of eight elements (one per lane) as doubles: what the accumulators add. F32 = the
// original tool's terms, each operation rounded to float32 (computed on sixteen float lanes, then widened, exactly);
// otherwise the terms of the exact float32 inputs in double.
template <class L>
struct Terms8 {
    typename L::VD x, y, xx, yy, xy, ad, sd, rel;
};

template <class L, unsigned G>
DUMPCMP_AI void terms8_double(Terms8<L>& t, const StepConstants<L>& c) noexcept {
    if constexpr ((G & kGroupX) != 0) t.xx = t.x * t.x;
    if constexpr ((G & kGroupY) != 0) t.yy = t.y * t.y;
    if constexpr ((G & kGroupDiff) != 0) {
        t.xy = t.x * t.y;
        t.ad = vabs(t.x - t.y);
        t.sd = t.ad * t.ad;
    }
    if constexpr ((G & kGroupRel) != 0) t.rel = pick(c.eps < vabs(t.y), vabs(t.x / t.y - c.one), L::VD::zero());
}

template <class L, bool F32, unsigned G>
DUMPCMP_AI void terms16(const typename L::VF& fx, const typename L::VF& fy, const StepConstants<L>& c,
                        Terms8<L>& lo, Terms8<L>& hi) noexcept {
    using VF = typename L::VF;
    lo.x = half_of<L, 0>(fx);
    hi.x = half_of<L, 1>(fx);
    lo.y = half_of<L, 0>(fy);
    hi.y = half_of<L, 1>(fy);
    if constexpr (F32) {
        if constexpr ((G & kGroupX) != 0) {
            const VF s = fx * fx;
            lo.xx = half_of<L, 0>(s);
            hi.xx = half_of<L, 1>(s);
        }
        if constexpr ((G & kGroupY) != 0) {
            const VF s = fy * fy;
            lo.yy = half_of<L, 0>(s);
            hi.yy = half_of<L, 1>(s);
        }
        if constexpr ((G & kGroupDiff) != 0) {
            const VF p = fx * fy;
            const VF d = vabsf(fx - fy);
            const VF s = d * d;
            lo.xy = half_of<L, 0>(p);
            hi.xy = half_of<L, 1>(p);
            lo.ad = half_of<L, 0>(d);
            hi.ad = half_of<L, 1>(d);
            lo.sd = half_of<L, 0>(s);
            hi.sd = half_of<L, 1>(s);
        }
        if constexpr ((G & kGroupRel) != 0) {
            // |float32(x / y) - 1|: every lane divides (no branch); lanes with |y| <= EPS are then 0, whatever
            // inf or NaN their division gave. EPS = 2^-52 is exact in float32.
            const VF r = pick(c.epsf < vabsf(fy), vabsf(fx / fy - c.onef), VF::zero());
            lo.rel = half_of<L, 0>(r);
            hi.rel = half_of<L, 1>(r);
        }
    } else {
        terms8_double<L, G>(lo, c);
        terms8_double<L, G>(hi, c);
    }
}

template <class L>
DUMPCMP_AI void side_apply(SideLanes<L>& a, const typename L::VD& v, const typename L::VD& sq,
                           const typename L::VD& k) noexcept {
    // Sums of deviations from the block's first finite value (float64, as the original's std): the variance from
    // them loses at most about log2(block) bits, unlike sum(x^2) - n*mean^2 (which fails on large constant data).
    const typename L::VD dv = v - k;
    a.s1 += dv;
    a.s2 += dv * dv;
    a.sq += sq;
}
template <class L>
DUMPCMP_AI void side_minmax(SideLanes<L>& a, const typename L::VF& f) noexcept {
    a.mn = pick(f < a.mn, f, a.mn);
    a.mx = pick(a.mx < f, f, a.mx);
}
template <class L>
DUMPCMP_AI void diff_apply(DiffLanes<L>& a, const Terms8<L>& t) noexcept {
    a.sxy += t.xy;
    a.sad += t.ad;
    a.ssd += t.sd;
    a.mad = vsticky_max_nonneg(a.mad, t.ad);
}
template <class L>
DUMPCMP_AI void rel_apply(RelLanes<L>& a, const Terms8<L>& t) noexcept {
    a.srel += t.rel;
    a.mrel = vsticky_max_nonneg(a.mrel, t.rel);
}

// The sums of eight elements (one per lane), for the groups in G.
template <class L, unsigned G>
DUMPCMP_AI void apply8(Lanes<L>& a, const Terms8<L>& t, const StepConstants<L>& c) noexcept {
    if constexpr ((G & kGroupX) != 0) side_apply<L>(a.x, t.x, t.xx, c.kx);
    if constexpr ((G & kGroupY) != 0) side_apply<L>(a.y, t.y, t.yy, c.ky);
    if constexpr ((G & kGroupDiff) != 0) diff_apply<L>(a.d, t);
    if constexpr ((G & kGroupRel) != 0) rel_apply<L>(a.r, t);
}

template <class L, unsigned G, bool F32>
DUMPCMP_AI void step16(Lanes<L>& a, const typename L::VF& fx, const typename L::VF& fy,
                       const StepConstants<L>& c) noexcept {
    if constexpr ((G & kGroupX) != 0) side_minmax<L>(a.x, fx);
    if constexpr ((G & kGroupY) != 0) side_minmax<L>(a.y, fy);
    Terms8<L> lo, hi;
    terms16<L, F32, G>(fx, fy, c, lo, hi);
    apply8<L, G>(a, lo, c);
    apply8<L, G>(a, hi, c);
}

// The last rest (< 8) elements of eight lanes: a step on a copy, keeping only the lanes that saw real elements.
template <class L>
void apply8_partial(Lanes<L>& a, const Terms8<L>& t, const StepConstants<L>& c, std::size_t rest) noexcept {
    Lanes<L> b = a;
    apply8<L, kGroupsAll>(b, t, c);
    typename L::VM keep;
    for (std::size_t j = 0; j < kLanes; ++j) keep.set(j, j < rest ? -1 : 0);
    auto take = [&keep](typename L::VD& to, const typename L::VD& from) { to = pick(keep, from, to); };
    take(a.x.s1, b.x.s1); take(a.x.s2, b.x.s2); take(a.x.sq, b.x.sq);
    take(a.y.s1, b.y.s1); take(a.y.s2, b.y.s2); take(a.y.sq, b.y.sq);
    take(a.d.sxy, b.d.sxy); take(a.d.sad, b.d.sad); take(a.d.ssd, b.d.ssd); take(a.d.mad, b.d.mad);
    take(a.r.srel, b.r.srel); take(a.r.mrel, b.r.mrel);
}

// Elements per tile of the narrow levels' grouped loops: 16 KiB of float32 per side stays in L1 between them.
constexpr std::size_t kTile = 4096;

// One group's loop over [first, last) (whole steps of 16), on a local copy of its accumulators. Each level's
// GroupRunner calls it from a function of its own (not inlined): the other groups' accumulators are then not live
// across the loop, and this group's stay in registers.
enum : unsigned { kGroupMinMax = 16 };
template <class L, unsigned G, bool F32, class Part, class SX, class SY>
DUMPCMP_AI void group_loop(Part& part, SX x, SY y, std::size_t first, std::size_t last, const StepConstants<L>& c) {
    Part local = part;
    for (std::size_t i = first; i < last; i += kWide) {
        Terms8<L> lo, hi;
        if constexpr (G == kGroupMinMax) {
            x.prefetch(i + kPrefetchAhead);
            y.prefetch(i + kPrefetchAhead);
            const typename L::VF fx = x.template load<L>(i), fy = y.template load<L>(i);
            side_minmax<L>(local.x, fx);
            side_minmax<L>(local.y, fy);
            // The divisions of the relative errors overlap the min/max work here, in a loop of their own they
            // would bound it.
            terms16<L, F32, kGroupRel>(fx, fy, c, lo, hi);
            rel_apply<L>(local.r, lo);
            rel_apply<L>(local.r, hi);
        } else if constexpr (G == kGroupX) {
            const typename L::VF fx = x.template load<L>(i);
            terms16<L, F32, kGroupX>(fx, fx, c, lo, hi);
            side_apply<L>(local, lo.x, lo.xx, c.kx);
            side_apply<L>(local, hi.x, hi.xx, c.kx);
        } else if constexpr (G == kGroupY) {
            const typename L::VF fy = y.template load<L>(i);
            terms16<L, F32, kGroupY>(fy, fy, c, lo, hi);
            side_apply<L>(local, lo.y, lo.yy, c.ky);
            side_apply<L>(local, hi.y, hi.yy, c.ky);
        } else {
            const typename L::VF fx = x.template load<L>(i), fy = y.template load<L>(i);
            terms16<L, F32, kGroupDiff>(fx, fy, c, lo, hi);
            diff_apply<L>(local, lo);
            diff_apply<L>(local, hi);
        }
    }
    part = local;
}

template <class L, bool F32, class Runner, class SX, class SY>
DUMPCMP_AI void lanes_body(SX x, SY y, std::size_t n, double kx, double ky, Lanes<L>& out) {
    using VD = typename L::VD;
    using VF = typename L::VF;
    const StepConstants<L> c{VD::splat(kx), VD::splat(ky), VD::splat(kMetricEps), VD::splat(1.0),
                             VF::splat(static_cast<float>(kMetricEps)), VF::splat(1.0f)};
    const std::size_t whole = n - n % kWide;
    if constexpr (L::bytes == 64) {
        // 32 registers hold every accumulator: one loop. A local copy stays in registers; through the reference
        // every step would store all lanes.
        Lanes<L> a = out;
        for (std::size_t i = 0; i < whole; i += kWide) {
            x.prefetch(i + kPrefetchAhead);
            y.prefetch(i + kPrefetchAhead);
            step16<L, kGroupsAll, F32>(a, x.template load<L>(i), y.template load<L>(i), c);
        }
        out = a;
    } else {
        for (std::size_t first = 0; first < whole; first += kTile) {
            const std::size_t last = std::min(whole, first + kTile);
            Runner::template run<kGroupMinMax, F32>(out, x, y, first, last, c);
            Runner::template run<kGroupX, F32>(out.x, x, y, first, last, c);
            Runner::template run<kGroupY, F32>(out.y, x, y, first, last, c);
            Runner::template run<kGroupDiff, F32>(out.d, x, y, first, last, c);
        }
    }
    if (whole < n) {
        // Padding repeats the tail's first element, which leaves min and max as they are.
        Lanes<L> a = out;
        const std::size_t rest = n - whole;
        VF fx = VF::zero(), fy = VF::zero();  // every lane is set below; zeroed so no compiler sees it unset
        for (std::size_t j = 0; j < kWide; ++j) {
            fx.set(j, x.at(whole + (j < rest ? j : 0)));
            fy.set(j, y.at(whole + (j < rest ? j : 0)));
        }
        side_minmax<L>(a.x, fx);
        side_minmax<L>(a.y, fy);
        Terms8<L> lo, hi;
        terms16<L, F32, kGroupsAll>(fx, fy, c, lo, hi);
        if (rest >= kLanes) {
            apply8<L, kGroupsAll>(a, lo, c);
            if (rest > kLanes) apply8_partial<L>(a, hi, c, rest - kLanes);
        } else {
            apply8_partial<L>(a, lo, c, rest);
        }
        out = a;
    }
}

// Pairwise over the lanes, in a fixed order.
template <class VD>
inline double lane_sum(const VD& v) noexcept {
    return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7]));
}
template <class VD>
inline double lane_max(const VD& v) noexcept {
    double m = v[0];
    for (std::size_t j = 1; j < kLanes; ++j) m = sticky_max(m, v[j]);
    return m;
}
template <class VF>
inline double lane_min_plain(const VF& v) noexcept {
    float m = v[0];
    for (std::size_t j = 1; j < kWide; ++j) m = v[j] < m ? v[j] : m;
    return m;
}
template <class VF>
inline double lane_max_plain(const VF& v) noexcept {
    float m = v[0];
    for (std::size_t j = 1; j < kWide; ++j) m = v[j] > m ? v[j] : m;
    return m;
}

// A block's lanes reduced: the same on every level.
struct SideSums {
    double s1, s2, sq, mn, mx;
};
struct BlockSums {
    SideSums x, y;
    double sxy, sad, ssd, mad, srel, mrel;
};
template <class L>
DUMPCMP_AI SideSums reduce_side(const SideLanes<L>& a) noexcept {
    return {lane_sum(a.s1), lane_sum(a.s2), lane_sum(a.sq), lane_min_plain(a.mn), lane_max_plain(a.mx)};
}
template <class L>
DUMPCMP_AI BlockSums reduce(const Lanes<L>& a) noexcept {
    return {reduce_side<L>(a.x), reduce_side<L>(a.y), lane_sum(a.d.sxy), lane_sum(a.d.sad), lane_sum(a.d.ssd),
            lane_max(a.d.mad),   lane_sum(a.r.srel),  lane_max(a.r.mrel)};
}

// log(p / q) on vectors for the KLD pass (std::log does not vectorise without -ffast-math), with one division:
// p = 2^ep mp, q = 2^eq mq with mantissas in [1, 2); mp is halved or doubled until m = mp/mq is in about
// [sqrt(1/2), sqrt(2)], then log(p/q) = (ep - eq) ln 2 + 2 atanh(s) with s = (mp - mq)/(mp + mq) = (m - 1)/(m + 1).
// |s| <= 0.1716 (s^2 <= 0.0295), so the atanh series to s^15 is within 0.0295^8/17 = 3.3e-14 relative: a log error
// below 1.2e-14, eight orders under the printed digits. Valid for positive normal finite p and q,
// which is all the KLD pass produces (values in [2^-23, 1]).
template <class L>
DUMPCMP_AI typename L::VD exponent_of(const typename L::VD& v) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (L::bytes == 64) {
        typename L::VD r;
        r.p[0] = exponent_avx512(v.p[0]);
        return r;
    }
#endif
    // The biased exponent as a double without an int64 -> double conversion (absent before AVX-512DQ); the
    // difference of two of these equals the difference of the exact exponents.
    const auto bits = detail::bitcast<unsigned long long>(v);
    return detail::bitcast<double>((bits >> 52) | 0x4330000000000000ull) - 4503599627370496.0;
}
template <class L>
DUMPCMP_AI typename L::VD mantissa_of(const typename L::VD& v) noexcept {
    const auto bits = detail::bitcast<unsigned long long>(v);
    return detail::bitcast<double>((bits & 0x000FFFFFFFFFFFFFull) | 0x3FF0000000000000ull);
}
template <class L>
DUMPCMP_AI typename L::VD log_ratio(const typename L::VD& p, const typename L::VD& q) noexcept {
    using VD = typename L::VD;
    VD e = exponent_of<L>(p) - exponent_of<L>(q);
    VD mp = mantissa_of<L>(p);
    const VD mq = mantissa_of<L>(q);
    const auto high = mq * 1.4142135623730951 < mp;
    const auto low = mp * 1.4142135623730951 < mq;
    mp = pick(high, mp * 0.5, pick(low, mp * 2.0, mp));
    e = pick(high, e + 1.0, pick(low, e - 1.0, e));
    // log(p / q) = e ln 2 + 2 atanh(s), |s| <= 0.1716 (s^2 <= 0.0295): the series to s^15 is within
    // 0.0295^8/17 = 3.3e-14 relative. Estrin's scheme: the same number of operations as Horner's, a third of its
    // dependency chain, which is what bounds this loop.
    const VD s = (mp - mq) / (mp + mq);
    const VD z = s * s;
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

template <class L>
struct KldLanes {
    typename L::VD sp, sq, sa;
    std::uint64_t general = 0;  // groups of 16 that took log_ratio (the test hook counts them)
};
struct KldSums {
    double sp = 0, sq = 0, sa = 0;
    std::uint64_t general = 0;
};

template <class L>
struct KldConstants {
    typename L::VD ox, ix, oy, iy, floor, close_limit;
    typename L::VF oxf, dxf, oyf, dyf, floorf;  // the float32 forms: offsets, divisors, the clamp
};

template <class L>
DUMPCMP_AI void kld_normalise(const typename L::VD& x, const typename L::VD& y, const KldConstants<L>& c,
                              typename L::VD& p, typename L::VD& q) noexcept {
    p = (x - c.ox) * c.ix;
    q = (y - c.oy) * c.iy;
    p = pick(p < c.floor, c.floor, p);
    q = pick(q < c.floor, c.floor, q);
}

// p and q of sixteen elements, as eight-lane halves. F32: the original's float32 operations, max(float32(
// float32(x - min) / float32(max - min)), eps32) (NaN stays NaN, as in np.maximum); otherwise in double.
template <class L, bool F32>
DUMPCMP_AI void kld_pq16(const typename L::VF& fx, const typename L::VF& fy, const KldConstants<L>& c,
                         typename L::VD& pl, typename L::VD& ql, typename L::VD& ph, typename L::VD& qh) noexcept {
    if constexpr (F32) {
        using VF = typename L::VF;
        VF p = (fx - c.oxf) / c.dxf;
        VF q = (fy - c.oyf) / c.dyf;
        p = pick(p < c.floorf, c.floorf, p);
        q = pick(q < c.floorf, c.floorf, q);
        pl = half_of<L, 0>(p);
        ph = half_of<L, 1>(p);
        ql = half_of<L, 0>(q);
        qh = half_of<L, 1>(q);
    } else {
        kld_normalise<L>(half_of<L, 0>(fx), half_of<L, 0>(fy), c, pl, ql);
        kld_normalise<L>(half_of<L, 1>(fx), half_of<L, 1>(fy), c, ph, qh);
    }
}

template <class L>
DUMPCMP_AI void kld_add(KldLanes<L>& a, const typename L::VD& p, const typename L::VD& q) noexcept {
    a.sp += p;
    a.sq += q;
    a.sa += p * log_ratio<L>(p, q);
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
template <class VD>
DUMPCMP_AI VD log_ratio_close(const VD& num, const VD& den, const VD& r, const VD& s0) noexcept {
    const VD s = s0 + (num - s0 * den) * r;
    const VD z = s * s;
    const VD poly = ((z * (2.0 / 7) + 2.0 / 5) * z + 2.0 / 3) * z + 2.0;
    return s * poly;
}

// Whether a1 > b1 or a2 > b2 in any lane.
template <class L>
DUMPCMP_AI bool any_above(const typename L::VD& a1, const typename L::VD& b1, const typename L::VD& a2,
                          const typename L::VD& b2) noexcept {
    if constexpr (L::bytes == 64) {
#if DUMPCMP_HAVE_X86_LEVELS
        return any_above_avx512(a1.p[0], b1.p[0], a2.p[0], b2.p[0]);
#endif
    } else {
        const typename L::VM m = (b1 < a1) | (b2 < a2);
        if constexpr (L::bytes == 32) {
#if DUMPCMP_HAVE_X86_LEVELS
            return any_set_avx2(m.p[0] | m.p[1]);
#endif
        } else {
            return any_set_sse2((m.p[0] | m.p[1]) | (m.p[2] | m.p[3]));
        }
    }
}

// Sixteen elements: element i + j in lane j % 8 of the low (j < 8) or high half, the same sums in the same order
// as two kld_step calls; only the log differs, and which form a group takes depends on its values alone.
template <class L, bool F32>
DUMPCMP_AI void kld_step16(KldLanes<L>& a, const typename L::VF& fx, const typename L::VF& fy,
                           const KldConstants<L>& c, bool general_only) noexcept {
    using VD = typename L::VD;
    VD pl, ql, ph, qh;
    kld_pq16<L, F32>(fx, fy, c, pl, ql, ph, qh);
    a.sp += pl;
    a.sq += ql;
    a.sp += ph;
    a.sq += qh;
    const VD numl = pl - ql, denl = pl + ql, numh = ph - qh, denh = ph + qh;
    // den is in [2^-22, 2], a normal float32 after rounding: the reciprocal seeds of all sixteen in one division.
    const typename L::VF r = 1.0f / narrow_pair<L>(denl, denh);
    const VD rl = half_of<L, 0>(r), rh = half_of<L, 1>(r);
    const VD s0l = numl * rl, s0h = numh * rh;
    if (general_only || any_above<L>(vabs(s0l), c.close_limit, vabs(s0h), c.close_limit)) {
        a.sa += pl * log_ratio<L>(pl, ql);
        a.sa += ph * log_ratio<L>(ph, qh);
        ++a.general;
        return;
    }
    a.sa += pl * log_ratio_close(numl, denl, rl, s0l);
    a.sa += ph * log_ratio_close(numh, denh, rh, s0h);
}

template <class L, bool F32, class SX, class SY>
DUMPCMP_AI KldSums kld_body(SX x, SY y, std::size_t n, const KldParams& k) {
    using VD = typename L::VD;
    using VF = typename L::VF;
    KldLanes<L> a{VD::zero(), VD::zero(), VD::zero(), 0};
    // Precise: multiplying by the reciprocal differs from dividing by at most an ulp, far below the printed digits.
    // F32: offsets and divisors are float32 values (kld_params), divided by as the original does.
    const KldConstants<L> c{VD::splat(k.offset_x),
                            VD::splat(1.0 / k.divisor_x),
                            VD::splat(k.offset_y),
                            VD::splat(1.0 / k.divisor_y),
                            VD::splat(kKldFloorEps),
                            VD::splat(kCloseLimit),
                            VF::splat(static_cast<float>(k.offset_x)),
                            VF::splat(static_cast<float>(k.divisor_x)),
                            VF::splat(static_cast<float>(k.offset_y)),
                            VF::splat(static_cast<float>(k.divisor_y)),
                            VF::splat(static_cast<float>(kKldFloorEps))};
    const bool general_only = detail::kld_general_only();
    std::size_t i = 0;
    for (; i + kWide <= n; i += kWide) {
        x.prefetch(i + kPrefetchAhead);
        y.prefetch(i + kPrefetchAhead);
        kld_step16<L, F32>(a, x.template load<L>(i), y.template load<L>(i), c, general_only);
    }
    if (i < n) {
        // The last rest (< 16) elements: always the general form, on a copy, keeping the lanes with real elements.
        const std::size_t rest = n - i;
        typename L::VF fx = L::VF::zero(), fy = L::VF::zero();  // every lane is set below
        for (std::size_t j = 0; j < kWide; ++j) {
            fx.set(j, x.at(i + (j < rest ? j : 0)));
            fy.set(j, y.at(i + (j < rest ? j : 0)));
        }
        VD pl, ql, ph, qh;
        kld_pq16<L, F32>(fx, fy, c, pl, ql, ph, qh);
        auto partial = [&](const VD& p, const VD& q, std::size_t r) {
            KldLanes<L> b = a;
            kld_add<L>(b, p, q);
            typename L::VM keep;
            for (std::size_t j = 0; j < kLanes; ++j) keep.set(j, j < r ? -1 : 0);
            a.sp = pick(keep, b.sp, a.sp);
            a.sq = pick(keep, b.sq, a.sq);
            a.sa = pick(keep, b.sa, a.sa);
        };
        if (rest >= kLanes) {
            kld_add<L>(a, pl, ql);
            if (rest > kLanes) partial(ph, qh, rest - kLanes);
        } else {
            partial(pl, ql, rest);
        }
    }
    KldSums s;
    s.sp = lane_sum(a.sp);
    s.sq = lane_sum(a.sq);
    s.sa = lane_sum(a.sa);
    s.general = a.general;
    return s;
}

// One compiled copy of each kernel per instruction-set level and source pair; simd_level() picks one.
#define DUMPCMP_KERNEL_LEVEL(suffix, L, attributes)                                                              \
    struct GroupRunner_##suffix {                                                                                \
        template <unsigned G, bool F32, class Part, class SX, class SY>                                          \
        attributes __attribute__((noinline)) static void run(Part& part, SX x, SY y, std::size_t first,          \
                                                             std::size_t last, const StepConstants<L>& c) {      \
            group_loop<L, G, F32>(part, x, y, first, last, c);                                                   \
        }                                                                                                        \
    };                                                                                                           \
    template <bool F32, class SX, class SY>                                                                      \
    attributes BlockSums lanes_##suffix(SX x, SY y, std::size_t n, double kx, double ky) {                       \
        Lanes<L> a = initial_lanes<L>();                                                                         \
        lanes_body<L, F32, GroupRunner_##suffix>(x, y, n, kx, ky, a);                                            \
        return reduce<L>(a);                                                                                     \
    }                                                                                                            \
    template <bool F32, class SX, class SY>                                                                      \
    attributes KldSums kld_##suffix(SX x, SY y, std::size_t n, const KldParams& k) {                             \
        return kld_body<L, F32>(x, y, n, k);                                                                     \
    }
DUMPCMP_KERNEL_LEVEL(scalar, LevelScalar, )
#if DUMPCMP_HAVE_X86_LEVELS
DUMPCMP_KERNEL_LEVEL(avx2, LevelAvx2, DUMPCMP_TARGET_AVX2)
DUMPCMP_KERNEL_LEVEL(avx512, LevelAvx512, DUMPCMP_TARGET_AVX512)
#endif
#undef DUMPCMP_KERNEL_LEVEL

template <bool F32, class SX, class SY>
BlockSums block_lanes_as(SX x, SY y, std::size_t n, double kx, double ky) {
    switch (detail::simd_level()) {
#if DUMPCMP_HAVE_X86_LEVELS
        case detail::SimdLevel::avx512: return lanes_avx512<F32>(x, y, n, kx, ky);
        case detail::SimdLevel::avx2: return lanes_avx2<F32>(x, y, n, kx, ky);
#endif
        default: return lanes_scalar<F32>(x, y, n, kx, ky);
    }
}
template <class SX, class SY>
BlockSums block_lanes(SX x, SY y, std::size_t n, double kx, double ky, bool precise) {
    return precise ? block_lanes_as<false>(x, y, n, kx, ky) : block_lanes_as<true>(x, y, n, kx, ky);
}
template <bool F32, class SX, class SY>
KldSums kld_lanes_as(SX x, SY y, std::size_t n, const KldParams& k) {
    switch (detail::simd_level()) {
#if DUMPCMP_HAVE_X86_LEVELS
        case detail::SimdLevel::avx512: return kld_avx512<F32>(x, y, n, k);
        case detail::SimdLevel::avx2: return kld_avx2<F32>(x, y, n, k);
#endif
        default: return kld_scalar<F32>(x, y, n, k);
    }
}

template <class SX, class SY>
void kld_block(SX x, SY y, std::size_t n, const KldParams& k, KldPartial& into) {
    const KldSums a = k.precise ? kld_lanes_as<false>(x, y, n, k) : kld_lanes_as<true>(x, y, n, k);
    const std::uint64_t groups = (n + kWide - 1) / kWide;
    g_kld_general.fetch_add(a.general + (n % kWide != 0), std::memory_order_relaxed);
    g_kld_close.fetch_add(groups - a.general - (n % kWide != 0), std::memory_order_relaxed);
    KldPartial part;
    part.sum_p = a.sp;
    part.sum_q = a.sq;
    part.sum_p_log_pq = a.sa;
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
void block_partial(SX x, SY y, std::size_t n, MetricPartial& p, bool precise) {
    const double kx = first_finite(x, n), ky = first_finite(y, n);
    const BlockSums a = block_lanes(x, y, n, kx, ky, precise);

    const double dn = static_cast<double>(n);
    p.count = n;
    auto side = [dn](SidePartial& s, double k, const SideSums& sums) {
        s.mean = k + sums.s1 / dn;
        const double m2 = sums.s2 - sums.s1 * (sums.s1 / dn);
        s.m2 = m2 < 0.0 ? 0.0 : m2;  // rounding only; keeps NaN
        s.sum_sq = sums.sq;
        s.min = sums.mn;
        s.max = sums.mx;
    };
    side(p.x, kx, a.x);
    side(p.y, ky, a.y);
    // A squared sum of finite float32 values cannot overflow a double, so a non-finite one means NaN/inf input.
    if (!std::isfinite(p.x.sum_sq)) count_non_finite(x, n, p.x);
    if (!std::isfinite(p.y.sum_sq)) count_non_finite(y, n, p.y);
    p.sum_xy = a.sxy;
    p.sum_abs_diff = a.sad;
    p.sum_sq_diff = a.ssd;
    p.max_abs_diff = a.mad;
    p.sum_rel = a.srel;
    p.max_rel = a.mrel;
}

// A block's values of both sides as float32 arrays (thread_local buffers of kF32SumBlock each), for the plain
// loops below, which the compiler vectorises lane by lane (no reassociation: the same bits at every level).
struct BlockFloats {
    std::vector<float> x, y, terms;
};
template <class SX, class SY>
BlockFloats& block_floats(SX x, SY y, std::size_t n, std::size_t term_arrays) {
    thread_local BlockFloats b;
    if (b.x.size() < kF32SumBlock) {
        b.x.resize(kF32SumBlock);
        b.y.resize(kF32SumBlock);
    }
    if (b.terms.size() < term_arrays * kF32SumBlock) b.terms.resize(term_arrays * kF32SumBlock);
    x.to_floats(b.x.data(), n);
    y.to_floats(b.y.data(), n);
    return b;
}

// The original's float32 terms of up to kF32SumBlock elements, each summed as NumPy sums a float32 array.
template <class SX, class SY>
F32BlockSums f32_block_sums(SX sx, SY sy, std::size_t n) {
    BlockFloats& b = block_floats(sx, sy, n, 5);
    const float* x = b.x.data();
    const float* y = b.y.data();
    float* rel = b.terms.data();
    float* ad = rel + kF32SumBlock;
    float* sd = ad + kF32SumBlock;
    float* xx = sd + kF32SumBlock;
    float* yy = xx + kF32SumBlock;
    const float eps = static_cast<float>(kMetricEps);  // 2^-52, exact
    for (std::size_t i = 0; i < n; ++i) {
        const float a = x[i], c = y[i];
        const float d = a - c;
        // every lane divides; |y| <= EPS lanes are then 0 (a mask, which the compiler vectorises; a branch it
        // does not)
        const float r = std::fabs(a / c - 1.0f);
        std::uint32_t bits;
        std::memcpy(&bits, &r, sizeof bits);
        bits &= 0u - static_cast<std::uint32_t>(eps < std::fabs(c));
        std::memcpy(&rel[i], &bits, sizeof bits);
        ad[i] = std::fabs(d);
        sd[i] = d * d;
        xx[i] = a * a;
        yy[i] = c * c;
    }
    return {pairwise_sum_f32(rel, n), pairwise_sum_f32(ad, n), pairwise_sum_f32(sd, n), pairwise_sum_f32(xx, n),
            pairwise_sum_f32(yy, n)};
}

detail::ExactSide exact_side(F32Source s) noexcept { return {s.base, false}; }
detail::ExactSide exact_side(F16Source s) noexcept { return {s.base, true}; }

// Pass 1 of the default mode over one whole block of kF32SumBlock elements: the register kernels of
// metrics_exact.cpp, which give the same values as block_partial and f32_block_sums below.
template <class SX, class SY>
void exact_block_partial(SX x, SY y, MetricPartial& p) {
    constexpr std::size_t n = kF32SumBlock;
    const double kx = first_finite(x, n), ky = first_finite(y, n);
    detail::ExactPass1 o;
    detail::exact_pass1(exact_side(x), exact_side(y), kx, ky, o);
    p.count = n;
    auto side = [](SidePartial& s, double k, double s1, double s2, float sq, float mn, float mx) {
        const double dn = static_cast<double>(n);
        s.mean = k + s1 / dn;
        const double m2 = s2 - s1 * (s1 / dn);
        s.m2 = m2 < 0.0 ? 0.0 : m2;  // rounding only; keeps NaN
        s.sum_sq = sq;
        s.min = mn;
        s.max = mx;
    };
    side(p.x, kx, o.s1x, o.s2x, o.sums.xx, o.min_x, o.max_x);
    side(p.y, ky, o.s1y, o.s2y, o.sums.yy, o.min_y, o.max_y);
    // Sums of finite float32 deviations cannot overflow a double, so a non-finite one means NaN/inf input.
    if (!std::isfinite(o.s1x) || !std::isfinite(o.s2x)) count_non_finite(x, n, p.x);
    if (!std::isfinite(o.s1y) || !std::isfinite(o.s2y)) count_non_finite(y, n, p.y);
    p.sum_xy = 0.0;  // the default mode's cosine comes from the stages (finalize: nan for NaN/inf data)
    p.sum_abs_diff = o.sums.ad;
    p.sum_sq_diff = o.sums.sd;
    p.max_abs_diff = o.max_ad;
    p.sum_rel = o.sums.rel;
    p.max_rel = o.max_rel;
    p.f32_blocks.push_back(o.sums);
}

// Blocks of at most kBlock elements, merged in order: what accumulate() does for float32 arrays, for any sources.
// The default mode works in NumPy's blocks of kF32SumBlock elements (counted from this chunk's start) and keeps
// each block's float32 sums: whole blocks through the register kernels, a last partial one through the arrays.
template <class SX, class SY>
void accumulate_sources(SX x, SY y, std::size_t n, MetricPartial& into, bool precise) {
    const std::size_t step = precise ? kBlock : kF32SumBlock;
    for (std::size_t first = 0; first < n; first += step) {
        const std::size_t count = std::min(step, n - first);
        MetricPartial block;
        if (!precise && count == kF32SumBlock) {
            exact_block_partial(x.offset(first), y.offset(first), block);
        } else {
            block_partial(x.offset(first), y.offset(first), count, block, precise);
            if (!precise) block.f32_blocks.push_back(f32_block_sums(x.offset(first), y.offset(first), count));
        }
        merge(into, block);
    }
}

// The block sums added in order, in float32, as NumPy 1.x adds its buffers' sums.
F32BlockSums fold_f32(const std::vector<F32BlockSums>& blocks) noexcept {
    F32BlockSums s;
    for (std::size_t k = 0; k < blocks.size(); ++k) {
        const F32BlockSums& b = blocks[k];
        if (k == 0) {
            s = b;
            continue;
        }
        s.rel += b.rel;
        s.ad += b.ad;
        s.sd += b.sd;
        s.xx += b.xx;
        s.yy += b.yy;
    }
    return s;
}

// KLD's float32 min-max normalisation clamped at float32 eps: max(float32(v - offset) / divisor, floor).
inline float kld_clamped(float v, float offset, float divisor, float floor) noexcept {
    const float u = (v - offset) / divisor;
    return u < floor ? floor : u;
}

// Stage 1 of the exact default mode: one block's float32 sums of p, q and the cosine terms.
template <class SX, class SY>
void exact_stage1_block(SX sx, SY sy, std::size_t n, const KldParams& k, KldPartial& into) {
    BlockFloats& b = block_floats(sx, sy, n, 3);
    const float* x = b.x.data();
    const float* y = b.y.data();
    float* p = b.terms.data();
    float* q = p + kF32SumBlock;
    float* c = q + kF32SumBlock;
    const auto ox = static_cast<float>(k.offset_x), dx = static_cast<float>(k.divisor_x);
    const auto oy = static_cast<float>(k.offset_y), dy = static_cast<float>(k.divisor_y);
    const auto floor = static_cast<float>(kKldFloorEps);
    const float nx = k.nx32, ny = k.ny32;
    if (k.kld) {
        for (std::size_t i = 0; i < n; ++i) {
            p[i] = kld_clamped(x[i], ox, dx, floor);
            q[i] = kld_clamped(y[i], oy, dy, floor);
        }
        into.p_blocks.push_back(pairwise_sum_f32(p, n));
        into.q_blocks.push_back(pairwise_sum_f32(q, n));
    }
    if (k.cosine) {
        for (std::size_t i = 0; i < n; ++i) c[i] = (x[i] / nx) * (y[i] / ny);
        into.c_blocks.push_back(pairwise_sum_f32(c, n));
    }
}

// Stage 2: one block's float32 sum of P log(P / Q), the log NumPy's float32 log (numpy_logf.hpp), as the
// original's np.log gives it on CPUs with AVX2 and FMA3 or AVX-512F.
template <class SX, class SY>
void exact_stage2_block(SX sx, SY sy, std::size_t n, const KldParams& k, KldPartial& into) {
    BlockFloats& b = block_floats(sx, sy, n, 2);
    const float* x = b.x.data();
    const float* y = b.y.data();
    float* t = b.terms.data();
    float* ratio = t + kF32SumBlock;
    const auto ox = static_cast<float>(k.offset_x), dx = static_cast<float>(k.divisor_x);
    const auto oy = static_cast<float>(k.offset_y), dy = static_cast<float>(k.divisor_y);
    const auto floor = static_cast<float>(kKldFloorEps);
    const float sp = k.sp32, sq = k.sq32;
    for (std::size_t i = 0; i < n; ++i) {
        const float pp = kld_clamped(x[i], ox, dx, floor) / sp;
        const float qq = kld_clamped(y[i], oy, dy, floor) / sq;
        t[i] = pp;
        ratio[i] = pp / qq;
    }
    detail::numpy_log_products(t, ratio, t, n);
    into.t_blocks.push_back(pairwise_sum_f32(t, n));
}

// The exact stages over one whole block: the register kernels of metrics_exact.cpp.
template <class SX, class SY>
void exact_stages_block(SX x, SY y, const KldParams& k, KldPartial& into) {
    if (k.stage == 2) {
        into.t_blocks.push_back(detail::exact_stage2(exact_side(x), exact_side(y), k));
        return;
    }
    detail::ExactStage1 o;
    detail::exact_stage1(exact_side(x), exact_side(y), k, o);
    if (k.kld) {
        into.p_blocks.push_back(o.p);
        into.q_blocks.push_back(o.q);
    }
    if (k.cosine) into.c_blocks.push_back(o.c);
}

template <class SX, class SY>
void accumulate_kld_sources(SX x, SY y, std::size_t n, const KldParams& params, KldPartial& into) {
    if (params.stage != 0) {
        for (std::size_t first = 0; first < n; first += kF32SumBlock) {
            const std::size_t count = std::min(kF32SumBlock, n - first);
            if (count == kF32SumBlock && detail::exact_stages_ok(params)) {
                exact_stages_block(x.offset(first), y.offset(first), params, into);
                continue;
            }
            if (params.stage == 1) exact_stage1_block(x.offset(first), y.offset(first), count, params, into);
            else exact_stage2_block(x.offset(first), y.offset(first), count, params, into);
        }
        return;
    }
    if (!params.needed) return;
    for (std::size_t first = 0; first < n; first += kBlock)
        kld_block(x.offset(first), y.offset(first), std::min(kBlock, n - first), params, into);
}

// v rounded to the nearest float32 (IEEE, ties to even; beyond the float32 range: +-inf), as a double. A plain
// static_cast is undefined behaviour out of range.
double to_f32(double v) noexcept {
    constexpr double kOverflow = 3.4028235677973366e+38;  // FLT_MAX + half an ulp: rounds to inf
    if (v >= kOverflow) return kInf;
    if (v <= -kOverflow) return -kInf;
    return static_cast<double>(static_cast<float>(v));
}

double sqrt_f32(double v) noexcept { return static_cast<double>(std::sqrt(static_cast<float>(to_f32(v)))); }

std::string fixed(double v, int decimals) {
    char buf[512];
    // printf's "%.*f" (std::to_chars is specified as it), three times faster: a model's result file holds millions
    const std::to_chars_result got = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
    if (got.ec == std::errc()) return std::string(buf, got.ptr);
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

// Python's "{:.Nf}" of a float: a NaN of either sign prints `nan` (C's printf may print `-nan`), inf `inf`/`-inf`.
std::string python_fixed(double v, int decimals) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return fixed(v, decimals);
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

float pairwise_sum_f32(const float* a, std::size_t n) noexcept {
    if (n < 8) {
        float res = -0.0f;
        for (std::size_t i = 0; i < n; ++i) res += a[i];
        return res;
    }
    if (n <= 128) {
        float r[8];
        for (std::size_t j = 0; j < 8; ++j) r[j] = a[j];
        const std::size_t whole = n - n % 8;
        for (std::size_t i = 8; i < whole; i += 8)
            for (std::size_t j = 0; j < 8; ++j) r[j] += a[i + j];
        float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (std::size_t i = whole; i < n; ++i) res += a[i];
        return res;
    }
    std::size_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum_f32(a, n2) + pairwise_sum_f32(a + n2, n - n2);
}

float numpy_sum_f32(const float* a, std::size_t n) noexcept {
    float s = -0.0f;
    for (std::size_t first = 0; first < n; first += kF32SumBlock) {
        const float b = pairwise_sum_f32(a + first, std::min(kF32SumBlock, n - first));
        s = first == 0 ? b : s + b;
    }
    return s;
}

const char* metric_name(int index) noexcept {
    return index >= 0 && index < kMetricCount ? kMetricNames[index] : nullptr;
}

void accumulate(const float* x, const float* y, std::size_t n, MetricPartial& into, bool precise) {
    accumulate_sources(F32Source{reinterpret_cast<const std::uint8_t*>(x)},
                       F32Source{reinterpret_cast<const std::uint8_t*>(y)}, n, into, precise);
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
    into.f32_blocks.insert(into.f32_blocks.end(), next.f32_blocks.begin(), next.f32_blocks.end());
}

KldParams kld_params(const MetricPartial& t, bool precise) noexcept {
    KldParams k;
    k.precise = precise;
    // NaN or inf anywhere makes the original's min-max normalisation NaN (a NaN max or min, inf - inf, inf / inf):
    // KLD is then nan without a pass. An all-zero side is no exception: the clamp makes it uniform.
    const bool finite = t.x.nan + t.x.pos_inf + t.x.neg_inf + t.y.nan + t.y.pos_inf + t.y.neg_inf == 0;
    k.needed = t.count > 0 && finite;
    if (!k.needed) return k;
    // max == min leaves the values unchanged (offset 0, divisor 1), as the spec says. min and max are float32
    // values; the original's range is float32(max - min), which can overflow to inf (and then gives NaN values).
    if (t.x.max > t.x.min) {
        k.offset_x = t.x.min;
        k.divisor_x = precise ? t.x.max - t.x.min : to_f32(t.x.max - t.x.min);
    }
    if (t.y.max > t.y.min) {
        k.offset_y = t.y.min;
        k.divisor_y = precise ? t.y.max - t.y.min : to_f32(t.y.max - t.y.min);
    }
    return k;
}

void accumulate_kld(const float* x, const float* y, std::size_t n, const KldParams& params, KldPartial& into) {
    accumulate_kld_sources(F32Source{reinterpret_cast<const std::uint8_t*>(x)},
                           F32Source{reinterpret_cast<const std::uint8_t*>(y)}, n, params, into);
}

void merge(KldPartial& into, const KldPartial& next) {
    into.sum_p += next.sum_p;
    into.sum_q += next.sum_q;
    into.sum_p_log_pq += next.sum_p_log_pq;
    auto append = [](std::vector<float>& to, const std::vector<float>& from) {
        to.insert(to.end(), from.begin(), from.end());
    };
    append(into.p_blocks, next.p_blocks);
    append(into.q_blocks, next.q_blocks);
    append(into.c_blocks, next.c_blocks);
    append(into.t_blocks, next.t_blocks);
}

float fold_blocks(const std::vector<float>& blocks) noexcept {
    float s = -0.0f;
    for (std::size_t k = 0; k < blocks.size(); ++k) s = k == 0 ? blocks[k] : s + blocks[k];
    return s;
}

bool cosine_terms_wanted(const MetricPartial& t, float& nx32, float& ny32) {
    const bool finite = t.x.nan + t.x.pos_inf + t.x.neg_inf + t.y.nan + t.y.pos_inf + t.y.neg_inf == 0;
    if (t.count == 0 || !finite || t.f32_blocks.empty()) return false;
    const F32BlockSums s = fold_f32(t.f32_blocks);
    nx32 = std::sqrt(s.xx);
    ny32 = std::sqrt(s.yy);
    const double nx = nx32, ny = ny32;
    if (nx <= kMetricEps && ny < kMetricEps) return false;
    if (std::sqrt(nx) <= kMetricEps || std::sqrt(ny) <= kMetricEps) return false;
    return std::isfinite(nx) && std::isfinite(ny);
}

MetricResult finalize(const MetricPartial& t, const KldPartial* kld, const MetricOptions& options) {
    MetricResult r;
    r.metrics = options.metrics & kAllMetrics;
    r.scalar = options.scalar;
    r.both_bool = options.both_bool;
    r.precise = options.precise;
    r.values.fill(kNaN);
    r.count = t.count;
    r.nan_x = t.x.nan;
    r.inf_x = t.x.pos_inf + t.x.neg_inf;
    r.nan_y = t.y.nan;
    r.inf_y = t.y.pos_inf + t.y.neg_inf;
    r.mean_x = r.std_x = r.mean_y = r.std_y = kNaN;
    r.mse = r.sqnr_db = kNaN;
    r.min_x = r.max_x = r.min_y = r.max_y = kNaN;
    if (t.count == 0) {  // nothing to compare: every metric is undefined
        r.undefined = r.metrics;
        return r;
    }
    // The original's float32 results (bool tensors are compared in float64 there): a sum, a mean, a norm is a
    // float32 value, then divided or rooted in float32.
    const bool f32 = !options.precise && !options.both_bool;
    auto r32 = [f32](double v) { return f32 ? to_f32(v) : v; };
    const bool data_finite = t.x.nan + t.x.pos_inf + t.x.neg_inf + t.y.nan + t.y.pos_inf + t.y.neg_inf == 0;
    // The original's float32 sums (NumPy 1.x's blocked pairwise summation) where pass 1 kept them.
    const bool exact32 = f32 && !t.f32_blocks.empty();
    const F32BlockSums s32 = exact32 ? fold_f32(t.f32_blocks) : F32BlockSums{};
    const double sum_xx = exact32 ? s32.xx : t.x.sum_sq, sum_yy = exact32 ? s32.yy : t.y.sum_sq;
    const double sum_rel = exact32 ? s32.rel : t.sum_rel, sum_ad = exact32 ? s32.ad : t.sum_abs_diff;
    const double sum_sd = exact32 ? s32.sd : t.sum_sq_diff;

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
        // The norms: float32 square roots of float32 sums in the original.
        const double nx = f32 ? sqrt_f32(sum_xx) : std::sqrt(t.x.sum_sq);
        const double ny = f32 ? sqrt_f32(sum_yy) : std::sqrt(t.y.sum_sq);
        if (options.scalar) v = 1.0;
        else if (nx <= kMetricEps && ny < kMetricEps) {
            v = 1.0;
            r.cosine_zero_norms = true;
        }
        else if (std::sqrt(nx) <= kMetricEps || std::sqrt(ny) <= kMetricEps) {
            v = kNaN;  // one side all zero: not computed
            if (want(Metric::CosineSimilarity)) r.undefined |= metric_bit(Metric::CosineSimilarity);
        } else if (f32 && data_finite && (std::isinf(nx) || std::isinf(ny))) {
            v = 0.0;  // a float32 norm that overflowed: the original's x / inf is 0 for every finite x
        } else if (f32 && !data_finite) {
            v = kNaN;  // NaN, or inf / inf in the original's x / nx: a nan sum
        } else {
            // sum(x*y) / (nx*ny) for the original's sum((x/nx) * (y/ny)): the same value within a few float32
            // roundings per element, which average out far below the printed digits.
            // The default mode's exact pass gives the original's float32 sum of float32(x / nx) * float32(y / ny).
            const double c = kld != nullptr && !kld->c_blocks.empty() ? fold_blocks(kld->c_blocks)
                                                                      : r32(t.sum_xy / (nx * ny));
            v = c > 1.0 ? 1.0 : c;  // keeps NaN
        }
        set(Metric::CosineSimilarity, v);
    }
    // 3: relative Euclidean distance
    {
        const double s = r32(sum_yy);
        double v;
        if (std::sqrt(s) <= kMetricEps) v = 0.0;
        // float32 / float32, then NumPy 1.x's `** 0.5` of a float32 scalar, which is a float64 power
        else if (f32) v = std::sqrt(to_f32(r32(sum_sd) / s));
        else v = std::sqrt(t.sum_sq_diff / s);
        set(Metric::RelativeEuclideanDistance, v);
    }
    if (options.both_bool) return r;  // bool tensors get those two only

    set(Metric::MaxAbsoluteError, t.max_abs_diff);
    // A float32 sum divided by the count in float64 and rounded to float32: NumPy 1.x's mean of a float32 array.
    set(Metric::AccumulatedRelativeError, r32(sum_rel));
    set(Metric::MeanAbsoluteError, r32(r32(sum_ad) / n));
    set(Metric::RootMeanSquareError, f32 ? sqrt_f32(r32(sum_sd) / n) : std::sqrt(t.sum_sq_diff / n));
    set(Metric::MaxRelativeError, t.max_rel);
    set(Metric::MeanRelativeError, r32(r32(sum_rel) / n));
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
        const KldParams k = kld_params(t, options.precise);
        double v = kNaN;  // NaN/inf data: computed, nan
        if (k.needed && kld == nullptr) {
            r.undefined |= metric_bit(Metric::KullbackLeiblerDivergence);  // pass 2 not run
        } else if (k.needed && !options.precise && !kld->t_blocks.empty()) {
            // The default mode's exact passes: the original's float32 sum, a value just below zero kept (printed
            // -0.000000 as the original does; format_metric zeroes |v| < EPS only).
            v = fold_blocks(kld->t_blocks);
        } else if (k.needed && options.precise) {
            const double sp = kld->sum_p, sq = kld->sum_q;
            v = kld->sum_p_log_pq / sp + std::log1p((sq - sp) / sp);
            // KL divergence of two distributions is >= 0; a negative value is rounding of a zero divergence.
            v = v < 0.0 ? 0.0 : v;
        } else if (k.needed) {
            // The original divides p and q by their float32 sums: P = p / Sp32, Q = q / Sq32, which sum to
            // Sp/Sp32 and Sq/Sq32, not 1. That shifts the result by up to about 1e-7, which shows in the printed
            // digits when the divergence is small, so it is mirrored: sum P log(P/Q) = (sum p log(p/q) + Sp
            // log(Sq32/Sp32)) / Sp32.
            const double sp = kld->sum_p, sp32 = to_f32(sp), sq32 = to_f32(kld->sum_q);
            v = r32((kld->sum_p_log_pq + sp * std::log1p((sq32 - sp32) / sp32)) / sp32);
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
    const bool bool_skipped = r.both_bool && m != Metric::CosineSimilarity && m != Metric::RelativeEuclideanDistance;
    if (!selected || bool_skipped || r.count == 0 || (r.undefined & metric_bit(m)) != 0) return "NaN";
    if (m == Metric::CosineSimilarity && r.cosine_zero_norms) return "1.0";  // the original's text, unformatted
    if (m == Metric::StandardDeviation) {
        auto one = [](double v) { return python_fixed(std::fabs(v) < 0.001 ? 0.0 : v, 3); };
        return "(" + one(r.mean_x) + ";" + one(r.std_x) + "),(" + one(r.mean_y) + ";" + one(r.std_y) + ")";
    }
    const double v = r.values[static_cast<std::size_t>(index)];
    if (m == Metric::KullbackLeiblerDivergence) return python_fixed(std::fabs(v) < kMetricEps ? 0.0 : v, 6);
    return python_fixed(v, 6);
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
                       std::size_t n, MetricPartial& into, bool precise) {
    // Two bool tensors are compared in float64 by the original (finalize): their sum of x*y is needed, which the
    // default mode's kernels do not keep; the float64 terms of 0/1 values are the float32 ones.
    const bool float64 = precise || (tx == DataType::BOOL && ty == DataType::BOOL);
    with_sources(x, tx, y, ty, first, n, [&](auto sx, auto sy) { accumulate_sources(sx, sy, n, into, float64); });
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
