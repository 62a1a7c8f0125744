// FRACTAL_Z / FRACTAL_Z_C04 / FRACTAL_Z_3D encodes (groups = 1) that write the device buffer in its own order.
//
// A fractal row (d, k, s) holds, for every kernel n of N1*16, the C0 channels k*C0 .. k*C0+C0-1 at one spatial
// position s. The generic encode walks the plain side and scatters pieces of C0 elements a whole fractal row apart,
// then clears the padding in a second set of writes; that waits on memory. Here a work item is a few consecutive
// fractal rows (one channel block k, a block of positions s) over a range of n: each n reads one small block of the
// plain tensor and appends C0 elements to each of those rows, so every destination byte, padding included, is
// written once, the destination advances as a handful of sequential streams, and the plain side is fetched ahead
// by software prefetch (its pieces lie a whole kernel apart, beyond the hardware prefetchers' reach).
//
// The loop covers planes orders (NCHW, NCDHW: s contiguous, channels H*W apart): per n a C0 x b transpose of
// channel rows into b destination rows (register transposes when whole channel blocks allow, element moves
// otherwise). Kernel-minor orders (HWCN, DHWCN, CHWN) keep the generic tiled scatter, which already streams both
// sides; channel-minor ones (NHWC, NDHWC) keep the generic runs, which measured as fast as a device-order loop of
// C0-element copies; so do 4-D pieces of whole cache lines (see run()).
#include <algorithm>
#include <cstring>

#include "dumpcmp/parallel.hpp"
#include "layout_internal.hpp"
#include "layout_transpose.hpp"
#include "simd.hpp"

#if DUMPCMP_HAVE_X86_LEVELS
#include <immintrin.h>
#endif

namespace dumpcmp::layout_detail {

namespace {

using Byte = unsigned char;
using i64 = std::int64_t;

inline std::size_t uz(i64 v) { return static_cast<std::size_t>(v); }

// Bytes of destination per work item: large enough to amortise the item's set-up, small enough that two threads
// get many items each and share the tail evenly.
constexpr i64 kItemBytes = i64{1} << 19;

// A C0 x V register tile per transpose call: V channel rows (in_stride apart) become V destination rows
// (out_stride apart) of V elements. V = 0: no register transpose for this element size.
template <std::size_t E>
struct Sse2Tile {
#if DUMPCMP_LAYOUT_SSE2
    static constexpr i64 V = E == 1 ? 0 : static_cast<i64>(16 / E);
    static void t(const Byte* in, std::size_t is, Byte* out, std::size_t os) {
        if constexpr (E == 2) transpose8x8_16(in, is, out, os);
        else if constexpr (E == 4) transpose4x4_32(in, is, out, os);
        else if constexpr (E == 8) transpose2x2_64(in, is, out, os);
    }
#else
    static constexpr i64 V = 0;
    static void t(const Byte*, std::size_t, Byte*, std::size_t) {}
#endif
};

#if DUMPCMP_HAVE_X86_LEVELS
// 8 x 8 of 32-bit elements in ymm registers (fp32; 16 x 16 of fp16 is done as four 8 x 8 of 16-bit by SSE2, which
// measures the same on this memory-bound loop).
DUMPCMP_TARGET_AVX2 inline void transpose8x8_32_avx2(const Byte* in, std::size_t is, Byte* out, std::size_t os) {
    __m256i a[8], t[8], u[8];
    for (std::size_t v = 0; v < 8; ++v) a[v] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + v * is));
    for (std::size_t v = 0; v < 8; v += 2) {
        t[v] = _mm256_unpacklo_epi32(a[v], a[v + 1]);
        t[v + 1] = _mm256_unpackhi_epi32(a[v], a[v + 1]);
    }
    for (std::size_t v = 0; v < 8; v += 4) {
        u[v] = _mm256_unpacklo_epi64(t[v], t[v + 2]);
        u[v + 1] = _mm256_unpackhi_epi64(t[v], t[v + 2]);
        u[v + 2] = _mm256_unpacklo_epi64(t[v + 1], t[v + 3]);
        u[v + 3] = _mm256_unpackhi_epi64(t[v + 1], t[v + 3]);
    }
    // u[0..3]: rows 0..3 (low lanes) and 4..7 (high lanes) of input rows 0..3; u[4..7] the same of rows 4..7
    for (std::size_t r = 0; r < 4; ++r) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + r * os), _mm256_permute2x128_si256(u[r], u[r + 4], 0x20));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (r + 4) * os),
                            _mm256_permute2x128_si256(u[r], u[r + 4], 0x31));
    }
}

