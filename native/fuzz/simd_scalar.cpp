// The fuzz build's instruction-set choice: always the portable code (clang 14's __builtin_cpu_supports lacks some of
// the features simd.cpp asks about, and the portable loops are the ones whose bounds depend on the input).
#include "../src/simd.hpp"

namespace dumpcmp::detail {
SimdLevel simd_level() noexcept { return SimdLevel::scalar; }
const char* simd_level_name(SimdLevel) noexcept { return "scalar"; }
}  // namespace dumpcmp::detail

namespace dumpcmp {
const char* simd_level_name() noexcept { return "scalar"; }
}  // namespace dumpcmp
