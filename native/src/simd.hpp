// Which instruction set the hot loops run with, chosen once per process.
//
// The kernels are compiled several times from one source (GCC vector extensions inlined into functions with
// different target attributes) and picked here at run time: the build itself stays baseline x86-64. Every level
// evaluates the same operations in the same order without contraction, so all levels give the same bits; the
// environment variable DUMPCMP_SIMD ("scalar", "avx2", "avx512") lowers the level, which is how the tests cover
// the paths this CPU would not take.
#pragma once

namespace dumpcmp::detail {

enum class SimdLevel : int { scalar = 0, avx2 = 1, avx512 = 2 };

// The best level this CPU supports, capped by DUMPCMP_SIMD; read once.
SimdLevel simd_level() noexcept;
const char* simd_level_name(SimdLevel level) noexcept;

}  // namespace dumpcmp::detail

// Target attributes of the levels. avx2 carries f16c (every AVX2 CPU has it) and fma only so the compiler may
// pick those instructions for conversions; the kernels' translation units forbid contraction.
#if defined(__x86_64__) && defined(__GNUC__)
#define DUMPCMP_HAVE_X86_LEVELS 1
#define DUMPCMP_TARGET_AVX2 __attribute__((target("avx2,f16c,fma")))
#define DUMPCMP_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,avx2,f16c,fma,prefer-vector-width=512")))
#else
#define DUMPCMP_HAVE_X86_LEVELS 0
#endif