template <std::size_t E>
struct Avx2Tile {
    static constexpr i64 V = E == 4 ? 8 : Sse2Tile<E>::V;
    DUMPCMP_TARGET_AVX2 static void t(const Byte* in, std::size_t is, Byte* out, std::size_t os) {
        if constexpr (E == 4) transpose8x8_32_avx2(in, is, out, os);
        else Sse2Tile<E>::t(in, is, out, os);
    }
};
#endif

struct Items {
    i64 sblocks = 1, sb = 1;  // blocks of spatial positions and positions per block (the last may be shorter)
    i64 kgroup = 1;           // channel blocks per item (runs: so that each read covers a whole cache line)
    i64 kitems = 1;           // items along the channel blocks
    i64 nparts = 1, nb = 1;   // ranges of kernels per item and kernels per range
    i64 count = 0;
};

Items plan_items(const FzGeometry& g, std::size_t E, i64 max_sb, i64 kgroup) {
    Items it;
    it.sb = std::min(g.hw, max_sb);
    it.sblocks = (g.hw + it.sb - 1) / it.sb;
    it.sb = (g.hw + it.sblocks - 1) / it.sblocks;  // even blocks: 49 -> 25 + 24 rather than 32 + 17
    it.kgroup = kgroup;
    it.kitems = (g.c1 + kgroup - 1) / kgroup;
    const i64 row_bytes = g.np * g.c0 * static_cast<i64>(E) * it.sb * kgroup;
    it.nparts = std::max<i64>(1, row_bytes / kItemBytes);
    // at most 256 kernels per item: the pages an item reads (one or more per kernel) stay within the TLB while
    // the items of the same range follow one another (see planes_item)
    it.nparts = std::max<i64>(it.nparts, g.np / 256);
    it.nb = (g.np + it.nparts - 1) / it.nparts;
    it.nparts = (g.np + it.nb - 1) / it.nb;
    it.count = g.d * it.kitems * it.sblocks * it.nparts;
    return it;
}

// Kernels n >= N: zeros in every row of the item, after its data (same rows, so the stream stays in order).
inline void zero_kernels(Byte* row0, std::size_t row_bytes, i64 rows, i64 n0, i64 n1, std::size_t piece) {
    if (n1 <= n0) return;
    for (i64 s = 0; s < rows; ++s)
        std::memset(row0 + uz(s) * row_bytes + uz(n0) * piece, 0, uz(n1 - n0) * piece);
}

