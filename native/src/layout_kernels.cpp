// The loops that run a layout Plan: one walker over the plain side in row-major order, three ways to move a row.
//   runs  (kernel 1): the last axis is contiguous on the other side in runs (NZ <-> ND, 5HD <-> NHWC, copies):
//                     block copies of whole runs.
//   tiles (kernel 2): the last axis is strided on the other side but the second-last is contiguous there
//                     (5HD <-> NCHW, FRACTAL_Z <-> NCHW, NCHW <-> NHWC): small transposes of R rows x Q columns, so
//                     both sides are touched a cache line at a time.
//   elements (kernel 0): everything else, one table lookup per element.
// Every element access is a memcpy of the element size: the source may be an unaligned region of a mapped dump.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "dumpcmp/layout.hpp"
#include "dumpcmp/parallel.hpp"
#include "layout_internal.hpp"

#include "layout_transpose.hpp"

namespace dumpcmp {

namespace {

using Byte = unsigned char;

inline std::int64_t off(const Plan& p, std::size_t a, std::int64_t i) {
    const auto& t = p.tables[a];
    return t.empty() ? i * p.strides[a] : t[static_cast<std::size_t>(i)];
}

// The multi-index of flat element `first` over the plan's working dims.
std::vector<std::int64_t> unravel(const Plan& p, std::uint64_t first) {
    std::vector<std::int64_t> idx(p.dims.size());
    for (std::size_t a = idx.size(); a-- > 0;) {
        const auto d = static_cast<std::uint64_t>(p.dims[a]);
        idx[a] = static_cast<std::int64_t>(first % d);
        first /= d;
    }
    return idx;
}

// Fixed sizes let the compiler emit plain moves instead of a call for the short runs of C0 elements.
inline void copy_bytes(Byte* dst, const Byte* src, std::size_t n) {
    switch (n) {
        case 8: std::memcpy(dst, src, 8); return;
        case 16: std::memcpy(dst, src, 16); return;
        case 32: std::memcpy(dst, src, 32); return;
        case 64: std::memcpy(dst, src, 64); return;
        case 128: std::memcpy(dst, src, 128); return;
        default: std::memcpy(dst, src, n);
    }
}

#if DUMPCMP_LAYOUT_SSE2
using layout_detail::transpose8x8_16;
using layout_detail::transpose4x4_32;
using layout_detail::transpose2x2_64;

// Full V x V blocks of an I x K region (src row i = K elements at src + i * ss; dst row k at dst + k * ds).
template <std::size_t E>
void transpose_blocks(const Byte* src, std::size_t ss, Byte* dst, std::size_t ds, std::int64_t I, std::int64_t K) {
    constexpr std::int64_t V = 16 / E;
    for (std::int64_t i = 0; i + V <= I; i += V)
        for (std::int64_t k = 0; k + V <= K; k += V) {
            const Byte* in = src + static_cast<std::size_t>(i) * ss + static_cast<std::size_t>(k) * E;
            Byte* out = dst + static_cast<std::size_t>(k) * ds + static_cast<std::size_t>(i) * E;
            if constexpr (E == 2) transpose8x8_16(in, ss, out, ds);
            else if constexpr (E == 4) transpose4x4_32(in, ss, out, ds);
            else transpose2x2_64(in, ss, out, ds);
        }
}
#endif

// FRACTAL_Z -> NCHW and alike: the axis before the tiled pair (N) is close on the other side (C0 apart) while
// one tile row jumps a whole fractal row (N1*16*C0). Tiling several N slabs per block of rows reads the other side
// in long runs instead of touching a new page per element.
bool interleaves(const Plan& p) {
    const std::size_t k = p.dims.size();
    return p.kernel == 2 && k >= 3 && p.tables[k - 3].empty() &&
           p.strides[k - 3] * static_cast<std::int64_t>(p.elem_size) < 4096;
}

// Slabs per interleaved block: each block reads nb * C0 elements of every fractal row it visits, so the fewer the
// slabs the more pages (and DRAM rows) per byte on the other side; nb plain streams are written at once.
constexpr std::int64_t kSlabs = 32;  // 16 and 64 are slower (docs/performance.md#design-measurements)

// Whole decodes from this size on write with streaming stores where the loop supports it (blocked runs).
constexpr std::uint64_t kStreamBytes = std::uint64_t{1} << 26;
// How far ahead, per source stream, the streaming decode fetches: less ahead, or none, is slower
// (docs/performance.md#design-measurements).
constexpr std::size_t kAheadBytes = 2048;

// Scatter = false: plain[i] = other[offset(i)] (decode, permute). Scatter = true: other[offset(i)] = plain[i].
template <std::size_t E, bool Scatter>
struct Walker {
    const Plan& p;
    Byte* plain;  // element `first` of the plain side
    Byte* other;
    bool stream = false;  // decodes far larger than the caches: write the plain side with streaming stores

