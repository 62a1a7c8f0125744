// Size arithmetic that cannot overflow: the one place every reader computes element counts, byte sizes and offsets
// from numbers a file's header gives. A header is input from outside: `[2**62, 2]` must not wrap to a small size
// that passes a check and then sends a loop past the end of the mapping.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace dumpcmp::checked {

// Tensors with more dimensions are refused everywhere (NumPy's own limit).
constexpr std::size_t kMaxDims = 64;
constexpr std::uint64_t kOverflow = std::numeric_limits<std::uint64_t>::max();

inline std::optional<std::uint64_t> mul(std::uint64_t a, std::uint64_t b) noexcept {
    std::uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
    return r;
}

inline std::optional<std::uint64_t> add(std::uint64_t a, std::uint64_t b) noexcept {
    std::uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
    return r;
}

// Product of the dimensions (1 for none); nullopt when one is negative or the product overflows 64 bits.
template <class Int>
std::optional<std::uint64_t> product(const std::vector<Int>& dims) noexcept {
    std::uint64_t n = 1;
    for (Int d : dims) {
        if (d < 0) return std::nullopt;
        auto next = mul(n, static_cast<std::uint64_t>(d));
        if (!next) return std::nullopt;
        n = *next;
    }
    return n;
}

// True when an array of these dims with items of `item_bytes` can exist at all, empty or not: the product of the
// non-zero dims times the item size fits in a signed 64-bit size (NumPy refuses `(2**62, 4, 0)` as "too big").
template <class Int>
bool representable(const std::vector<Int>& dims, std::uint64_t item_bytes) noexcept {
    std::uint64_t n = item_bytes == 0 ? 1 : item_bytes;
    for (Int d : dims) {
        if (d < 0) return false;
        if (d == 0) continue;
        auto next = mul(n, static_cast<std::uint64_t>(d));
        if (!next || *next > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
        n = *next;
    }
    return true;
}

// Whole bytes holding `elements` values of `bits` bits each; nullopt on overflow.
inline std::optional<std::uint64_t> bytes_for_bits(std::uint64_t elements, std::uint64_t bits) noexcept {
    auto total = mul(elements, bits);
    if (!total) return std::nullopt;
    return *total / 8u + (*total % 8u != 0 ? 1u : 0u);
}

// True when [offset, offset + length) lies inside a buffer of `size` bytes.
inline bool within(std::uint64_t offset, std::uint64_t length, std::uint64_t size) noexcept {
    return offset <= size && length <= size - offset;
}

// The same as an exception for code that must stop (plans, allocations): names what was computed.
inline std::uint64_t mul_or_throw(std::uint64_t a, std::uint64_t b, const char* what) {
    auto r = mul(a, b);
    if (!r) throw std::invalid_argument(std::string(what) + " overflows 64 bits");
    return *r;
}
template <class Int>
std::uint64_t product_or_throw(const std::vector<Int>& dims, const char* what) {
    if (dims.size() > kMaxDims)
        throw std::invalid_argument(std::string(what) + ": " + std::to_string(dims.size()) +
                                    " dimensions, at most " + std::to_string(kMaxDims) + " are supported");
    auto r = product(dims);
    if (!r) throw std::invalid_argument(std::string(what) + ": the element count overflows 64 bits");
    return *r;
}

}  // namespace dumpcmp::checked
