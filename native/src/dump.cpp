#include "dumpcmp/dump.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpcmp/checked.hpp"
#include "dumpcmp/dtype.hpp"
#include "dumpcmp/errors.hpp"
#include "dumpcmp/format.hpp"
#include "dumpcmp/safe_file.hpp"
#include "protowire.hpp"

namespace dumpcmp {

using wire::Reader;
using wire::WireError;

const char* tensor_kind_name(TensorKind k) noexcept {
    switch (k) {
        case TensorKind::input: return "input";
        case TensorKind::output: return "output";
        case TensorKind::buffer: return "buffer";
        case TensorKind::workspace: return "workspace";
    }
    return "?";
}

std::uint64_t TensorDesc::element_count() const noexcept {
    return checked::product(shape).value_or(checked::kOverflow);
}

const std::vector<TensorDesc>& DumpHeader::tensors(TensorKind k) const noexcept {
    switch (k) {
        case TensorKind::input: return inputs;
        case TensorKind::output: return outputs;
        case TensorKind::buffer: return buffers;
        case TensorKind::workspace: break;
    }
    return workspaces;
}
std::vector<TensorDesc>& DumpHeader::tensors(TensorKind k) noexcept {
    return const_cast<std::vector<TensorDesc>&>(static_cast<const DumpHeader&>(*this).tensors(k));
}

namespace {

constexpr TensorKind kKinds[] = {TensorKind::input, TensorKind::output, TensorKind::buffer, TensorKind::workspace};

// ---- parsing, wire level --------------------------------------------------------------------------------------

// What one header may hold (docs/formats.md#limits): far above any real dump, and checked before anything is
// allocated, so that the memory and time a header costs stay a small multiple of its size whatever it says.
constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t{16} << 20;  // the old format: the message less inline data
constexpr std::size_t kMaxTensors = 65536;                           // inputs + outputs + buffers + workspaces
constexpr std::size_t kMaxAttrs = 65536;
constexpr std::size_t kMaxShapeDims = checked::kMaxDims;             // per shape, original shape and dim_range list
constexpr std::uint64_t kMaxStringBytes = std::uint64_t{1} << 20;    // op name, attribute, version, dfx_message

// A header over one of those limits: reported as it is (after the other format was tried), never as "not a dump".
struct LimitError {
    std::string what;
};

std::string limit_text(const std::string& what) {
    return what + ", the most dumpcmp reads (see Limits in docs/formats.md)";
}

// A string field, refused before it is copied when it is over the limit.
std::string limited_string(Reader& r, const std::string& field) {
    const std::string_view s = r.bytes();
    if (s.size() > kMaxStringBytes)
        throw LimitError{limit_text(field + " holds " + std::to_string(s.size()) + " bytes, over " +
                                    std::to_string(kMaxStringBytes))};
    return std::string(s);
}

struct InlineData {  // where a `data` bytes field sits, relative to the reader's origin
    std::uint64_t position = 0;
    std::uint64_t length = 0;
};

struct Parsed {
    DumpHeader header;
    // inline data of each tensor, parallel to header.tensors(kind)
    std::vector<InlineData> data[4];
    std::vector<bool> size_set[4];
    bool unknown_top_level_field = false;
    bool any_known_field = false;
    std::uint64_t inline_bytes = 0;  // of the `data` fields (the old format's tensor bytes)
    std::size_t tensor_count = 0;
};

void expect(std::uint32_t got, std::uint32_t want, const std::string& field) {
    if (got != want)
        throw WireError{"field " + field + " has wire type " + std::to_string(got) + ", expected " +
                        std::to_string(want)};
}

std::int32_t as_int32(std::uint64_t v) { return static_cast<std::int32_t>(static_cast<std::uint32_t>(v)); }

std::vector<std::int64_t> parse_shape(Reader r, const std::string& field) {
    std::vector<std::int64_t> dims;
    auto push = [&](std::uint64_t d) {
        if (d > (std::uint64_t{1} << 62)) throw WireError{"dimension " + std::to_string(d) + " is not a size"};
        if (dims.size() == kMaxShapeDims)
            throw LimitError{limit_text(field + " has more than " + std::to_string(kMaxShapeDims) + " dimensions")};
        dims.push_back(static_cast<std::int64_t>(d));
    };
    while (!r.done()) {
        auto [field, type] = r.tag();
        if (field == 1 && type == wire::LEN) {
            Reader packed = r.sub();
            while (!packed.done()) push(packed.varint());
        } else if (field == 1) {
            expect(type, wire::VARINT, "Shape.dim");
            push(r.varint());
        } else {
            r.skip(type);
        }
    }
    return dims;
}

OriginalOp parse_original_op(Reader r, const std::string& where) {
    OriginalOp op;
    while (!r.done()) {
        auto [field, type] = r.tag();
        switch (field) {
            case 1:
                expect(type, wire::LEN, "OriginalOp.name");
                op.name = limited_string(r, where + " original_op.name");
                break;
            case 2: expect(type, wire::VARINT, "OriginalOp.output_index"); op.output_index = static_cast<std::uint32_t>(r.varint()); break;
            case 3: expect(type, wire::VARINT, "OriginalOp.data_type"); op.data_type = as_int32(r.varint()); break;
            case 4: expect(type, wire::VARINT, "OriginalOp.format"); op.format = as_int32(r.varint()); break;
            default: r.skip(type);
        }
    }
    return op;
}

std::pair<std::uint64_t, std::uint64_t> parse_dim_range(Reader r) {
    std::pair<std::uint64_t, std::uint64_t> range{0, 0};
    while (!r.done()) {
        auto [field, type] = r.tag();
        if (field == 1) { expect(type, wire::VARINT, "DimRange.dim_start"); range.first = r.varint(); }
        else if (field == 2) { expect(type, wire::VARINT, "DimRange.dim_end"); range.second = r.varint(); }
        else r.skip(type);
    }
    return range;
}

// Field numbers of the four tensor messages; 0 = the message has no such field.
struct TensorFields {
    std::uint32_t data_type, format, shape, original_op, data, size, original_shape, sub_format, address, dim_range,
        offset, arg_index, input_type, sub_type;
    const char* message;
};
constexpr TensorFields kFields[] = {
    {1, 2, 3, 0, 4, 5, 6, 7, 8, 0, 9, 10, 11, 0, "OpInput"},
    {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 0, 0, "OpOutput"},
    {0, 0, 0, 0, 2, 3, 0, 0, 0, 0, 0, 0, 0, 1, "OpBuffer"},
    {0, 0, 0, 0, 2, 3, 0, 0, 0, 0, 0, 0, 0, 1, "Workspace"},
};

void parse_tensor(Reader r, TensorKind kind, std::uint32_t index, Parsed& out) {
    const TensorFields& f = kFields[static_cast<int>(kind)];
    TensorDesc t;
    t.kind = kind;
    t.index = index;
    // proto3 default format is 0 (NCHW) for inputs and outputs; buffers and workspaces are flat bytes
    const bool flat = kind == TensorKind::buffer || kind == TensorKind::workspace;
    t.format = flat ? static_cast<std::int32_t>(Format::ND) : 0;
    t.data_type = flat ? static_cast<std::int32_t>(DataType::UINT8) : 0;
    InlineData data;
    bool size_set = false;
    const std::string m = f.message;
    const std::string where = std::string(tensor_kind_name(kind)) + " " + std::to_string(index);
    while (!r.done()) {
        auto [field, type] = r.tag();
        if (field == f.data_type) { expect(type, wire::VARINT, m + ".data_type"); t.data_type = as_int32(r.varint()); }
        else if (field == f.format) { expect(type, wire::VARINT, m + ".format"); t.format = as_int32(r.varint()); }
        else if (field == f.shape) { expect(type, wire::LEN, m + ".shape"); t.shape = parse_shape(r.sub(), where + " shape"); }
        else if (field == f.original_op) {
            expect(type, wire::LEN, m + ".original_op");
            t.original_op = parse_original_op(r.sub(), where);
            t.has_original_op = true;
        } else if (field == f.data) {
            expect(type, wire::LEN, m + ".data");
            Reader d = r.sub();
            data.position = d.position();
            data.length = d.remaining();
            out.inline_bytes += data.length;
        } else if (field == f.size) { expect(type, wire::VARINT, m + ".size"); t.size = r.varint(); size_set = true; }
        else if (field == f.original_shape) {
            expect(type, wire::LEN, m + ".original_shape");
            t.original_shape = parse_shape(r.sub(), where + " original_shape");
            t.has_original_shape = true;
        } else if (field == f.sub_format) { expect(type, wire::VARINT, m + ".sub_format"); t.sub_format = as_int32(r.varint()); }
        else if (field == f.address) { expect(type, wire::VARINT, m + ".address"); t.address = r.varint(); }
        else if (field == f.dim_range) {
            expect(type, wire::LEN, m + ".dim_range");
            if (t.dim_range.size() == kMaxShapeDims)
                throw LimitError{limit_text(where + " has more than " + std::to_string(kMaxShapeDims) +
                                            " dim_range entries")};
            t.dim_range.push_back(parse_dim_range(r.sub()));
        }
        else if (field == f.offset) { expect(type, wire::VARINT, m + ".offset"); t.offset = r.varint(); }
        else if (field == f.arg_index) { expect(type, wire::VARINT, m + ".arg_index"); t.arg_index = static_cast<std::uint32_t>(r.varint()); }
        else if (field == f.input_type) { expect(type, wire::VARINT, m + ".input_type"); t.input_type = static_cast<std::uint32_t>(r.varint()); }
        else if (field == f.sub_type) { expect(type, wire::VARINT, m + ".type"); t.sub_type = as_int32(r.varint()); }
        else r.skip(type);
    }
    if (flat) t.shape = {static_cast<std::int64_t>(size_set ? t.size : data.length)};
    const int k = static_cast<int>(kind);
    out.header.tensors(kind).push_back(std::move(t));
    out.data[k].push_back(data);
    out.size_set[k].push_back(size_set);
}

Parsed parse_message(const std::uint8_t* begin, std::uint64_t length, const std::uint8_t* origin) {
    Parsed p;
    Reader r(begin, begin + length, origin);
    const std::uint64_t start = r.position();
    std::uint32_t counts[4] = {0, 0, 0, 0};
    while (!r.done()) {
        const auto [field, tag_type] = r.tag();
        const auto type = tag_type;  // a plain variable: C++17 lambdas cannot capture structured bindings (clang)
        auto tensor = [&](TensorKind k, const char* name) {
            expect(type, wire::LEN, std::string("DumpData.") + name);
            if (p.tensor_count == kMaxTensors)
                throw LimitError{limit_text("the header holds more than " + std::to_string(kMaxTensors) + " tensors")};
            ++p.tensor_count;
            parse_tensor(r.sub(), k, counts[static_cast<int>(k)]++, p);
        };
        p.any_known_field = p.any_known_field || (field >= 1 && field <= 9);
        switch (field) {
            case 1: expect(type, wire::LEN, "DumpData.version"); p.header.version = limited_string(r, "version"); break;
            case 2: expect(type, wire::VARINT, "DumpData.dump_time"); p.header.dump_time = r.varint(); break;
            case 3: tensor(TensorKind::output, "output"); break;
            case 4: tensor(TensorKind::input, "input"); break;
            case 5: tensor(TensorKind::buffer, "buffer"); break;
            case 6: expect(type, wire::LEN, "DumpData.op_name"); p.header.op_name = limited_string(r, "op_name"); break;
            case 7: {
                expect(type, wire::LEN, "DumpData.attr");
                if (p.header.attrs.size() == kMaxAttrs)
                    throw LimitError{
                        limit_text("the header holds more than " + std::to_string(kMaxAttrs) + " attributes")};
                Reader a = r.sub();
                std::pair<std::string, std::string> kv;
                while (!a.done()) {
                    auto [af, at] = a.tag();
                    if (af == 1) {
                        expect(at, wire::LEN, "OpAttr.name");
                        kv.first = limited_string(a, "attr name");
                    } else if (af == 2) {
                        expect(at, wire::LEN, "OpAttr.value");
                        kv.second = limited_string(a, "attr value");
                    } else {
                        a.skip(at);
                    }
                }
                p.header.attrs.push_back(std::move(kv));
                break;
            }
            case 8: tensor(TensorKind::workspace, "space"); break;
            case 9:
                expect(type, wire::LEN, "DumpData.dfx_message");
                p.header.dfx_message = limited_string(r, "dfx_message");
                break;
            default: p.unknown_top_level_field = true; r.skip(type);
        }
        // the header less the old format's inline data (the whole header in the current format, checked before);
        // what one field holds is bounded by the other limits
        if (r.position() - start - p.inline_bytes > kMaxHeaderBytes)
            throw LimitError{limit_text("the header holds more than " + std::to_string(kMaxHeaderBytes) +
                                        " bytes besides tensor data")};
    }
    return p;
}

// ---- semantic checks shared by both formats ---------------------------------------------------------------------

std::string tensor_label(const TensorDesc& t) {
    return std::string(tensor_kind_name(t.kind)) + " " + std::to_string(t.index);
}

void validate_enums(const DumpHeader& h, const std::string& path) {
    for (TensorKind k : kKinds) {
        for (const auto& t : h.tensors(k)) {
            if (find_data_type(t.data_type) == nullptr)
                throw DumpError(path, tensor_label(t) + ": unknown data type number " + std::to_string(t.data_type) +
                                          " (known: 0-42)");
            if (format_name(t.format) == nullptr)
                throw DumpError(path, tensor_label(t) + ": unknown format number " + std::to_string(t.format) +
                                          " (known: 0-49, 255)");
        }
    }
}

std::uint64_t sum_sizes(const std::vector<TensorDesc>& ts, const std::string& path) {
    std::uint64_t s = 0;
    for (const auto& t : ts)
        if (__builtin_add_overflow(s, t.size, &s)) throw DumpError(path, "tensor sizes overflow 64 bits");
    return s;
}

// Lay the raw segments out after the header; returns an empty string when the sizes add up to the file size.
std::string place_segments(DumpHeader& h, std::uint64_t header_len, std::uint64_t file_size, const std::string& path) {
    const std::uint64_t in = sum_sizes(h.inputs, path), out = sum_sizes(h.outputs, path),
                        buf = sum_sizes(h.buffers, path), ws = sum_sizes(h.workspaces, path);
    std::uint64_t total = 8;
    for (std::uint64_t part : {header_len, in, out, buf, ws})
        if (__builtin_add_overflow(total, part, &total)) return "sizes overflow 64 bits";
    if (total != file_size) {
        return std::string(total > file_size ? "truncated" : "has extra bytes") + ": 8 + header " +
               std::to_string(header_len) + " + inputs " + std::to_string(in) + " + outputs " + std::to_string(out) +
               " + buffers " + std::to_string(buf) + " + workspaces " + std::to_string(ws) + " = " +
               std::to_string(total) + " bytes, but the file has " + std::to_string(file_size);
    }
    std::uint64_t offset = 8 + header_len;
    for (TensorKind k : kKinds)
        for (auto& t : h.tensors(k)) {
            t.file_offset = offset;
            offset += t.size;
        }
    h.legacy = false;
    h.header_size = header_len;
    h.file_size = file_size;
    return {};
}

std::uint64_t read_u64_le(const std::uint8_t* p) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

// The header length of the current format over the limit: refused before the header is read.
std::string header_length_limit(std::uint64_t n) {
    return limit_text("the header length " + std::to_string(n) + " in the first 8 bytes is over " +
                      std::to_string(kMaxHeaderBytes) + " bytes");
}

// Try the current format given the header bytes; returns the error text instead of throwing (`limited`: the text
// says which limit the header is over).
std::string try_current(const std::uint8_t* header_bytes, std::uint64_t header_len, std::uint64_t file_size,
                        const std::string& path, DumpHeader& out, bool& limited) {
    limited = false;
    if (header_len > kMaxHeaderBytes) {
        limited = true;
        return header_length_limit(header_len);
    }
    try {
        Parsed p = parse_message(header_bytes, header_len, header_bytes);
        std::string err = place_segments(p.header, header_len, file_size, path);
        if (!err.empty()) return err;
        out = std::move(p.header);
        return {};
    } catch (const WireError& e) {
        return "the " + std::to_string(header_len) + "-byte header is not a DumpData message: " + e.what;
    } catch (const LimitError& e) {
        limited = true;
        return e.what;
    }
}

bool try_legacy(const std::uint8_t* bytes, std::uint64_t size, const std::string& path, DumpHeader& out,
                std::string& why, bool& limited) {
    Parsed p;
    limited = false;
    try {
        p = parse_message(bytes, size, bytes);
    } catch (const WireError& e) {
        why = e.what;
        return false;
    } catch (const LimitError& e) {
        why = "old-format dump: " + e.what;
        limited = true;
        return false;
    }
    // An old-format file is a DumpData message and nothing else: stray fields mean this is not one.
    if (p.unknown_top_level_field || !p.any_known_field || p.header.version == "2.0") return false;
    // ...and carries tensors: a few stray bytes can parse as an empty message
    if (p.header.inputs.empty() && p.header.outputs.empty()) return false;
    for (TensorKind k : kKinds) {
        const int ki = static_cast<int>(k);
        auto& ts = p.header.tensors(k);
        for (std::size_t i = 0; i < ts.size(); ++i) {
            const InlineData& d = p.data[ki][i];
            if (!p.size_set[ki][i]) ts[i].size = d.length;
            if (ts[i].size != d.length)
                throw DumpError(path, "old-format dump: " + tensor_label(ts[i]) + " says size " +
                                          std::to_string(ts[i].size) + " but holds " + std::to_string(d.length) +
                                          " bytes of data");
            ts[i].file_offset = d.position;
        }
    }
    p.header.legacy = true;
    p.header.header_size = size;
    p.header.file_size = size;
    out = std::move(p.header);
    return true;
}

}  // namespace

DumpHeader parse_dump(const std::uint8_t* bytes, std::uint64_t size, const std::string& path) {
    if (size == 0) throw DumpError(path, "empty file (0 bytes): not a dump");
    DumpHeader h;
    std::string current_error;
    bool current_limited = false;
    if (size >= 8) {
        const std::uint64_t n = read_u64_le(bytes);
        if (n > size - 8) {
            current_error = "header length " + std::to_string(n) + " in the first 8 bytes runs past the end of the " +
                            std::to_string(size) + "-byte file";
        } else {
            current_error = try_current(bytes + 8, n, size, path, h, current_limited);
            if (current_error.empty()) {
                validate_enums(h, path);
                return h;
            }
        }
    } else {
        current_error = "only " + std::to_string(size) + " bytes: too short for a dump";
    }
    std::string legacy_error;
    bool legacy_limited = false;
    if (try_legacy(bytes, size, path, h, legacy_error, legacy_limited)) {
        validate_enums(h, path);
        return h;
    }
    // A header over a limit is said as such: the current format's first, else the old format's.
    if (current_limited) throw DumpError(path, current_error);
    if (legacy_limited) throw DumpError(path, legacy_error);
    throw DumpError(path, "not a dump file: " + current_error);
}

DumpHeader read_dump_header(const std::string& path) { return read_dump_header_at(AT_FDCWD, path.c_str(), path); }

DumpHeader read_dump_header_at(int dir_fd, const char* name, const std::string& path) {
    OwnedFd f{::openat(dir_fd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK)};  // O_NONBLOCK: a FIFO or terminal never waits
    if (f.fd < 0) throw DumpError(path, std::string("cannot open: ") + std::strerror(errno));
    // The prefix and, in most files, the whole header in one read, before any fstat: a read that ends short of the
    // buffer has reached the end of the file, whose size it is (issue #35: one system call less a dump). A read that
    // fills it, an empty one or an error asks fstat, which says what the file is and its size, as before.
    std::uint8_t first[4096];
    std::uint64_t got = 0;
    bool failed = false;
    for (;;) {  // one read: on a regular file it ends short only at the end (a header it cut is mapped whole below)
        const ssize_t r = ::pread(f.fd, first, sizeof first, 0);
        if (r < 0 && errno == EINTR) continue;
        failed = r < 0;
        got = r < 0 ? 0 : static_cast<std::uint64_t>(r);
        break;
    }
    std::uint64_t size = got;
    if (failed || got == 0 || got == sizeof first) {
        struct stat st {};
        if (::fstat(f.fd, &st) != 0) throw DumpError(path, std::string("cannot stat: ") + std::strerror(errno));
        if (S_ISDIR(st.st_mode)) throw DumpError(path, "is a directory, not a file");
        size = static_cast<std::uint64_t>(st.st_size);
        if (size == 0) throw DumpError(path, "empty file (0 bytes): not a dump");
        got = failed ? 0 : std::min(got, size);  // what the read gave of the bytes the fstat counts
    }
    auto pread_all = [&](std::uint8_t* dst, std::uint64_t len, std::uint64_t at) {
        std::uint64_t done = 0;
        while (done < len) {
            const ssize_t got = ::pread(f.fd, dst + done, len - done, static_cast<off_t>(at + done));
            if (got < 0) {
                if (errno == EINTR) continue;
                throw DumpError(path, std::string("cannot read: ") + std::strerror(errno));
            }
            if (got == 0) throw DumpError(path, "file shrank while being read");
            done += static_cast<std::uint64_t>(got);
        }
    };
    if (size >= 8) {
        // the rest of a longer header in a second read
        const std::uint64_t want = std::min<std::uint64_t>(size, sizeof first);
        while (got < want) {
            const ssize_t r = ::pread(f.fd, first + got, want - got, static_cast<off_t>(got));
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;  // a short file or an error: what is missing is read below, which says why
            got += static_cast<std::uint64_t>(r);
        }
        if (got < 8) {
            pread_all(first + got, 8 - got, got);
            got = 8;
        }
        const std::uint64_t n = read_u64_le(first);
        if (n <= size - 8 && n <= kMaxHeaderBytes) {  // over the limit: never allocated (parse_dump says why)
            std::vector<std::uint8_t> rest;
            const std::uint8_t* header = first + 8;
            if (n > got - 8) {
                rest.resize(n);
                std::memcpy(rest.data(), first + 8, got - 8);
                pread_all(rest.data() + (got - 8), n - (got - 8), got);
                header = rest.data();
            }
            DumpHeader h;
            bool limited = false;
            if (try_current(header, n, size, path, h, limited).empty()) {
                validate_enums(h, path);
                return h;
            }
        }
    }
    // Not the current format (or broken): map it whole, which also gives the precise error.
    MappedFile map(path);
    return parse_dump(map.data(), map.size(), path);
}

// ---- writing ---------------------------------------------------------------------------------------------------

namespace {

std::string shape_message(const std::vector<std::int64_t>& dims) {
    wire::Writer w;
    if (!dims.empty()) {
        wire::Writer packed;
        for (auto d : dims) packed.varint(static_cast<std::uint64_t>(d));
        w.tag(1, wire::LEN);
        w.varint(packed.out.size());
        w.out += packed.out;
    }
    return w.out;
}

std::string tensor_message(const TensorDesc& t) {
    const TensorFields& f = kFields[static_cast<int>(t.kind)];
    wire::Writer w;
    if (t.kind == TensorKind::buffer || t.kind == TensorKind::workspace) {
        w.int_field(f.sub_type, t.sub_type);
        w.uint_field(f.size, t.size);
        return w.out;
    }
    // Field numbers rise in this order for both OpInput and OpOutput.
    w.int_field(f.data_type, t.data_type);
    w.int_field(f.format, t.format);
    w.message_field(f.shape, shape_message(t.shape));
    if (f.original_op != 0 && t.has_original_op) {
        wire::Writer o;
        o.string_field(1, t.original_op.name);
        o.uint_field(2, t.original_op.output_index);
        o.int_field(3, t.original_op.data_type);
        o.int_field(4, t.original_op.format);
        w.message_field(f.original_op, o.out);
    }
    w.uint_field(f.size, t.size);
    if (t.has_original_shape) w.message_field(f.original_shape, shape_message(t.original_shape));
    w.int_field(f.sub_format, t.sub_format);
    w.uint_field(f.address, t.address);
    if (f.dim_range != 0)
        for (const auto& r : t.dim_range) {
            wire::Writer d;
            d.uint_field(1, r.first);
            d.uint_field(2, r.second);
            w.message_field(f.dim_range, d.out);
        }
    w.uint_field(f.offset, t.offset);
    if (f.arg_index != 0) w.uint_field(f.arg_index, t.arg_index);
    if (f.input_type != 0) w.uint_field(f.input_type, t.input_type);
    return w.out;
}

}  // namespace

std::string serialize_header(const DumpHeader& h) {
    wire::Writer w;
    w.string_field(1, h.version);
    w.uint_field(2, h.dump_time);
    for (const auto& t : h.outputs) w.message_field(3, tensor_message(t));
    for (const auto& t : h.inputs) w.message_field(4, tensor_message(t));
    for (const auto& t : h.buffers) w.message_field(5, tensor_message(t));
    w.string_field(6, h.op_name);
    for (const auto& [name, value] : h.attrs) {
        wire::Writer a;
        a.string_field(1, name);
        a.string_field(2, value);
        w.message_field(7, a.out);
    }
    for (const auto& t : h.workspaces) w.message_field(8, tensor_message(t));
    w.string_field(9, h.dfx_message);
    return w.out;
}

namespace {
// The reader's limits, on what write_dump is asked to write: a dump dumpcmp writes is one it reads back.
void check_writable(const std::string& path, const DumpHeader& h) {
    auto over = [&](const std::string& what, std::uint64_t n, std::uint64_t most) {
        if (n > most)
            throw DumpError(path, "cannot write: " + what + " " + std::to_string(n) + ", more than the " +
                                      std::to_string(most) + " dumpcmp reads (see Limits in docs/formats.md)");
    };
    std::uint64_t tensors = 0;
    for (TensorKind k : kKinds) tensors += h.tensors(k).size();
    over("tensors:", tensors, kMaxTensors);
    over("attributes:", h.attrs.size(), kMaxAttrs);
    over("bytes of version:", h.version.size(), kMaxStringBytes);
    over("bytes of op_name:", h.op_name.size(), kMaxStringBytes);
    over("bytes of dfx_message:", h.dfx_message.size(), kMaxStringBytes);
    for (const auto& kv : h.attrs) {
        over("bytes of an attribute name:", kv.first.size(), kMaxStringBytes);
        over("bytes of an attribute value:", kv.second.size(), kMaxStringBytes);
    }
    for (TensorKind k : kKinds)
        for (const auto& t : h.tensors(k)) {
            const std::string label = tensor_label(t);
            over(label + " dimensions:", t.shape.size(), kMaxShapeDims);
            over(label + " original dimensions:", t.original_shape.size(), kMaxShapeDims);
            over(label + " dim_range entries:", t.dim_range.size(), kMaxShapeDims);
            over(label + " bytes of original_op.name:", t.original_op.name.size(), kMaxStringBytes);
        }
}
}  // namespace

void write_dump(const std::string& path, const DumpHeader& header, const std::vector<RawSpan>& inputs,
                const std::vector<RawSpan>& outputs, const std::vector<RawSpan>& buffers,
                const std::vector<RawSpan>& workspaces) {
    check_writable(path, header);
    const std::vector<RawSpan>* spans[4] = {&inputs, &outputs, &buffers, &workspaces};
    for (TensorKind k : kKinds) {
        const auto& ts = header.tensors(k);
        const auto& sp = *spans[static_cast<int>(k)];
        if (ts.size() != sp.size())
            throw std::invalid_argument(path + ": " + std::to_string(ts.size()) + " " + tensor_kind_name(k) +
                                        " descriptions but " + std::to_string(sp.size()) + " data buffers");
        for (std::size_t i = 0; i < ts.size(); ++i)
            if (ts[i].size != sp[i].size)
                throw std::invalid_argument(path + ": " + tensor_label(ts[i]) + " says size " +
                                            std::to_string(ts[i].size) + " but has " + std::to_string(sp[i].size) +
                                            " bytes");
    }
    const std::string head = serialize_header(header);
    const std::string tmp = temp_path_beside(path);
    const int fd = create_exclusive(tmp);
    if (fd < 0) throw DumpError(path, std::string("cannot write: ") + std::strerror(errno));
    std::FILE* f = ::fdopen(fd, "wb");
    if (f == nullptr) {
        const int e = errno;
        ::close(fd);
        std::remove(tmp.c_str());
        throw DumpError(path, std::string("cannot write: ") + std::strerror(e));
    }
    bool ok = true;
    std::uint8_t prefix[8];
    std::uint64_t n = head.size();
    for (int i = 0; i < 8; ++i) prefix[i] = static_cast<std::uint8_t>(n >> (8 * i));
    ok = ok && std::fwrite(prefix, 1, 8, f) == 8;
    ok = ok && std::fwrite(head.data(), 1, head.size(), f) == head.size();
    for (const auto* sp : spans)
        for (const auto& s : *sp)
            ok = ok && (s.size == 0 || std::fwrite(s.data, 1, s.size, f) == s.size);
    const int saved = errno;
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) {
        std::remove(tmp.c_str());
        throw DumpError(path, std::string("cannot write: ") + std::strerror(saved != 0 ? saved : errno));
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const int e = errno;
        std::remove(tmp.c_str());
        throw DumpError(path, std::string("cannot rename into place: ") + std::strerror(e));
    }
}

