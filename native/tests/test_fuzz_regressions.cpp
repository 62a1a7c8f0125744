// Every input the fuzzers keep (native/fuzz/corpus: the seeds; native/fuzz/regressions: each input that ever crashed
// a target, named after what it found) replayed through the fuzz targets, under the sanitizers in CI, with any
// compiler. A target aborts on a finding; the sanitizers report the rest.
#include <dirent.h>

#include <fstream>
#include <iterator>

#include "../fuzz/targets.hpp"
#include "check.hpp"

namespace {

using namespace dumpcmp;

std::vector<std::string> files_in(const std::string& dir) {
    std::vector<std::string> out;
    if (DIR* d = ::opendir(dir.c_str())) {
        while (dirent* e = ::readdir(d))
            if (e->d_name[0] != '.') out.push_back(dir + "/" + e->d_name);
        ::closedir(d);
    }
    return out;
}

std::vector<std::uint8_t> read_all(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// A current-format dump of one output tensor with the given dtype and dims, no data (the issue's [2**62, 2]).
std::vector<std::uint8_t> dump_of(std::int32_t dtype, const std::vector<std::uint64_t>& dims, std::uint64_t size) {
    DumpHeader h;
    TensorDesc t;
    t.data_type = dtype;
    t.format = 2;
    for (auto d : dims) t.shape.push_back(static_cast<std::int64_t>(d));
    t.size = size;
    h.outputs.push_back(t);
    const std::string head = serialize_header(h);
    std::vector<std::uint8_t> out(8 + head.size() + size, 0);
    for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(head.size() >> (8 * i));
    std::memcpy(out.data() + 8, head.data(), head.size());
    return out;
}

}  // namespace

int main() {
    const std::string root = DUMPCMP_FUZZ_DIR;
    int replayed = 0;
    for (const char* target : {"dump", "layout", "graph"}) {
        for (const char* kind : {"/corpus/", "/regressions/"}) {
            for (const std::string& path : files_in(root + kind + target)) {
                const std::vector<std::uint8_t> bytes = read_all(path);
                if (std::string(target) == "dump") fuzz::dump_target(bytes.data(), bytes.size());
                else if (std::string(target) == "graph") fuzz::graph_target(bytes.data(), bytes.size());
                else fuzz::layout_target(bytes.data(), bytes.size());
                ++replayed;
            }
        }
    }
    CHECK(replayed >= 10);

    // The crashes, built here as well: an element count whose byte size wraps to 0, 70 dimensions.
    for (std::int32_t dtype : {1, 3, 0, 29}) {
        auto d = dump_of(dtype, {std::uint64_t{1} << 62, 2}, 0);
        fuzz::dump_target(d.data(), d.size());
        DumpHeader h = parse_dump(d.data(), d.size(), "x");
        DumpFile f("x", h);
        CHECK(!f.check_tensor(h.outputs[0]).empty());
    }
    {
        auto d = dump_of(1, std::vector<std::uint64_t>(70, 1), 4);  // FLOAT, one element: refused by the reader
        bool refused = false;
        try {
            parse_dump(d.data(), d.size(), "x");
        } catch (const DumpError& e) {
            refused = std::string(e.what()).find("more than 64 dimensions") != std::string::npos;
        }
        CHECK(refused);
        auto ok = dump_of(1, std::vector<std::uint64_t>(64, 1), 4);  // at the limit: read
        DumpHeader h = parse_dump(ok.data(), ok.size(), "x");
        CHECK(DumpFile("x", h).check_tensor(h.outputs[0]).empty());
        h.outputs[0].shape.assign(70, 1);  // a header built in memory: the tensor check still refuses it
        CHECK(DumpFile("x", h).check_tensor(h.outputs[0]).find("at most 64") != std::string::npos);
    }
    // zero-size dimensions: plans and conversions are no-ops, never a division by zero
    {
        const Plan p = make_plan(Format::ND, {8, 14, 16, 0}, Format::NCHW, {8, 14, 16, 0}, 1, 4);
        convert(p, nullptr, nullptr, 1);
        decode_range(p, nullptr, 0, 0, nullptr);
        CHECK(p.dst_count == 0);
        const Plan q = make_plan(Format::NC1HWC0, {1, 0, 2, 2, 16}, Format::NCHW, {1, 0, 2, 2}, 1, 2);
        convert(q, nullptr, nullptr, 1);
        CHECK(q.src_count == 0);
    }
    CHECK(storage_bytes(data_type_info(DataType::INT32), std::uint64_t{1} << 63) == checked::kOverflow);
    std::printf("%d kept inputs replayed\n", replayed);
    return failures;
}