    static void move(Byte* plain_at, Byte* other_at) {
        if constexpr (Scatter) std::memcpy(other_at, plain_at, E);
        else std::memcpy(plain_at, other_at, E);
    }

    // Plain elements t .. t + (j1 - j0) are the last axis's j0 .. j1 at other-side offset `base`.
    void row(std::int64_t t, std::int64_t base, std::int64_t j0, std::int64_t j1, const std::int64_t* pair_row) const {
        const std::size_t q = p.dims.size() - 1;
        Byte* pl = plain + static_cast<std::size_t>(t) * E;
        if (p.kernel == 1) {
            const std::int64_t L = p.run_length;
            const std::int64_t* tq = p.tables[q].empty() ? nullptr : p.tables[q].data();
            // only the first run can start inside a run: no division per run
            for (std::int64_t j = j0, n = std::min(L - j0 % L, j1 - j0); j < j1; n = std::min(L, j1 - j)) {
                Byte* ot = other + static_cast<std::size_t>(base + (tq != nullptr ? tq[j] : j * p.strides[q])) * E;
                const auto bytes = static_cast<std::size_t>(n) * E;
                if constexpr (Scatter) copy_bytes(ot, pl, bytes);
                else copy_bytes(pl, ot, bytes);
                pl += bytes;
                j += n;
            }
            return;
        }
        const auto& tq = p.tables[q];
        if (pair_row != nullptr) {
            for (std::int64_t j = j0; j < j1; ++j, pl += E)
                move(pl, other + static_cast<std::size_t>(base + off(p, q, j) + pair_row[j]) * E);
        } else if (tq.empty()) {
            const std::int64_t s = p.strides[q];
            Byte* ot = other + static_cast<std::size_t>(base + j0 * s) * E;
            const auto step = static_cast<std::size_t>(s) * E;
            for (std::int64_t j = j0; j < j1; ++j, pl += E, ot += step) move(pl, ot);
        } else {
            for (std::int64_t j = j0; j < j1; ++j, pl += E)
                move(pl, other + static_cast<std::size_t>(base + tq[static_cast<std::size_t>(j)]) * E);
        }
    }

    // Columns [j_from, j_to) x rows [r_from, r_to) of a tile whose rows are contiguous on the other side and whose
    // columns step by `col` bytes there: plain (r, j) at pl + r * row_bytes + j * E, other at ot + j * col + r * E.
    static void copy_cols(Byte* pl, Byte* ot, std::size_t col, std::size_t row_bytes, std::int64_t j_from,
                          std::int64_t j_to, std::int64_t r_from, std::int64_t r_to) {
        for (std::int64_t j = j_from; j < j_to; ++j) {
            Byte* o = ot + static_cast<std::size_t>(j) * col;
            Byte* q = pl + static_cast<std::size_t>(j) * E;
            for (std::int64_t r = r_from; r < r_to; ++r)
                move(q + static_cast<std::size_t>(r) * row_bytes, o + static_cast<std::size_t>(r) * E);
        }
    }