// ---- DumpFile ---------------------------------------------------------------------------------------------------

DumpFile::DumpFile(std::string path) : path_(std::move(path)), header_(read_dump_header(path_)) {}

const TensorDesc& DumpFile::tensor(TensorKind kind, std::size_t index) const {
    const auto& ts = header_.tensors(kind);
    if (index >= ts.size())
        throw std::out_of_range(path_ + ": no " + tensor_kind_name(kind) + " " + std::to_string(index) + " (the dump has " +
                                std::to_string(ts.size()) + " " + tensor_kind_name(kind) + (ts.size() == 1 ? ")" : "s)"));
    return ts[index];
}

namespace {

MappedFilePtr map_unchanged(const std::string& path, std::uint64_t file_size, std::mutex& mutex,
                            std::weak_ptr<const MappedFile>& held) {
    std::lock_guard<std::mutex> lock(mutex);
    if (MappedFilePtr m = held.lock()) return m;
    auto m = std::make_shared<const MappedFile>(path, file_size);  // a small one: no fstat
    if (m->size() != file_size)
        throw DumpError(path, "changed on disk since its header was read (" + std::to_string(file_size) +
                                  " bytes then, " + std::to_string(m->size()) + " now)");
    held = m;
    return m;
}

// The checked bytes of a tensor in a mapping of its file.
const std::uint8_t* bytes_in(const std::string& path, const TensorDesc& t, MappedFilePtr m,
                             MappedFilePtr* keep_alive) {
    // whatever the header said: the bytes handed out lie inside the mapping
    if (!checked::within(t.file_offset, t.size, m->size()))
        throw DumpError(path, tensor_label(t) + ": its " + std::to_string(t.size) + " bytes at offset " +
                                  std::to_string(t.file_offset) + " run past the end of the file (" +
                                  std::to_string(m->size()) + " bytes)");
    const std::uint8_t* p = m->data() == nullptr ? nullptr : m->data() + t.file_offset;
    if (keep_alive != nullptr) *keep_alive = std::move(m);
    return p;
}

}  // namespace

