// Layout codec without Python, meant to run under AddressSanitizer: round trips from unaligned buffers sized exactly,
// positions checked against the spec's formulas, windows, and bad input that must throw instead of reading past ends.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <vector>

#include "dumpcmp/layout.hpp"

using dumpcmp::Format;
using Shape = std::vector<std::int64_t>;

#include "check.hpp"

static std::int64_t count(const Shape& s) {
    std::int64_t n = 1;
    for (auto d : s) n *= d;
    return n;
}
static std::int64_t cdiv(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

template <class Fn>
static bool throws(Fn fn) {
    try {
        fn();
    } catch (const std::invalid_argument&) {
        return true;
    } catch (const std::out_of_range&) {
        return true;
    }
    return false;
}

// Heap buffers of exactly n elements starting one byte past an allocation, so ASan sees any overrun and every access
// is unaligned.
struct Buf {
    std::vector<unsigned char> store;
    unsigned char* p;
    // offset 1: every access unaligned; 16: aligned for the streaming loops (the buffer still ends exactly)
    explicit Buf(std::size_t bytes, std::size_t offset = 1) : store(bytes + offset), p(store.data() + offset) {}
};

// Expected device offset of NCHW element (n, c, h, w): the spec's formulas written out directly.
static std::int64_t fz_offset(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, const Shape& nchw,
                              std::int64_t c0) {
    const std::int64_t H = nchw[2], W = nchw[3], N1 = cdiv(nchw[0], 16);
    const std::int64_t row = (c / c0) * H * W + h * W + w;
    return ((row * N1 + n / 16) * 16 + n % 16) * c0 + c % c0;
}
static std::int64_t hd5_offset(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w, const Shape& nchw,
                               std::int64_t c0) {
    const std::int64_t C1 = cdiv(nchw[1], c0), H = nchw[2], W = nchw[3];
    return (((n * C1 + c / c0) * H + h) * W + w) * c0 + c % c0;
}

template <class T>
static void check_4d(Format dev, const Shape& nchw, std::int64_t c0,
                     const std::function<std::int64_t(std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                                                      const Shape&, std::int64_t)>& expect) {
    const Shape ds = dumpcmp::device_shape(dev, Format::NCHW, nchw, c0, 1);
    const std::size_t np = static_cast<std::size_t>(count(nchw)), nd = static_cast<std::size_t>(count(ds));
    Buf plain(np * sizeof(T)), device(nd * sizeof(T)), back(np * sizeof(T));
    for (std::size_t i = 0; i < np; ++i) {
        const T v = static_cast<T>(i % 250 + 1);
        std::memcpy(plain.p + i * sizeof(T), &v, sizeof(T));
    }
    std::memset(device.p, 0xAB, nd * sizeof(T));  // encode must overwrite the padding with zeros
    const auto enc = dumpcmp::make_plan(Format::NCHW, nchw, dev, ds, 1, sizeof(T));
    dumpcmp::convert(enc, plain.p, device.p, 2);
    std::size_t i = 0, nonzero = 0;
    for (std::int64_t n = 0; n < nchw[0]; ++n)
        for (std::int64_t c = 0; c < nchw[1]; ++c)
            for (std::int64_t h = 0; h < nchw[2]; ++h)
                for (std::int64_t w = 0; w < nchw[3]; ++w, ++i) {
                    T got;
                    std::memcpy(&got, device.p + static_cast<std::size_t>(expect(n, c, h, w, nchw, c0)) * sizeof(T),
                                sizeof(T));
                    CHECK(got == static_cast<T>(i % 250 + 1));
                }
    for (std::size_t k = 0; k < nd; ++k) {
        T v;
        std::memcpy(&v, device.p + k * sizeof(T), sizeof(T));
        nonzero += v != 0;
    }
    CHECK(nonzero == np);
    const auto dec = dumpcmp::make_plan(dev, ds, Format::NCHW, nchw, 1, sizeof(T));
    dumpcmp::convert(dec, device.p, back.p, 2);
    CHECK(std::memcmp(back.p, plain.p, np * sizeof(T)) == 0);
    // windows and source indices against the full decode
    std::vector<std::uint64_t> idx(np);
    dumpcmp::source_indices(dec, 0, np, idx.data());
    for (std::size_t k = 0; k < np; ++k)
        CHECK(std::memcmp(device.p + idx[k] * sizeof(T), plain.p + k * sizeof(T), sizeof(T)) == 0);
    for (std::uint64_t first : {std::uint64_t{0}, std::uint64_t{1}, np / 3, np - 1}) {
        const std::uint64_t cnt = np - first;
        Buf win(cnt * sizeof(T));
        dumpcmp::decode_range(dec, device.p, first, cnt, win.p);
        CHECK(std::memcmp(win.p, plain.p + first * sizeof(T), cnt * sizeof(T)) == 0);
    }
    CHECK(throws([&] { dumpcmp::decode_range(dec, device.p, np - 1, 2, back.p); }));
    CHECK(throws([&] { dumpcmp::decode_range(enc, plain.p, 0, 1, back.p); }));
}

// FRACTAL_Z from NHWC and FRACTAL_Z_3D from NCDHW / NDHWC (the device-order encodes' other plain orders): every
// element against the spec's formula from unaligned, exactly sized buffers, padding overwritten with zeros.
template <class T>
static void check_fz_orders(const Shape& ncdhw, std::int64_t c0, unsigned threads) {
    const std::int64_t N = ncdhw[0], C = ncdhw[1], D = ncdhw[2], H = ncdhw[3], W = ncdhw[4];
    const std::int64_t C1 = cdiv(C, c0), N1 = cdiv(N, 16);
    const auto np = static_cast<std::size_t>(count(ncdhw));
    for (Format plain : {Format::NCDHW, Format::NDHWC, Format::NHWC}) {
        const bool is4 = plain == Format::NHWC;
        if (is4 && D != 1) continue;
        const Shape ps = plain == Format::NCDHW ? ncdhw : is4 ? Shape{N, H, W, C} : Shape{N, D, H, W, C};
        const Format dev = is4 ? Format::FRACTAL_Z : Format::FRACTAL_Z_3D;
        const Shape ds = dumpcmp::device_shape(dev, plain, ps, c0, 1);
        const auto nd = static_cast<std::size_t>(count(ds));
        Buf src(np * sizeof(T)), out(nd * sizeof(T));
        // value of (n, c, d, h, w) = its NCDHW index + 1, stored at its place in the plain order
        auto plain_at = [&](std::int64_t n, std::int64_t c, std::int64_t d, std::int64_t h, std::int64_t w) {
            if (plain == Format::NCDHW) return (((n * C + c) * D + d) * H + h) * W + w;
            return (((n * D + d) * H + h) * W + w) * C + c;
        };
        for (std::int64_t n = 0, i = 0; n < N; ++n)
            for (std::int64_t c = 0; c < C; ++c)
                for (std::int64_t d = 0; d < D; ++d)
                    for (std::int64_t h = 0; h < H; ++h)
                        for (std::int64_t w = 0; w < W; ++w, ++i) {
                            const T v = static_cast<T>(i % 250 + 1);
                            std::memcpy(src.p + static_cast<std::size_t>(plain_at(n, c, d, h, w)) * sizeof(T), &v,
                                        sizeof(T));
                        }
        std::memset(out.p, 0xFF, nd * sizeof(T));
        dumpcmp::convert(dumpcmp::make_plan(plain, ps, dev, ds, 1, sizeof(T)), src.p, out.p, threads);
        std::size_t bad = 0;
        for (std::int64_t row = 0; row < D * C1 * H * W; ++row)
            for (std::int64_t n = 0; n < N1 * 16; ++n)
                for (std::int64_t j = 0; j < c0; ++j) {
                    const std::int64_t d = row / (C1 * H * W), k = row / (H * W) % C1, s = row % (H * W);
                    const std::int64_t c = k * c0 + j;
                    T want = 0;
                    if (n < N && c < C) want = static_cast<T>(((((n * C + c) * D + d) * H * W + s) % 250) + 1);
                    T got;
                    std::memcpy(&got, out.p + static_cast<std::size_t>((row * N1 * 16 + n) * c0 + j) * sizeof(T),
                                sizeof(T));
                    bad += got != want;
                }
        CHECK(bad == 0);
    }
}

static void check_nz() {
    const Shape nd{3, 37, 21};
    const std::int64_t c0 = 8;
    const Shape ds = dumpcmp::device_shape(Format::FRACTAL_NZ, Format::ND, nd, c0, 1);
    CHECK((ds == Shape{3, 3, 3, 16, 8}));
    const auto np = static_cast<std::size_t>(count(nd)), ndev = static_cast<std::size_t>(count(ds));
    Buf plain(np * 2), dev(ndev * 2), back(np * 2);
    for (std::size_t i = 0; i < np; ++i) {
        const auto v = static_cast<std::uint16_t>(i + 1);
        std::memcpy(plain.p + 2 * i, &v, 2);
    }
    dumpcmp::convert(dumpcmp::make_plan(Format::ND, nd, Format::FRACTAL_NZ, ds, 1, 2), plain.p, dev.p, 1);
    std::size_t i = 0;
    for (std::int64_t b = 0; b < 3; ++b)
        for (std::int64_t m = 0; m < 37; ++m)
            for (std::int64_t n = 0; n < 21; ++n, ++i) {
                const std::int64_t o = (((b * 3 + n / c0) * 3 + m / 16) * 16 + m % 16) * c0 + n % c0;
                std::uint16_t got;
                std::memcpy(&got, dev.p + 2 * o, 2);
                CHECK(got == i + 1);
            }
    dumpcmp::convert(dumpcmp::make_plan(Format::FRACTAL_NZ, ds, Format::ND, nd, 1, 2), dev.p, back.p, 1);
    CHECK(std::memcmp(back.p, plain.p, np * 2) == 0);
}

// Whole conversions of 64 MiB and more take the device-order streaming loops (layout_nz.cpp, layout_fz.cpp,
// layout_5hd.cpp): round trips from buffers that end exactly where the tensors do, every 997th element placed as
// the spec's formula says, padding read back as zeros.
static void check_streaming(Format dev, const Shape& plain, std::int64_t c0, std::size_t offset,
                            const std::function<std::int64_t(const Shape&, std::int64_t)>& expect) {
    const Format pf = dev == Format::FRACTAL_NZ ? Format::ND : Format::NCHW;
    const Shape ds = dumpcmp::device_shape(dev, pf, plain, c0, 1);
    const auto np = static_cast<std::size_t>(count(plain)), ndev = static_cast<std::size_t>(count(ds));
    CHECK(np * 2 >= (std::size_t{64} << 20));
    Buf src(np * 2, offset), devb(ndev * 2, offset), back(np * 2, offset);
    for (std::size_t i = 0; i < np; ++i) {
        const auto v = static_cast<std::uint16_t>(i % 65521 + 1);
        std::memcpy(src.p + 2 * i, &v, 2);
    }
    std::memset(devb.p, 0xFF, ndev * 2);
    dumpcmp::convert(dumpcmp::make_plan(pf, plain, dev, ds, 1, 2), src.p, devb.p, 2);
    std::size_t nonzero = 0;
    for (std::size_t o = 0; o < ndev; ++o) nonzero += devb.p[2 * o] != 0 || devb.p[2 * o + 1] != 0;
    CHECK(nonzero == np);  // every element placed once, every padding element zero (values are never 0)
    for (std::size_t i = 0; i < np; i += 997) {
        std::uint16_t got;
        std::memcpy(&got, devb.p + 2 * static_cast<std::size_t>(expect(plain, static_cast<std::int64_t>(i))), 2);
        CHECK(got == i % 65521 + 1);
    }
    dumpcmp::convert(dumpcmp::make_plan(dev, ds, pf, plain, 1, 2), devb.p, back.p, 2);
    CHECK(std::memcmp(back.p, src.p, np * 2) == 0);
}

static void check_errors() {
    using dumpcmp::make_plan;
    CHECK(throws([] { make_plan(Format::NC1HWC0, {1, 2, 5, 5, 16}, Format::NCHW, {1, 40, 5, 5}, 1, 2); }));
    CHECK(throws([] { make_plan(Format::NC1HWC0, {1, 2, 5, 16}, Format::NCHW, {1, 20, 5, 5}, 1, 2); }));
    CHECK(throws([] { make_plan(Format::NC1HWC0, {1, 2, 5, 5, 0}, Format::NCHW, {1, 0, 5, 5}, 1, 2); }));
    CHECK(throws([] { make_plan(Format::NC1HWC0, {1, 2, 5, 5, 16}, Format::FRACTAL_Z, {50, 1, 16, 16}, 1, 2); }));
    CHECK(throws([] { make_plan(Format::NC1HWC0, {1, 2, 5, 5, 16}, Format::NCDHW, {1, 20, 1, 5, 5}, 1, 2); }));
    CHECK(throws([] { make_plan(Format::NCHW, {6, 2, 3, 3}, Format::FRACTAL_Z, {9, 1, 16, 16}, 4, 2); }));
    CHECK(throws([] { make_plan(Format::NCHW, {6, 2, 3, 3}, Format::NC1HWC0, {6, 1, 3, 3, 16}, 2, 2); }));
    CHECK(throws([] { make_plan(Format::NCHW, {6, 2, 3, 3}, Format::NC1HWC0, {6, 1, 3, 3, 16}, 1, 3); }));
    CHECK(throws([] { make_plan(Format::NCHW, {-6, 2, 3, 3}, Format::NHWC, {-6, 3, 3, 2}, 1, 2); }));
    CHECK(throws([] { make_plan(Format::NCHW, {1 << 30, 1 << 30, 1 << 30, 1}, Format::NHWC, {1, 1, 1, 1}, 1, 2); }));
    CHECK(throws([] { make_plan(Format::FRACTAL_DECONV, {1, 1, 16, 16}, Format::NCHW, {1, 1, 1, 1}, 1, 2); }));
    CHECK(throws([] {
        dumpcmp::infer_plain_shape(Format::FRACTAL_Z, {9, 1, 16, 16}, Format::NCHW, {}, 1, true);
    }));
    CHECK(throws([] { dumpcmp::infer_plain_shape(Format::FRACTAL_NZ, {2, 2, 16, 16}, Format::ND, {}, 1, false); }));
    CHECK((dumpcmp::infer_plain_shape(Format::FRACTAL_NZ, {2, 2, 16, 16}, Format::ND, {}, 1, true) == Shape{32, 32}));
    CHECK((dumpcmp::infer_plain_shape(Format::NC1HWC0, {1, 2, 5, 6, 16}, Format::NHWC, {1, 20, 5, 6}, 1, false,
                                      Format::NCHW) == Shape{1, 5, 6, 20}));
}

int main() {
    check_4d<std::uint8_t>(Format::NC1HWC0, {2, 37, 5, 3}, 32, hd5_offset);
    check_4d<std::uint16_t>(Format::NC1HWC0, {3, 21, 19, 23}, 16, hd5_offset);
    check_4d<std::uint32_t>(Format::NC1HWC0_C04, {2, 3, 7, 9}, 4, hd5_offset);
    check_4d<std::uint64_t>(Format::NC1HWC0, {1, 9, 4, 4}, 8, hd5_offset);
    check_4d<std::uint16_t>(Format::FRACTAL_Z, {33, 21, 3, 3}, 16, fz_offset);
    check_4d<std::uint32_t>(Format::FRACTAL_Z, {5, 70, 2, 1}, 64, fz_offset);
    check_4d<std::uint8_t>(Format::FRACTAL_Z_C04, {17, 3, 5, 5}, 4, fz_offset);
    check_4d<std::uint64_t>(Format::FRACTAL_Z, {16, 16, 1, 1}, 16, fz_offset);
    // staged FRACTAL_Z tiles (many kernels, whole and partial C0 blocks), and one large enough for two threads
    check_4d<std::uint16_t>(Format::FRACTAL_Z, {80, 48, 3, 3}, 16, fz_offset);
    check_4d<std::uint32_t>(Format::FRACTAL_Z, {70, 37, 2, 5}, 16, fz_offset);
    check_4d<std::uint8_t>(Format::FRACTAL_Z, {64, 32, 7, 7}, 16, fz_offset);
    check_4d<std::uint32_t>(Format::FRACTAL_Z, {512, 160, 3, 3}, 16, fz_offset);
    // device-order encodes: register tiles whose last one overlaps (H*W = 9, 35), partial channel blocks, odd N,
    // H*W split into blocks (49 -> 25 + 24), below one tile (2), C0 = 8 and 32; two threads over several items
    check_4d<std::uint32_t>(Format::FRACTAL_Z, {19, 32, 3, 3}, 16, fz_offset);
    check_4d<std::uint16_t>(Format::FRACTAL_Z, {40, 35, 5, 7}, 16, fz_offset);
    check_4d<std::uint64_t>(Format::FRACTAL_Z, {21, 19, 7, 7}, 8, fz_offset);
    check_4d<std::uint16_t>(Format::FRACTAL_Z, {7, 70, 1, 2}, 32, fz_offset);
    check_4d<std::uint32_t>(Format::FRACTAL_Z, {700, 40, 5, 5}, 16, fz_offset);
    check_fz_orders<std::uint16_t>({19, 37, 1, 3, 3}, 16, 1);
    check_fz_orders<std::uint32_t>({33, 5, 2, 3, 5}, 4, 1);
    check_fz_orders<std::uint8_t>({17, 40, 1, 7, 7}, 32, 2);
    check_fz_orders<std::uint64_t>({3, 9, 3, 2, 2}, 8, 2);
    check_fz_orders<std::uint32_t>({600, 40, 1, 5, 5}, 16, 2);
    check_nz();
    // flat element i of the plain tensor -> its device offset, by the spec's formulas
    auto unflat4 = [](const Shape& s, std::int64_t i, std::int64_t& n, std::int64_t& c, std::int64_t& h,
                      std::int64_t& w) {
        w = i % s[3];
        h = i / s[3] % s[2];
        c = i / (s[3] * s[2]) % s[1];
        n = i / (s[3] * s[2] * s[1]);
    };
    check_streaming(Format::FRACTAL_Z, {200, 19000, 3, 3}, 16, 1, [&](const Shape& s, std::int64_t i) {
        std::int64_t n, c, h, w;
        unflat4(s, i, n, c, h, w);
        return fz_offset(n, c, h, w, s, 16);
    });
    check_streaming(Format::NC1HWC0, {4, 150, 240, 250}, 16, 1, [&](const Shape& s, std::int64_t i) {
        std::int64_t n, c, h, w;
        unflat4(s, i, n, c, h, w);
        return hd5_offset(n, c, h, w, s, 16);
    });
    check_streaming(Format::FRACTAL_NZ, {8, 1000, 4224}, 16, 16, [](const Shape& s, std::int64_t i) {
        const std::int64_t nn = i % s[2], m = i / s[2] % s[1], b = i / (s[2] * s[1]);
        const std::int64_t n1 = cdiv(s[2], 16), m1 = cdiv(s[1], 16);
        return (((b * n1 + nn / 16) * m1 + m / 16) * 16 + m % 16) * 16 + nn % 16;
    });
    check_errors();
    if (failures != 0) {
        std::fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    std::puts("test_layout: all checks passed");
    return 0;
}