    // Whole rows ra .. rb of the second-last axis (all of the last axis), the first at plain element t.
    void tile(std::int64_t t, std::int64_t base, std::int64_t ra, std::int64_t rb) const {
        const std::size_t q = p.dims.size() - 1, a = q - 1;
        const std::int64_t dq = p.dims[q];
        const std::int64_t R = p.tile_rows;
        const auto row_bytes = static_cast<std::size_t>(dq) * E;
        const bool affine_cols = p.tables[q].empty();
        for (std::int64_t r0 = ra; r0 < rb;) {
            const std::int64_t r1 = std::min(rb, (r0 / R + 1) * R);
            const std::int64_t n = r1 - r0;
            const std::int64_t o0 = off(p, a, r0);
            const bool contiguous = n <= 64 && off(p, a, r1 - 1) - o0 == n - 1;
            Byte* pl0 = plain + static_cast<std::size_t>(t + (r0 - ra) * dq) * E;
            if (contiguous && affine_cols) {
                // the common case (5HD <-> NCHW, FRACTAL_Z <-> NCHW, NCHW <-> NHWC): constant strides both sides
                tile_core(pl0, other + static_cast<std::size_t>(base + o0) * E,
                          static_cast<std::size_t>(p.strides[q]) * E, n, dq);
                r0 = r1;
                continue;
            }
            for (std::int64_t j = 0; j < dq; ++j) {
                Byte* ot = other + static_cast<std::size_t>(base + off(p, q, j) + o0) * E;
                Byte* pl = pl0 + static_cast<std::size_t>(j) * E;
                for (std::int64_t r = r0; r < r1; ++r, pl += row_bytes)
                    move(pl, ot + static_cast<std::size_t>(off(p, a, r) - o0) * E);
            }
            r0 = r1;
        }
    }

    // n rows x dq columns: plain (r, j) at pl0 + (r * dq + j) * E, other at ot0 + j * col + r * E.
    static void tile_core(Byte* pl0, Byte* ot0, std::size_t col, std::int64_t n, std::int64_t dq) {
        constexpr std::int64_t Q = E <= 2 ? 256 : E == 4 ? 128 : 64;
        const auto row_bytes = static_cast<std::size_t>(dq) * E;
        for (std::int64_t j0 = 0; j0 < dq; j0 += Q) {
            const std::int64_t w = std::min(Q, dq - j0);
            Byte* pl = pl0 + static_cast<std::size_t>(j0) * E;
            Byte* ot = ot0 + static_cast<std::size_t>(j0) * col;
            std::int64_t wv = 0, nv = 0;
#if DUMPCMP_LAYOUT_SSE2
            if constexpr (E >= 2) {
                constexpr std::int64_t V = 16 / E;
                wv = w / V * V;
                nv = n / V * V;
                if constexpr (Scatter) transpose_blocks<E>(pl, row_bytes, ot, col, nv, wv);
                else transpose_blocks<E>(ot, col, pl, row_bytes, wv, nv);
            }
#endif
            // what the register blocks did not cover: the last columns (all rows), the last rows
            copy_cols(pl, ot, col, row_bytes, wv, w, 0, n);
            copy_cols(pl, ot, col, row_bytes, 0, wv, nv, n);
        }
    }

    // FRACTAL_Z <-> NCHW: nb slabs of the axis before the tile (N, C0 apart on the other side), rows r0 .. r1 of
    // each (one C0 block of channels), every column (H*W, a whole fractal row apart). When the slabs' rows are
    // back to back on the other side, every column is ONE contiguous stretch of nb * n elements there: it is moved
    // through a small staging buffer so that the other side is read or written in long sequential runs (scattered
    // 32-byte pieces a fractal row apart stall the stores), and the transposes work between the plain side and L1.
    bool staged(std::int64_t t, std::int64_t other0, std::int64_t slab, std::int64_t nb, std::int64_t r0,
                std::int64_t r1, std::vector<Byte>& stage) const {
        const std::size_t q = p.dims.size() - 1, a = q - 1, b = q - 2;
        const std::int64_t n = r1 - r0, dq = p.dims[q];
        if (!p.tables[q].empty() || p.strides[b] != n || n > 64 || off(p, a, r1 - 1) - off(p, a, r0) != n - 1)
            return false;
        const auto run = static_cast<std::size_t>(nb * n) * E;  // one column's stretch on the other side
        if (run * static_cast<std::size_t>(dq) > (std::size_t{1} << 17)) return false;  // stay within L2
        if (stage.size() < run * static_cast<std::size_t>(dq)) stage.resize(run * static_cast<std::size_t>(dq));
        const auto col = static_cast<std::size_t>(p.strides[q]) * E;
        Byte* ot = other + static_cast<std::size_t>(other0 + off(p, a, r0)) * E;
        Byte* st = stage.data();
        if constexpr (!Scatter)
            for (std::int64_t j = 0; j < dq; ++j)
                std::memcpy(st + static_cast<std::size_t>(j) * run, ot + static_cast<std::size_t>(j) * col, run);
        // The nb plain pieces lie a whole slab apart, too many streams for the hardware prefetcher: ask for the
        // pieces of the next row block ahead of time (they are the next bytes of the same slabs).
        const auto piece = static_cast<std::size_t>(n * dq) * E;
        const bool ahead = r1 + 2 * n <= p.dims[a];
        for (std::int64_t s = 0; s < nb; ++s) {
            Byte* pl = plain + static_cast<std::size_t>(t + s * slab + r0 * dq) * E;
            if (ahead)
                for (std::size_t o = 0; o < piece; o += 64) __builtin_prefetch(pl + 2 * piece + o, Scatter ? 0 : 1);
            tile_core(pl, st + static_cast<std::size_t>(s * n) * E, run, n, dq);
        }
        if constexpr (Scatter)
            for (std::int64_t j = 0; j < dq; ++j)
                std::memcpy(ot + static_cast<std::size_t>(j) * col, st + static_cast<std::size_t>(j) * run, run);
        return true;
    }

