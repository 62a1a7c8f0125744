// FRACTAL_Z / FRACTAL_Z_C04 / FRACTAL_Z_3D encodes (groups = 1) that write the device buffer in its own order, and
// FRACTAL_Z -> NCHW decodes of tensors far larger than the caches (at the end of this file).
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
// sides; channel-minor ones (NHWC, NDHWC) keep the generic runs, which are as fast as a device-order loop of
// C0-element copies; so do 4-D pieces of whole cache lines (see run()). Above 64 MiB an item's rows are built in a
// stage and streamed out (planes_item<..., Staged>), much faster than writing the rows in place
// (docs/performance.md#design-measurements).
#include <algorithm>
#include <cstring>
#include <vector>

#include "dumpcmp/parallel.hpp"
#include "layout_internal.hpp"
#include "layout_transpose.hpp"

namespace dumpcmp::layout_detail {

namespace {

using Byte = unsigned char;
using i64 = std::int64_t;

inline std::size_t uz(i64 v) { return static_cast<std::size_t>(v); }

// Bytes of destination per work item: large enough to amortise the item's set-up, small enough that two threads
// get many items each and share the tail evenly.
constexpr i64 kItemBytes = i64{1} << 19;

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
// Staged (tensors far larger than the caches): the item's rows are built in a small buffer, the n-range's stretch
// of each row (nb * C0 elements) side by side, and then written to the destination with streaming stores, one
// stretch after the other: no read of the destination lines, and a few long write streams instead of b * kgroup
// interleaved 32-byte ones.
template <std::size_t E, class Tile, bool Staged>
void planes_item(const FzGeometry& g, const Items& it, const Byte* src, Byte* dst, i64 item, std::vector<Byte>& stage) {
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
    // where row s of channel block k, kernel n goes: (out_k + s * ostride + (n - nbase) * piece)
    const std::size_t seg = uz(n1 - n0) * piece;
    const std::size_t ostride = Staged ? seg : row_bytes;
    const i64 nbase = Staged ? n0 : 0;
    if constexpr (Staged) {
        if (stage.size() < seg * uz(b * (k1 - k0))) stage.resize(seg * uz(b * (k1 - k0)));
    }
    auto out_k = [&](i64 k) -> Byte* {
        if constexpr (Staged) return stage.data() + uz((k - k0) * b) * seg;
        else return dst + uz((d * g.c1 + k) * g.hw + s0) * row_bytes;
    };
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
            Byte* out = out_k(k) + uz(n - nbase) * piece;
            if (tiles && cv == g.c0) {
                // A short rest of positions (3x3: 9 = 8 + 1) by element moves, a longer one by a last tile that
                // overlaps the one before (same values): half a tile of element moves costs about one tile.
                const i64 rest = b % V, whole = rest != 0 && rest <= V / 2 ? b - rest : b;
                for (i64 j = 0; j < g.c0; j += V)
                    for (i64 s = 0; s < whole; s += V) {
                        const i64 sv = std::min(s, whole - V);
                        Tile::t(ik + uz(j) * scb + uz(sv) * E, scb, out + uz(sv) * ostride + uz(j) * E, ostride);
                    }
                for (i64 s = whole; s < b; ++s)
                    for (i64 j = 0; j < g.c0; ++j)
                        std::memcpy(out + uz(s) * ostride + uz(j) * E, ik + uz(j) * scb + uz(s) * E, E);
                continue;
            }
            for (i64 s = 0; s < b; ++s) {
                Byte* o = out + uz(s) * ostride;
                const Byte* ic = ik + uz(s) * E;
                for (i64 j = 0; j < cv; ++j) std::memcpy(o + uz(j) * E, ic + uz(j) * scb, E);
                if (cv < g.c0) std::memset(o + uz(cv) * E, 0, uz(g.c0 - cv) * E);
            }
        }
    }
    for (i64 k = k0; k < k1; ++k)
        zero_kernels(out_k(k), ostride, b, std::max(n0, ne) - nbase, n1 - nbase, piece);
#if DUMPCMP_LAYOUT_SSE2
    if constexpr (Staged) {
        for (i64 k = k0; k < k1; ++k)
            for (i64 s = 0; s < b; ++s)
                stream_out(dst + uz((d * g.c1 + k) * g.hw + s0 + s) * row_bytes + uz(n0) * piece,
                           out_k(k) + uz(s) * seg, seg);
    }
#endif
}

// Bytes of each destination stretch of the staged loop (nb * C0 elements: the item's kernels): each item reads
// nb kernels' blocks (one page each at 1 GB). 2 KiB (64 fp16 kernels, 32 fp32) is faster than 1 KiB or 4 KiB,
// fp16 and fp32 (docs/performance.md#design-measurements).
constexpr i64 kStagedStretch = 2048;
constexpr std::uint64_t kStagedBytes = std::uint64_t{1} << 26;
// Decode items: channel blocks grouped up to about this many plain bytes per kernel (the stretch each kernel gets
// per item), and kernels per item. 2 blocks of fp16 (576 bytes) and 1 of fp32 with 64 kernels are faster than
// 4 blocks or 32 kernels (docs/performance.md#design-measurements).
constexpr i64 kDecodePlane = 640;
constexpr i64 kDecodeKernels = 64;

