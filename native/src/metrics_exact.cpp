#include "metrics_exact.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>
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
// (numpy_logv), one rounding each on every level, and sub_d's a * 1 - b, which is a - b.
#pragma GCC optimize("fp-contract=off")
// Vectors passed by value between inlined functions of this file only (see metrics.cpp).
#pragma GCC diagnostic ignored "-Wpsabi"

namespace dumpcmp::detail {

namespace {

// The levels. NumPy's pairwise leaf is eight interleaved sums, one 8-float vector on the baseline and AVX2 levels.
// The AVX-512 level holds two neighbouring leaves side by side in a 16-float vector: lanes 0-7 are the first leaf's
// eight sums, lanes 8-15 the next leaf's, so each lane sees the same operations in the same order as on the other
// levels, on twice the lanes per instruction.
constexpr int kBase = 0, kAvx2 = 1, kAvx512 = 2;

typedef float F8 __attribute__((vector_size(32)));
typedef double D4 __attribute__((vector_size(32)));
typedef std::int32_t I8 __attribute__((vector_size(32)));
typedef std::uint32_t U8 __attribute__((vector_size(32)));
typedef float F16 __attribute__((vector_size(64)));
typedef double D8 __attribute__((vector_size(64)));
typedef std::int32_t I16 __attribute__((vector_size(64)));
typedef std::uint32_t U16 __attribute__((vector_size(64)));

// A float vector's companions: its lanes' bits (I, U), the doubles half of it widens to (D), its width.
template <class F> struct VecOf;
template <> struct VecOf<F8> {
    using I = I8;
    using U = U8;
    using D = D4;
    static constexpr std::size_t W = 8;
};
template <> struct VecOf<F16> {
    using I = I16;
    using U = U16;
    using D = D8;
    static constexpr std::size_t W = 16;
};
template <int Lv>
using FloatsOf = std::conditional_t<Lv == kAvx512, F16, F8>;

// NumPy's pairwise leaf is 128 elements: eight interleaved sums of sixteen values, one F8 here.
constexpr std::size_t kLeaf = 128;
constexpr std::size_t kLeaves = kF32SumBlock / kLeaf;  // 64, a power of two: NumPy's tree above them is balanced
static_assert(kLeaves * kLeaf == kF32SumBlock && (kLeaves & (kLeaves - 1)) == 0, "a balanced tree of whole leaves");

template <class F>
DUMPCMP_AI F splat(float v) noexcept {
    return F{} + v;
}
template <class I>
DUMPCMP_AI I splat_i(std::int32_t v) noexcept {
    return I{} + v;
}
template <class D>
DUMPCMP_AI D splat_d(double v) noexcept {
    return D{} + v;
}
template <class F>
DUMPCMP_AI typename VecOf<F>::U bits(F v) noexcept {
    return (typename VecOf<F>::U)v;
}
template <class F>
DUMPCMP_AI F vabs(F v) noexcept {
    return (F)(bits(v) & 0x7FFFFFFFu);
}
// The NaN-propagating max of values >= 0 (sign bit clear, NaN included): their bit patterns order as integers.
template <class I, class F>
DUMPCMP_AI I max_bits(I m, F v) noexcept {
    const I b = (I)v;
    return m > b ? m : b;
}
// The largest of max_bits's lanes, as the float it is: a copy out first, so that the loop's vector stays in a
// register (indexing it in place made GCC keep it on the stack, a store and reload on every iteration).
template <class I>
DUMPCMP_AI float max_lane(I m) noexcept {
    constexpr std::size_t w = sizeof(I) / 4;
    std::int32_t lanes[w];
    std::memcpy(lanes, &m, sizeof lanes);
    std::int32_t best = lanes[0];
    for (std::size_t j = 1; j < w; ++j) best = lanes[j] > best ? lanes[j] : best;
    float f;
    std::memcpy(&f, &best, sizeof f);
    return f;
}
template <class I, class F>
DUMPCMP_AI F mask_and(I keep, F v) noexcept {
    return (F)((I)v & keep);
}

// ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), NumPy's combination of a leaf's eight sums.
DUMPCMP_AI float leaf_sum(F8 r) noexcept {
    const F8 a = r + __builtin_shufflevector(r, r, 1, 0, 3, 2, 5, 4, 7, 6);
    const F8 b = a + __builtin_shufflevector(a, a, 2, 3, 0, 1, 6, 7, 4, 5);
    return b[0] + b[4];
}
// The sums of the leaves a vector holds, in order: one for F8, two for F16.
DUMPCMP_AI void leaf_sums(F8 r, float* out) noexcept { out[0] = leaf_sum(r); }
DUMPCMP_AI void leaf_sums(F16 r, float* out) noexcept {
    out[0] = leaf_sum(__builtin_shufflevector(r, r, 0, 1, 2, 3, 4, 5, 6, 7));
    out[1] = leaf_sum(__builtin_shufflevector(r, r, 8, 9, 10, 11, 12, 13, 14, 15));
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
// deviation's loop is bound by the add pipes (converts, subtractions, sums) while the FMA pipes idle: this makes
// pass 1 faster (docs/performance.md#design-measurements).
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

// The same on sixteen lanes. GCC 12 writes several AVX-512 intrinsics (the conversions, the 512-to-256-bit casts)
// with a deliberately uninitialised source, which its -Wuninitialized reports once inlined (fixed in GCC 13): the
// masked forms with every lane set and vector shuffles are the same instructions without it. The two-leaf loads put eight values of a leaf at element i in lanes 0-7 and the next
// leaf's eight at i + kLeaf in lanes 8-15; the run loads take sixteen values in a row.
DUMPCMP_TARGET_AVX512 inline F16 halves16_leaves(const std::uint8_t* p) noexcept {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * kLeaf));
    return (F16)_mm512_maskz_cvtph_ps(0xFFFF, _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1));
}
DUMPCMP_TARGET_AVX512 inline F16 floats16_leaves(const std::uint8_t* p) noexcept {
    const __m256 a = _mm256_loadu_ps(reinterpret_cast<const float*>(p));
    const __m256 b = _mm256_loadu_ps(reinterpret_cast<const float*>(p + 4 * kLeaf));
    return (F16)_mm512_insertf32x8(_mm512_castps256_ps512(a), b, 1);
}
DUMPCMP_TARGET_AVX512 inline F16 halves16(const std::uint8_t* p) noexcept {
    return (F16)_mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
DUMPCMP_TARGET_AVX512 inline D8 widen_lo_avx512(F16 v) noexcept {
    return (D8)_mm512_maskz_cvtps_pd(0xFF, (__m256)__builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7));
}
DUMPCMP_TARGET_AVX512 inline D8 widen_hi_avx512(F16 v) noexcept {
    return (D8)_mm512_maskz_cvtps_pd(0xFF, (__m256)__builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
}
DUMPCMP_TARGET_AVX512 inline F16 fma_avx512(F16 a, F16 b, F16 c) noexcept {
    return (F16)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
}
DUMPCMP_TARGET_AVX512 inline D8 sub_fma_avx512(D8 a, D8 b) noexcept {
    return (D8)_mm512_fmsub_pd((__m512d)a, _mm512_set1_pd(1.0), (__m512d)b);
}
DUMPCMP_TARGET_AVX512 inline bool any_avx512(I16 m) noexcept { return _mm512_movepi32_mask((__m512i)m) != 0; }
// Whether a lane of lo is below a or one of hi above b, in mask registers: GCC 12 compiles the integer compares of
// 16-lane vector extensions into a compare per lane.
DUMPCMP_TARGET_AVX512 inline bool outside_avx512(I16 lo, I16 hi, std::int32_t a, std::int32_t b) noexcept {
    return (_mm512_cmplt_epi32_mask((__m512i)lo, _mm512_set1_epi32(a)) |
            _mm512_cmpgt_epi32_mask((__m512i)hi, _mm512_set1_epi32(b))) != 0;
}
DUMPCMP_TARGET_AVX512 inline F16 div_fma_avx512(F16 a, F16 b, F16 r) noexcept {
    const __m512 q = _mm512_mul_ps((__m512)a, (__m512)r);
    return (F16)_mm512_fmadd_ps(_mm512_fnmadd_ps(q, (__m512)b, (__m512)a), (__m512)r, q);
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
// Eight values of the leaf at element i; on the AVX-512 level, with the next leaf's eight at i + kLeaf.
template <bool Half, int Lv>
DUMPCMP_AI FloatsOf<Lv> load_leaves(const std::uint8_t* base, std::size_t i) noexcept {
    if constexpr (Lv == kAvx512) {
#if DUMPCMP_HAVE_X86_LEVELS
        if constexpr (Half) return halves16_leaves(base + 2 * i);
        else return floats16_leaves(base + 4 * i);
#endif
    } else {
        return load8<Half, Lv == kAvx2>(base, i);
    }
}
// The level's width of values in a row from element i.
template <bool Half, int Lv>
DUMPCMP_AI FloatsOf<Lv> load_run(const std::uint8_t* base, std::size_t i) noexcept {
    if constexpr (Lv == kAvx512) {
        F16 v{};
#if DUMPCMP_HAVE_X86_LEVELS
        if constexpr (Half) v = halves16(base + 2 * i);
        else std::memcpy(&v, base + 4 * i, sizeof v);
#endif
        return v;
    } else {
        return load8<Half, Lv == kAvx2>(base, i);
    }
}
// The two-leaf loads read each side at two places 128 elements apart, which the hardware's prefetchers follow
// poorly from memory: stage 1 then runs far slower than in L2, slower even than the eight-float level's single
// stream. So the vector levels ask for the lines kPrefetchAhead elements ahead themselves, at every vector of values
// (both places on the AVX-512 level; requests for a line already asked for cost a load slot only). 2048 is the best
// of 512 to 4096: each kernel then runs from memory close to its L2 speed, and pass 1 on the AVX2 level faster than
// with the hardware's alone (docs/performance.md#design-measurements).
constexpr std::size_t kPrefetchAhead = 2048;
template <bool Half, int Lv>
DUMPCMP_AI void prefetch_leaves(const std::uint8_t* base, std::size_t i) noexcept {
    constexpr std::size_t size = Half ? 2 : 4;
    if constexpr (Lv != kBase) __builtin_prefetch(base + size * (i + kPrefetchAhead));
    if constexpr (Lv == kAvx512) __builtin_prefetch(base + size * (i + kLeaf + kPrefetchAhead));
}

// The lower (upper) half of v's lanes as doubles.
template <int Lv, bool Upper, class F>
DUMPCMP_AI typename VecOf<F>::D widen(F v) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (Lv == kAvx512) return Upper ? widen_hi_avx512(v) : widen_lo_avx512(v);
    if constexpr (Lv == kAvx2) return Upper ? widen_hi_avx2(v) : widen_lo_avx2(v);
#endif
    if constexpr (Lv == kBase && Upper) return __builtin_convertvector(__builtin_shufflevector(v, v, 4, 5, 6, 7), D4);
    if constexpr (Lv == kBase && !Upper) return __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1, 2, 3), D4);
}
template <int Lv, class D>
DUMPCMP_AI D sub_d(D a, D b) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (Lv == kAvx512) return sub_fma_avx512(a, b);
    if constexpr (Lv == kAvx2) return sub_fma_avx2(a, b);