    // Kernel 1 with tile_rows set: rows ra .. rb of the second-last axis (step L on the other side), the last axis
    // in chunks of L elements spaced S apart there. Per chunk, the rows' pieces are one contiguous stretch of the
    // other side, so both sides move in long runs; CB (the chunk's bytes, 0 = not fixed) lets memcpy become moves.
    template <std::size_t CB>
    void run_block_fixed(std::int64_t t, std::int64_t base, std::int64_t ra, std::int64_t rb) const {
        const std::size_t q = p.dims.size() - 1;
        const std::int64_t L = p.run_length, dq = p.dims[q];
        const std::int64_t S = p.tables[q][static_cast<std::size_t>(L)];
        const std::int64_t chunks = dq / L, tail = dq % L;
        const auto cb = static_cast<std::size_t>(L) * E, row_bytes = static_cast<std::size_t>(dq) * E;
        const auto sb = static_cast<std::size_t>(S) * E;
        for (std::int64_t r0 = ra; r0 < rb; r0 += p.tile_rows) {
            const auto n = static_cast<std::size_t>(std::min(p.tile_rows, rb - r0));
            Byte* pl = plain + static_cast<std::size_t>(t + (r0 - ra) * dq) * E;
            Byte* ot = other + static_cast<std::size_t>(base + r0 * L) * E;
#if DUMPCMP_LAYOUT_SSE2
            if constexpr (!Scatter && CB != 0 && CB % 16 == 0) {
                // A tensor far larger than the caches: plain rows are written whole, in order, with streaming
                // stores (no read of the destination lines before they are overwritten, a third of the traffic);
                // the block's source chunks (tile_rows * L elements each) stay in L1/L2 between rows.
                // G rows at a time, so that each source cache line (G chunks of CB bytes) is used whole at once.
                constexpr std::size_t G = CB >= 64 ? 1 : 64 / CB;
                if (stream && n % G == 0 && (reinterpret_cast<std::uintptr_t>(pl) | row_bytes) % 16 == 0) {
                    // every chunk is its own stream through its own pages (64 of them at 1024 columns): more than
                    // the hardware prefetchers follow, so fetch each D rows ahead, a line per chunk per row group
                    constexpr std::size_t D = kAheadBytes / CB;  // rows ahead
                    for (std::size_t r = 0; r < n; r += G) {
                        Byte* pr = pl + r * row_bytes;
                        const Byte* orow = ot + r * cb;
                        const std::size_t next = D * CB;
                        if (r0 + static_cast<std::int64_t>(r + D) < rb)
                            for (std::int64_t c = 0; c < chunks; ++c)
                                __builtin_prefetch(orow + next + static_cast<std::size_t>(c) * sb);
                        for (std::int64_t c = 0; c < chunks; ++c, pr += CB, orow += sb)
                            for (std::size_t g = 0; g < G; ++g)
                                for (std::size_t v = 0; v < CB; v += 16)
                                    _mm_stream_si128(reinterpret_cast<__m128i*>(pr + g * row_bytes + v),
                                                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(orow + g * CB + v)));
                        if (tail != 0)
                            for (std::size_t g = 0; g < G; ++g)
                                std::memcpy(pr + g * row_bytes, orow + g * cb, static_cast<std::size_t>(tail) * E);
                    }
                    continue;
                }
            }
#endif
            for (std::int64_t c = 0; c < chunks; ++c, pl += cb, ot += sb) {
                Byte* pr = pl;
                Byte* orow = ot;
                for (std::size_t r = 0; r < n; ++r, pr += row_bytes, orow += cb) {
                    if constexpr (CB != 0) {
                        if constexpr (Scatter) std::memcpy(orow, pr, CB);
                        else std::memcpy(pr, orow, CB);
                    } else {
                        if constexpr (Scatter) std::memcpy(orow, pr, cb);
                        else std::memcpy(pr, orow, cb);
                    }
                }
            }
            if (tail != 0) {
                const auto tb = static_cast<std::size_t>(tail) * E;
                for (std::size_t r = 0; r < n; ++r) {
                    Byte* pr = pl + r * row_bytes;
                    Byte* orow = ot + r * cb;  // rows still step by L elements on the other side
                    if constexpr (Scatter) std::memcpy(orow, pr, tb);
                    else std::memcpy(pr, orow, tb);
                }
            }
        }
    }

