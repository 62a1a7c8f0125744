// The protobuf wire format, just what the dump header needs (internal to the core).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace dumpcmp::wire {

enum WireType : std::uint32_t { VARINT = 0, FIXED64 = 1, LEN = 2, FIXED32 = 5 };

// Thrown with a short description; the caller adds the file name and the field path.
struct WireError {
    std::string what;
};

class Reader {
public:
    Reader(const std::uint8_t* begin, const std::uint8_t* end, const std::uint8_t* origin)
        : p_(begin), end_(end), origin_(origin) {}

    bool done() const noexcept { return p_ >= end_; }
    std::uint64_t position() const noexcept { return static_cast<std::uint64_t>(p_ - origin_); }

    std::uint64_t varint() {
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (p_ >= end_) throw WireError{"truncated varint at byte " + std::to_string(position())};
            const std::uint8_t b = *p_++;
            v |= static_cast<std::uint64_t>(b & 0x7Fu) << shift;
            if ((b & 0x80u) == 0) return v;
        }
        throw WireError{"varint longer than 10 bytes at byte " + std::to_string(position())};
    }

    // Returns (field number, wire type); field 0 and unknown wire types are errors (garbage, not a header).
    std::pair<std::uint32_t, std::uint32_t> tag() {
        const std::uint64_t start = position();
        const std::uint64_t t = varint();
        const auto field = t >> 3;
        const auto type = static_cast<std::uint32_t>(t & 7u);
        if (field == 0 || field > 536870911u)
            throw WireError{"invalid field number " + std::to_string(field) + " at byte " + std::to_string(start)};
        if (type != VARINT && type != FIXED64 && type != LEN && type != FIXED32)
            throw WireError{"invalid wire type " + std::to_string(type) + " at byte " + std::to_string(start)};
        return {static_cast<std::uint32_t>(field), type};
    }

    // A length-delimited field: returns a reader over its bytes and advances past it.
    Reader sub() {
        const std::uint64_t n = varint();
        if (n > static_cast<std::uint64_t>(end_ - p_))
            throw WireError{"field of " + std::to_string(n) + " bytes at byte " + std::to_string(position()) +
                            " runs past the end (" + std::to_string(end_ - p_) + " left)"};
        Reader r(p_, p_ + n, origin_);
        p_ += n;
        return r;
    }

    std::string_view bytes() {
        Reader r = sub();
        return {reinterpret_cast<const char*>(r.p_), static_cast<std::size_t>(r.end_ - r.p_)};
    }

    void skip(std::uint32_t type) {
        switch (type) {
            case VARINT: varint(); return;
            case FIXED64: advance(8); return;
            case FIXED32: advance(4); return;
            case LEN: sub(); return;
            default: throw WireError{"cannot skip wire type " + std::to_string(type)};
        }
    }

    std::uint64_t remaining() const noexcept { return static_cast<std::uint64_t>(end_ - p_); }

private:
    void advance(std::uint64_t n) {
        if (n > static_cast<std::uint64_t>(end_ - p_)) throw WireError{"truncated fixed-width field"};
        p_ += n;
    }
    const std::uint8_t* p_;
    const std::uint8_t* end_;
    const std::uint8_t* origin_;
};

class Writer {
public:
    std::string out;

    void varint(std::uint64_t v) {
        while (v >= 0x80u) {
            out.push_back(static_cast<char>((v & 0x7Fu) | 0x80u));
            v >>= 7;
        }
        out.push_back(static_cast<char>(v));
    }
    void tag(std::uint32_t field, WireType type) { varint((static_cast<std::uint64_t>(field) << 3) | type); }
    // proto3 scalars: the default value is not written
    void uint_field(std::uint32_t field, std::uint64_t v) {
        if (v != 0) { tag(field, VARINT); varint(v); }
    }
    void int_field(std::uint32_t field, std::int64_t v) {  // int32/enum: negative values take 10 bytes
        if (v != 0) { tag(field, VARINT); varint(static_cast<std::uint64_t>(v)); }
    }
    void string_field(std::uint32_t field, std::string_view s) {
        if (!s.empty()) { tag(field, LEN); varint(s.size()); out.append(s); }
    }
    void message_field(std::uint32_t field, const std::string& body) {  // a set sub-message is written even if empty
        tag(field, LEN);
        varint(body.size());
        out.append(body);
    }
};

}  // namespace dumpcmp::wire
