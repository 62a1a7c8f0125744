// Register transposes and streaming copies shared by the layout loops (layout_kernels.cpp, layout_fz.cpp,
// layout_nz.cpp, layout_5hd.cpp); internal. SSE2 is part of x86-64, so the SSE2 forms need no run-time dispatch;
// the AVX2 tile is picked at run time (simd.hpp). Rows may be unaligned (mapped dumps).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dumpcmp/parallel.hpp"
#include "simd.hpp"

#if DUMPCMP_HAVE_X86_LEVELS
#include <immintrin.h>
#endif

#if defined(__SSE2__)
#include <emmintrin.h>
#define DUMPCMP_LAYOUT_SSE2 1
#endif

namespace dumpcmp::layout_detail {

using Byte = unsigned char;

#if DUMPCMP_LAYOUT_SSE2

// Square transposes in registers (SSE2 is part of x86-64, so no dispatch is needed): input row v (V elements at
// in + v * in_stride) becomes column v of the output rows at out + r * out_stride. Both directions use them.
inline void transpose8x8_16(const Byte* in, std::size_t in_stride, Byte* out, std::size_t out_stride) {
    auto ld = [&](std::size_t v) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + v * in_stride)); };
    const __m128i a0 = ld(0), a1 = ld(1), a2 = ld(2), a3 = ld(3), a4 = ld(4), a5 = ld(5), a6 = ld(6), a7 = ld(7);
    const __m128i t0 = _mm_unpacklo_epi16(a0, a1), t1 = _mm_unpackhi_epi16(a0, a1);
    const __m128i t2 = _mm_unpacklo_epi16(a2, a3), t3 = _mm_unpackhi_epi16(a2, a3);
    const __m128i t4 = _mm_unpacklo_epi16(a4, a5), t5 = _mm_unpackhi_epi16(a4, a5);
    const __m128i t6 = _mm_unpacklo_epi16(a6, a7), t7 = _mm_unpackhi_epi16(a6, a7);
    const __m128i u0 = _mm_unpacklo_epi32(t0, t2), u1 = _mm_unpackhi_epi32(t0, t2);
    const __m128i u2 = _mm_unpacklo_epi32(t1, t3), u3 = _mm_unpackhi_epi32(t1, t3);
    const __m128i u4 = _mm_unpacklo_epi32(t4, t6), u5 = _mm_unpackhi_epi32(t4, t6);
    const __m128i u6 = _mm_unpacklo_epi32(t5, t7), u7 = _mm_unpackhi_epi32(t5, t7);
    auto st = [&](std::size_t r, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(out + r * out_stride), v); };
    st(0, _mm_unpacklo_epi64(u0, u4));
    st(1, _mm_unpackhi_epi64(u0, u4));
    st(2, _mm_unpacklo_epi64(u1, u5));
    st(3, _mm_unpackhi_epi64(u1, u5));
    st(4, _mm_unpacklo_epi64(u2, u6));
    st(5, _mm_unpackhi_epi64(u2, u6));
    st(6, _mm_unpacklo_epi64(u3, u7));
    st(7, _mm_unpackhi_epi64(u3, u7));
}

inline void transpose4x4_32(const Byte* in, std::size_t in_stride, Byte* out, std::size_t out_stride) {
    auto ld = [&](std::size_t v) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + v * in_stride)); };
    const __m128i a0 = ld(0), a1 = ld(1), a2 = ld(2), a3 = ld(3);
    const __m128i t0 = _mm_unpacklo_epi32(a0, a1), t1 = _mm_unpacklo_epi32(a2, a3);
    const __m128i t2 = _mm_unpackhi_epi32(a0, a1), t3 = _mm_unpackhi_epi32(a2, a3);
    auto st = [&](std::size_t r, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(out + r * out_stride), v); };
    st(0, _mm_unpacklo_epi64(t0, t1));
    st(1, _mm_unpackhi_epi64(t0, t1));
    st(2, _mm_unpacklo_epi64(t2, t3));
    st(3, _mm_unpackhi_epi64(t2, t3));
}

inline void transpose2x2_64(const Byte* in, std::size_t in_stride, Byte* out, std::size_t out_stride) {
    const __m128i a0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
    const __m128i a1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + in_stride));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm_unpacklo_epi64(a0, a1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + out_stride), _mm_unpackhi_epi64(a0, a1));
}
#endif