#endif
    return a - b;
}
template <int Lv, class I>
DUMPCMP_AI bool any(I m) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (Lv == kAvx512) return any_avx512(m);
    if constexpr (Lv == kAvx2) return any_avx2(m);
#endif
    std::int32_t folded = 0;
    for (std::size_t j = 0; j < sizeof(I) / 4; ++j) folded |= m[j];
    return folded != 0;
}

// Whether a lane of lo is below a or one of hi above b.
template <int Lv, class I>
DUMPCMP_AI bool any_outside(I lo, I hi, std::int32_t a, std::int32_t b) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (Lv == kAvx512) return outside_avx512(lo, hi, a, b);
#endif
    return any<Lv>((lo < a) | (hi > b));
}

// a / b for a divisor b fixed over the block, r = float32(1 / b); b within [2^-60, 2^60] (const_divisor_ok), and
// a / b never -0 where it is used (the KLD's values are floored). It takes three operations on the FMA pipes instead
// of the divider: the kernels divide on both, as many divisions on each as keeps the two busy
// (docs/performance.md#design-measurements).
template <int Lv, class F>
DUMPCMP_AI F div_const(F a, F b, F r) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (Lv == kAvx512) return div_fma_avx512(a, b, r);
    if constexpr (Lv == kAvx2) return div_fma_avx2(a, b, r);