MappedFilePtr DumpFile::mapping() const { return map_unchanged(path_, header_.file_size, mutex_, mapping_); }

std::string DumpFile::check_tensor(const TensorDesc& t) const { return check_tensor_desc(t); }

std::string check_tensor_desc(const TensorDesc& t) {
    const DataTypeInfo* info = find_data_type(t.data_type);
    if (info == nullptr) return tensor_label(t) + ": unknown data type " + std::to_string(t.data_type);
    if (info->bits == 0) return tensor_label(t) + ": data type " + info->name + " has no fixed element size";
    if (t.shape.size() > checked::kMaxDims)
        return tensor_label(t) + ": " + std::to_string(t.shape.size()) + " dimensions, at most " +
               std::to_string(checked::kMaxDims) + " are supported";
    const std::uint64_t n = t.element_count();
    if (n == checked::kOverflow) return tensor_label(t) + ": the shape's element count overflows 64 bits";
    // 16: the widest item an array of any dtype is handed out as (complex128)
    if (!checked::representable(t.shape, 16)) return tensor_label(t) + ": the shape's dimensions are too large for an array";
    const std::uint64_t need = storage_bytes(*info, n);
    if (need == checked::kOverflow) return tensor_label(t) + ": the shape's byte size overflows 64 bits";
    if (need != t.size) {
        std::string shape = "[";
        for (std::size_t i = 0; i < t.shape.size(); ++i) shape += (i ? "," : "") + std::to_string(t.shape[i]);
        shape += "]";
        return tensor_label(t) + ": " + info->name + " of shape " + shape + " needs " + std::to_string(need) +
               " bytes but the dump holds " + std::to_string(t.size);
    }
    return {};
}