template <std::size_t E, class Tile>
void run_planes(const FzGeometry& g, const Byte* src, Byte* dst, unsigned threads) {
    // Several channel blocks per item when one block's plain piece per kernel is short (3x3: 288 bytes of fp16),
    // so each kernel's read is one longer stretch of memory instead of many scattered short ones; but at most
    // about 24 destination rows at a time: more write streams than that are slower
    // (docs/performance.md#design-measurements).
    const i64 per_block = g.c0 * g.hw * static_cast<i64>(E);
    const i64 kgroup = g.hw <= 24 ? std::clamp<i64>(std::min(2048 / per_block, 24 / g.hw), 1, 8) : 1;
    Items it = plan_items(g, E, 32, kgroup);
    const auto bytes = static_cast<std::uint64_t>(g.d * g.c1 * g.hw * g.np * g.c0) * E;
#if DUMPCMP_LAYOUT_SSE2
    const i64 nb = std::max<i64>(16, kStagedStretch / (g.c0 * static_cast<i64>(E)));
    if (bytes >= kStagedBytes && g.np > nb) {
        it.nb = nb;
        it.nparts = (g.np + it.nb - 1) / it.nb;
        it.count = g.d * it.kitems * it.sblocks * it.nparts;
        stream_items(uz(it.count), threads, [&](std::size_t c) {
            thread_local std::vector<Byte> stage;
            planes_item<E, Tile, true>(g, it, src, dst, static_cast<i64>(c), stage);
        });
        return;
    }
#endif
    parallel_for(uz(it.count), [&](std::size_t c) {
        std::vector<Byte> unused;
        planes_item<E, Tile, false>(g, it, src, dst, static_cast<i64>(c), unused);
    }, threads);
}

// ---- decode -----------------------------------------------------------------------------------------------
// Item (k-group, n-range) of a 4-D planes tensor (NCHW: kernel n's channels k*C0 .. one contiguous stretch of
// the plain side). Phase A copies the item's device stretches (nb * C0 elements of each of its kgroup * hw rows,
// one sequential run each) into `stage`; phase B transposes each kernel's pieces there into `obuf` and writes
// that to the plain side with streaming stores, fetching the next item's stretches meanwhile (they lie a whole
// fractal row apart, beyond the hardware prefetchers).
struct DecodeItems {
    i64 kgroup = 1, kitems = 1, nb = 1, nparts = 1;
    i64 count() const { return kitems * nparts; }
};

template <std::size_t E, class Tile>
void decode_item(const FzGeometry& g, const DecodeItems& it, const Byte* src, Byte* dst, i64 item,
                 std::vector<Byte>& stage, std::vector<Byte>& obuf) {
    const std::size_t piece = uz(g.c0) * E, row_bytes = uz(g.np) * piece, hwb = uz(g.hw) * E;
    auto bounds = [&](i64 i, i64& k0, i64& k1, i64& n0, i64& ne) {
        const i64 part = i / it.kitems, kg = i % it.kitems;  // the kernel range outermost (see planes_item)
        k0 = kg * it.kgroup;
        k1 = std::min(g.c1, k0 + it.kgroup);
        n0 = part * it.nb;
        ne = std::min(g.n, n0 + it.nb);
    };
    i64 k0, k1, n0, ne;
    bounds(item, k0, k1, n0, ne);
    const i64 rows = (k1 - k0) * g.hw;
    const std::size_t seg = uz(ne - n0) * piece;
    if (stage.size() < seg * uz(rows)) stage.resize(seg * uz(rows));
    const i64 cend = std::min(g.c, k1 * g.c0);
    const std::size_t out_bytes = uz(cend - k0 * g.c0) * hwb;
    if (obuf.size() < out_bytes) obuf.resize(out_bytes);
    auto device_row = [&](i64 k, i64 s, i64 n) { return src + uz(k * g.hw + s) * row_bytes + uz(n) * piece; };
    for (i64 r = 0; r < rows; ++r)
        std::memcpy(stage.data() + uz(r) * seg, device_row(k0 + r / g.hw, r % g.hw, n0), seg);
    // the next item's stretches, a share per kernel of this one
    std::size_t total = 0, lines = 0;
    i64 nk0 = 0, nk1 = 0, nn0 = 0, nne = 0;
    if (item + 1 < it.count()) {
        bounds(item + 1, nk0, nk1, nn0, nne);
        lines = (uz(nne - nn0) * piece + 63) / 64;
        total = lines * uz((nk1 - nk0) * g.hw);
    }
    const std::size_t per = (total + uz(ne - n0) - 1) / uz(ne - n0);
    std::size_t done = 0, line = 0;  // prefetched so far; the line within the current stretch
    i64 pk = nk0, ps = 0;            // the current stretch's channel block and position
    constexpr i64 V = Tile::V;
    const bool tiles = V > 0 && g.c0 % V == 0 && g.hw >= V;
    for (i64 n = n0; n < ne; ++n) {
        for (const std::size_t stop = std::min(total, done + per); done < stop; ++done) {
            // locality 1 (prefetcht2): faster than prefetcht0, which holds a first-level fill buffer per line while
            // the stores need them too (docs/performance.md#design-measurements)
            __builtin_prefetch(device_row(pk, ps, nn0) + line * 64, 0, 1);
            if (++line == lines) {
                line = 0;
                if (++ps == g.hw) ps = 0, ++pk;
            }
        }
        for (i64 k = k0; k < k1; ++k) {
            const i64 cv = std::min(g.c0, g.c - k * g.c0);
            const Byte* in = stage.data() + uz((k - k0) * g.hw) * seg + uz(n - n0) * piece;
            Byte* out = obuf.data() + uz((k - k0) * g.c0) * hwb;
            if (tiles && cv == g.c0) {
                const i64 rest = g.hw % V, whole = rest != 0 && rest <= V / 2 ? g.hw - rest : g.hw;  // as planes_item
                for (i64 j = 0; j < g.c0; j += V)
                    for (i64 s = 0; s < whole; s += V) {
                        const i64 sv = std::min(s, whole - V);
                        Tile::t(in + uz(sv) * seg + uz(j) * E, seg, out + uz(j) * hwb + uz(sv) * E, hwb);
                    }
                for (i64 j = 0; j < g.c0; ++j)
                    for (i64 s = whole; s < g.hw; ++s)
                        std::memcpy(out + uz(j) * hwb + uz(s) * E, in + uz(s) * seg + uz(j) * E, E);
                continue;
            }
            for (i64 j = 0; j < cv; ++j)
                for (i64 s = 0; s < g.hw; ++s)
                    std::memcpy(out + uz(j) * hwb + uz(s) * E, in + uz(s) * seg + uz(j) * E, E);
        }
#if DUMPCMP_LAYOUT_SSE2
        stream_out(dst + uz(n * g.sn + k0 * g.c0 * g.sc) * E, obuf.data(), out_bytes);
#endif
    }
}

