#include "dumpcmp/format.hpp"

#include <cstddef>

namespace dumpcmp {

namespace {
// Index = enum value for 0..49; 255 is handled apart.
constexpr const char* kNames[] = {
    "NCHW", "NHWC", "ND", "NC1HWC0", "FRACTAL_Z", "NC1C0HWPAD", "NHWC1C0", "FSR_NCHW", "FRACTAL_DECONV", "C1HWNC0",
    "FRACTAL_DECONV_TRANSPOSE", "FRACTAL_DECONV_SP_STRIDE_TRANS", "NC1HWC0_C04", "FRACTAL_Z_C04", "CHWN",
    "FRACTAL_DECONV_SP_STRIDE8_TRANS", "HWCN", "NC1KHKWHWC0", "BN_WEIGHT", "FILTER_HWCK", "HASHTABLE_LOOKUP_LOOKUPS",
    "HASHTABLE_LOOKUP_KEYS", "HASHTABLE_LOOKUP_VALUE", "HASHTABLE_LOOKUP_OUTPUT", "HASHTABLE_LOOKUP_HITS",
    "C1HWNCoC0", "MD", "NDHWC", "FRACTAL_ZZ", "FRACTAL_NZ", "NCDHW", "DHWCN", "NDC1HWC0", "FRACTAL_Z_3D", "CN", "NC",
    "DHWNC", "FRACTAL_Z_3D_TRANSPOSE", "FRACTAL_ZN_LSTM", "FRACTAL_Z_G", "RESERVED", "ALL", "NULL", "ND_RNN_BIAS",
    "FRACTAL_ZN_RNN", "YUV", "YUV_A", "NCL", "FRACTAL_Z_WINO", "C1HWC0",
};
constexpr std::int32_t kCount = static_cast<std::int32_t>(sizeof(kNames) / sizeof(kNames[0]));
}  // namespace

const char* format_name(std::int32_t value) noexcept {
    if (value >= 0 && value < kCount) return kNames[value];
    if (value == 255) return "MAX";
    return nullptr;
}

std::int32_t format_from_name(std::string_view name) noexcept {
    for (std::int32_t i = 0; i < kCount; ++i)
        if (name == kNames[i]) return i;
    if (name == "MAX") return 255;
    return -1;
}

}  // namespace dumpcmp