#endif
    (void)r;
    return a / b;
}

// ---- pass 1 ----

template <class F>
struct Terms {
    F rel, ad, sd, xx, yy;
};
// The original's float32 terms of a vector of elements; |y| <= EPS lanes get relative error 0 whatever their
// division gave (every lane divides: no branch).
template <class F>
DUMPCMP_AI Terms<F> pass1_terms(F x, F y, F eps, F one) noexcept {
    Terms<F> t;
    const F d = vabs(x - y);
    t.ad = d;
    t.sd = d * d;
    t.xx = x * x;
    t.yy = y * y;
    t.rel = mask_and(eps < vabs(y), vabs(x / y - one));
    return t;
}

template <bool HX, bool HY, int Lv>
DUMPCMP_AI void pass1_sums(const std::uint8_t* bx, const std::uint8_t* by, ExactPass1& o) noexcept {
    using F = FloatsOf<Lv>;
    using I = typename VecOf<F>::I;
    constexpr std::size_t per = VecOf<F>::W / 8;  // leaves per vector
    float leaves[5][kLeaves];
    const F eps = splat<F>(static_cast<float>(kMetricEps)), one = splat<F>(1.0f);  // EPS = 2^-52: exact in float32
    I mad = I{}, mrel = I{};
    for (std::size_t leaf = 0; leaf < kLeaves; leaf += per) {
        const std::size_t first = leaf * kLeaf;
        Terms<F> a = pass1_terms(load_leaves<HX, Lv>(bx, first), load_leaves<HY, Lv>(by, first), eps, one);
        I lad = (I)a.ad, lrel = (I)a.rel;
        for (std::size_t i = first + 8; i < first + kLeaf; i += 8) {
            prefetch_leaves<HX, Lv>(bx, i);
            prefetch_leaves<HY, Lv>(by, i);
            const Terms<F> t = pass1_terms(load_leaves<HX, Lv>(bx, i), load_leaves<HY, Lv>(by, i), eps, one);
            lad = max_bits(lad, t.ad);
            lrel = max_bits(lrel, t.rel);
            a.rel += t.rel;
            a.ad += t.ad;
            a.sd += t.sd;
            a.xx += t.xx;
            a.yy += t.yy;
        }
        mad = max_bits(mad, (F)lad);
        mrel = max_bits(mrel, (F)lrel);
        leaf_sums(a.rel, &leaves[0][leaf]);
        leaf_sums(a.ad, &leaves[1][leaf]);
        leaf_sums(a.sd, &leaves[2][leaf]);
        leaf_sums(a.xx, &leaves[3][leaf]);
        leaf_sums(a.yy, &leaves[4][leaf]);
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
DUMPCMP_AI double lane_sum(D8 s) noexcept {
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// The eight-lane loop's min and max: lane j takes elements j, j + 8, j + 16, ... in order and keeps the first of
// the values equal to its extreme (v < mn is false for NaN, so NaN never enters), then the lanes in order.
DUMPCMP_AI bool fold_extremes(F8 mn, F8 mx, float& mn_out, float& mx_out) noexcept {
    float a = mn[0], b = mx[0];
    for (int j = 1; j < 8; ++j) {
        a = mn[j] < a ? mn[j] : a;
        b = mx[j] > b ? mx[j] : b;
    }
    mn_out = a;
    mx_out = b;
    return true;
}
// The same from the sixteen-lane loop, whose lanes j and j + 8 took the eight-lane loop's lane j between them. The
// one holding the smaller (larger) value holds that lane's first; equal values are the same value but for the sign
// of zero, and which came first is then unknown here: false, and the caller runs the eight-lane loop.
DUMPCMP_AI bool fold_extremes(F16 mn, F16 mx, float& mn_out, float& mx_out) noexcept {
    auto zeros_of_both_signs = [](float u, float v) { return u == v && std::signbit(u) != std::signbit(v); };
    F8 a, b;
    for (int j = 0; j < 8; ++j) {
        const float mn0 = mn[j], mn1 = mn[j + 8], mx0 = mx[j], mx1 = mx[j + 8];
        if (zeros_of_both_signs(mn0, mn1) || zeros_of_both_signs(mx0, mx1)) return false;
        a[j] = mn1 < mn0 ? mn1 : mn0;
        b[j] = mx0 < mx1 ? mx1 : mx0;
    }
    return fold_extremes(a, b, mn_out, mx_out);
}

// The running min and max of a side's lanes: the first of equal values stays (v < mn is false for NaN, so NaN
// never enters).
template <class F>
DUMPCMP_AI void keep_extremes(F v, F& mn, F& mx) noexcept {
    mn = v < mn ? v : mn;
    mx = mx < v ? v : mx;
}

// One side's min and max and its float64 sums of (v - k) and (v - k)^2, element i in double lane i % 8 and added
// there in element order (the sixteen-float level adds its lower eight values, then its upper eight, to the same
// eight lanes), combined as pairwise_sum_f32 combines a leaf's.
template <bool Half, int Lv>
struct SideSums {
    using F = FloatsOf<Lv>;
    using D = typename VecOf<F>::D;
    F mn = splat<F>(std::numeric_limits<float>::infinity()), mx = splat<F>(-std::numeric_limits<float>::infinity());
    D k, s1a{}, s1b{}, s2a{}, s2b{};  // eight lanes: a and b on the 8-float levels, a alone on the 16-float one

    explicit DUMPCMP_AI SideSums(double offset) noexcept : k(splat_d<D>(offset)) {}
    DUMPCMP_AI void add(F v) noexcept {
        keep_extremes(v, mn, mx);
        const D dl = sub_d<Lv>(widen<Lv, false>(v), k), dh = sub_d<Lv>(widen<Lv, true>(v), k);
        if constexpr (VecOf<F>::W == 8) {
            s1a += dl;
            s1b += dh;
            s2a += dl * dl;
            s2b += dh * dh;
        } else {
            s1a += dl;
            s1a += dh;
            s2a += dl * dl;
            s2a += dh * dh;
        }
    }
    DUMPCMP_AI void finish(const std::uint8_t* base, float& mn_out, float& mx_out, double& s1_out,
                           double& s2_out) const noexcept {
        if constexpr (VecOf<F>::W == 8) {
            s1_out = lane_sum(s1a, s1b);
            s2_out = lane_sum(s2a, s2b);
        } else {
            s1_out = lane_sum(s1a);
            s2_out = lane_sum(s2a);
        }
        if (fold_extremes(mn, mx, mn_out, mx_out)) return;
        F8 m8 = splat<F8>(std::numeric_limits<float>::infinity()), x8 = -m8;
        for (std::size_t i = 0; i < kF32SumBlock; i += 8) keep_extremes(load8<Half, Lv != kBase>(base, i), m8, x8);
        fold_extremes(m8, x8, mn_out, mx_out);
    }
};

template <bool HX, bool HY, int Lv>
DUMPCMP_AI void pass1_body(const std::uint8_t* bx, const std::uint8_t* by, double kx, double ky,
                           ExactPass1& o) noexcept {
    pass1_sums<HX, HY, Lv>(bx, by, o);
    constexpr std::size_t w = VecOf<FloatsOf<Lv>>::W;
    SideSums<HX, Lv> sx(kx);
    SideSums<HY, Lv> sy(ky);
    if constexpr (w == 16) {  // both sides in one loop: their chains of additions overlap (32 registers hold both)
        for (std::size_t i = 0; i < kF32SumBlock; i += w) {
            sx.add(load_run<HX, Lv>(bx, i));
            sy.add(load_run<HY, Lv>(by, i));
        }
    } else {  // one side at a time: sixteen registers hold one side's sums
        for (std::size_t i = 0; i < kF32SumBlock; i += w) sx.add(load_run<HX, Lv>(bx, i));
        for (std::size_t i = 0; i < kF32SumBlock; i += w) sy.add(load_run<HY, Lv>(by, i));
    }
    sx.finish(bx, o.min_x, o.max_x, o.s1x, o.s2x);
    sy.finish(by, o.min_y, o.max_y, o.s1y, o.s2y);
}

// ---- stage 1: p, q and the cosine's terms ----

// A divisor and its float32 reciprocal.
template <class F>
DUMPCMP_AI std::pair<F, F> divisor(double b) noexcept {
    const auto f = static_cast<float>(b);
    return {splat<F>(f), splat<F>(1.0f / f)};
}

template <class F>
struct Stage1Constants {
    F ox, dx, rx, oy, dy, ry, floor, nx, ny;  // rx, ry: float32 reciprocals of the divisors

    explicit DUMPCMP_AI Stage1Constants(const KldParams& k) noexcept
        : ox(splat<F>(static_cast<float>(k.offset_x))), oy(splat<F>(static_cast<float>(k.offset_y))),
          floor(splat<F>(static_cast<float>(kKldFloorEps))), nx(splat<F>(k.nx32)), ny(splat<F>(k.ny32)) {
        std::tie(dx, rx) = divisor<F>(k.divisor_x);
        std::tie(dy, ry) = divisor<F>(k.divisor_y);
    }
};
template <int Lv, class F>
DUMPCMP_AI F kld_value(F v, F offset, F divisor, F reciprocal, F floor) noexcept {
    const F u = div_const<Lv>(v - offset, divisor, reciprocal);
    return u < floor ? floor : u;  // NaN stays NaN, as in np.maximum
}

// float32(x / nx) * float32(y / ny), both on the divider (the KLD's four divisions keep the FMA pipes busy); a
// zero's sign kept (a sum of zeros prints its sign).
template <class F>
DUMPCMP_AI F cosine_term(F x, F y, const Stage1Constants<F>& c) noexcept {
    return (x / c.nx) * (y / c.ny);
}

template <bool HX, bool HY, int Lv, bool Kld, bool Cos>
DUMPCMP_AI void stage1_body(const std::uint8_t* bx, const std::uint8_t* by, const KldParams& k,
                            ExactStage1& o) noexcept {
    using F = FloatsOf<Lv>;
    constexpr std::size_t per = VecOf<F>::W / 8;
    const Stage1Constants<F> c(k);
    float leaves[3][kLeaves];
    for (std::size_t leaf = 0; leaf < kLeaves; leaf += per) {
        // NumPy starts a leaf's sums with its first values (a -0 kept), then adds.
        F sp = F{}, sq = F{}, sc = F{};
        const std::size_t first = leaf * kLeaf;
        {
            const F x = load_leaves<HX, Lv>(bx, first), y = load_leaves<HY, Lv>(by, first);
            if constexpr (Kld) {
                sp = kld_value<Lv>(x, c.ox, c.dx, c.rx, c.floor);
                sq = kld_value<Lv>(y, c.oy, c.dy, c.ry, c.floor);
            }
            if constexpr (Cos) sc = cosine_term(x, y, c);
        }
        for (std::size_t i = first + 8; i < first + kLeaf; i += 8) {
            prefetch_leaves<HX, Lv>(bx, i);
            prefetch_leaves<HY, Lv>(by, i);
            const F x = load_leaves<HX, Lv>(bx, i), y = load_leaves<HY, Lv>(by, i);
            if constexpr (Kld) {
                sp += kld_value<Lv>(x, c.ox, c.dx, c.rx, c.floor);
                sq += kld_value<Lv>(y, c.oy, c.dy, c.ry, c.floor);
            }
            if constexpr (Cos) sc += cosine_term(x, y, c);
        }
        leaf_sums(sp, &leaves[0][leaf]);
        leaf_sums(sq, &leaves[1][leaf]);
        leaf_sums(sc, &leaves[2][leaf]);
    }
    if constexpr (Kld) {
        o.p = tree_sum(leaves[0]);
        o.q = tree_sum(leaves[1]);
    }
    if constexpr (Cos) o.c = tree_sum(leaves[2]);
}

// ---- stage 2: P log(P / Q) ----

template <int Lv, class F>
DUMPCMP_AI F fmav(F a, F b, F c) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if constexpr (Lv == kAvx512) return fma_avx512(a, b, c);
    if constexpr (Lv == kAvx2) return fma_avx2(a, b, c);
#endif
    F r;
    for (std::size_t j = 0; j < VecOf<F>::W; ++j) r[j] = std::fma(a[j], b[j], c[j]);
    return r;
}
// numpy_logf.hpp's log of a vector of positive normal float32 values, the same operations in the same order.
template <int Lv, class F>
DUMPCMP_AI F numpy_logv(F x) noexcept {
    using L = NumpyLogf;
    using I = typename VecOf<F>::I;
    const auto b = bits(x);
    F e = __builtin_convertvector((I)(b >> 23) - 126, F);
    F m = (F)((b & 0x7FFFFFu) | (126u << 23));
    const I low = m <= L::sqrt1_2;
    m = low ? m + m : m;
    e = low ? e - 1.0f : e;
    const F f = m - 1.0f;
    F n = fmav<Lv>(splat<F>(L::p[5]), f, splat<F>(L::p[4]));
    F d = fmav<Lv>(splat<F>(L::q[5]), f, splat<F>(L::q[4]));
    for (int k = 3; k >= 0; --k) {
        n = fmav<Lv>(n, f, splat<F>(L::p[k]));
        d = fmav<Lv>(d, f, splat<F>(L::q[k]));
    }
    return fmav<Lv>(e, splat<F>(L::ln2), n / d);
}
// Lanes outside the positive normal range (NaN included), which numpy_logv does not take.
template <class F>
DUMPCMP_AI typename VecOf<F>::I not_normal(F r) noexcept {
    return ~((r >= std::numeric_limits<float>::min()) & (r <= std::numeric_limits<float>::max()));
}
// p * log(r) of a vector's lanes, any r.
template <int Lv, class F>
DUMPCMP_AI F p_log_r(F p, F r) noexcept {
    if (!any<Lv>(not_normal(r))) return p * numpy_logv<Lv>(r);
    F l;
    for (std::size_t j = 0; j < VecOf<F>::W; ++j) l[j] = numpy_logf(r[j]);
    return p * l;
}

template <class F>
struct Stage2Constants {
    F ox, dx, rx, oy, dy, ry, floor, sp, sq, rsq;  // P's division by sp on the divider, Q's on the FMA pipes

    explicit DUMPCMP_AI Stage2Constants(const KldParams& k) noexcept
        : ox(splat<F>(static_cast<float>(k.offset_x))), oy(splat<F>(static_cast<float>(k.offset_y))),
          floor(splat<F>(static_cast<float>(kKldFloorEps))), sp(splat<F>(k.sp32)) {
        std::tie(dx, rx) = divisor<F>(k.divisor_x);
        std::tie(dy, ry) = divisor<F>(k.divisor_y);
        std::tie(sq, rsq) = divisor<F>(k.sq32);
    }
};

// A leaf (two on the AVX-512 level) in two loops over a stack buffer: the quotients first, then the logs. In one
// loop the chain of four divisions and the log is longer than the out-of-order window can overlap (slower:
// docs/performance.md#design-measurements).
template <bool HX, bool HY, int Lv>
DUMPCMP_AI FloatsOf<Lv> stage2_leaf(const std::uint8_t* bx, const std::uint8_t* by, std::size_t first,
                                    const Stage2Constants<FloatsOf<Lv>>& c) noexcept {
    using F = FloatsOf<Lv>;
    using I = typename VecOf<F>::I;
    F pv[kLeaf / 8], rv[kLeaf / 8];
    // The ratios' bits as int32: positive normal floats are [0x00800000, 0x7F7FFFFF], negatives are negative. Two
    // integer min/max per group are cheaper than not_normal's two compares and an or.
    I lo = splat_i<I>(0x7FFFFFFF), hi = splat_i<I>(-0x7FFFFFFF - 1);
    for (std::size_t j = 0; j < kLeaf / 8; ++j) {
        prefetch_leaves<HX, Lv>(bx, first + 8 * j);
        prefetch_leaves<HY, Lv>(by, first + 8 * j);
        const F x = load_leaves<HX, Lv>(bx, first + 8 * j), y = load_leaves<HY, Lv>(by, first + 8 * j);
        const F p = kld_value<Lv>(x, c.ox, c.dx, c.rx, c.floor) / c.sp;
        const F q = div_const<Lv>(kld_value<Lv>(y, c.oy, c.dy, c.ry, c.floor), c.sq, c.rsq);
        pv[j] = p;
        rv[j] = p / q;
        const I b = (I)rv[j];
        lo = lo < b ? lo : b;
        hi = hi > b ? hi : b;
    }
    F st;
    if (!any_outside<Lv>(lo, hi, 0x00800000, 0x7F7FFFFF)) {  // every ratio positive normal: always, but for NaN data or extreme sums
        st = pv[0] * numpy_logv<Lv>(rv[0]);
        for (std::size_t j = 1; j < kLeaf / 8; ++j) st += pv[j] * numpy_logv<Lv>(rv[j]);
    } else {
        st = p_log_r<Lv>(pv[0], rv[0]);
        for (std::size_t j = 1; j < kLeaf / 8; ++j) st += p_log_r<Lv>(pv[j], rv[j]);
    }
    return st;
}

template <int Lv>
DUMPCMP_AI void log_products_body(const float* p, const float* r, float* out, std::size_t n) noexcept {
    using F = FloatsOf<Lv>;
    constexpr std::size_t w = VecOf<F>::W;
    std::size_t i = 0;
    for (; i + w <= n; i += w) {
        F pv, rv;
        std::memcpy(&pv, p + i, sizeof pv);
        std::memcpy(&rv, r + i, sizeof rv);
        const F t = p_log_r<Lv>(pv, rv);
        std::memcpy(out + i, &t, sizeof t);
    }
    for (; i < n; ++i) out[i] = p[i] * numpy_logf(r[i]);
}

template <bool HX, bool HY, int Lv>
DUMPCMP_AI float stage2_body(const std::uint8_t* bx, const std::uint8_t* by, const KldParams& k) noexcept {
    using F = FloatsOf<Lv>;
    constexpr std::size_t per = VecOf<F>::W / 8;
    const Stage2Constants<F> c(k);
    float leaves[kLeaves];
    for (std::size_t leaf = 0; leaf < kLeaves; leaf += per)
        leaf_sums(stage2_leaf<HX, HY, Lv>(bx, by, leaf * kLeaf, c), &leaves[leaf]);
    return tree_sum(leaves);
}

// ---- one compiled copy per level and storage pair ----

#define DUMPCMP_EXACT_LEVEL(suffix, LEVEL, attributes)                                                           \
    template <bool HX, bool HY>                                                                                  \
    attributes void pass1_##suffix(const std::uint8_t* bx, const std::uint8_t* by, double kx, double ky,         \
                                   ExactPass1& o) {                                                              \
        pass1_body<HX, HY, LEVEL>(bx, by, kx, ky, o);                                                            \
    }                                                                                                            \
    template <bool HX, bool HY, bool Kld, bool Cos>                                                              \
    attributes void stage1_##suffix(const std::uint8_t* bx, const std::uint8_t* by, const KldParams& k,          \
                                    ExactStage1& o) {                                                            \
        stage1_body<HX, HY, LEVEL, Kld, Cos>(bx, by, k, o);                                                      \
    }                                                                                                            \
    template <bool HX, bool HY>                                                                                  \
    attributes float stage2_##suffix(const std::uint8_t* bx, const std::uint8_t* by, const KldParams& k) {       \
        return stage2_body<HX, HY, LEVEL>(bx, by, k);                                                            \
    }                                                                                                            \
    attributes void log_products_##suffix(const float* p, const float* r, float* out, std::size_t n) {           \
        log_products_body<LEVEL>(p, r, out, n);                                                                  \
    }