    void run_block(std::int64_t t, std::int64_t base, std::int64_t ra, std::int64_t rb) const {
        switch (static_cast<std::size_t>(p.run_length) * E) {
            case 16: run_block_fixed<16>(t, base, ra, rb); break;
            case 32: run_block_fixed<32>(t, base, ra, rb); break;
            case 64: run_block_fixed<64>(t, base, ra, rb); break;
            case 128: run_block_fixed<128>(t, base, ra, rb); break;
            default: run_block_fixed<0>(t, base, ra, rb);
        }
    }

    void walk(std::uint64_t first, std::uint64_t count) const {
        const std::size_t k = p.dims.size();
        if (count == 0) return;
        if (k == 0) {  // a single element
            move(plain, other);
            return;
        }
        std::vector<std::int64_t> idx = unravel(p, first);
        const std::size_t q = k - 1;
        const std::int64_t dq = p.dims[q];
        auto base_upto = [&](std::size_t end) {
            std::int64_t b = 0;
            for (std::size_t a = 0; a < end; ++a) b += off(p, a, idx[a]);
            return b;
        };
        auto carry = [&](std::size_t from) {  // idx[from] just passed its end
            for (std::size_t a = from + 1; a-- > 0;) {
                if (idx[a] < p.dims[a]) return;
                idx[a] = 0;
                if (a > 0) ++idx[a - 1];
            }
        };
        const auto total = static_cast<std::int64_t>(count);
        std::int64_t t = 0;
        const bool interleave = interleaves(p);
        const bool blocks = p.kernel == 2 || (p.kernel == 1 && p.tile_rows > 0);
        std::vector<Byte> stage;
        while (t < total) {
            if (interleave && idx[q] == 0 && idx[q - 1] == 0) {
                const std::size_t a = q - 1, b = q - 2;
                const std::int64_t slab = p.dims[a] * dq;
                const std::int64_t nb = std::min<std::int64_t>({p.dims[b] - idx[b], (total - t) / slab, kSlabs});
                if (nb >= 2) {
                    const std::int64_t base0 = base_upto(b);
                    for (std::int64_t r0 = 0; r0 < p.dims[a];) {
                        const std::int64_t r1 = std::min(p.dims[a], (r0 / p.tile_rows + 1) * p.tile_rows);
                        if (!staged(t, base0 + off(p, b, idx[b]), slab, nb, r0, r1, stage))
                            for (std::int64_t s = 0; s < nb; ++s)
                                tile(t + s * slab + r0 * dq, base0 + off(p, b, idx[b] + s), r0, r1);
                        r0 = r1;
                    }
                    t += nb * slab;
                    idx[b] += nb;
                    if (idx[b] == p.dims[b]) carry(b);
                    continue;
                }
            }
            if (blocks && idx[q] == 0) {
                const std::size_t a = q - 1;
                const std::int64_t rows = std::min(p.dims[a] - idx[a], (total - t) / dq);
                if (rows > 0) {
                    if (p.kernel == 2) tile(t, base_upto(a), idx[a], idx[a] + rows);
                    else run_block(t, base_upto(a), idx[a], idx[a] + rows);
                    t += rows * dq;
                    idx[a] += rows;
                    if (idx[a] == p.dims[a]) carry(a);
                    continue;
                }
            }
            const std::int64_t j0 = idx[q], j1 = std::min(dq, j0 + (total - t));
            std::int64_t base = base_upto(q);
            const std::int64_t* pair_row = nullptr;
            if (p.pair_a >= 0) {
                const auto pa = static_cast<std::size_t>(p.pair_a), pb = static_cast<std::size_t>(p.pair_b);
                if (pb == q) pair_row = p.pair_table.data() + static_cast<std::size_t>(idx[pa] * p.dims[pb]);
                else base += p.pair_table[static_cast<std::size_t>(idx[pa] * p.dims[pb] + idx[pb])];
            }
            row(t, base, j0, j1, pair_row);
            t += j1 - j0;
            idx[q] = j1;
            if (j1 == dq) carry(q);
        }
    }
};

template <bool Scatter>
void walk(const Plan& p, Byte* plain, Byte* other, std::uint64_t first, std::uint64_t count, bool stream = false) {
    switch (p.elem_size) {
        case 1: Walker<1, Scatter>{p, plain, other, stream}.walk(first, count); break;
        case 2: Walker<2, Scatter>{p, plain, other, stream}.walk(first, count); break;
        case 4: Walker<4, Scatter>{p, plain, other, stream}.walk(first, count); break;
        case 8: Walker<8, Scatter>{p, plain, other, stream}.walk(first, count); break;
        default: throw std::invalid_argument("layout plan with element size " + std::to_string(p.elem_size));
    }
#if DUMPCMP_LAYOUT_SSE2
    if (stream) _mm_sfence();  // streaming stores are weakly ordered: visible before the caller reads the result
#endif
}

void check_window(const Plan& p, std::uint64_t first, std::uint64_t count, const char* what) {
    if (p.encode)
        throw std::invalid_argument(std::string(what) + " reads a decode or plain-to-plain plan, not an encode plan");
    if (first > p.dst_count || count > p.dst_count - first)
        throw std::out_of_range(std::string(what) + ": elements [" + std::to_string(first) + ", " +
                                std::to_string(first + count) + ") pass the end of the " +
                                std::to_string(p.dst_count) + "-element destination");
}

// Chunks of whole tile blocks (or rows) of about 1 MiB, so threads never share a cache line of the destination
// except at chunk edges, where writes are to distinct bytes anyway.
std::uint64_t chunk_elements(const Plan& p) {
    const std::uint64_t target = (std::uint64_t{1} << 20) / p.elem_size;
    std::uint64_t unit = 1;
    if (!p.dims.empty()) {
        unit = static_cast<std::uint64_t>(p.dims.back());
        if (p.tile_rows > 0) unit *= static_cast<std::uint64_t>(p.tile_rows);
    }
    const std::uint64_t chunk = std::max<std::uint64_t>(1, target / unit) * unit;
    if (interleaves(p)) {
        // whole blocks of slabs, however large a slab is: a chunk of one or two slabs would read every fractal
        // row of the tensor a few C0 pieces at a time (at 1 GB: 64 bytes per 64 KiB row, a page walk each)
        const std::size_t k = p.dims.size();
        const auto slab = static_cast<std::uint64_t>(p.dims[k - 2] * p.dims[k - 1]);
        return std::max<std::uint64_t>((chunk + slab - 1) / slab, static_cast<std::uint64_t>(kSlabs)) * slab;
    }
    return chunk;
}

// One slice of a padding box: `runs` contiguous stretches starting at stretch `first` of box `box`.
struct ZeroTask {
    std::size_t box;
    std::uint64_t first, runs;
};

// A box as stretches: axes after `inner` span their whole dim, so each stretch is contiguous in the device buffer.
struct BoxRuns {
    std::size_t inner = 0;        // the deepest axis that is not whole; the stretch is [lo, hi) of it times the rest
    std::uint64_t stretch = 0;    // elements per stretch
    std::uint64_t count = 0;      // stretches in the box
};

BoxRuns box_runs(const layout_detail::ZeroBox& b, const std::vector<std::int64_t>& ds) {
    BoxRuns r;
    const std::size_t k = ds.size();
    std::uint64_t inner = 1;
    std::size_t a = k;
    while (a > 0 && b.lo[a - 1] == 0 && b.hi[a - 1] == ds[a - 1]) {
        --a;
        inner *= static_cast<std::uint64_t>(ds[a]);
    }
    if (a == 0) {  // the whole tensor
        r.inner = 0;
        r.stretch = inner;
        r.count = 1;
        return r;
    }
    r.inner = a - 1;
    r.stretch = inner * static_cast<std::uint64_t>(std::max<std::int64_t>(0, b.hi[a - 1] - b.lo[a - 1]));
    r.count = 1;
    for (std::size_t o = 0; o + 1 < a; ++o) r.count *= static_cast<std::uint64_t>(std::max<std::int64_t>(0, b.hi[o] - b.lo[o]));
    if (r.stretch == 0) r.count = 0;
    return r;
}

std::vector<ZeroTask> zero_tasks(const layout_detail::Padding& pad, const std::vector<std::int64_t>& ds,
                                 std::size_t elem) {
    std::vector<ZeroTask> out;
    const std::uint64_t target = (std::uint64_t{1} << 20) / elem;
    for (std::size_t i = 0; i < pad.boxes.size(); ++i) {
        const BoxRuns r = box_runs(pad.boxes[i], ds);
        const std::uint64_t per = std::max<std::uint64_t>(1, target / std::max<std::uint64_t>(1, r.stretch));
        for (std::uint64_t f = 0; f < r.count; f += per) out.push_back({i, f, std::min(per, r.count - f)});
    }
    return out;
}

void run_zero(const ZeroTask& task, const layout_detail::Padding& pad, const std::vector<std::int64_t>& ds, Byte* d,
              std::size_t elem) {
    const layout_detail::ZeroBox& b = pad.boxes[task.box];
    const BoxRuns r = box_runs(b, ds);
    const std::size_t k = ds.size();
    std::vector<std::uint64_t> st(k);  // row-major strides of the device shape
    std::uint64_t m = 1;
    for (std::size_t a = k; a-- > 0;) {
        st[a] = m;
        m *= static_cast<std::uint64_t>(ds[a]);
    }
    if (r.count == 1 && r.inner == 0 && b.lo[0] == 0 && b.hi[0] == ds[0]) {
        std::memset(d, 0, static_cast<std::size_t>(r.stretch * elem));
        return;
    }
    for (std::uint64_t s = task.first; s < task.first + task.runs; ++s) {
        // stretch s: outer axes 0 .. inner-1 of the box, in row-major order
        std::uint64_t rest = s, offset = static_cast<std::uint64_t>(b.lo[r.inner]) * st[r.inner];
        for (std::size_t a = r.inner; a-- > 0;) {
            const auto ext = static_cast<std::uint64_t>(b.hi[a] - b.lo[a]);
            offset += (static_cast<std::uint64_t>(b.lo[a]) + rest % ext) * st[a];
            rest /= ext;
        }
        std::memset(d + offset * elem, 0, static_cast<std::size_t>(r.stretch * elem));
    }
}

}  // namespace

