// FRACTAL_NZ <-> plain for whole tensors far larger than the caches, in both directions.
//
// Per batch matrix, FRACTAL_NZ (N1, M1, 16, C0) is the plain (M, N) matrix cut into column strips of C0: strip n1
// is one contiguous (Mp, C0) block (Mp = M1*16). So the conversion is a transpose of C0-element pieces between
// (N1, Mp) and (Mp, N1). At 1 GB every strip is its own stream through its own pages (64 of them for 1024
// columns of fp16), more than the hardware prefetchers follow, and the generic row walker reached a quarter of
// memcpy there. This loop moves blocks of 16 rows (one fractal of every strip, whole cache lines on both sides):
//   decode: each strip's piece of the block copied into a stage (one sequential read per strip), then plain rows
//           written whole and in order from there with streaming stores (no read of the destination lines before
//           they are overwritten);
//   encode: device strips written in order with streaming stores (16 rows x C0 is 512 contiguous bytes of fp16),
//           the next block's plain rows fetched ahead; padding rows and columns written as zeros in the same pass.
// This is much faster than the generic walker at 1 GB (docs/performance.md#design-measurements). Smaller
// tensors keep the generic loops: their destination stays in the caches, where streaming stores would evict it.
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

constexpr i64 kRows = 16;                    // rows per block: one fractal of each strip
constexpr i64 kItemRows = 64;                // rows per work item (4 blocks): a few hundred KiB of each side
constexpr std::uint64_t kMinBytes = std::uint64_t{1} << 26;  // below this the generic loops stay in the caches
constexpr std::size_t kMaxStage = std::size_t{1} << 20;       // decode stage per thread: 32768 fp16 columns

#if DUMPCMP_LAYOUT_SSE2
// stream_out (layout_transpose.hpp) for a 16-byte aligned destination and whole 16-byte pieces: no head or tail.
inline void stream_piece(Byte* dst, const Byte* src, std::size_t bytes) {
    for (std::size_t v = 0; v < bytes; v += 16)
        _mm_stream_si128(reinterpret_cast<__m128i*>(dst + v), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + v)));
}

// Rows [r0, r1) of batch b, decoded: plain row m = N1 pieces of C0 elements, piece n1 at strip n1's row m.
// Each block's pieces are first copied strip by strip into `stage` (16 * C0 contiguous elements of each strip:
// one sequential read each), then the rows are written from there. Reading the block row by row instead (one
// line of every strip in turn, all at the same offset of their pages) is as fast at best but much slower in some
// runs, as such lines compete for the same cache sets and DRAM banks (docs/performance.md#design-measurements).
void decode_rows(const NzGeometry& g, std::size_t e, const Byte* src, Byte* dst, i64 b, i64 r0, i64 r1,
                 std::vector<Byte>& stage) {
    const std::size_t piece = uz(g.c0) * e, row_bytes = uz(g.n) * e;
    const std::size_t strip = uz(g.mp) * piece;  // bytes of one (Mp, C0) strip
    const std::size_t block = uz(kRows) * piece;  // one strip's share of a block
    if (stage.size() < block * uz(g.n1)) stage.resize(block * uz(g.n1));
    const Byte* sb = src + uz(b * g.n1) * strip;
    Byte* db = dst + uz(b * g.m) * row_bytes;
    for (i64 k0 = r0; k0 < r1; k0 += kRows) {
        const i64 k1 = std::min(r1, k0 + kRows);
        const std::size_t bytes = uz(k1 - k0) * piece;
        for (i64 n1 = 0; n1 < g.n1; ++n1) std::memcpy(stage.data() + uz(n1) * block, sb + uz(n1) * strip + uz(k0) * piece, bytes);
        for (i64 m = k0; m < k1; ++m) {
            Byte* row = db + uz(m) * row_bytes;
            const Byte* in = stage.data() + uz(m - k0) * piece;
            for (i64 n1 = 0; n1 < g.n1; ++n1, in += block, row += piece) stream_piece(row, in, piece);
        }
    }
}

