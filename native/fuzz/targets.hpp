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
#include <functional>
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

// The graph JSON reader's JSON layer: any bytes either give a layout whose every offset lies inside the text and
// whose op arrays read, op by op, into trees whose every index stays inside the tree and every string view inside
// the text or the tree's own arena, or NotJson.
inline void graph_target(const std::uint8_t* data, std::size_t size) {
    using namespace graphjson;
    const std::string_view text = body(reinterpret_cast<const char*>(data), size);
    Layout layout;
    try {
        layout = scan(reinterpret_cast<const char*>(data), size);
    } catch (const NotJson&) {
        return;
    }
    auto inside = [&](std::size_t at) {
        if (at != absent && at >= text.size()) finding("an offset past the text");
    };
    inside(layout.name);
    inside(layout.graph);
    Dom dom;
    Cursor c(text.data(), text.data() + text.size(), dom.arena());
    auto check = [&](std::uint32_t root) {
        if (root >= dom.nodes.size()) finding("a root past the tree");
        for (const Node& n : dom.nodes) {
            const std::size_t width = n.kind == Kind::object ? 2 * std::size_t{n.count} : n.count;
            if ((n.kind == Kind::object || n.kind == Kind::array) &&
                (n.first > dom.kids.size() || width > dom.kids.size() - n.first))
                finding("a node's children past the tree");
            if (n.kind == Kind::string || n.kind == Kind::big) {
                const bool in_text = n.s.data() >= text.data() && n.s.data() + n.s.size() <= text.data() + text.size();
                bool in_arena = false;
                for (const std::string& s : *dom.arena())
                    in_arena = in_arena || (n.s.data() >= s.data() && n.s.data() + n.s.size() <= s.data() + s.size());
                if (!in_text && !in_arena && !n.s.empty()) finding("a string outside the text and the arena");
            }
        }
        for (const std::uint32_t k : dom.kids)
            if (k >= dom.nodes.size()) finding("a child past the tree");
    };
    const int op_depth = layout.graph_kind == '{' ? 3 : 4;  // the 'op' value's level
    // the one-pass reading: every op's tree as checked, and nothing it takes that scan refuses
    struct Checker : Visitor {
        std::function<void(const Dom&, std::uint32_t)> check;
        void op(const Dom& d, std::uint32_t root, std::size_t, std::size_t) override { check(d, root); }
        void graph_done(std::size_t, const std::string*) override {}
    };
    try {
        Checker visitor;
        visitor.check = [&](const Dom& d, std::uint32_t root) {
            if (root >= d.nodes.size()) finding("a root past the tree");
            for (const std::uint32_t k : d.kids)
                if (k >= d.nodes.size()) finding("a child past the tree");
        };
        std::string model;
        walk(reinterpret_cast<const char*>(data), size, visitor, model);
    } catch (const NotJson&) {
        finding("a one-pass reading refused text scan took");
    }
    try {
        for (const GraphSpan& g : layout.graphs) {
            inside(g.at);
            inside(g.name);
            inside(g.op);
            if (g.op == absent) continue;
            c.seek(g.op);
            if (c.peek() != '[') {
                dom.clear();
                check(dom.read(c, op_depth));
                continue;
            }
            c.expect('[');
            if (c.peek() == ']') continue;
            for (;;) {
                dom.clear();
                check(dom.read(c, op_depth + 1));
                if (c.peek() == ']') break;
                c.expect(',');
            }
        }
    } catch (const NotJson&) {
        finding("checked text refused on the second reading");
    }
}

}  // namespace dumpcmp::fuzz