const std::uint8_t* DumpFile::tensor_bytes(const TensorDesc& t, MappedFilePtr* keep_alive) const {
    std::string err = check_tensor(t);
    if (!err.empty()) throw DumpError(path_, err);
    return bytes_in(path_, t, mapping(), keep_alive);
}

// ---- DumpHead -----------------------------------------------------------------------------------------------------

DumpHead::DumpHead(std::string path, const DumpHeader& h)
    : file_size_(h.file_size), header_size_(h.header_size), legacy_(h.legacy) {
    for (TensorKind k : kKinds) counts_[static_cast<int>(k)] = static_cast<std::uint32_t>(h.tensors(k).size());
    // at most 64 dimensions each (parse_shape), 65,536 tensors (kMaxTensors): the counts fit
    std::size_t dims = 0;
    for (const auto* ts : {&h.inputs, &h.outputs})
        for (const auto& t : *ts) {
            dims += t.shape.size() + t.original_shape.size();
            for (const auto* shape : {&t.shape, &t.original_shape})
                for (const std::int64_t d : *shape)
                    if (d < std::numeric_limits<std::int32_t>::min() || d > std::numeric_limits<std::int32_t>::max())
                        wide_dims_ = true;
        }
    const std::size_t n = h.inputs.size() + h.outputs.size();
    const std::size_t dim_size = wide_dims_ ? sizeof(std::int64_t) : sizeof(std::int32_t);
    dims_ = static_cast<std::uint32_t>(dims);
    path_size_ = static_cast<std::uint32_t>(path.size());
    if (path_size_ != path.size()) throw std::length_error("a path of 4 GB");
    block_.reset(new unsigned char[n * sizeof(Packed) + dims * dim_size + path.size()]);
    unsigned char* dim_at = block_.get() + n * sizeof(Packed);
    std::uint32_t at = 0;
    std::uint32_t used = 0;
    auto put = [&](const std::vector<std::int64_t>& shape) {
        for (const std::int64_t d : shape) {
            if (wide_dims_) {
                std::memcpy(dim_at, &d, sizeof d);
            } else {
                const auto narrow = static_cast<std::int32_t>(d);
                std::memcpy(dim_at, &narrow, sizeof narrow);
            }
            dim_at += dim_size;
        }
        used += static_cast<std::uint32_t>(shape.size());
    };
    for (const auto* ts : {&h.inputs, &h.outputs})
        for (const auto& t : *ts) {
            const Packed p{t.address, t.size, t.file_offset, t.offset, t.data_type, t.format, t.sub_format,
                           t.arg_index, t.input_type, used, static_cast<std::uint8_t>(t.shape.size()),
                           static_cast<std::uint8_t>(t.original_shape.size()), t.has_original_shape,
                           t.has_original_op || !t.dim_range.empty()};
            std::memcpy(block_.get() + at * sizeof(Packed), &p, sizeof p);
            put(t.shape);
            put(t.original_shape);
            if (p.extra) {
                if (!extras_) extras_ = std::make_unique<std::vector<Extra>>();
                extras_->push_back(Extra{at, t.has_original_op, t.original_op, t.dim_range});
            }
            ++at;
        }
    std::memcpy(dim_at, path.data(), path.size());
}

