// Layout plans: which formats pair with which, shape checks by the spec's formulas, offset tables.
#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

#include "dumpcmp/checked.hpp"
#include "dumpcmp/layout.hpp"
#include "layout_internal.hpp"

namespace dumpcmp {

namespace {

enum class Family { conv4, conv5, matrix };

// Elements and offsets stay far below 2^62 so that sums of table entries cannot overflow.
constexpr std::int64_t kMaxElements = std::int64_t{1} << 60;

std::string fmt_name(Format f) {
    const char* n = format_name(static_cast<std::int32_t>(f));
    return n != nullptr ? n : "format " + std::to_string(static_cast<std::int32_t>(f));
}

std::string shape_str(const std::vector<std::int64_t>& s) {
    std::string out = "(";
    for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
    return out + (s.size() == 1 ? ",)" : ")");
}

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

std::int64_t mul(std::int64_t a, std::int64_t b) {
    if (a != 0 && b > kMaxElements / a) fail("tensor too large: a shape product exceeds 2^60 elements");
    return a * b;
}

std::int64_t product(const std::vector<std::int64_t>& s, std::size_t from = 0, std::size_t to = SIZE_MAX) {
    std::int64_t p = 1;
    for (std::size_t i = from; i < std::min(to, s.size()); ++i) p = mul(p, s[i]);
    return p;
}

void check_dims(const std::vector<std::int64_t>& s, const char* what, Format f) {
    if (s.size() > checked::kMaxDims)
        fail(std::string(what) + " of " + fmt_name(f) + " has " + std::to_string(s.size()) + " dimensions, at most " +
             std::to_string(checked::kMaxDims) + " are supported");
    for (std::int64_t d : s)
        if (d < 0) fail(std::string(what) + " " + shape_str(s) + " of " + fmt_name(f) + " has a negative dimension");
    product(s);
}

const char* letters(Format f) {
    switch (f) {
        case Format::NCHW: return "NCHW";
        case Format::NHWC: return "NHWC";
        case Format::HWCN: return "HWCN";
        case Format::CHWN: return "CHWN";
        case Format::NCDHW: return "NCDHW";
        case Format::NDHWC: return "NDHWC";
        case Format::DHWCN: return "DHWCN";
        default: return nullptr;
    }
}

Family family(Format f) {
    switch (f) {
        case Format::NCHW: case Format::NHWC: case Format::HWCN: case Format::CHWN: case Format::NC1HWC0:
        case Format::NC1HWC0_C04: case Format::FRACTAL_Z: case Format::FRACTAL_Z_C04:
            return Family::conv4;
        case Format::NCDHW: case Format::NDHWC: case Format::DHWCN: case Format::NDC1HWC0: case Format::FRACTAL_Z_3D:
            return Family::conv5;
        default: return Family::matrix;
    }
}

const char* canonical(Family fam) { return fam == Family::conv4 ? "NCHW" : fam == Family::conv5 ? "NCDHW" : nullptr; }

bool is_fractal_z(Format f) { return f == Format::FRACTAL_Z || f == Format::FRACTAL_Z_C04; }

// perm[i] = logical axis (index into the family's canonical letters) of the plain format's axis i.
// ND in a conv family is the canonical order; in the matrix family every axis is its own.
std::vector<int> plain_perm(Format plain, Family fam, std::size_t rank, Format other) {
    const char* canon = canonical(fam);
    const char* own = letters(plain);
    if (fam == Family::matrix) {
        if (own != nullptr && std::strlen(own) != rank)
            fail(fmt_name(plain) + " has " + std::to_string(std::strlen(own)) + " dims, but the " + fmt_name(other) +
                 " tensor's plain shape has " + std::to_string(rank));
        std::vector<int> p(rank);
        std::iota(p.begin(), p.end(), 0);
        return p;
    }
    if (own == nullptr) own = canon;  // ND
    if (family(plain) != fam && plain != Format::ND)
        fail("unsupported conversion between " + fmt_name(plain) + " and " + fmt_name(other) +
             " (different axis families)");
    const std::size_t n = std::strlen(canon);
    if (rank != n)
        fail(fmt_name(plain) + " shape must have " + std::to_string(n) + " dims (" + own + ") to pair with " +
             fmt_name(other) + ", got " + std::to_string(rank));
    std::vector<int> p(n);
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<int>(std::strchr(canon, own[i]) - canon);
    return p;
}

struct GroupPack {
    std::int64_t e = 1, cin_opt = 0, c1 = 0, gp = 1, n1 = 0, cout_g = 0;
};

// The spec's grouped FRACTAL_Z packing; groups = 1 gives the plain FRACTAL_Z numbers.
GroupPack group_pack(std::int64_t n, std::int64_t cin, std::int64_t groups, std::int64_t c0) {
    if (n % groups != 0)
        fail("FRACTAL_Z groups = " + std::to_string(groups) + " does not divide N = " + std::to_string(n) +
             " output channels");
    GroupPack g;
    g.cout_g = n / groups;
    if (cin > 0 && g.cout_g > 0) {
        const std::int64_t a = std::lcm(cin, c0) / cin;
        const std::int64_t b = std::lcm(g.cout_g, std::int64_t{16}) / g.cout_g;
        g.e = std::min(std::lcm(a, b), groups);
    }
    g.cin_opt = ceil_div(mul(g.e, cin), c0) * c0;
    g.c1 = g.cin_opt / c0;
    g.gp = ceil_div(groups, g.e);
    g.n1 = ceil_div(mul(g.e, g.cout_g), 16);
    return g;
}

// Device shape from the logical (canonical-order) plain dims.
std::vector<std::int64_t> device_from_logical(Format dev, const std::vector<std::int64_t>& l, std::int64_t c0,
                                              std::int64_t groups) {
    switch (dev) {
        case Format::NC1HWC0: case Format::NC1HWC0_C04:
            return {l[0], ceil_div(l[1], c0), l[2], l[3], c0};
        case Format::NDC1HWC0:
            return {l[0], l[2], ceil_div(l[1], c0), l[3], l[4], c0};
        case Format::FRACTAL_Z: case Format::FRACTAL_Z_C04: {
            const GroupPack g = group_pack(l[0], l[1], groups, c0);
            return {mul(mul(mul(g.gp, g.c1), l[2]), l[3]), g.n1, 16, c0};
        }
        case Format::FRACTAL_Z_3D:
            return {mul(mul(mul(l[2], ceil_div(l[1], c0)), l[3]), l[4]), ceil_div(l[0], 16), 16, c0};
        case Format::FRACTAL_NZ: {
            if (l.size() == 1) return {ceil_div(l[0], c0), 1, 16, c0};
            std::vector<std::int64_t> s(l.begin(), l.end() - 2);
            const std::int64_t m = l[l.size() - 2], nn = l.back();
            s.insert(s.end(), {ceil_div(nn, c0), ceil_div(m, 16), 16, c0});
            return s;
        }
        default: fail("not a device format: " + fmt_name(dev));
    }
}

std::size_t device_rank(Format dev) {
    switch (dev) {
        case Format::NC1HWC0: case Format::NC1HWC0_C04: return 5;
        case Format::NDC1HWC0: return 6;
        default: return 4;  // fractal formats; FRACTAL_NZ: at least 4
    }
}

void check_device_shape(Format dev, const std::vector<std::int64_t>& s) {
    const std::size_t r = device_rank(dev);
    if (dev == Format::FRACTAL_NZ ? s.size() < r : s.size() != r)
        fail(fmt_name(dev) + " shape must have " + (dev == Format::FRACTAL_NZ ? "at least " : "") + std::to_string(r) +
             " dims, got " + shape_str(s));
    if (s.back() <= 0) fail(fmt_name(dev) + " shape " + shape_str(s) + ": C0 (the last dim) must be positive");
}

// The device shape must be the one the plain dims produce (FRACTAL_NZ: batch dims compared by their product).
void match_device(Format dev, const std::vector<std::int64_t>& dev_shape, const std::vector<std::int64_t>& logical,
                  Format plain, const std::vector<std::int64_t>& plain_shape, std::int64_t groups) {
    const std::int64_t c0 = dev_shape.back();
    const std::vector<std::int64_t> want = device_from_logical(dev, logical, c0, groups);
    bool ok = want == dev_shape;
    if (!ok && dev == Format::FRACTAL_NZ)
        ok = std::equal(want.end() - 4, want.end(), dev_shape.end() - 4) &&
             product(want, 0, want.size() - 4) == product(dev_shape, 0, dev_shape.size() - 4);
    if (!ok)
        fail(fmt_name(dev) + " shape " + shape_str(dev_shape) + " does not hold " + fmt_name(plain) + " " +
             shape_str(plain_shape) + (groups > 1 ? " with groups = " + std::to_string(groups) : "") + ": with C0 = " +
             std::to_string(c0) + " that tensor has the " + fmt_name(dev) + " shape " + shape_str(want));
}

struct LogicalTables {
    std::vector<std::int64_t> strides;              // used where the table is empty
    std::vector<std::vector<std::int64_t>> tables;
    std::vector<std::int64_t> pair;                 // grouped FRACTAL_Z: [n * C + c]
};

std::vector<std::int64_t> split_table(std::int64_t dim, std::int64_t c0, std::int64_t block) {
    std::vector<std::int64_t> t(static_cast<std::size_t>(dim));
    for (std::int64_t c = 0; c < dim; ++c) t[static_cast<std::size_t>(c)] = (c / c0) * block + c % c0;
    return t;
}

LogicalTables device_tables(Format dev, const std::vector<std::int64_t>& ds, const std::vector<std::int64_t>& l,
                            std::int64_t groups) {
    LogicalTables t;
    const std::size_t rank = l.size();
    t.strides.assign(rank, 0);
    t.tables.assign(rank, {});
    const std::int64_t c0 = ds.back();
    switch (dev) {
        case Format::NC1HWC0: case Format::NC1HWC0_C04: {
            const std::int64_t h = l[2], w = l[3], c1 = ds[1];
            t.strides = {c1 * h * w * c0, 0, w * c0, c0};
            t.tables[1] = split_table(l[1], c0, h * w * c0);
            break;
        }
        case Format::NDC1HWC0: {
            const std::int64_t d = l[2], h = l[3], w = l[4], c1 = ds[2];
            t.strides = {d * c1 * h * w * c0, 0, c1 * h * w * c0, w * c0, c0};
            t.tables[1] = split_table(l[1], c0, h * w * c0);
            break;
        }
        case Format::FRACTAL_Z: case Format::FRACTAL_Z_C04: {
            const std::int64_t n = l[0], cin = l[1], h = l[2], w = l[3];
            const std::int64_t row = ds[1] * ds[2] * c0;  // N1 * 16 * C0 elements per fractal row
            t.strides = {c0, 0, w * row, row};
            if (groups <= 1) {
                t.tables[1] = split_table(cin, c0, h * w * row);
                break;
            }
            const GroupPack g = group_pack(n, cin, groups, c0);
            t.strides[0] = 0;
            t.pair.resize(static_cast<std::size_t>(n * cin));
            for (std::int64_t o = 0; o < n; ++o) {
                const std::int64_t grp = o / g.cout_g, co = o % g.cout_g, slot = grp % g.e, pg = grp / g.e;
                const std::int64_t pr = slot * g.cout_g + co;
                for (std::int64_t ci = 0; ci < cin; ++ci) {
                    const std::int64_t pc = slot * cin + ci;
                    t.pair[static_cast<std::size_t>(o * cin + ci)] =
                        (pg * g.c1 + pc / c0) * h * w * row + pr * c0 + pc % c0;
                }
            }
            break;
        }
        case Format::FRACTAL_Z_3D: {
            const std::int64_t h = l[3], w = l[4], c1 = ceil_div(l[1], c0);
            const std::int64_t row = ds[1] * ds[2] * c0;
            t.strides = {c0, 0, c1 * h * w * row, w * row, row};
            t.tables[1] = split_table(l[1], c0, h * w * row);
            break;
        }
        case Format::FRACTAL_NZ: {
            const std::size_t r = ds.size();
            const std::int64_t n1 = ds[r - 4], m1 = ds[r - 3], m0 = ds[r - 2];
            const std::int64_t block = n1 * m1 * m0 * c0;
            t.tables[rank - 1] = split_table(l[rank - 1], c0, m1 * m0 * c0);
            if (rank >= 2) {
                t.strides[rank - 2] = c0;
                std::int64_t s = block;
                for (std::size_t a = rank - 2; a-- > 0;) {
                    t.strides[a] = s;
                    s *= l[a];
                }
            }
            break;
        }
        default: fail("not a device format: " + fmt_name(dev));
    }
    return t;
}

std::vector<std::int64_t> row_major_strides(const std::vector<std::int64_t>& s) {
    std::vector<std::int64_t> st(s.size());
    std::int64_t m = 1;
    for (std::size_t a = s.size(); a-- > 0;) {
        st[a] = m;
        m *= s[a];
    }
    return st;
}

// Contiguous runs on the other side along one axis: the largest L with off(j) = off(j - j % L) + j % L everywhere.
std::int64_t run_length_of(std::int64_t dim, std::int64_t stride, const std::vector<std::int64_t>& table) {
    if (table.empty()) return stride == 1 ? dim : 1;
    std::int64_t l = dim;
    for (std::int64_t j = 1; j < dim; ++j)
        if (table[static_cast<std::size_t>(j)] != table[static_cast<std::size_t>(j - 1)] + 1) {
            l = j;
            break;
        }
    if (l == 1) return 1;
    for (std::int64_t j = 1; j < dim; ++j) {
        const bool step = table[static_cast<std::size_t>(j)] == table[static_cast<std::size_t>(j - 1)] + 1;
        if (step != (j % l != 0)) return 1;
    }
    return l;
}

// Turn the per-axis description into the kernel's working form.
void compile(Plan& p, std::vector<std::int64_t> dims, std::vector<std::int64_t> strides,
             std::vector<std::vector<std::int64_t>> tables, int pa, int pb, std::vector<std::int64_t> pair) {
    auto erase_axis = [&](std::size_t a) {
        dims.erase(dims.begin() + static_cast<std::ptrdiff_t>(a));
        strides.erase(strides.begin() + static_cast<std::ptrdiff_t>(a));
        tables.erase(tables.begin() + static_cast<std::ptrdiff_t>(a));
        if (pa > static_cast<int>(a)) --pa;
        if (pb > static_cast<int>(a)) --pb;
    };
    auto materialise = [&](std::size_t a) {
        if (!tables[a].empty()) return;
        tables[a].resize(static_cast<std::size_t>(dims[a]));
        for (std::int64_t i = 0; i < dims[a]; ++i) tables[a][static_cast<std::size_t>(i)] = i * strides[a];
    };
    // Size-1 axes contribute their only entry, which is 0 by construction.
    for (std::size_t a = dims.size(); a-- > 0;)
        if (dims[a] == 1 && static_cast<int>(a) != pa && static_cast<int>(a) != pb) erase_axis(a);
    if (pa >= 0) {
        const auto ua = static_cast<std::size_t>(pa), ub = static_cast<std::size_t>(pb);
        // Fold the pair into one axis when it is adjacent or one of its axes has a single entry.
        if (dims[ua] == 1 || dims[ub] == 1 || pb == pa + 1) {
            materialise(ua);
            materialise(ub);
            const std::int64_t db = dims[ub];
            std::vector<std::int64_t> merged(pair.size());
            for (std::int64_t i = 0; i < dims[ua]; ++i)
                for (std::int64_t j = 0; j < db; ++j)
                    merged[static_cast<std::size_t>(i * db + j)] = pair[static_cast<std::size_t>(i * db + j)] +
                                                                   tables[ua][static_cast<std::size_t>(i)] +
                                                                   tables[ub][static_cast<std::size_t>(j)];
            const std::size_t keep = dims[ub] == 1 ? ua : ub;
            const std::size_t drop = keep == ua ? ub : ua;
            if (dims[ua] != 1 && dims[ub] != 1) dims[ub] *= dims[ua];
            else dims[keep] = dims[ua] * dims[ub];
            tables[keep] = std::move(merged);
            pa = pb = -1;
            pair.clear();
            erase_axis(drop);
        }
    }
    // Merge neighbours that are one affine axis on the other side too.
    for (std::size_t a = dims.size(); a-- > 1;) {
        const std::size_t o = a - 1;
        const bool pairs = static_cast<int>(a) == pa || static_cast<int>(a) == pb || static_cast<int>(o) == pa ||
                           static_cast<int>(o) == pb;
        if (!pairs && tables[a].empty() && tables[o].empty() && strides[o] == strides[a] * dims[a]) {
            dims[o] *= dims[a];
            strides[o] = strides[a];
            erase_axis(a);
        }
    }
    p.dims = std::move(dims);
    p.strides = std::move(strides);
    p.tables = std::move(tables);
    p.pair_a = pa;
    p.pair_b = pb;
    p.pair_table = std::move(pair);
    p.kernel = 0;
    p.run_length = 1;
    p.tile_rows = 0;
    const std::size_t k = p.dims.size();
    if (k == 0) return;
    const std::size_t q = k - 1;
    if (static_cast<int>(q) == p.pair_b) return;  // the last axis needs the pair table per element
    p.run_length = run_length_of(p.dims[q], p.strides[q], p.tables[q]);
    if (p.run_length >= 2) {
        p.kernel = 1;
        // FRACTAL_NZ <-> ND, NC1HWC0 <-> NHWC: the last axis is runs of L spaced S apart (the table is
        // (j / L) * S + j % L) and the axis before it steps by L, so a block of rows is a transpose of L-element
        // chunks whose device side is contiguous per chunk: copied block by block (tile_rows rows at a time).
        const std::int64_t L = p.run_length, dq = p.dims[q];
        const auto& tq = p.tables[q];
        if (k >= 2 && p.pair_a < 0 && !tq.empty() && dq > L && p.tables[q - 1].empty() && p.strides[q - 1] == L) {
            const std::int64_t S = tq[static_cast<std::size_t>(L)];
            bool affine = tq[0] == 0;
            for (std::int64_t j = 0; j < dq && affine; ++j)
                affine = tq[static_cast<std::size_t>(j)] == (j / L) * S + j % L;
            if (affine) p.tile_rows = 32;
        }
        return;
    }
    if (k >= 2 && p.pair_a < 0) {
        const std::size_t a = q - 1;
        const std::int64_t lp = run_length_of(p.dims[a], p.strides[a], p.tables[a]);
        if (lp >= 2) {
            p.kernel = 2;
            p.tile_rows = lp <= 64 ? lp : 32;
        }
    }
}

}  // namespace

namespace layout_detail {

Padding padding_of(const Plan& p) {
    Padding out;
    if (!p.encode) return out;
    const std::vector<std::int64_t>& ds = p.dst_shape;
    const Format dev = p.dst_format;
    const std::size_t r = ds.size();
    auto whole = [&] {
        ZeroBox b;
        b.lo.assign(r, 0);
        b.hi = ds;
        out.boxes.push_back(std::move(b));
    };
    if (p.groups > 1) {
        whole();
        out.whole_tensor = true;
        return out;
    }
    const Family fam = family(dev);
    std::vector<std::int64_t> logical;
    if (fam == Family::matrix) {
        logical = p.src_shape;
    } else {
        const std::vector<int> perm = plain_perm(p.src_format, fam, p.src_shape.size(), dev);
        logical.resize(perm.size());
        for (std::size_t i = 0; i < perm.size(); ++i) logical[static_cast<std::size_t>(perm[i])] = p.src_shape[i];
    }
    const std::int64_t c0 = ds.back();
    // Indices hi_axis = last and lo_axis >= extent % size are padding when a dim is split into (hi, lo) device axes.
    // `lead` restricts axis `lead_axis` to [lead_lo, lead_hi) (a device axis that fuses several plain ones).
    auto split = [&](std::size_t hi_axis, std::size_t lo_axis, std::int64_t extent, std::int64_t lead_lo = -1,
                     std::int64_t lead_hi = -1, std::size_t lead_axis = 0) {
        const std::int64_t size = ds[lo_axis], rem = extent % size;
        if (rem == 0 || ds[hi_axis] == 0) return;
        ZeroBox b;
        b.lo.assign(r, 0);
        b.hi = ds;
        if (lead_lo >= 0) {
            b.lo[lead_axis] = lead_lo;
            b.hi[lead_axis] = lead_hi;
        } else {
            b.lo[hi_axis] = ds[hi_axis] - 1;
        }
        b.lo[lo_axis] = rem;
        out.boxes.push_back(std::move(b));
    };
    switch (dev) {
        case Format::NC1HWC0: case Format::NC1HWC0_C04:
            split(1, 4, logical[1]);
            break;
        case Format::NDC1HWC0:
            split(2, 5, logical[1]);
            break;
        case Format::FRACTAL_Z: case Format::FRACTAL_Z_C04: {
            // axis 0 is (c1, h, w) fused: the last channel block is its last H*W entries
            const std::int64_t hw = logical[2] * logical[3], c1 = ceil_div(logical[1], c0);
            split(0, 3, logical[1], (c1 - 1) * hw, c1 * hw, 0);
            split(1, 2, logical[0]);
            break;
        }
        case Format::FRACTAL_Z_3D: {
            // axis 0 is (d, c1, h, w) fused: one box per d for the last channel block
            const std::int64_t hw = logical[3] * logical[4], c1 = ceil_div(logical[1], c0);
            for (std::int64_t d = 0; d < logical[2]; ++d)
                split(0, 3, logical[1], (d * c1 + c1 - 1) * hw, (d * c1 + c1) * hw, 0);
            split(1, 2, logical[0]);
            break;
        }
        case Format::FRACTAL_NZ:
            split(r - 4, r - 1, logical.back());
            split(r - 3, r - 2, logical.size() >= 2 ? logical[logical.size() - 2] : 1);
            break;
        default:
            whole();
            out.whole_tensor = true;
    }
    return out;
}

namespace {

// The plain side of a device <-> plain plan in the canonical order N C [D] H W, H*W as one axis s; false when H and
// W are not one axis there (W's stride times W is H's stride in every plain order, checked rather than assumed:
// size-1 axes give any stride).
bool planes_geometry(const Plan& p, PlanesGeometry& g) {
    const Format dev = p.encode ? p.dst_format : p.src_format;
    const Format plain = p.encode ? p.src_format : p.dst_format;
    const std::vector<std::int64_t>& plain_shape = p.encode ? p.src_shape : p.dst_shape;
    if (!is_plain_format(plain)) return false;
    const std::vector<int> perm = plain_perm(plain, family(dev), plain_shape.size(), dev);
    const std::vector<std::int64_t> st = row_major_strides(plain_shape);
    std::vector<std::int64_t> l(perm.size()), ls(perm.size());
    for (std::size_t i = 0; i < perm.size(); ++i) {
        l[static_cast<std::size_t>(perm[i])] = plain_shape[i];
        ls[static_cast<std::size_t>(perm[i])] = st[i];
    }
    const std::size_t r = l.size();
    if (l[r - 1] > 1 && l[r - 2] > 1 && ls[r - 2] != ls[r - 1] * l[r - 1]) return false;
    g.n = l[0];
    g.c = l[1];
    g.d = r == 5 ? l[2] : 1;
    g.hw = l[r - 2] * l[r - 1];
    g.c0 = (p.encode ? p.dst_shape : p.src_shape).back();
    g.c1 = ceil_div(g.c, g.c0);
    g.decode = !p.encode;
    g.sn = ls[0];
    g.sc = ls[1];
    g.sd = r == 5 ? ls[2] : 0;
    g.ss = l[r - 1] > 1 ? ls[r - 1] : ls[r - 2];
    return true;
}

}  // namespace

bool fz_geometry(const Plan& p, FzGeometry& g) {
    const Format dev = p.encode ? p.dst_format : p.src_format;
    if (p.groups > 1 || (dev != Format::FRACTAL_Z && dev != Format::FRACTAL_Z_C04 && dev != Format::FRACTAL_Z_3D) ||
        !planes_geometry(p, g))
        return false;
    const std::vector<std::int64_t>& dev_shape = p.encode ? p.dst_shape : p.src_shape;
    g.np = dev_shape[1] * dev_shape[2];
    return true;
}

bool hd_geometry(const Plan& p, HdGeometry& g) {
    const Format dev = p.encode ? p.dst_format : p.src_format;
    return (dev == Format::NC1HWC0 || dev == Format::NC1HWC0_C04 || dev == Format::NDC1HWC0) && planes_geometry(p, g);
}

}  // namespace layout_detail

bool is_device_format(Format f) noexcept {
    switch (f) {
        case Format::NC1HWC0: case Format::NC1HWC0_C04: case Format::NDC1HWC0: case Format::FRACTAL_Z:
        case Format::FRACTAL_Z_C04: case Format::FRACTAL_Z_3D: case Format::FRACTAL_NZ:
            return true;
        default: return false;
    }
}

bool is_plain_format(Format f) noexcept { return f == Format::ND || letters(f) != nullptr; }

std::vector<std::pair<Format, Format>> supported_pairs() {
    const Format plain[] = {Format::NCHW, Format::NHWC, Format::HWCN, Format::CHWN, Format::NCDHW,
                            Format::NDHWC, Format::DHWCN, Format::ND};
    const Format device[] = {Format::NC1HWC0, Format::NC1HWC0_C04, Format::FRACTAL_Z, Format::FRACTAL_Z_C04,
                             Format::NDC1HWC0, Format::FRACTAL_Z_3D, Format::FRACTAL_NZ};
    auto pairs_with = [](Format a, Format b) {
        // a plain format and a device format or another plain format
        if (a == Format::ND || b == Format::ND) return true;
        const Family fb = family(b);
        return fb == Family::matrix || family(a) == fb;
    };
    std::vector<std::pair<Format, Format>> out;
    for (Format d : device)
        for (Format pl : plain)
            if (pairs_with(pl, d)) out.emplace_back(d, pl);
    for (Format pl : plain)
        for (Format d : device)
            if (pairs_with(pl, d)) out.emplace_back(pl, d);
    for (Format a : plain)
        for (Format b : plain)
            if (a != b && pairs_with(a, b)) out.emplace_back(a, b);
    return out;
}

std::vector<std::int64_t> device_shape(Format device_format, Format plain_format,
                                       const std::vector<std::int64_t>& plain_shape, std::int64_t c0, int groups) {
    if (!is_device_format(device_format)) fail(fmt_name(device_format) + " is not a device format this codec knows");
    if (!is_plain_format(plain_format)) fail(fmt_name(plain_format) + " is not a plain format");
    if (c0 <= 0) fail("C0 must be positive, got " + std::to_string(c0));
    check_dims(plain_shape, "shape", plain_format);
    const Family fam = family(device_format);
    if (fam == Family::matrix && plain_shape.empty()) fail("FRACTAL_NZ needs a plain shape of at least 1 dim");
    const std::vector<int> perm = plain_perm(plain_format, fam, plain_shape.size(), device_format);
    std::vector<std::int64_t> logical(plain_shape.size());
    for (std::size_t i = 0; i < perm.size(); ++i) logical[static_cast<std::size_t>(perm[i])] = plain_shape[i];
    const std::int64_t g = groups <= 1 ? 1 : groups;
    if (g > 1 && !is_fractal_z(device_format))
        fail("groups = " + std::to_string(groups) + " only applies to FRACTAL_Z, not " + fmt_name(device_format));
    return device_from_logical(device_format, logical, c0, g);
}

std::vector<std::int64_t> infer_plain_shape(Format src_format, const std::vector<std::int64_t>& src_shape,
                                            Format dst_format, const std::vector<std::int64_t>& original_shape,
                                            int groups, bool padded, Format original_format) {
    if (!is_plain_format(dst_format)) fail(fmt_name(dst_format) + " is not a plain format to decode into");
    if (original_format == Format::NULL_FORMAT) original_format = dst_format;
    if (!is_plain_format(original_format)) fail("the original shape's format " + fmt_name(original_format) + " is not plain");
    const bool dev = is_device_format(src_format);
    if (!dev && !is_plain_format(src_format)) fail("unsupported source format " + fmt_name(src_format));
    check_dims(src_shape, "shape", src_format);
    check_dims(original_shape, "original shape", original_format);
    const Family fam = family(src_format);

    if (!dev) {
        // plain -> plain: the source shape itself is the original.
        const std::vector<std::int64_t>& from = original_shape.empty() ? src_shape : original_shape;
        const Format ffmt = original_shape.empty() ? src_format : original_format;
        if (ffmt == Format::ND || dst_format == Format::ND || letters(ffmt) == nullptr || letters(dst_format) == nullptr)
            return from;
        if (family(ffmt) != family(dst_format))
            fail("unsupported conversion from " + fmt_name(ffmt) + " to " + fmt_name(dst_format));
        const Family pf = family(dst_format);
        const std::vector<int> pin = plain_perm(ffmt, pf, from.size(), dst_format);
        const std::vector<int> pout = plain_perm(dst_format, pf, from.size(), ffmt);
        std::vector<std::int64_t> logical(from.size()), out(from.size());
        for (std::size_t i = 0; i < pin.size(); ++i) logical[static_cast<std::size_t>(pin[i])] = from[i];
        for (std::size_t i = 0; i < pout.size(); ++i) out[i] = logical[static_cast<std::size_t>(pout[i])];
        return out;
    }

    check_device_shape(src_format, src_shape);
    const std::int64_t c0 = src_shape.back();
    std::vector<std::int64_t> logical;
    if (!original_shape.empty()) {
        if (fam == Family::matrix) {
            logical = original_shape;
        } else {
            const std::vector<int> pin = plain_perm(original_format, fam, original_shape.size(), src_format);
            logical.resize(original_shape.size());
            for (std::size_t i = 0; i < pin.size(); ++i) logical[static_cast<std::size_t>(pin[i])] = original_shape[i];
        }
        // The original shape must be one this device shape can hold (H and W are kept as they are, C and N fit
        // their blocks); a mismatch means a wrong original format or shape, not a tensor to guess at.
        {
            const std::int64_t g = groups <= 1 ? 1 : groups;
            const std::vector<std::int64_t> want = device_from_logical(src_format, logical, c0, g);
            bool ok = want == src_shape;
            if (!ok && src_format == Format::FRACTAL_NZ && want.size() >= 4 && src_shape.size() >= 4)
                ok = std::equal(want.end() - 4, want.end(), src_shape.end() - 4) &&
                     product(want, 0, want.size() - 4) == product(src_shape, 0, src_shape.size() - 4);
            if (!ok)
                fail(fmt_name(src_format) + " shape " + shape_str(src_shape) + " does not hold " +
                     fmt_name(original_format) + " " + shape_str(original_shape) +
                     ": the original shape does not fit the device shape (with C0 = " + std::to_string(c0) +
                     " that tensor has the " + fmt_name(src_format) + " shape " + shape_str(want) + ")");
        }
        if (padded) {
            if (groups > 1) fail("padded output is not defined for grouped FRACTAL_Z (groups are packed)");
            switch (src_format) {
                case Format::NC1HWC0: case Format::NC1HWC0_C04: case Format::NDC1HWC0:
                    logical[1] = ceil_div(logical[1], c0) * c0;
                    break;
                case Format::FRACTAL_Z: case Format::FRACTAL_Z_C04: case Format::FRACTAL_Z_3D:
                    logical[0] = ceil_div(logical[0], 16) * 16;
                    logical[1] = ceil_div(logical[1], c0) * c0;
                    break;
                default: {  // FRACTAL_NZ
                    auto& nn = logical.back();
                    nn = ceil_div(nn, c0) * c0;
                    if (logical.size() >= 2) logical[logical.size() - 2] = ceil_div(logical[logical.size() - 2], 16) * 16;
                    else logical.insert(logical.begin(), 16);
                }
            }
        }
    } else {
        const std::string name = fmt_name(src_format);
        switch (src_format) {
            case Format::NC1HWC0: case Format::NC1HWC0_C04: case Format::NDC1HWC0: {
                const std::size_t ci = src_format == Format::NDC1HWC0 ? 2 : 1;
                if (!padded)
                    fail(name + " pads C to a multiple of C0 = " + std::to_string(c0) +
                         ": the channel count is unknown without the original shape (give original_shape, or ask "
                         "for the padded tensor with C1*C0 = " + std::to_string(src_shape[ci] * c0) + " channels)");
                if (src_format == Format::NDC1HWC0)
                    logical = {src_shape[0], src_shape[2] * c0, src_shape[1], src_shape[3], src_shape[4]};
                else
                    logical = {src_shape[0], src_shape[1] * c0, src_shape[2], src_shape[3]};
                break;
            }
            case Format::FRACTAL_Z: case Format::FRACTAL_Z_C04: case Format::FRACTAL_Z_3D:
                fail(name + " does not hold the kernel's " + (src_format == Format::FRACTAL_Z_3D ? "D, H and W" : "H and W") +
                     " (its first dim " + std::to_string(src_shape[0]) + " is their product with C1): give the "
                     "original shape");
            default: {  // FRACTAL_NZ
                if (!padded)
                    fail("FRACTAL_NZ pads M to a multiple of 16 and N to a multiple of C0 = " + std::to_string(c0) +
                         ": the matrix's M and N are unknown without the original shape (give original_shape, or "
                         "ask for the padded tensor)");
                const std::size_t r = src_shape.size();
                logical.assign(src_shape.begin(), src_shape.end() - 4);
                logical.push_back(src_shape[r - 3] * src_shape[r - 2]);
                logical.push_back(src_shape[r - 4] * c0);
            }
        }
    }
    if (fam == Family::matrix) {
        if (const char* own = letters(dst_format); own != nullptr && std::strlen(own) != logical.size())
            fail("FRACTAL_NZ tensor of plain shape " + shape_str(logical) + " cannot be read as " +
                 fmt_name(dst_format) + " (" + std::to_string(std::strlen(own)) + " dims)");
        return logical;
    }
    const std::vector<int> pout = plain_perm(dst_format, fam, logical.size(), src_format);
    std::vector<std::int64_t> out(logical.size());
    for (std::size_t i = 0; i < pout.size(); ++i) out[i] = logical[static_cast<std::size_t>(pout[i])];
    return out;
}

Plan make_plan(Format src_format, const std::vector<std::int64_t>& src_shape, Format dst_format,
               const std::vector<std::int64_t>& dst_shape, int groups, std::size_t elem_size) {
    if (elem_size != 1 && elem_size != 2 && elem_size != 4 && elem_size != 8)
        fail("element size must be 1, 2, 4 or 8 bytes, got " + std::to_string(elem_size) +
             " (unpack sub-byte types first)");
    const bool sd = is_device_format(src_format), dd = is_device_format(dst_format);
    if (!sd && !is_plain_format(src_format))
        fail("unsupported conversion from " + fmt_name(src_format) + ": no layout codec for that format");
    if (!dd && !is_plain_format(dst_format))
        fail("unsupported conversion to " + fmt_name(dst_format) + ": no layout codec for that format");
    if (sd && dd)
        fail("unsupported conversion from " + fmt_name(src_format) + " to " + fmt_name(dst_format) +
             ": decode to a plain format first");
    check_dims(src_shape, "shape", src_format);
    check_dims(dst_shape, "shape", dst_format);
    const std::int64_t g = groups <= 1 ? 1 : groups;
    if (g > 1 && !is_fractal_z(sd ? src_format : dst_format))
        fail("groups = " + std::to_string(groups) + " only applies to FRACTAL_Z, not " +
             fmt_name(sd ? src_format : dst_format));

    Plan p;
    p.src_format = src_format;
    p.dst_format = dst_format;
    p.src_shape = src_shape;
    p.dst_shape = dst_shape;
    p.elem_size = elem_size;
    p.groups = static_cast<int>(g);
    p.encode = dd;
    p.src_count = static_cast<std::uint64_t>(product(src_shape));
    p.dst_count = static_cast<std::uint64_t>(product(dst_shape));

    if (sd || dd) {
        const Format dev = sd ? src_format : dst_format, plain = sd ? dst_format : src_format;
        const std::vector<std::int64_t>& ds = sd ? src_shape : dst_shape;
        const std::vector<std::int64_t>& ps = sd ? dst_shape : src_shape;
        check_device_shape(dev, ds);
        const Family fam = family(dev);
        if (fam == Family::matrix && ps.empty()) fail("FRACTAL_NZ needs a plain shape of at least 1 dim");
        const std::vector<int> perm = plain_perm(plain, fam, ps.size(), dev);
        std::vector<std::int64_t> logical(ps.size());
        for (std::size_t i = 0; i < perm.size(); ++i) logical[static_cast<std::size_t>(perm[i])] = ps[i];
        match_device(dev, ds, logical, plain, ps, g);
        LogicalTables lt = device_tables(dev, ds, logical, g);
        std::vector<std::int64_t> strides(ps.size());
        std::vector<std::vector<std::int64_t>> tables(ps.size());
        int pa = -1, pb = -1;
        for (std::size_t i = 0; i < perm.size(); ++i) {
            const auto l = static_cast<std::size_t>(perm[i]);
            strides[i] = lt.strides[l];
            tables[i] = std::move(lt.tables[l]);
            if (!lt.pair.empty() && l == 0) pa = static_cast<int>(i);
            if (!lt.pair.empty() && l == 1) pb = static_cast<int>(i);
        }
        std::vector<std::int64_t> pair = std::move(lt.pair);
        if (pa > pb) {
            // the pair table is [n * C + c]; the kernel wants the earlier plain axis first
            const std::int64_t n = logical[0], c = logical[1];
            std::vector<std::int64_t> tr(pair.size());
            for (std::int64_t i = 0; i < n; ++i)
                for (std::int64_t j = 0; j < c; ++j)
                    tr[static_cast<std::size_t>(j * n + i)] = pair[static_cast<std::size_t>(i * c + j)];
            pair = std::move(tr);
            std::swap(pa, pb);
        }
        compile(p, ps, std::move(strides), std::move(tables), pa, pb, std::move(pair));
        return p;
    }

    // plain -> plain
    const bool identity = src_format == Format::ND || dst_format == Format::ND || src_format == dst_format;
    if (identity) {
        if (letters(src_format) != nullptr) plain_perm(src_format, family(src_format), src_shape.size(), dst_format);
        if (letters(dst_format) != nullptr) plain_perm(dst_format, family(dst_format), dst_shape.size(), src_format);
        if (src_shape != dst_shape)
            fail("converting " + fmt_name(src_format) + " to " + fmt_name(dst_format) + " keeps the shape: " +
                 shape_str(src_shape) + " cannot become " + shape_str(dst_shape));
        compile(p, dst_shape, row_major_strides(dst_shape), std::vector<std::vector<std::int64_t>>(dst_shape.size()), -1,
                -1, {});
        return p;
    }
    if (family(src_format) != family(dst_format))
        fail("unsupported conversion from " + fmt_name(src_format) + " to " + fmt_name(dst_format) +
             " (different axis families)");
    const Family fam = family(src_format);
    const std::vector<int> ps = plain_perm(src_format, fam, src_shape.size(), dst_format);
    const std::vector<int> pd = plain_perm(dst_format, fam, dst_shape.size(), src_format);
    std::vector<std::int64_t> logical(src_shape.size()), lstride(src_shape.size());
    const std::vector<std::int64_t> sst = row_major_strides(src_shape);
    for (std::size_t i = 0; i < ps.size(); ++i) {
        logical[static_cast<std::size_t>(ps[i])] = src_shape[i];
        lstride[static_cast<std::size_t>(ps[i])] = sst[i];
    }
    std::vector<std::int64_t> want(dst_shape.size()), strides(dst_shape.size());
    for (std::size_t i = 0; i < pd.size(); ++i) {
        want[i] = logical[static_cast<std::size_t>(pd[i])];
        strides[i] = lstride[static_cast<std::size_t>(pd[i])];
    }
    if (want != dst_shape)
        fail(fmt_name(src_format) + " " + shape_str(src_shape) + " becomes " + fmt_name(dst_format) + " " +
             shape_str(want) + ", not " + shape_str(dst_shape));
    compile(p, dst_shape, std::move(strides), std::vector<std::vector<std::int64_t>>(dst_shape.size()), -1, -1, {});
    return p;
}

}  // namespace dumpcmp
