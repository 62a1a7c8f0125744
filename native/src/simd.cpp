#include "simd.hpp"

#include "dumpcmp/parallel.hpp"

#include <cstdlib>
#include <cstring>

namespace dumpcmp::detail {

namespace {

SimdLevel detect() noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    __builtin_cpu_init();
    // __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0).
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("f16c") &&
        __builtin_cpu_supports("fma"))
        return SimdLevel::avx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma"))
        return SimdLevel::avx2;
#endif
    return SimdLevel::scalar;
}

SimdLevel choose() noexcept {
    SimdLevel level = detect();
    const char* want = std::getenv("DUMPCMP_SIMD");
    if (want == nullptr || *want == '\0') return level;
    SimdLevel cap = level;
    if (std::strcmp(want, "scalar") == 0) cap = SimdLevel::scalar;
    else if (std::strcmp(want, "avx2") == 0) cap = SimdLevel::avx2;
    else if (std::strcmp(want, "avx512") == 0) cap = SimdLevel::avx512;
    // Never above what the CPU has: asking for avx512 on an AVX2 machine gives AVX2.
    return static_cast<int>(cap) < static_cast<int>(level) ? cap : level;
}

}  // namespace

SimdLevel simd_level() noexcept {
    static const SimdLevel level = choose();
    return level;
}

const char* simd_level_name(SimdLevel level) noexcept {
    switch (level) {
        case SimdLevel::avx512: return "avx512";
        case SimdLevel::avx2: return "avx2";
        case SimdLevel::scalar: break;
    }
    return "scalar";
}

}  // namespace dumpcmp::detail

namespace dumpcmp {
const char* simd_level_name() noexcept { return detail::simd_level_name(detail::simd_level()); }
}  // namespace dumpcmp