const char* DumpHead::path_data() const noexcept {
    const std::size_t n = count(TensorKind::input) + count(TensorKind::output);
    const std::size_t dim_size = wide_dims_ ? sizeof(std::int64_t) : sizeof(std::int32_t);
    return reinterpret_cast<const char*>(block_.get() + n * sizeof(Packed) + dims_ * dim_size);
}

TensorDesc DumpHead::tensor(TensorKind kind, std::size_t index) const {
    if (kind != TensorKind::input && kind != TensorKind::output)
        throw std::invalid_argument(path() + ": only the inputs and outputs of a dump's header are kept here, not its " +
                                    tensor_kind_name(kind) + "s");
    const std::size_t n = count(kind);
    if (index >= n)
        throw std::out_of_range(path() + ": no " + tensor_kind_name(kind) + " " + std::to_string(index) +
                                " (the dump has " + std::to_string(n) + " " + tensor_kind_name(kind) +
                                (n == 1 ? ")" : "s)"));
    const std::size_t at = (kind == TensorKind::output ? count(TensorKind::input) : 0) + index;
    Packed p;
    std::memcpy(&p, block_.get() + at * sizeof(Packed), sizeof p);
    TensorDesc t;
    t.kind = kind;
    t.index = static_cast<std::uint32_t>(index);
    t.data_type = p.data_type;
    t.format = p.format;
    const std::size_t packed = (count(TensorKind::input) + count(TensorKind::output)) * sizeof(Packed);
    const std::size_t dim_size = wide_dims_ ? sizeof(std::int64_t) : sizeof(std::int32_t);
    const unsigned char* first = block_.get() + packed + std::size_t{p.dims} * dim_size;
    auto get = [&](std::size_t k) -> std::int64_t {
        if (wide_dims_) {
            std::int64_t d;
            std::memcpy(&d, first + k * dim_size, sizeof d);
            return d;
        }
        std::int32_t d;
        std::memcpy(&d, first + k * dim_size, sizeof d);
        return d;
    };
    t.shape.resize(p.ndim);
    for (std::size_t k = 0; k < p.ndim; ++k) t.shape[k] = get(k);
    t.original_shape.resize(p.original_ndim);
    for (std::size_t k = 0; k < p.original_ndim; ++k) t.original_shape[k] = get(p.ndim + k);
    t.has_original_shape = p.has_original_shape;
    t.sub_format = p.sub_format;
    t.address = p.address;
    t.offset = p.offset;
    t.size = p.size;
    t.file_offset = p.file_offset;
    t.arg_index = p.arg_index;
    t.input_type = p.input_type;
    if (p.extra)
        for (const Extra& e : *extras_)
            if (e.tensor == at) {
                t.has_original_op = e.has_original_op;
                t.original_op = e.original_op;
                t.dim_range = e.dim_range;
            }
    return t;
}

MappedFilePtr DumpHead::mapping() const {
    static std::mutex locks[64];  // one of these per head, not a mutex each (10^5 heads are held)
    std::mutex& lock = locks[(reinterpret_cast<std::uintptr_t>(this) / alignof(DumpHead)) % 64];
    return map_unchanged(path(), file_size_, lock, mapping_);
}

const std::uint8_t* DumpHead::tensor_bytes(const TensorDesc& t, MappedFilePtr* keep_alive) const {
    std::string err = check_tensor_desc(t);
    if (!err.empty()) throw DumpError(path(), err);
    return bytes_in(path(), t, mapping(), keep_alive);
}

}  // namespace dumpcmp