void convert(const Plan& p, const void* src, void* dst, unsigned threads) {
    auto* s = const_cast<Byte*>(static_cast<const Byte*>(src));  // never written: only the destination is
    auto* d = static_cast<Byte*>(dst);
    const std::uint64_t total = p.encode ? p.src_count : p.dst_count;
    // A zero-size dimension: nothing to move (the chunking below divides by the dims). An encode of an empty plain
    // tensor leaves only padding, if the device shape has any.
    if (p.src_count == 0 || p.dst_count == 0) {
        if (p.encode && p.dst_count != 0) std::memset(d, 0, static_cast<std::size_t>(p.dst_count * p.elem_size));
        return;
    }
    const std::uint64_t chunk = chunk_elements(p);
    const std::uint64_t chunks = (total + chunk - 1) / chunk;
    if (threads == 0) threads = num_threads();
    if (total * p.elem_size < (std::uint64_t{1} << 21)) threads = 1;  // thread start-up costs more than the copy
    if (layout_detail::NzGeometry g; layout_detail::nz_geometry(p, g) && layout_detail::nz_stream(p, g, s, d, threads))
        return;
    if (layout_detail::FzGeometry g; !p.encode && layout_detail::fz_geometry(p, g) &&
                                     layout_detail::fz_decode_stream(p, g, s, d, threads))
        return;
    if (layout_detail::HdGeometry g; p.encode && layout_detail::hd_geometry(p, g) &&
                                     layout_detail::hd_encode_stream(p, g, s, d, threads))
        return;
    if (!p.encode) {
        // Only whole-tensor decodes far beyond the caches stream: a window (decode_range) is read right after.
        const bool stream = total * p.elem_size >= kStreamBytes;
        parallel_for(static_cast<std::size_t>(chunks), [&](std::size_t c) {
            const std::uint64_t first = c * chunk, n = std::min(chunk, total - first);
            walk<false>(p, d + first * p.elem_size, s, first, n, stream);
        }, threads);
        return;
    }
    if (layout_detail::FzGeometry g; layout_detail::fz_geometry(p, g) && !g.decode &&
                                     layout_detail::fz_encode(p, g, s, d, threads))
        return;
    // Padding must read back as zeros. Only the padding is cleared, in the same pass as the scatter (the boxes
    // and the data never share an element), instead of a whole extra write pass over the destination.
    const layout_detail::Padding pad = layout_detail::padding_of(p);
    if (pad.whole_tensor) {
        const std::uint64_t bytes = p.dst_count * p.elem_size;
        const std::uint64_t zchunk = std::uint64_t{1} << 22;
        parallel_for(static_cast<std::size_t>((bytes + zchunk - 1) / zchunk), [&](std::size_t c) {
            const std::uint64_t b0 = c * zchunk, n = std::min(zchunk, bytes - b0);
            std::memset(d + b0, 0, static_cast<std::size_t>(n));
        }, threads);
    }
    std::vector<ZeroTask> zero;
    if (!pad.whole_tensor) zero = zero_tasks(pad, p.dst_shape, p.elem_size);
    parallel_for(static_cast<std::size_t>(chunks) + zero.size(), [&](std::size_t c) {
        if (c >= chunks) return run_zero(zero[c - chunks], pad, p.dst_shape, d, p.elem_size);
        const std::uint64_t first = c * chunk, n = std::min(chunk, total - first);
        walk<true>(p, s + first * p.elem_size, d, first, n);
    }, threads);
}

