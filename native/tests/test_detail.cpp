// Detail export without Python, meant to run under AddressSanitizer: row buffers that grow, blocks handed between
// threads, a fractal source, huge values that take the slow formatting path, and the error/cancel clean-up.
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <dirent.h>

#include "dumpcmp/detail.hpp"

using namespace dumpcmp;

#include "check.hpp"

static std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

static std::vector<std::string> listing(const std::string& dir) {
    std::vector<std::string> out;
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') out.emplace_back(e->d_name);
        closedir(d);
    }
    return out;
}

static std::string fixed(double v) {
    char buf[kMaxFixedChars];
    return std::string(buf, format_fixed6(v, buf));
}

int main() {
    char tmpl[] = "/tmp/dumpcmp-detail-test-XXXXXX";
    const std::string dir = mkdtemp(tmpl);

    const std::size_t n = 1000;
    std::vector<float> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) {
        x[i] = static_cast<float>(i) * 0.25f - 100.0f;
        y[i] = static_cast<float>(i % 7) - 3.0f;
    }
    x[3] = std::numeric_limits<float>::max();   // 39 integer digits: the to_chars path
    y[4] = -std::numeric_limits<float>::max();
    y[5] = 1e-45f;                              // relative error beyond float range in double: ~1e47
    x[6] = std::numeric_limits<float>::quiet_NaN();
    TensorSource sx(reinterpret_cast<const std::uint8_t*>(x.data()), DataType::FLOAT, n);
    TensorSource sy(reinterpret_cast<const std::uint8_t*>(y.data()), DataType::FLOAT, n);

    std::string reference;
    for (unsigned threads : {1u, 2u, 3u}) {
        for (std::size_t block : {1u, 7u, 64u, 4096u}) {
            DetailOptions o;
            o.shape = {10, 100};
            o.max_rows = 300;
            for (int k = 0; k < 4; ++k) o.csv_paths.push_back(dir + "/d" + std::to_string(k) + ".csv");
            o.summary_path = dir + "/s.txt";
            o.top_path = dir + "/t.csv";
            o.top_n = 5;
            o.threads = threads;
            o.block_rows = block;
            const DetailResult r = export_detail(sx, sy, o);
            std::string all;
            for (const auto& p : o.csv_paths) all += slurp(p);
            all += slurp(o.summary_path) + slurp(o.top_path);
            if (reference.empty()) reference = all;
            CHECK(all == reference);
            CHECK(r.top_abs.size() == 5 && r.top_abs[0].index == 6);  // NaN first
            CHECK(r.files.size() == 6);
        }
    }
    CHECK(reference.find("\n3,0 3 0 0," + fixed(x[3]) + "\t,") != std::string::npos);  // a TAB after each value, as the original
    CHECK(slurp(dir + "/d0.csv").rfind("Index,N C H W,", 0) == 0);

    // npy columns under several threads
    {
        DetailOptions o;
        o.shape = {n};
        o.format = DetailFormat::npy;
        for (std::size_t c = 0; c < kNpyColumns; ++c) o.npy_paths[c] = dir + "/c" + std::to_string(c) + ".npy";
        o.threads = 2;
        o.block_rows = 33;
        export_detail(sx, sy, o);
        const std::string npu = slurp(o.npy_paths[2]);
        CHECK(npu.size() > n * 4 && (npu.size() - n * 4) % 64 == 0);
        CHECK(std::memcmp(npu.data() + (npu.size() - n * 4), x.data(), n * 4) == 0);
    }
    for (const auto& f : listing(dir)) ::unlink((dir + "/" + f).c_str());

    // cancelled before the first block: nothing is left
    {
        std::atomic<bool> cancel{true};
        DetailOptions o;
        o.shape = {n};
        o.max_rows = 100;
        for (int k = 0; k < 10; ++k) o.csv_paths.push_back(dir + "/e" + std::to_string(k) + ".csv");
        o.summary_path = dir + "/s.txt";
        o.cancel = &cancel;
        o.threads = 2;
        o.block_rows = 10;
        bool cancelled = false;
        try {
            export_detail(sx, sy, o);
        } catch (const DetailCancelled&) {
            cancelled = true;
        }
        CHECK(cancelled);
        CHECK(listing(dir).empty());
    }
    // a path in a missing folder fails at the second file; the first is removed
    {
        DetailOptions o;
        o.shape = {n};
        o.max_rows = 600;
        o.csv_paths = {dir + "/f0.csv", dir + "/missing/f1.csv"};
        o.threads = 2;
        o.block_rows = 50;
        bool failed = false;
        try {
            export_detail(sx, sy, o);
        } catch (const OutputError& e) {
            failed = std::string(e.what()).find("missing/f1.csv") != std::string::npos;
        }
        CHECK(failed);
        CHECK(listing(dir).empty());
    }
    ::rmdir(dir.c_str());
    if (failures == 0) std::printf("test_detail: all checks passed\n");
    return failures == 0 ? 0 : 1;
}