using TileIndex = std::int64_t;

// A C0 x V register tile per transpose call: V channel rows (in_stride apart) become V destination rows
// (out_stride apart) of V elements. V = 0: no register transpose for this element size.
template <std::size_t E>
struct Sse2Tile {
#if DUMPCMP_LAYOUT_SSE2
    static constexpr TileIndex V = E == 1 ? 0 : static_cast<TileIndex>(16 / E);
    static void t(const Byte* in, std::size_t is, Byte* out, std::size_t os) {
        if constexpr (E == 2) transpose8x8_16(in, is, out, os);
        else if constexpr (E == 4) transpose4x4_32(in, is, out, os);
        else if constexpr (E == 8) transpose2x2_64(in, is, out, os);
    }
#else
    static constexpr TileIndex V = 0;
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
    static constexpr TileIndex V = E == 4 ? 8 : Sse2Tile<E>::V;
    DUMPCMP_TARGET_AVX2 static void t(const Byte* in, std::size_t is, Byte* out, std::size_t os) {
        if constexpr (E == 4) transpose8x8_32_avx2(in, is, out, os);
        else Sse2Tile<E>::t(in, is, out, os);
    }
};
#endif

template <class T>
struct TypeTag {
    using type = T;
};

// The device-order loops' dispatch: fn(std::integral_constant<std::size_t, E>{}, TypeTag<Tile>{}) for element size
// e (1, 2, 4 or 8) with the register tile of the best level this CPU runs; fn's bool result, false for other sizes.
template <class Fn>
bool with_elem_tile(std::size_t e, Fn&& fn) {
    auto sized = [&](auto size) -> bool {
        constexpr std::size_t E = decltype(size)::value;
#if DUMPCMP_HAVE_X86_LEVELS
        if (detail::simd_level() >= detail::SimdLevel::avx2) return fn(size, TypeTag<Avx2Tile<E>>{});
#endif
        return fn(size, TypeTag<Sse2Tile<E>>{});
    };
    switch (e) {
        case 1: return sized(std::integral_constant<std::size_t, 1>{});
        case 2: return sized(std::integral_constant<std::size_t, 2>{});
        case 4: return sized(std::integral_constant<std::size_t, 4>{});
        case 8: return sized(std::integral_constant<std::size_t, 8>{});
        default: return false;
    }
}

#if DUMPCMP_LAYOUT_SSE2
// `bytes` from an L1/L2 staging buffer to the destination with streaming stores from its first 16-byte aligned
// address on (no read of the destination lines before they are overwritten); the few bytes before and after take
// ordinary stores. Ordinary stores for every partial cache line instead (64-byte granularity) make the FRACTAL_Z
// loops slower, those lines then being read from memory first (docs/performance.md#design-measurements).
inline void stream_out(Byte* to, const Byte* from, std::size_t bytes) {
    const std::size_t head = std::min<std::size_t>((16 - reinterpret_cast<std::uintptr_t>(to) % 16) % 16, bytes);
    std::memcpy(to, from, head);
    std::size_t o = head;
    for (; o + 16 <= bytes; o += 16)
        _mm_stream_si128(reinterpret_cast<__m128i*>(to + o), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + o)));
    std::memcpy(to + o, from + o, bytes - o);
}
#endif

#if DUMPCMP_LAYOUT_SSE2
// Items 0 .. items-1 of a loop that writes with streaming stores, in a few contiguous ranges per thread (each
// thread sweeps its part of the destination in order), with one store fence per range: the fence waits for the
// write-combining buffers to drain, and once per 4 KiB item it is slower than this
// (docs/performance.md#design-measurements).
template <class Fn>
void stream_items(std::size_t items, unsigned threads, Fn&& fn) {
    const std::size_t workers = threads == 0 ? num_threads() : threads;
    const std::size_t ranges = std::min(items, workers * 8);
    parallel_for(ranges, [&](std::size_t r) {
        const std::size_t first = items * r / ranges, last = items * (r + 1) / ranges;
        for (std::size_t i = first; i < last; ++i) fn(i);
        _mm_sfence();  // this range's streaming stores, visible before the caller reads the result
    }, threads);
}
#endif

}  // namespace dumpcmp::layout_detail