void decode_range(const Plan& p, const void* src, std::uint64_t first, std::uint64_t count, void* dst) {
    check_window(p, first, count, "decode_range");
    if (count == 0) return;
    walk<false>(p, static_cast<Byte*>(dst), const_cast<Byte*>(static_cast<const Byte*>(src)), first, count);
}

void source_indices(const Plan& p, std::uint64_t first, std::uint64_t count, std::uint64_t* out) {
    check_window(p, first, count, "source_indices");
    if (count == 0) return;
    const std::size_t k = p.dims.size();
    if (k == 0) {
        out[0] = 0;
        return;
    }
    std::vector<std::int64_t> idx = unravel(p, first);
    const std::size_t q = k - 1;
    for (std::uint64_t t = 0; t < count;) {
        std::int64_t base = 0;
        for (std::size_t a = 0; a < q; ++a) base += off(p, a, idx[a]);
        const std::int64_t* pair_row = nullptr;
        if (p.pair_a >= 0) {
            const auto pa = static_cast<std::size_t>(p.pair_a), pb = static_cast<std::size_t>(p.pair_b);
            if (pb == q) pair_row = p.pair_table.data() + static_cast<std::size_t>(idx[pa] * p.dims[pb]);
            else base += p.pair_table[static_cast<std::size_t>(idx[pa] * p.dims[pb] + idx[pb])];
        }
        const std::int64_t j1 = std::min<std::int64_t>(p.dims[q], idx[q] + static_cast<std::int64_t>(count - t));
        for (std::int64_t j = idx[q]; j < j1; ++j, ++t)
            out[t] = static_cast<std::uint64_t>(base + off(p, q, j) + (pair_row != nullptr ? pair_row[j] : 0));
        idx[q] = j1;
        for (std::size_t a = q + 1; a-- > 0;) {
            if (idx[a] < p.dims[a]) break;
            idx[a] = 0;
            if (a > 0) ++idx[a - 1];
        }
    }
}

}  // namespace dumpcmp