DUMPCMP_EXACT_LEVEL(base, kBase, )
#if DUMPCMP_HAVE_X86_LEVELS
DUMPCMP_EXACT_LEVEL(avx2, kAvx2, DUMPCMP_TARGET_AVX2)
DUMPCMP_EXACT_LEVEL(avx512, kAvx512, DUMPCMP_TARGET_AVX512)
#endif
#undef DUMPCMP_EXACT_LEVEL

// The level the kernels run at: simd_level()'s.
int exact_level() noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    switch (simd_level()) {
        case SimdLevel::avx512: return kAvx512;
        case SimdLevel::avx2: return kAvx2;
        default: return kBase;
    }
#else
    return kBase;
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

}  // namespace

void exact_pass1(ExactSide x, ExactSide y, double kx, double ky, ExactPass1& out) {
    const int level = exact_level();
    by_storage(x, y, [&](auto hx, auto hy) {
        constexpr bool HX = decltype(hx)::value, HY = decltype(hy)::value;
#if DUMPCMP_HAVE_X86_LEVELS
        if (level == kAvx512) return pass1_avx512<HX, HY>(x.base, y.base, kx, ky, out);
        if (level == kAvx2) return pass1_avx2<HX, HY>(x.base, y.base, kx, ky, out);
#endif
        pass1_base<HX, HY>(x.base, y.base, kx, ky, out);
    });
    (void)level;
}

