#include "dumpcmp/dtype.hpp"

#include "dumpcmp/checked.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "simd.hpp"

namespace dumpcmp {

namespace {

constexpr DataTypeInfo kTypes[] = {
    {DataType::UNDEFINED, "UNDEFINED", 0, Repr::none, "", false},
    {DataType::FLOAT, "FLOAT", 32, Repr::native, "<f4", true},
    {DataType::FLOAT16, "FLOAT16", 16, Repr::native, "<f2", true},
    {DataType::INT8, "INT8", 8, Repr::native, "|i1", true},
    {DataType::UINT8, "UINT8", 8, Repr::native, "|u1", false},
    {DataType::INT16, "INT16", 16, Repr::native, "<i2", true},
    {DataType::UINT16, "UINT16", 16, Repr::native, "<u2", false},
    {DataType::INT32, "INT32", 32, Repr::native, "<i4", true},
    {DataType::INT64, "INT64", 64, Repr::native, "<i8", true},
    {DataType::UINT32, "UINT32", 32, Repr::native, "<u4", false},
    {DataType::UINT64, "UINT64", 64, Repr::native, "<u8", false},
    {DataType::BOOL, "BOOL", 8, Repr::native, "|b1", false},
    {DataType::DOUBLE, "DOUBLE", 64, Repr::native, "<f8", true},
    {DataType::STRING, "STRING", 0, Repr::none, "", false},
    {DataType::DUAL_SUB_INT8, "DUAL_SUB_INT8", 8, Repr::native, "|i1", true},
    {DataType::DUAL_SUB_UINT8, "DUAL_SUB_UINT8", 8, Repr::native, "|u1", false},
    {DataType::COMPLEX64, "COMPLEX64", 64, Repr::native, "<c8", true},
    {DataType::COMPLEX128, "COMPLEX128", 128, Repr::native, "<c16", true},
    {DataType::QINT8, "QINT8", 8, Repr::native, "|i1", true},
    {DataType::QINT16, "QINT16", 16, Repr::native, "<i2", true},
    {DataType::QINT32, "QINT32", 32, Repr::native, "<i4", true},
    {DataType::QUINT8, "QUINT8", 8, Repr::native, "|u1", false},
    {DataType::QUINT16, "QUINT16", 16, Repr::native, "<u2", false},
    {DataType::RESOURCE, "RESOURCE", 0, Repr::none, "", false},
    {DataType::STRING_REF, "STRING_REF", 0, Repr::none, "", false},
    {DataType::DUAL, "DUAL", 0, Repr::none, "", false},
    {DataType::VARIANT, "VARIANT", 0, Repr::none, "", false},
    {DataType::BF16, "BF16", 16, Repr::decoded, "<f4", true},
    {DataType::INT4, "INT4", 4, Repr::unpacked, "|i1", true},
    {DataType::UINT1, "UINT1", 1, Repr::unpacked, "|u1", false},
    {DataType::INT2, "INT2", 2, Repr::unpacked, "|i1", true},
    {DataType::UINT2, "UINT2", 2, Repr::unpacked, "|u1", false},
    {DataType::COMPLEX32, "COMPLEX32", 32, Repr::complex32, "<c8", true},
    {DataType::HIFLOAT8, "HIFLOAT8", 8, Repr::decoded, "<f4", true},
    {DataType::FLOAT8_E5M2, "FLOAT8_E5M2", 8, Repr::decoded, "<f4", true},
    {DataType::FLOAT8_E4M3FN, "FLOAT8_E4M3FN", 8, Repr::decoded, "<f4", true},
    {DataType::FLOAT8_E8M0, "FLOAT8_E8M0", 8, Repr::decoded, "<f4", false},
    // fp6 values occupy one byte each (low 6 bits); only the types the spec lists as sub-byte are packed.
    {DataType::FLOAT6_E3M2, "FLOAT6_E3M2", 8, Repr::decoded, "<f4", true},
    {DataType::FLOAT6_E2M3, "FLOAT6_E2M3", 8, Repr::decoded, "<f4", true},
    {DataType::FLOAT4_E2M1, "FLOAT4_E2M1", 4, Repr::decoded, "<f4", true},
    {DataType::FLOAT4_E1M2, "FLOAT4_E1M2", 4, Repr::decoded, "<f4", true},
    // Their encoding is not public: sized, but only their raw bytes can be had.
    {DataType::HIFLOAT4, "HIFLOAT4", 4, Repr::none, "", false},
    {DataType::HIFLOAT4_SCALE, "HIFLOAT4_SCALE", 0, Repr::none, "", false},
};
constexpr std::size_t kTypeCount = sizeof(kTypes) / sizeof(kTypes[0]);

inline float bits_to_float(std::uint32_t b) noexcept {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}
inline std::uint32_t float_to_bits(float f) noexcept {
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

// A minifloat with `e` exponent bits and `m` mantissa bits and IEEE-like subnormals. `special` says what the top
// exponent means: IEEE (inf/NaN), only the all-ones pattern is NaN (fn types), or nothing (all finite).
enum class Special { ieee, nan_all_ones, none };

float minifloat_value(std::uint32_t code, int e, int m, Special special, bool has_sign) {
    const std::uint32_t mant = code & ((1u << m) - 1u);
    const std::uint32_t exp = (code >> m) & ((1u << e) - 1u);
    const bool neg = has_sign && ((code >> (e + m)) & 1u);
    // IEEE bias 2^(e-1)-1; a 1-bit exponent would get 0 from that, Ascend's FLOAT4_E1M2 uses 1
    const int bias = e == 1 ? 1 : (1 << (e - 1)) - 1;
    const std::uint32_t exp_max = (1u << e) - 1u;
    float v;
    if (special == Special::ieee && exp == exp_max) {
        v = mant == 0 ? std::numeric_limits<float>::infinity() : std::numeric_limits<float>::quiet_NaN();
    } else if (special == Special::nan_all_ones && exp == exp_max && mant == (1u << m) - 1u) {
        v = std::numeric_limits<float>::quiet_NaN();
    } else if (exp == 0) {
        v = std::ldexp(static_cast<float>(mant), 1 - bias - m);
    } else {
        v = std::ldexp(static_cast<float>(mant | (1u << m)), static_cast<int>(exp) - bias - m);
    }
    return neg ? -v : v;
}

// HiFloat8 (Ascend): sign | dot (prefix code giving the exponent width D) | exponent (D bits, sign-magnitude with an
// implicit leading 1) | mantissa. Dot 11 -> D=4, m=1; 10 -> D=3, m=2; 01 -> D=2, m=3; 001 -> D=1, m=3;
// 0001 -> D=0, m=3; 0000 -> denormal 2^(m-23). 0x00 is zero, 0x80 NaN, 0x6F/0xEF are +-inf.
float hifloat8_value(std::uint32_t code) {
    const bool neg = (code & 0x80u) != 0;
    const std::uint32_t low = code & 0x7Fu;
    if (code == 0x80u) return std::numeric_limits<float>::quiet_NaN();
    if (low == 0x6Fu) return neg ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    int d, mbits;
    std::uint32_t rest;  // the bits after the dot field
    if ((low >> 5) == 3u) { d = 4; mbits = 1; rest = low & 0x1Fu; }
    else if ((low >> 5) == 2u) { d = 3; mbits = 2; rest = low & 0x1Fu; }
    else if ((low >> 5) == 1u) { d = 2; mbits = 3; rest = low & 0x1Fu; }
    else if ((low >> 4) == 1u) { d = 1; mbits = 3; rest = low & 0x0Fu; }
    else if ((low >> 3) == 1u) { d = 0; mbits = 3; rest = low & 0x07u; }
    else {
        const std::uint32_t mant = low & 0x07u;  // denormal
        const float v = mant == 0 ? 0.0f : std::ldexp(1.0f, static_cast<int>(mant) - 23);
        return neg ? -v : v;
    }
    const std::uint32_t mant = rest & ((1u << mbits) - 1u);
    int exponent = 0;
    if (d > 0) {
        const std::uint32_t ebits = rest >> mbits;
        const bool eneg = (ebits >> (d - 1)) & 1u;
        const int magnitude = static_cast<int>((1u << (d - 1)) | (ebits & ((1u << (d - 1)) - 1u)));
        exponent = eneg ? -magnitude : magnitude;
    }
    const float v = std::ldexp(1.0f + static_cast<float>(mant) / static_cast<float>(1u << mbits), exponent);
    return neg ? -v : v;
}

// One table per small float type, built once: index = storage code.
struct SmallFloat {
    int bits;
    std::vector<float> value;  // 2^bits entries
};

SmallFloat make_table(DataType t) {
    SmallFloat s;
    switch (t) {
        case DataType::FLOAT8_E5M2: s.bits = 8; break;
        case DataType::FLOAT8_E4M3FN: s.bits = 8; break;
        case DataType::FLOAT8_E8M0: s.bits = 8; break;
        case DataType::HIFLOAT8: s.bits = 8; break;
        case DataType::FLOAT6_E3M2: s.bits = 6; break;
        case DataType::FLOAT6_E2M3: s.bits = 6; break;
        case DataType::FLOAT4_E2M1: s.bits = 4; break;
        case DataType::FLOAT4_E1M2: s.bits = 4; break;
        default: throw std::invalid_argument("not a small float type");
    }
    s.value.resize(std::size_t{1} << s.bits);
    for (std::uint32_t c = 0; c < s.value.size(); ++c) {
        float v = 0;
        switch (t) {
            case DataType::FLOAT8_E5M2: v = minifloat_value(c, 5, 2, Special::ieee, true); break;
            case DataType::FLOAT8_E4M3FN: v = minifloat_value(c, 4, 3, Special::nan_all_ones, true); break;
            case DataType::FLOAT8_E8M0:
                v = c == 255 ? std::numeric_limits<float>::quiet_NaN() : std::ldexp(1.0f, static_cast<int>(c) - 127);
                break;
            case DataType::HIFLOAT8: v = hifloat8_value(c); break;
            case DataType::FLOAT6_E3M2: v = minifloat_value(c, 3, 2, Special::none, true); break;
            case DataType::FLOAT6_E2M3: v = minifloat_value(c, 2, 3, Special::none, true); break;
            case DataType::FLOAT4_E2M1: v = minifloat_value(c, 2, 1, Special::none, true); break;
            case DataType::FLOAT4_E1M2: v = minifloat_value(c, 1, 2, Special::none, true); break;
            default: break;
        }
        s.value[c] = v;
    }
    return s;
}

const SmallFloat& small_float(DataType t) {
    static const SmallFloat e5m2 = make_table(DataType::FLOAT8_E5M2);
    static const SmallFloat e4m3 = make_table(DataType::FLOAT8_E4M3FN);
    static const SmallFloat e8m0 = make_table(DataType::FLOAT8_E8M0);
    static const SmallFloat hif8 = make_table(DataType::HIFLOAT8);
    static const SmallFloat e3m2 = make_table(DataType::FLOAT6_E3M2);
    static const SmallFloat e2m3 = make_table(DataType::FLOAT6_E2M3);
    static const SmallFloat e2m1 = make_table(DataType::FLOAT4_E2M1);
    static const SmallFloat e1m2 = make_table(DataType::FLOAT4_E1M2);
    switch (t) {
        case DataType::FLOAT8_E5M2: return e5m2;
        case DataType::FLOAT8_E4M3FN: return e4m3;
        case DataType::FLOAT8_E8M0: return e8m0;
        case DataType::HIFLOAT8: return hif8;
        case DataType::FLOAT6_E3M2: return e3m2;
        case DataType::FLOAT6_E2M3: return e2m3;
        case DataType::FLOAT4_E2M1: return e2m1;
        case DataType::FLOAT4_E1M2: return e1m2;
        default: throw std::invalid_argument("not a small float type");
    }
}

// Nearest code for a float32 value, ties to the even code (the code whose lowest bit is 0), by exhaustive search
// over the (at most 256) finite codes: the writer is not a hot path and this cannot get a rounding edge wrong.
std::uint32_t small_float_encode(DataType t, const SmallFloat& s, float v) {
    const std::uint32_t n = static_cast<std::uint32_t>(s.value.size());
    if (std::isnan(v)) {
        for (std::uint32_t c = 0; c < n; ++c)
            if (std::isnan(s.value[c])) return c;
        return 0;  // no NaN in this type: 0 is the least surprising stand-in
    }
    std::uint32_t best = 0;
    double best_err = std::numeric_limits<double>::infinity();
    bool best_has_inf = false;
    for (std::uint32_t c = 0; c < n; ++c) {
        const float cv = s.value[c];
        if (std::isnan(cv)) continue;
        if (std::isinf(cv)) {
            if (std::isinf(v) && std::signbit(v) == std::signbit(cv)) return c;
            best_has_inf = true;
            continue;
        }
        if (cv == 0.0f && v == 0.0f && std::signbit(cv) != std::signbit(v)) continue;
        const double err = std::fabs(static_cast<double>(cv) - static_cast<double>(v));
        if (err < best_err || (err == best_err && (c & 1u) == 0 && (best & 1u) == 1)) {
            best = c;
            best_err = err;
        }
    }
    (void)t;
    // Past the largest finite value by more than half a step: inf where the type has it, NaN where only NaN.
    if (std::isinf(v) || best_err > 0) {
        float maxv = 0;
        for (float cv : s.value)
            if (std::isfinite(cv)) maxv = std::max(maxv, std::fabs(cv));
        const double a = std::fabs(static_cast<double>(v));
        if (a > maxv) {
            // find the step at the top of the range
            float below = 0;
            for (float cv : s.value)
                if (std::isfinite(cv) && std::fabs(cv) < maxv) below = std::max(below, std::fabs(cv));
            const double half_step = (static_cast<double>(maxv) - below) / 2.0;
            if (a >= maxv + half_step || std::isinf(v)) {
                for (std::uint32_t c = 0; c < n; ++c)
                    if (std::isinf(s.value[c]) && std::signbit(s.value[c]) == std::signbit(v)) return c;
                if (!best_has_inf)
                    for (std::uint32_t c = 0; c < n; ++c)
                        if (std::isnan(s.value[c])) return c;
            }
        }
    }
    return best;
}

template <class T>
inline T load(const std::uint8_t* p) noexcept {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

inline std::uint32_t subbyte_code(const std::uint8_t* base, std::uint64_t i, int bits) noexcept {
    const std::uint64_t bit = i * static_cast<std::uint64_t>(bits);
    return (base[bit >> 3] >> (bit & 7u)) & ((1u << bits) - 1u);
}

inline std::int32_t sign_extend(std::uint32_t code, int bits) noexcept {
    const std::uint32_t sign = 1u << (bits - 1);
    return static_cast<std::int32_t>(code ^ sign) - static_cast<std::int32_t>(sign);
}

template <class T>
void native_to_float(const std::uint8_t* base, std::uint64_t first, std::size_t count, float* out) {
    const std::uint8_t* p = base + first * sizeof(T);
    for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<float>(load<T>(p + i * sizeof(T)));
}

// float16 -> float32, eight at a time with integer vector operations: the same bits as half_to_float for every
// code (NaN payloads kept, unlike F16C's conversion, which quiets signalling NaNs), and independent of the MXCSR
// denormal modes. One source, compiled for baseline x86-64 and for AVX2 (see simd.hpp).
typedef std::uint16_t VH8 __attribute__((vector_size(16)));
typedef std::uint32_t VW8 __attribute__((vector_size(32)));
typedef std::int32_t VI8 __attribute__((vector_size(32)));
typedef float VF8 __attribute__((vector_size(32)));

__attribute__((always_inline)) inline void halves_to_floats8(const std::uint8_t* in, float* out) noexcept {
    VH8 raw;
    std::memcpy(&raw, in, sizeof raw);
    const VW8 h = __builtin_convertvector(raw, VW8);
    const VW8 sign = (h & 0x8000u) << 16;
    const VW8 exp = h & 0x7C00u;
    const VW8 mant = h & 0x3FFu;
    const VW8 normal = ((h & 0x7FFFu) << 13) + (112u << 23);
    const VW8 special = (mant << 13) | 0x7F800000u;
    // Subnormals (and zero): mant * 2^-24, a normal float32 computed exactly.
    const VW8 sub = (VW8)(__builtin_convertvector((VI8)mant, VF8) * 5.9604644775390625e-08f);
    // Masks by and/or: ?: on vectors is lowered element by element on some targets.
    const VW8 is_sub = (VW8)(exp == 0u), is_special = (VW8)(exp == 0x7C00u);
    const VW8 bits = (is_sub & sub) | (~is_sub & ((is_special & special) | (~is_special & normal)));
    const VF8 f = (VF8)(bits | sign);
    std::memcpy(out, &f, sizeof f);
}

__attribute__((always_inline)) inline void halves_to_floats_body(const std::uint8_t* p, std::size_t count,
                                                                 float* out) noexcept {
    std::size_t i = 0;
    for (; i + 8 <= count; i += 8) halves_to_floats8(p + 2 * i, out + i);
    for (; i < count; ++i) out[i] = half_to_float(load<std::uint16_t>(p + 2 * i));
}

void halves_to_floats_scalar(const std::uint8_t* p, std::size_t count, float* out) noexcept {
    halves_to_floats_body(p, count, out);
}
#if DUMPCMP_HAVE_X86_LEVELS
DUMPCMP_TARGET_AVX2 void halves_to_floats_avx2(const std::uint8_t* p, std::size_t count, float* out) noexcept {
    halves_to_floats_body(p, count, out);
}
#endif

void halves_to_floats(const std::uint8_t* p, std::size_t count, float* out) noexcept {
#if DUMPCMP_HAVE_X86_LEVELS
    if (detail::simd_level() != detail::SimdLevel::scalar) return halves_to_floats_avx2(p, count, out);
#endif
    halves_to_floats_scalar(p, count, out);
}

}  // namespace

const DataTypeInfo* find_data_type(std::int32_t value) noexcept {
    if (value < 0 || static_cast<std::size_t>(value) >= kTypeCount) return nullptr;
    return &kTypes[value];
}

const DataTypeInfo* find_data_type(std::string_view name) noexcept {
    for (const auto& t : kTypes)
        if (name == t.name) return &t;
    return nullptr;
}

const DataTypeInfo& data_type_info(DataType t) {
    const auto* info = find_data_type(static_cast<std::int32_t>(t));
    if (info == nullptr) throw std::invalid_argument("unknown data type " + std::to_string(static_cast<int>(t)));
    return *info;
}

std::uint64_t storage_bytes(const DataTypeInfo& info, std::uint64_t elements) noexcept {
    return checked::bytes_for_bits(elements, static_cast<std::uint64_t>(info.bits)).value_or(checked::kOverflow);
}

float half_to_float(std::uint16_t h) noexcept {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    std::uint32_t exp = (h >> 10) & 0x1Fu;
    std::uint32_t mant = h & 0x3FFu;
    if (exp == 0x1Fu) return bits_to_float(sign | 0x7F800000u | (mant << 13));
    if (exp == 0) {
        if (mant == 0) return bits_to_float(sign);
        // subnormal: value = mant * 2^-24, exact in float32
        const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;
        return sign ? -v : v;
    }
    return bits_to_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

std::uint16_t float_to_half(float f) noexcept {
    const std::uint32_t x = float_to_bits(f);
    const std::uint32_t sign = (x >> 16) & 0x8000u;
    const std::uint32_t ax = x & 0x7FFFFFFFu;
    if (ax >= 0x7F800000u) {  // inf or NaN (keep NaN quiet)
        return static_cast<std::uint16_t>(sign | 0x7C00u | (ax > 0x7F800000u ? 0x200u | ((ax >> 13) & 0x3FFu) : 0u));
    }
    if (ax >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // rounds past 65504: inf
    if (ax < 0x38800000u) {  // below the smallest normal half: subnormal or zero
        if (ax < 0x33000000u) return static_cast<std::uint16_t>(sign);  // below half of the smallest subnormal
        const std::uint32_t e = ax >> 23;
        const std::uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
        const std::uint32_t shift = 126u - e;  // 14 - (e - 127) + 13 - 1 ... position of the half subnormal lsb
        const std::uint32_t shifted = m >> (shift - 0u);
        const std::uint32_t rem = m & ((1u << shift) - 1u);
        const std::uint32_t halfway = 1u << (shift - 1u);
        std::uint32_t r = shifted;
        if (rem > halfway || (rem == halfway && (shifted & 1u))) ++r;
        return static_cast<std::uint16_t>(sign | r);
    }
    std::uint32_t r = ((ax >> 13) - (112u << 10));
    const std::uint32_t rem = ax & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
    return static_cast<std::uint16_t>(sign | r);
}

void decode_to_float32(DataType t, const std::uint8_t* base, std::uint64_t first, std::size_t count, float* out) {
    switch (t) {
        case DataType::FLOAT: std::memcpy(out, base + first * 4, count * 4); return;
        case DataType::FLOAT16: return halves_to_floats(base + first * 2, count, out);
        case DataType::BF16: {
            const std::uint8_t* p = base + first * 2;
            for (std::size_t i = 0; i < count; ++i)
                out[i] = bits_to_float(static_cast<std::uint32_t>(load<std::uint16_t>(p + 2 * i)) << 16);
            return;
        }
        case DataType::DOUBLE: return native_to_float<double>(base, first, count, out);
        case DataType::INT8: case DataType::QINT8: case DataType::DUAL_SUB_INT8:
            return native_to_float<std::int8_t>(base, first, count, out);
        case DataType::UINT8: case DataType::QUINT8: case DataType::DUAL_SUB_UINT8: case DataType::BOOL:
            return native_to_float<std::uint8_t>(base, first, count, out);
        case DataType::INT16: case DataType::QINT16: return native_to_float<std::int16_t>(base, first, count, out);
        case DataType::UINT16: case DataType::QUINT16: return native_to_float<std::uint16_t>(base, first, count, out);
        case DataType::INT32: case DataType::QINT32: return native_to_float<std::int32_t>(base, first, count, out);
        case DataType::UINT32: return native_to_float<std::uint32_t>(base, first, count, out);
        case DataType::INT64: return native_to_float<std::int64_t>(base, first, count, out);
        case DataType::UINT64: return native_to_float<std::uint64_t>(base, first, count, out);
        case DataType::COMPLEX64: {
            const std::uint8_t* p = base + first * 8;
            for (std::size_t i = 0; i < count; ++i) out[i] = load<float>(p + 8 * i);
            return;
        }
        case DataType::COMPLEX128: {
            const std::uint8_t* p = base + first * 16;
            for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<float>(load<double>(p + 16 * i));
            return;
        }
        case DataType::COMPLEX32: {
            const std::uint8_t* p = base + first * 4;
            for (std::size_t i = 0; i < count; ++i) out[i] = half_to_float(load<std::uint16_t>(p + 4 * i));
            return;
        }
        case DataType::INT4: case DataType::INT2: {
            const int bits = t == DataType::INT4 ? 4 : 2;
            for (std::size_t i = 0; i < count; ++i)
                out[i] = static_cast<float>(sign_extend(subbyte_code(base, first + i, bits), bits));
            return;
        }
        case DataType::UINT1: case DataType::UINT2: {
            const int bits = t == DataType::UINT1 ? 1 : 2;
            for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<float>(subbyte_code(base, first + i, bits));
            return;
        }
        case DataType::FLOAT8_E5M2: case DataType::FLOAT8_E4M3FN: case DataType::FLOAT8_E8M0:
        case DataType::HIFLOAT8: case DataType::FLOAT6_E3M2: case DataType::FLOAT6_E2M3: {
            const auto& table = small_float(t).value;
            const std::uint8_t mask = (t == DataType::FLOAT6_E3M2 || t == DataType::FLOAT6_E2M3) ? 0x3F : 0xFF;
            const std::uint8_t* p = base + first;
            for (std::size_t i = 0; i < count; ++i) out[i] = table[p[i] & mask];
            return;
        }
        case DataType::FLOAT4_E2M1: case DataType::FLOAT4_E1M2: {
            const auto& table = small_float(t).value;
            for (std::size_t i = 0; i < count; ++i) out[i] = table[subbyte_code(base, first + i, 4)];
            return;
        }
        default: break;
    }
    throw std::invalid_argument(std::string("data type ") + data_type_info(t).name + " has no numeric value");
}

void decode_to_numpy_repr(DataType t, const std::uint8_t* base, std::uint64_t first, std::size_t count, void* out) {
    const auto& info = data_type_info(t);
    switch (info.repr) {
        case Repr::native:
            std::memcpy(out, base + first * static_cast<std::uint64_t>(info.bits / 8),
                        count * static_cast<std::size_t>(info.bits / 8));
            return;
        case Repr::decoded: decode_to_float32(t, base, first, count, static_cast<float*>(out)); return;
        case Repr::unpacked: {
            auto* o = static_cast<std::uint8_t*>(out);
            for (std::size_t i = 0; i < count; ++i) {
                const std::uint32_t code = subbyte_code(base, first + i, info.bits);
                o[i] = info.is_signed ? static_cast<std::uint8_t>(static_cast<std::int8_t>(sign_extend(code, info.bits)))
                                      : static_cast<std::uint8_t>(code);
            }
            return;
        }
        case Repr::complex32: {
            auto* o = static_cast<float*>(out);
            const std::uint8_t* p = base + first * 4;
            for (std::size_t i = 0; i < count; ++i) {
                o[2 * i] = half_to_float(load<std::uint16_t>(p + 4 * i));
                o[2 * i + 1] = half_to_float(load<std::uint16_t>(p + 4 * i + 2));
            }
            return;
        }
        case Repr::none: break;
    }
    throw std::invalid_argument(std::string("data type ") + info.name + " has no numeric value");
}

void encode_from_numpy_repr(DataType t, const void* in, std::size_t count, std::uint8_t* out) {
    const auto& info = data_type_info(t);
    switch (info.repr) {
        case Repr::native: std::memcpy(out, in, count * static_cast<std::size_t>(info.bits / 8)); return;
        case Repr::complex32: {
            const auto* src = static_cast<const float*>(in);
            for (std::size_t i = 0; i < 2 * count; ++i) {
                const std::uint16_t h = float_to_half(src[i]);
                std::memcpy(out + 2 * i, &h, 2);
            }
            return;
        }
        case Repr::unpacked: {
            const auto* src = static_cast<const std::uint8_t*>(in);
            std::memset(out, 0, static_cast<std::size_t>(storage_bytes(info, count)));
            const std::uint32_t mask = (1u << info.bits) - 1u;
            for (std::size_t i = 0; i < count; ++i) {
                const std::uint64_t bit = i * static_cast<std::uint64_t>(info.bits);
                out[bit >> 3] = static_cast<std::uint8_t>(out[bit >> 3] | ((src[i] & mask) << (bit & 7u)));
            }
            return;
        }
        case Repr::decoded: {
            const auto* src = static_cast<const float*>(in);
            if (t == DataType::BF16) {
                for (std::size_t i = 0; i < count; ++i) {
                    std::uint32_t x = float_to_bits(src[i]);
                    std::uint16_t h;
                    if ((x & 0x7FFFFFFFu) > 0x7F800000u) {
                        h = static_cast<std::uint16_t>((x >> 16) | 0x40u);  // quiet NaN stays NaN
                    } else {
                        x += 0x7FFFu + ((x >> 16) & 1u);  // round to nearest even
                        h = static_cast<std::uint16_t>(x >> 16);
                    }
                    std::memcpy(out + 2 * i, &h, 2);
                }
                return;
            }
            const auto& s = small_float(t);
            if (s.bits == 4) {
                std::memset(out, 0, static_cast<std::size_t>(storage_bytes(info, count)));
                for (std::size_t i = 0; i < count; ++i) {
                    const std::uint32_t c = small_float_encode(t, s, src[i]);
                    out[i >> 1] = static_cast<std::uint8_t>(out[i >> 1] | (c << ((i & 1u) * 4u)));
                }
            } else {
                for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<std::uint8_t>(small_float_encode(t, s, src[i]));
            }
            return;
        }
        case Repr::none: break;
    }
    throw std::invalid_argument(std::string("data type ") + info.name + " has no numeric value to encode");
}

}  // namespace dumpcmp