// Planes: item (d, k, s-block, n-range). Channel row j of kernel n is b contiguous elements at
// plain + n*sn + (k*C0 + j)*sc + d*sd + s0; destination row s at dst + row(s) * row_bytes + n * C0 * E.
template <std::size_t E, class Tile>
void planes_item(const FzGeometry& g, const Items& it, const Byte* src, Byte* dst, i64 item) {
    // The kernel range outermost: consecutive items read the next bytes of the same nb kernels' pages, so those
    // pages stay in the TLB (at 1 GB each kernel is its own page, 2048 of them, more than the TLB holds).
    const i64 per_part = it.count / it.nparts;
    const i64 np_part = item / per_part;
    i64 rest = item % per_part;
    const i64 sbk = rest % it.sblocks;
    rest /= it.sblocks;
    const i64 kg = rest % it.kitems, d = rest / it.kitems;
    const i64 s0 = sbk * it.sb, b = std::min(it.sb, g.hw - s0);
    const i64 k0 = kg * it.kgroup, k1 = std::min(g.c1, k0 + it.kgroup);
    const i64 n0 = np_part * it.nb, n1 = std::min(g.np, n0 + it.nb), ne = std::min(n1, g.n);
    const std::size_t piece = uz(g.c0) * E, row_bytes = uz(g.np) * piece;
    const std::size_t snb = uz(g.sn) * E, scb = uz(g.sc) * E;
    const Byte* in0 = src + uz(d * g.sd + k0 * g.c0 * g.sc + s0) * E;
    constexpr i64 V = Tile::V;
    const bool tiles = V > 0 && g.c0 % V == 0 && b >= V;
    // The plain block of one kernel: cv rows of b elements, sc apart, for each channel block of the group. Fetched
    // `ahead` kernels early (about 8 KiB of reads in flight: the pieces lie a kernel apart, beyond the hardware
    // prefetchers); rows closer than two lines are fetched as one span.
    const i64 cvall = std::min(g.c - k0 * g.c0, (k1 - k0) * g.c0);  // channels of the group that exist
    const std::size_t rowb = uz(b) * E;
    const bool span = scb <= 128;
    const std::size_t span_bytes = uz(cvall - 1) * scb + rowb;
    const i64 per_n = static_cast<i64>(span ? span_bytes : uz(cvall) * rowb);
    const i64 ahead = std::clamp<i64>(8192 / std::max<i64>(1, per_n), 2, 64);
    for (i64 n = n0; n < ne; ++n) {
        const Byte* in = in0 + uz(n) * snb;
        if (n + ahead < ne) {
            const Byte* pf = in + uz(ahead) * snb;
            if (span) {
                for (std::size_t o = 0; o < span_bytes; o += 64) __builtin_prefetch(pf + o);
                __builtin_prefetch(pf + span_bytes - 1);
            } else {
                for (i64 j = 0; j < cvall; ++j) {
                    __builtin_prefetch(pf + uz(j) * scb);
                    __builtin_prefetch(pf + uz(j) * scb + rowb - 1);
                }
            }
        }
        for (i64 k = k0; k < k1; ++k) {
            const i64 cv = std::min(g.c0, g.c - k * g.c0);  // channels of this block that exist
            const Byte* ik = in + uz((k - k0) * g.c0) * scb;
            Byte* out = dst + uz((d * g.c1 + k) * g.hw + s0) * row_bytes + uz(n) * piece;
            if (tiles && cv == g.c0) {
                for (i64 j = 0; j < g.c0; j += V)
                    for (i64 s = 0; s < b; s += V) {
                        const i64 sv = std::min(s, b - V);  // the last tile overlaps the one before: same values
                        Tile::t(ik + uz(j) * scb + uz(sv) * E, scb, out + uz(sv) * row_bytes + uz(j) * E, row_bytes);
                    }
                continue;
            }
            for (i64 s = 0; s < b; ++s) {
                Byte* o = out + uz(s) * row_bytes;
                const Byte* ic = ik + uz(s) * E;
                for (i64 j = 0; j < cv; ++j) std::memcpy(o + uz(j) * E, ic + uz(j) * scb, E);
                if (cv < g.c0) std::memset(o + uz(cv) * E, 0, uz(g.c0 - cv) * E);
            }
        }
    }
    for (i64 k = k0; k < k1; ++k)
        zero_kernels(dst + uz((d * g.c1 + k) * g.hw + s0) * row_bytes, row_bytes, b, std::max(n0, ne), n1, piece);
}

template <std::size_t E, class Tile>
void run_planes(const FzGeometry& g, const Byte* src, Byte* dst, unsigned threads) {
    // Several channel blocks per item when one block's plain piece per kernel is short (3x3: 288 bytes of fp16),
    // so each kernel's read is one longer stretch of memory instead of many scattered short ones; but at most
    // about 24 destination rows at a time: more write streams than that measured slower (63 streams: a third).
    const i64 per_block = g.c0 * g.hw * static_cast<i64>(E);
    const i64 kgroup = g.hw <= 24 ? std::clamp<i64>(std::min(2048 / per_block, 24 / g.hw), 1, 8) : 1;
    const Items it = plan_items(g, E, 32, kgroup);
    parallel_for(uz(it.count), [&](std::size_t c) { planes_item<E, Tile>(g, it, src, dst, static_cast<i64>(c)); },
                 threads);
}

template <std::size_t E>
bool run(const FzGeometry& g, const Byte* src, Byte* dst, unsigned threads) {
    if (g.hw <= 1 || g.ss != 1 || g.c <= 1) return false;
#if DUMPCMP_HAVE_X86_LEVELS
    if (detail::simd_level() >= detail::SimdLevel::avx2) {
        run_planes<E, Avx2Tile<E>>(g, src, dst, threads);
        return true;
    }
#endif
    run_planes<E, Sse2Tile<E>>(g, src, dst, threads);
    return true;
}

}  // namespace

bool fz_encode(const Plan& p, const FzGeometry& g, const unsigned char* src, unsigned char* dst, unsigned threads) {
    if (g.n == 0 || g.c == 0 || g.hw == 0 || g.d == 0) return false;  // nothing to move: the generic path zeroes
    switch (p.elem_size) {
        case 1: return run<1>(g, src, dst, threads);
        case 2: return run<2>(g, src, dst, threads);
        case 4: return run<4>(g, src, dst, threads);
        case 8: return run<8>(g, src, dst, threads);
        default: return false;
    }
}

}  // namespace dumpcmp::layout_detail
