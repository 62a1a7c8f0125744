// Data types of Ascend dumps (the spec's OutputDataType) and the element decoders that turn them into values.
//
// What NumPy has natively (fp16, fp32, fp64, ints, bool, complex) is handed to Python zero-copy. bf16 and the
// 8/6/4-bit float types decode to float32 here; the packed sub-byte integers (int4, int2, uint2, uint1, packed low
// bits first) unpack to one int8/uint8 per element. Every decoder is indexed by element, so a caller can decode any
// window of a tensor (the comparison engine streams chunks).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace dumpcmp {

enum class DataType : std::int32_t {
    UNDEFINED = 0, FLOAT = 1, FLOAT16 = 2, INT8 = 3, UINT8 = 4, INT16 = 5, UINT16 = 6, INT32 = 7, INT64 = 8,
    UINT32 = 9, UINT64 = 10, BOOL = 11, DOUBLE = 12, STRING = 13, DUAL_SUB_INT8 = 14, DUAL_SUB_UINT8 = 15,
    COMPLEX64 = 16, COMPLEX128 = 17, QINT8 = 18, QINT16 = 19, QINT32 = 20, QUINT8 = 21, QUINT16 = 22,
    RESOURCE = 23, STRING_REF = 24, DUAL = 25, VARIANT = 26, BF16 = 27, INT4 = 28, UINT1 = 29, INT2 = 30,
    UINT2 = 31, COMPLEX32 = 32, HIFLOAT8 = 33, FLOAT8_E5M2 = 34, FLOAT8_E4M3FN = 35, FLOAT8_E8M0 = 36,
    FLOAT6_E3M2 = 37, FLOAT6_E2M3 = 38, FLOAT4_E2M1 = 39, FLOAT4_E1M2 = 40, HIFLOAT4 = 41, HIFLOAT4_SCALE = 42,
};

// How a type's values reach NumPy.
enum class Repr : std::uint8_t {
    none,      // no numeric meaning (STRING, RESOURCE, ...) or a type we cannot decode: raw bytes only
    native,    // NumPy has it: zero-copy view of the dump bytes
    decoded,   // decoded to float32 (bf16, fp8, fp6, fp4)
    unpacked,  // packed sub-byte integers: one int8/uint8 per element
    complex32  // two fp16 -> complex64
};

struct DataTypeInfo {
    DataType type;
    const char* name;        // the spec's name, e.g. "FLOAT16"
    int bits;                // storage bits per element; 0 when the size is not defined by the type
    Repr repr;
    const char* numpy;       // NumPy dtype string of the array dumpcmp hands out ("<f2", "<f4", "|i1", ...); "" for none
    bool is_signed;          // for unpacked integers
};

// nullptr when the number or name is not one of the spec's values.
const DataTypeInfo* find_data_type(std::int32_t value) noexcept;
const DataTypeInfo* find_data_type(std::string_view name) noexcept;
const DataTypeInfo& data_type_info(DataType t);  // throws std::invalid_argument for a value outside the enum

// Bytes needed for `elements` elements (sub-byte types round up to whole bytes); checked::kOverflow (2**64 - 1)
// when that overflows 64 bits, so it never equals a real size.
std::uint64_t storage_bytes(const DataTypeInfo& info, std::uint64_t elements) noexcept;

// Decode `count` elements starting at element `first` of a tensor whose storage starts at `base`, into float32.
// Works for every type with a numeric value (native, decoded, unpacked); complex types give the real part.
// Throws std::invalid_argument for a type without numeric value. `base` may be unaligned.
void decode_to_float32(DataType t, const std::uint8_t* base, std::uint64_t first, std::size_t count, float* out);

// Decode into the NumPy representation of the type (Repr::decoded -> float32, unpacked -> int8/uint8,
// complex32 -> complex64, native -> a plain copy of the bytes).
void decode_to_numpy_repr(DataType t, const std::uint8_t* base, std::uint64_t first, std::size_t count, void* out);

// The inverse for the writer: values in the NumPy representation -> device storage bytes.
// For decoded types, float32 values are rounded to the nearest representable value (ties to even); values beyond
// the range become inf where the type has it, NaN where it has only NaN, and saturate where it has neither.
// `out` must hold storage_bytes(info, count) bytes; it is written whole (padding bits of the last byte are zero).
void encode_from_numpy_repr(DataType t, const void* in, std::size_t count, std::uint8_t* out);

// float16 <-> float32 (IEEE binary16), used across the core.
float half_to_float(std::uint16_t h) noexcept;
std::uint16_t float_to_half(float f) noexcept;  // round to nearest even

}  // namespace dumpcmp
