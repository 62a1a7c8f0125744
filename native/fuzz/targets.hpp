// The bodies of the fuzz targets, shared by the libFuzzer drivers (fuzz_*.cpp, clang only) and the regression test
// (native/tests/test_fuzz_regressions.cpp), which replays every kept input under the sanitizers with any compiler.
// A target returns normally for every input: errors the input causes are exceptions it catches; anything else
// (an out-of-bounds read, an overflow, a division by zero, a wrong round trip) is a finding.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "dumpcmp/checked.hpp"
#include "dumpcmp/dtype.hpp"
#include "dumpcmp/dump.hpp"
#include "dumpcmp/errors.hpp"
#include "dumpcmp/graph_json.hpp"
#include "dumpcmp/layout.hpp"

namespace dumpcmp::fuzz {

[[noreturn]] inline void finding(const char* what) {
    std::fprintf(stderr, "fuzz finding: %s\n", what);
    std::abort();
}

// The dump parser, both ways in: from memory (parse_dump) and from a file (read_dump_header + DumpFile), then every
// tensor's bytes checked and decoded as the comparison would read them.
inline void dump_target(const std::uint8_t* data, std::size_t size) {
    try {
        parse_dump(data, size, "fuzz");
    } catch (const DumpError&) {
    }
    const int fd = ::memfd_create("dumpcmp-fuzz", MFD_CLOEXEC);
    if (fd < 0) return;
    std::size_t done = 0;
    while (done < size) {
        const ssize_t w = ::write(fd, data + done, size - done);
        if (w <= 0) break;
        done += static_cast<std::size_t>(w);
    }
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    try {
        DumpFile file(path);
        for (TensorKind k : {TensorKind::input, TensorKind::output, TensorKind::buffer, TensorKind::workspace}) {
            for (const TensorDesc& t : file.header().tensors(k)) {
                if (!file.check_tensor(t).empty()) continue;
                MappedFilePtr keep;
                const std::uint8_t* p = file.tensor_bytes(t, &keep);
                const DataTypeInfo* info = find_data_type(t.data_type);
                if (info == nullptr || info->repr == Repr::none) continue;
                if (!checked::within(t.file_offset, t.size, file.header().file_size)) finding("tensor past the file");
                const std::uint64_t n = std::min<std::uint64_t>(t.element_count(), 4096);
                std::vector<float> out(static_cast<std::size_t>(n));
                if (n > 0) decode_to_float32(info->type, p, 0, static_cast<std::size_t>(n), out.data());
            }
        }
    } catch (const DumpError&) {
    } catch (const std::invalid_argument&) {
    } catch (const std::out_of_range&) {
    }
    ::close(fd);
}

// The layout codec: a plain shape, a device format and an element size from the input; encode then decode must give
// the plain tensor back, and windows of the decode (decode_range, source_indices) must agree with the whole.
// Then the same device format with a device shape straight from the input (padded decode, odd shapes).
inline void layout_target(const std::uint8_t* data, std::size_t size) {
    if (size < 6) return;
    static const std::vector<std::pair<Format, Format>> pairs = supported_pairs();
    const auto& [from, to] = pairs[data[0] % pairs.size()];
    const Format dev = is_device_format(from) ? from : to;
    const Format plain = is_device_format(from) ? to : from;
    const std::size_t elem = std::size_t{1} << (data[1] % 4);
    const int groups = 1 + data[2] % 4;
    const std::size_t rank = 1 + data[3] % 6;
    const std::int64_t c0s[] = {16, 4, 8, 32};
    const std::int64_t c0 = c0s[data[4] % 4];
    std::size_t at = 5;
    std::vector<std::int64_t> ps;
    for (std::size_t i = 0; i < rank && at < size; ++i) ps.push_back(data[at++] % 24);
    auto small = [](const std::vector<std::int64_t>& s) {
        auto n = checked::product(s);
        return n && *n <= (std::uint64_t{1} << 16);
    };
    try {
        const std::vector<std::int64_t> ds = device_shape(dev, plain, ps, c0, groups);
        if (small(ps) && small(ds)) {
            const Plan enc = make_plan(plain, ps, dev, ds, groups, elem);
            const Plan dec = make_plan(dev, ds, plain, ps, groups, elem);
            std::vector<std::uint8_t> src(enc.src_count * elem), mid(enc.dst_count * elem, 0xAB),
                back(dec.dst_count * elem);
            for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<std::uint8_t>(i * 7 + 1);
            convert(enc, src.data(), mid.data(), 1);
            convert(dec, mid.data(), back.data(), 1);
            if (back != src) finding("encode then decode does not give the tensor back");
            if (dec.dst_count > 0 && at + 2 <= size) {
                const std::uint64_t first = data[at] % dec.dst_count;
                const std::uint64_t count = std::min<std::uint64_t>(data[at + 1], dec.dst_count - first);
                std::vector<std::uint8_t> win(count * elem);
                decode_range(dec, mid.data(), first, count, win.data());
                if (count > 0 && std::memcmp(win.data(), back.data() + first * elem, count * elem) != 0)
                    finding("decode_range differs from the whole decode");
                std::vector<std::uint64_t> idx(count);
                source_indices(dec, first, count, idx.data());
                for (std::uint64_t i = 0; i < count; ++i)
                    if (idx[i] >= dec.src_count) finding("source index past the device buffer");
            }
        }
    } catch (const std::invalid_argument&) {
    } catch (const std::out_of_range&) {
    }
    // an arbitrary device shape, decoded padded
    std::vector<std::int64_t> ds;
    while (at < size && ds.size() < 7) ds.push_back(data[at++] % 34);
    try {
        const std::vector<std::int64_t> out = infer_plain_shape(dev, ds, plain, {}, groups, true);
        if (small(ds) && small(out)) {
            const Plan dec = make_plan(dev, ds, plain, out, groups, elem);
            std::vector<std::uint8_t> src(dec.src_count * elem, 1), dst(dec.dst_count * elem);
            convert(dec, src.data(), dst.data(), 1);
        }
    } catch (const std::invalid_argument&) {
    } catch (const std::out_of_range&) {
    }
}

// The graph JSON reader: any bytes either give ops whose every view lies inside the text (or is a decoded escape) and
// whose every index stays inside its pool, or NotCanonical; attribute values kept as text are valid JSON (skipped
// again by a cursor over that text alone).
inline void graph_target(const std::uint8_t* data, std::size_t size) {
    using namespace graphjson;
    const char* text = reinterpret_cast<const char*>(data);
    struct Check : Sink {
        const char* text;
        std::size_t size;
        void view(std::string_view v) const {
            // a view into the text, or into the reader's own copy of a string with escapes (owned elsewhere)
            if (v.data() >= text && v.data() <= text + size && v.data() + v.size() > text + size)
                finding("a view past the end of the text");
        }
        static void range(std::size_t first, std::size_t count, std::size_t size_of) {
            if (first > size_of || count > size_of - first) finding("an index past its pool");
        }
        void op(const Op& o, const Pools& p) override {
            view(o.name);
            view(o.type);
            if (o.name.empty()) finding("an op without a name");
            range(o.inputs_first, o.inputs_count, p.inputs.size());
            range(o.attrs_first, o.attrs_count, p.attrs.size());
            range(o.in_first, o.in_count, p.descs.size());
            range(o.out_first, o.out_count, p.descs.size());
            for (const Input& in : p.inputs) {
                view(in.text);
                view(in.producer);
            }
            for (const Desc& d : p.descs) {
                view(d.dtype);
                view(d.layout);
                if (d.has_shape) range(d.dims_first, d.dims_count, p.ints.size());
                range(d.attrs_first, d.attrs_count, p.attrs.size());
            }
            for (const std::string_view s : p.strs) view(s);
            for (const Attr& a : p.attrs) {
                view(a.key);
                view(a.s);
                switch (a.kind) {
                    case AttrKind::list_str: range(a.first, a.count, p.strs.size()); break;
                    case AttrKind::list_int:
                    case AttrKind::list_bool: range(a.first, a.count, p.ints.size()); break;
                    case AttrKind::list_real: range(a.first, a.count, p.reals.size()); break;
                    case AttrKind::value:
                    case AttrKind::list_value: {
                        if (a.begin > a.end || a.end > size) finding("an attribute value past the text");
                        // offsets count from after a byte-order mark
                        const std::size_t bom = size >= 3 && std::memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
                        std::deque<std::string> arena;
                        Cursor c(text + bom + a.begin, text + bom + a.end, &arena);
                        try {
                            c.skip(1);
                            if (!c.at_end()) finding("an attribute value's text holds more than the value");
                        } catch (const NotCanonical&) {
                            finding("an attribute value's text is not valid JSON");
                        }
                        break;
                    }
                    default: break;
                }
            }
        }
        void graph_done(std::size_t, const std::string&) override {}
    } check;
    check.text = text;
    check.size = size;
    try {
        read_graph(text, size, check);
    } catch (const NotCanonical&) {
    }
}

}  // namespace dumpcmp::fuzz
