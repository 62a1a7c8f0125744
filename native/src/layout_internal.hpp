// Between the layout planner (layout.cpp) and the loops (layout_kernels.cpp); not part of the public API.
#pragma once
#include <cstdint>
#include <vector>

#include "dumpcmp/layout.hpp"

namespace dumpcmp::layout_detail {

// A box of device elements: index ranges [lo[a], hi[a]) on every axis of the device shape.
struct ZeroBox {
    std::vector<std::int64_t> lo, hi;
};

// For an encode plan, boxes that together cover every device element no plain element maps to (the padding), and
// nothing else, so they can be zeroed in the same pass as the scatter instead of clearing the whole tensor first.
// Boxes may overlap each other. Grouped FRACTAL_Z gets one box over the whole tensor (its padding is interleaved with
// data in a way boxes do not describe cheaply): that box must be cleared BEFORE the scatter (see whole_tensor).
struct Padding {
    std::vector<ZeroBox> boxes;
    bool whole_tensor = false;
};
Padding padding_of(const Plan& plan);

// A device tensor's plain side in the canonical order N C [D] H W, H*W as one axis s (element strides), and C0.
struct PlanesGeometry {
    std::int64_t n = 0, c = 0, d = 1, hw = 0, c1 = 0, c0 = 0;
    std::int64_t sn = 0, sc = 0, sd = 0, ss = 0;
    bool decode = false;  // device -> plain (the plain side is then cropped to N and C)
};

// FRACTAL_Z, FRACTAL_Z_C04 and FRACTAL_Z_3D without groups, in the plain tensor's own terms:
//   device[((d * c1 + k) * hw + s) * np * c0 + n * c0 + j] = plain[n * sn + (k * c0 + j) * sc + d * sd + s * ss]
// for n < N and k * c0 + j < C, zero otherwise (d < D, s < H*W; D = 1 for the 4-D formats).
struct FzGeometry : PlanesGeometry {
    std::int64_t np = 0;  // N1 * 16
};
// False when the plan does not convert between such a format and a plain one (other formats, grouped FRACTAL_Z).
bool fz_geometry(const Plan& plan, FzGeometry& out);

// Runs such an encode writing the device buffer in its own order, padding included; false (nothing written) when
// the plain order is one it has no fast loop for, so the caller falls back to the generic scatter.
bool fz_encode(const Plan& plan, const FzGeometry& g, const unsigned char* src, unsigned char* dst, unsigned threads);

// Decodes of such tensors far larger than the caches, from planes orders (NCHW, NCDHW) with whole kernels: device
// stretches of a block of kernels staged in L1/L2, transposed there, the plain side written with streaming stores;
// false (nothing written) for other tensors, which the generic walker decodes.
bool fz_decode_stream(const Plan& plan, const FzGeometry& g, const unsigned char* src, unsigned char* dst,
                      unsigned threads);

// NC1HWC0, NC1HWC0_C04 and NDC1HWC0 in the plain tensor's own terms:
//   device[(((n * D + d) * c1 + k) * hw + s) * c0 + j] = plain[n * sn + (k * c0 + j) * sc + d * sd + s * ss]
// for k * c0 + j < C, zero otherwise (D = 1 for the 5-D formats).
using HdGeometry = PlanesGeometry;
bool hd_geometry(const Plan& plan, HdGeometry& out);

// Encodes of such tensors far larger than the caches from planes orders (NCHW, NCDHW: positions contiguous),
// written in device order with streaming stores (layout_5hd.cpp); false (nothing written) for the others.
bool hd_encode_stream(const Plan& plan, const HdGeometry& g, const unsigned char* src, unsigned char* dst,
                      unsigned threads);

// FRACTAL_NZ <-> plain (any plain order: positional, the last two axes are the matrix): per batch, the plain
// (M, N) matrix and the device strips (N1, Mp, C0), Mp = M1 * 16.
struct NzGeometry {
    std::int64_t batches = 1, m = 0, n = 0, n1 = 0, mp = 0, c0 = 0;
    bool decode = false;
};
// False when the plan does not convert between FRACTAL_NZ and a plain format.
bool nz_geometry(const Plan& plan, NzGeometry& out);

// Runs a whole-tensor conversion far larger than the caches with streaming stores (layout_nz.cpp); false (nothing
// written) when the tensor is small, or its pieces or destination are not aligned for that loop.
bool nz_stream(const Plan& plan, const NzGeometry& g, const unsigned char* src, unsigned char* dst, unsigned threads);

}  // namespace dumpcmp::layout_detail