template <std::size_t E, class Tile>
void run_decode(const FzGeometry& g, const Byte* src, Byte* dst, unsigned threads) {
    DecodeItems it;
    const i64 per_block = g.c0 * g.hw * static_cast<i64>(E);
    it.kgroup = std::clamp<i64>(kDecodePlane / per_block, 1, 8);
    it.kitems = (g.c1 + it.kgroup - 1) / it.kgroup;
    it.nb = kDecodeKernels;
    it.nparts = (g.n + it.nb - 1) / it.nb;
    stream_items(uz(it.count()), threads, [&](std::size_t c) {
        thread_local std::vector<Byte> stage, obuf;
        decode_item<E, Tile>(g, it, src, dst, static_cast<i64>(c), stage, obuf);
    });
}

// Only where register tiles cover the kernels' blocks (C0 a multiple of the tile, at least a tile of positions):
// element moves would be slower than the generic walker (1x1 kernels, FRACTAL_Z_C04).
template <std::size_t E, class Tile>
bool decode_with(const FzGeometry& g, const Byte* src, Byte* dst, unsigned threads) {
    if (Tile::V == 0 || g.c0 % Tile::V != 0 || g.hw < Tile::V) return false;
    run_decode<E, Tile>(g, src, dst, threads);
    return true;
}

}  // namespace

bool fz_encode(const Plan& p, const FzGeometry& g, const unsigned char* src, unsigned char* dst, unsigned threads) {
    if (g.n == 0 || g.c == 0 || g.hw == 0 || g.d == 0) return false;  // nothing to move: the generic path zeroes
    if (g.hw <= 1 || g.ss != 1 || g.c <= 1) return false;
    return with_elem_tile(p.elem_size, [&](auto size, auto tile) {
        run_planes<decltype(size)::value, typename decltype(tile)::type>(g, src, dst, threads);
        return true;
    });
}

bool fz_decode_stream(const Plan& p, const FzGeometry& g, const unsigned char* src, unsigned char* dst,
                      unsigned threads) {
#if DUMPCMP_LAYOUT_SSE2
    // 4-D planes order with whole kernels contiguous (NCHW), far larger than the caches
    if (!g.decode || g.d != 1 || g.ss != 1 || g.sc != g.hw || g.sn != g.c * g.hw || g.n == 0 || g.c == 0 ||
        p.dst_count * p.elem_size < kStagedBytes)
        return false;
    return with_elem_tile(p.elem_size, [&](auto size, auto tile) {
        return decode_with<decltype(size)::value, typename decltype(tile)::type>(g, src, dst, threads);
    });
#else
    (void)p, (void)g, (void)src, (void)dst, (void)threads;
    return false;
#endif
}

}  // namespace dumpcmp::layout_detail
