// NC1HWC0 / NC1HWC0_C04 / NDC1HWC0 encodes of tensors far larger than the caches, written in device order.
//
// A channel block k of one (n, d) is, on the device, one contiguous (H*W, C0) plane: the transpose of C0 plain
// channel rows of H*W elements. The generic tiled scatter writes that plane through ordinary stores (every
// destination line is first read from memory), which is slow at 1 GB (docs/performance.md#design-measurements).
// Here an item is a block of positions of one plane: register tiles transpose the C0 channel rows' pieces (C0
// sequential read streams, which the hardware prefetchers follow) into a small stage, padding channels are zeroed
// there, and the stage goes to the destination with streaming stores: one sequential write stream per thread.
#include <algorithm>
#include <cstring>
#include <vector>

#include "dumpcmp/parallel.hpp"
#include "layout_internal.hpp"
#include "layout_transpose.hpp"

namespace dumpcmp::layout_detail {

namespace {

using i64 = std::int64_t;

inline std::size_t uz(i64 v) { return static_cast<std::size_t>(v); }

constexpr std::uint64_t kMinBytes = std::uint64_t{1} << 26;  // below this the generic loops stay in the caches
constexpr i64 kStageBytes = 4096;                            // destination bytes per item

#if DUMPCMP_LAYOUT_SSE2
template <std::size_t E, class Tile>
void encode_item(const HdGeometry& g, i64 sb, i64 sblocks, const Byte* src, Byte* dst, i64 item,
                 std::vector<Byte>& stage) {
    const i64 plane = item / sblocks, s0 = item % sblocks * sb, b = std::min(sb, g.hw - s0);
    const i64 k = plane % g.c1, nd = plane / g.c1, d = nd % g.d, n = nd / g.d;
    const std::size_t piece = uz(g.c0) * E, scb = uz(g.sc) * E;
    if (stage.size() < uz(b) * piece) stage.resize(uz(b) * piece);
    Byte* st = stage.data();
    const i64 cv = std::min(g.c0, g.c - k * g.c0);  // channels of this block that exist
    const Byte* in = src + uz(n * g.sn + k * g.c0 * g.sc + d * g.sd + s0) * E;
    constexpr i64 V = Tile::V;
    if (V > 0 && cv == g.c0 && g.c0 % V == 0 && b >= V) {
        for (i64 j = 0; j < g.c0; j += V)
            for (i64 s = 0; s < b; s += V) {
                const i64 sv = std::min(s, b - V);  // the last tile overlaps the one before: same values
                Tile::t(in + uz(j) * scb + uz(sv) * E, scb, st + uz(sv) * piece + uz(j) * E, piece);
            }
    } else {
        for (i64 s = 0; s < b; ++s) {
            Byte* o = st + uz(s) * piece;
            for (i64 j = 0; j < cv; ++j) std::memcpy(o + uz(j) * E, in + uz(j) * scb + uz(s) * E, E);
            if (cv < g.c0) std::memset(o + uz(cv) * E, 0, uz(g.c0 - cv) * E);
        }
    }
    stream_out(dst + uz(((n * g.d + d) * g.c1 + k) * g.hw + s0) * piece, st, uz(b) * piece);
}

template <std::size_t E, class Tile>
void run_encode(const HdGeometry& g, const Byte* src, Byte* dst, unsigned threads) {
    const i64 sb = std::max<i64>(16, kStageBytes / (g.c0 * static_cast<i64>(E)));
    const i64 sblocks = (g.hw + sb - 1) / sb;
    stream_items(uz(g.n * g.d * g.c1 * sblocks), threads, [&](std::size_t c) {
        thread_local std::vector<Byte> stage;
        encode_item<E, Tile>(g, sb, sblocks, src, dst, static_cast<i64>(c), stage);
    });
}

#endif

}  // namespace

bool hd_encode_stream(const Plan& p, const HdGeometry& g, const unsigned char* src, unsigned char* dst,
                      unsigned threads) {
#if DUMPCMP_LAYOUT_SSE2
    if (g.decode || g.ss != 1 || g.hw <= 1 || g.n * g.c * g.d * g.hw == 0 || p.dst_count * p.elem_size < kMinBytes)
        return false;
    return with_elem_tile(p.elem_size, [&](auto size, auto tile) {
        run_encode<decltype(size)::value, typename decltype(tile)::type>(g, src, dst, threads);
        return true;
    });
#else
    (void)p, (void)g, (void)src, (void)dst, (void)threads;
    return false;
#endif
}

}  // namespace dumpcmp::layout_detail