bool exact_stages_ok(const KldParams& k) noexcept {
    return k.stage == 1 ? stage1_divisors_ok(k) : stage2_divisors_ok(k);
}

void exact_stage1(ExactSide x, ExactSide y, const KldParams& k, ExactStage1& out) {
    const int level = exact_level();
    auto run = [&](auto kld, auto cos) {
        constexpr bool Kld = decltype(kld)::value, Cos = decltype(cos)::value;
        by_storage(x, y, [&](auto hx, auto hy) {
            constexpr bool HX = decltype(hx)::value, HY = decltype(hy)::value;
#if DUMPCMP_HAVE_X86_LEVELS
            if (level == kAvx512) return stage1_avx512<HX, HY, Kld, Cos>(x.base, y.base, k, out);
            if (level == kAvx2) return stage1_avx2<HX, HY, Kld, Cos>(x.base, y.base, k, out);
#endif
            stage1_base<HX, HY, Kld, Cos>(x.base, y.base, k, out);
        });
    };
    if (k.kld && k.cosine) run(Flag<true>{}, Flag<true>{});
    else if (k.kld) run(Flag<true>{}, Flag<false>{});
    else if (k.cosine) run(Flag<false>{}, Flag<true>{});
    (void)level;
}

float exact_stage2(ExactSide x, ExactSide y, const KldParams& k) {
    const int level = exact_level();
    float r = 0.0f;
    by_storage(x, y, [&](auto hx, auto hy) {
        constexpr bool HX = decltype(hx)::value, HY = decltype(hy)::value;
#if DUMPCMP_HAVE_X86_LEVELS
        if (level == kAvx512) {
            r = stage2_avx512<HX, HY>(x.base, y.base, k);
            return;
        }
        if (level == kAvx2) {
            r = stage2_avx2<HX, HY>(x.base, y.base, k);
            return;
        }
#endif
        r = stage2_base<HX, HY>(x.base, y.base, k);
    });
    (void)level;
    return r;
}

void numpy_log_products(const float* p, const float* r, float* out, std::size_t n) {
#if DUMPCMP_HAVE_X86_LEVELS
    const int level = exact_level();
    if (level == kAvx512) return log_products_avx512(p, r, out, n);
    if (level == kAvx2) return log_products_avx2(p, r, out, n);
#endif
    log_products_base(p, r, out, n);
}

}  // namespace dumpcmp::detail
