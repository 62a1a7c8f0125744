// Register transposes shared by the layout loops (layout_kernels.cpp, layout_fz.cpp); internal.
// SSE2 is part of x86-64, so these need no run-time dispatch. Rows may be unaligned (mapped dumps).
#pragma once
#include <cstddef>

#if defined(__SSE2__)
#include <emmintrin.h>
#define DUMPCMP_LAYOUT_SSE2 1
#endif

namespace dumpcmp::layout_detail {

#if DUMPCMP_LAYOUT_SSE2
using Byte = unsigned char;

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

}  // namespace dumpcmp::layout_detail
