// The default mode's hot path: the original's float32 terms and NumPy 1.x's float32 sums of them, in registers.
//
// In flow: one whole NumPy block (kF32SumBlock elements) of each side, float32 or float16 storage, any alignment.
// Out: that block's float32 sums as NumPy's pairwise_sum_f32 gives them for the arrays of terms the original
// materialises (the same bits: eight interleaved sums per 128-element leaf are one 8-float vector, two leaves side
// by side in a 16-float one on AVX-512, the leaves added in NumPy's balanced tree), plus what pass 1 also needs
// (maxima, min/max, the float64 deviation sums of the standard deviation). metrics.cpp calls these for every whole
// block and keeps its array-based code for a tensor's last partial block and for the types decoded through a buffer;
// the tests hold both to NumPy.
#pragma once
#include <cstddef>
#include <cstdint>

#include "dumpcmp/metrics.hpp"

namespace dumpcmp::detail {

// A block's storage: float32 or IEEE float16 values, read in place.
struct ExactSide {
    const std::uint8_t* base;
    bool half;
};

struct ExactPass1 {
    F32BlockSums sums;  // rel, ad, sd, xx, yy
    float max_ad = 0.0f, max_rel = 0.0f;                 // NaN-propagating (np.max)
    float min_x = 0.0f, max_x = 0.0f, min_y = 0.0f, max_y = 0.0f;  // NaN left out (+inf/-inf if every value is NaN)
    double s1x = 0.0, s2x = 0.0, s1y = 0.0, s2y = 0.0;    // sums of (v - k) and (v - k)^2 in float64, k = kx or ky
};
// Pass 1 over one whole block.
void exact_pass1(ExactSide x, ExactSide y, double kx, double ky, ExactPass1& out);

// Whether the stages' kernels take these parameters: their divisors (the KLD ranges, norms, sums) within
// [2^-60, 2^60], where dividing through the reciprocal is exact. Otherwise the caller's array code runs.
bool exact_stages_ok(const KldParams& params) noexcept;

// Stage 1 (KldParams::stage == 1) over one whole block: the float32 sums of p and q (when params.kld) and of the
// cosine's terms float32(x / nx) * float32(y / ny) (when params.cosine); the others are left 0.
struct ExactStage1 {
    float p = 0.0f, q = 0.0f, c = 0.0f;
};
void exact_stage1(ExactSide x, ExactSide y, const KldParams& params, ExactStage1& out);

// Stage 2 over one whole block: the float32 sum of P * log(P / Q), the log NumPy's (numpy_logf.hpp).
float exact_stage2(ExactSide x, ExactSide y, const KldParams& params);
// out[i] = p[i] * numpy_logf(r[i]) for any n and any values: the array code's KLD terms, vectorised.
void numpy_log_products(const float* p, const float* r, float* out, std::size_t n);

}  // namespace dumpcmp::detail