// Rows [r0, r1) of batch b (r1 <= Mp), encoded: strip n1 gets rows r0 .. r1 of plain columns n1*C0 .. (zeros for
// rows >= M and columns >= N).
void encode_rows(const NzGeometry& g, std::size_t e, const Byte* src, Byte* dst, i64 b, i64 r0, i64 r1) {
    const std::size_t piece = uz(g.c0) * e, row_bytes = uz(g.n) * e;
    const std::size_t strip = uz(g.mp) * piece;
    const Byte* sb = src + uz(b * g.m) * row_bytes;
    Byte* db = dst + uz(b * g.n1) * strip;
    alignas(64) Byte pad[1024];  // one piece with its missing columns zeroed (piece <= 1024 bytes: checked)
    for (i64 k0 = r0; k0 < r1; k0 += kRows) {
        const i64 k1 = std::min(r1, k0 + kRows);
        const i64 real = std::max<i64>(0, std::min(k1, g.m) - k0);  // rows of this block that exist in the plain
        // the next block's plain rows (contiguous), spread over this block's strips
        const i64 next_rows = std::max<i64>(0, std::min(k1 + kRows, g.m) - k1);
        const std::size_t total = (uz(next_rows) * row_bytes + 63) / 64;
        const std::size_t per_strip = (total + uz(g.n1) - 1) / uz(g.n1);
        const Byte* next = sb + uz(k1) * row_bytes;
        std::size_t done = 0;
        for (i64 s = 0; s < g.n1; ++s) {
            for (const std::size_t stop = std::min(total, done + per_strip); done < stop; ++done)
                __builtin_prefetch(next + done * 64);
            Byte* out = db + uz(s) * strip + uz(k0) * piece;
            const i64 cols = std::min(g.c0, g.n - s * g.c0);
            const Byte* in = sb + uz(k0) * row_bytes + uz(s) * piece;
            if (cols == g.c0) {
                for (i64 m = 0; m < real; ++m) stream_piece(out + uz(m) * piece, in + uz(m) * row_bytes, piece);
            } else {
                std::memset(pad, 0, piece);
                for (i64 m = 0; m < real; ++m) {
                    std::memcpy(pad, in + uz(m) * row_bytes, uz(cols) * e);
                    stream_piece(out + uz(m) * piece, pad, piece);
                }
            }
            if (real < k1 - k0) {
                std::memset(pad, 0, piece);
                for (i64 m = real; m < k1 - k0; ++m) stream_piece(out + uz(m) * piece, pad, piece);
            }
        }
    }
}
#endif

}  // namespace

bool nz_geometry(const Plan& p, NzGeometry& g) {
    const bool decode = p.src_format == Format::FRACTAL_NZ && is_plain_format(p.dst_format);
    const bool encode = p.dst_format == Format::FRACTAL_NZ && is_plain_format(p.src_format);
    if (!decode && !encode) return false;
    const std::vector<std::int64_t>& plain = decode ? p.dst_shape : p.src_shape;
    const std::vector<std::int64_t>& dev = decode ? p.src_shape : p.dst_shape;
    if (plain.empty() || dev.size() < 4) return false;
    const std::size_t r = plain.size(), q = dev.size();
    g.batches = 1;
    for (std::size_t a = 0; a + 2 < r; ++a) g.batches *= plain[a];
    g.m = r >= 2 ? plain[r - 2] : 1;
    g.n = plain[r - 1];
    g.n1 = dev[q - 4];
    g.mp = dev[q - 3] * dev[q - 2];
    g.c0 = dev[q - 1];
    g.decode = decode;
    i64 dev_batches = 1;
    for (std::size_t a = 0; a + 4 < q; ++a) dev_batches *= dev[a];
    // what make_plan has checked already, checked again: this loop indexes by these numbers alone
    return g.c0 > 0 && g.m <= g.mp && g.n <= g.n1 * g.c0 && g.n > (g.n1 - 1) * g.c0 && dev_batches == g.batches &&
           g.mp % kRows == 0;
}

bool nz_stream(const Plan& p, const NzGeometry& g, const unsigned char* src, unsigned char* dst, unsigned threads) {
#if DUMPCMP_LAYOUT_SSE2
    const std::size_t e = p.elem_size;
    const std::size_t piece = uz(g.c0) * e;
    const std::uint64_t bytes = std::max(p.src_count, p.dst_count) * e;
    if (bytes < kMinBytes || piece % 16 != 0 || piece > 1024 || g.batches * g.m * g.n == 0) return false;
    if (reinterpret_cast<std::uintptr_t>(dst) % 16 != 0) return false;
    // decode: plain rows are written whole, so they must start on 16 bytes and hold whole pieces; the stage (one
    // block of every strip) stays within 1 MiB per thread
    if (g.decode && (g.n % g.c0 != 0 || (uz(g.n) * e) % 16 != 0 || uz(g.n1 * kRows) * piece > kMaxStage))
        return false;
    const i64 rows = g.decode ? g.m : g.mp;  // rows each batch writes
    const i64 per_batch = (rows + kItemRows - 1) / kItemRows;
    stream_items(uz(g.batches * per_batch), threads, [&](std::size_t item) {
        const i64 b = static_cast<i64>(item) / per_batch, r0 = static_cast<i64>(item) % per_batch * kItemRows;
        const i64 r1 = std::min(rows, r0 + kItemRows);
        thread_local std::vector<Byte> stage;
        if (g.decode) decode_rows(g, e, src, dst, b, r0, r1, stage);
        else encode_rows(g, e, src, dst, b, r0, r1);
    });
    return true;
#else
    (void)p, (void)g, (void)src, (void)dst, (void)threads;
    return false;
#endif
}

}  // namespace dumpcmp::layout_detail
