// NumPy's float32 log: the function np.log runs on contiguous float32 arrays on x86-64 CPUs with AVX2 and FMA3, or
// AVX-512F (its two kernels do the same operations), which is the log of the original's KLD term P * log(P / Q). It
// is not the correctly rounded log (an ulp or more off it for 5% of random arguments in [0.01, 100]), and a KLD
// computed with the correctly rounded one differs in its last float32 bits. Reproducing it makes the KLD the
// original's bits on those CPUs; on others NumPy calls the C library's logf, which this does not follow.
//
// The facts (NumPy's published coefficients and steps; checked here on all 2^32 float32 inputs against np.log of
// NumPy 1.26.4 and 2.4.6, no mismatch): x = 2^e m with m in [1/2, 1) from the bits (subnormals scaled by 2^100
// first); where m <= float32(sqrt(1/2)), m = 2m and e = e - 1; f = m - 1; the rational P5(f) / Q5(f) evaluated by
// Horner's rule with one fused multiply-add per step, one division; result fma(e, float32(ln 2), P/Q).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace dumpcmp::detail {

struct NumpyLogf {
    static constexpr float p[6] = {0.0f,
                                   9.999999999999998702752e-01f,
                                   2.112677543073053063722e+00f,
                                   1.480000633576506585156e+00f,
                                   3.808837741388407920751e-01f,
                                   2.589979117907922693523e-02f};
    static constexpr float q[6] = {1.0f,
                                   2.612677543073109236779e+00f,
                                   2.453006071784736363091e+00f,
                                   9.864942958519418960339e-01f,
                                   1.546476374983906719538e-01f,
                                   5.875095403124574342950e-03f};
    static constexpr float sqrt1_2 = 0.707106781186547524400844362104849039f;
    static constexpr float ln2 = 0.693147180559945309417232121458176568f;
};

// One float32 argument, every input: NaN gives NaN, x < 0 NaN, 0 -inf, +inf +inf (NumPy's special cases).
inline float numpy_logf(float x) noexcept {
    using L = NumpyLogf;
    if (std::isnan(x) || x < 0.0f) return std::numeric_limits<float>::quiet_NaN();
    if (x == 0.0f) return -std::numeric_limits<float>::infinity();
    if (std::isinf(x)) return x;
    float shift = 0.0f;
    if (x < std::numeric_limits<float>::min()) {
        x *= 0x1p100f;
        shift = 100.0f;
    }
    std::uint32_t b;
    std::memcpy(&b, &x, sizeof b);
    float e = static_cast<float>(static_cast<std::int32_t>(b >> 23) - 126) - shift;
    const std::uint32_t mb = (b & 0x7FFFFFu) | (126u << 23);
    float m;
    std::memcpy(&m, &mb, sizeof m);
    if (m <= L::sqrt1_2) {
        m = m + m;
        e = e - 1.0f;
    }
    const float f = m - 1.0f;
    float n = std::fma(L::p[5], f, L::p[4]);
    float d = std::fma(L::q[5], f, L::q[4]);
    for (int k = 3; k >= 0; --k) {
        n = std::fma(n, f, L::p[k]);
        d = std::fma(d, f, L::q[k]);
    }
    return std::fma(e, L::ln2, n / d);
}

}  // namespace dumpcmp::detail
