// Device layouts (the spec's OutputFormat values).
#pragma once
#include <cstdint>
#include <string_view>

namespace dumpcmp {

enum class Format : std::int32_t {
    NCHW = 0, NHWC = 1, ND = 2, NC1HWC0 = 3, FRACTAL_Z = 4, NC1C0HWPAD = 5, NHWC1C0 = 6, FSR_NCHW = 7,
    FRACTAL_DECONV = 8, C1HWNC0 = 9, FRACTAL_DECONV_TRANSPOSE = 10, FRACTAL_DECONV_SP_STRIDE_TRANS = 11,
    NC1HWC0_C04 = 12, FRACTAL_Z_C04 = 13, CHWN = 14, FRACTAL_DECONV_SP_STRIDE8_TRANS = 15, HWCN = 16,
    NC1KHKWHWC0 = 17, BN_WEIGHT = 18, FILTER_HWCK = 19, HASHTABLE_LOOKUP_LOOKUPS = 20, HASHTABLE_LOOKUP_KEYS = 21,
    HASHTABLE_LOOKUP_VALUE = 22, HASHTABLE_LOOKUP_OUTPUT = 23, HASHTABLE_LOOKUP_HITS = 24, C1HWNCoC0 = 25, MD = 26,
    NDHWC = 27, FRACTAL_ZZ = 28, FRACTAL_NZ = 29, NCDHW = 30, DHWCN = 31, NDC1HWC0 = 32, FRACTAL_Z_3D = 33, CN = 34,
    NC = 35, DHWNC = 36, FRACTAL_Z_3D_TRANSPOSE = 37, FRACTAL_ZN_LSTM = 38, FRACTAL_Z_G = 39, RESERVED = 40,
    ALL = 41, NULL_FORMAT = 42, ND_RNN_BIAS = 43, FRACTAL_ZN_RNN = 44, YUV = 45, YUV_A = 46, NCL = 47,
    FRACTAL_Z_WINO = 48, C1HWC0 = 49, MAX = 255,
};

// The spec's name ("NC1HWC0"; 42 is "NULL"), or nullptr for a number that is not one of its values.
const char* format_name(std::int32_t value) noexcept;
// -1 when the name is unknown.
std::int32_t format_from_name(std::string_view name) noexcept;

}  // namespace dumpcmp
