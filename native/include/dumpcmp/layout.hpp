// Device tensor layouts (docs/formats.md#layouts): decode device -> plain, encode plain -> device, plain permutations.
//
// A conversion is compiled once into a Plan and then run on any number of buffers. The plan walks the PLAIN side
// (the decoded tensor, or the plain tensor being encoded) in row-major order; for every plain element it knows the
// element offset on the other side as a sum of one table entry per plain axis (plus, for grouped FRACTAL_Z, one entry
// of a table indexed by the N and C axes together). Decoding gathers through the tables, encoding scatters through
// the same tables into a zero-filled device buffer, so padding comes out as zeros and is cropped on the way back.
//
// Element size is all the codec knows of a data type (1, 2, 4 or 8 bytes); packed sub-byte types are unpacked by the
// caller first, or decoded element by element through source_indices(). Buffers may be unaligned (mapped dumps).
//
// Formats:
//   plain, 4-D: NCHW NHWC HWCN CHWN        device, 4-D: NC1HWC0 NC1HWC0_C04 FRACTAL_Z FRACTAL_Z_C04
//   plain, 5-D: NCDHW NDHWC DHWCN          device, 5-D: NDC1HWC0 FRACTAL_Z_3D
//   ND (any rank)                          device, matrices: FRACTAL_NZ
// A device format converts to and from every plain format of its family; ND stands for the family's canonical order
// (NCHW, NCDHW). FRACTAL_NZ keeps the framework's axis order, so it pairs with ND and with every plain format whose
// rank matches the shape (no axis is moved). Plain formats convert among their family; ND <-> a plain format is the
// identity (same shape). C0 is the device shape's last dimension; N0 (FRACTAL_Z*) and M0 (FRACTAL_NZ) are 16.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "dumpcmp/format.hpp"

namespace dumpcmp {

// A compiled conversion. Build with make_plan(); the members below the first block are the kernel's working form.
struct Plan {
    Format src_format = Format::ND;
    Format dst_format = Format::ND;
    std::vector<std::int64_t> src_shape;  // as given (device shape, or plain shape)
    std::vector<std::int64_t> dst_shape;  // as given (plain shape, cropped; device shape when encoding)
    std::size_t elem_size = 0;
    int groups = 1;
    bool encode = false;         // plain -> device: scatter into a zero-filled destination
    std::uint64_t src_count = 0;  // elements of the source buffer
    std::uint64_t dst_count = 0;  // elements of the destination buffer

    // Working form: the plain side's axes after dropping size-1 axes and merging axes that are contiguous on both
    // sides. offset(other side) = sum_a off_a(i_a) (+ pair_table[i_pa * dims[pb] + i_pb] when pair_a >= 0), where
    // off_a(i) = tables[a][i], or i * strides[a] when tables[a] is empty (affine axes are never materialised).
    std::vector<std::int64_t> dims;
    std::vector<std::int64_t> strides;
    std::vector<std::vector<std::int64_t>> tables;
    int pair_a = -1, pair_b = -1;  // grouped FRACTAL_Z with N and C not adjacent in the plain order
    std::vector<std::int64_t> pair_table;
    int kernel = 0;               // internal: which loop nest runs the plan (0 element, 1 runs, 2 tiles)
    std::int64_t run_length = 1;  // internal: last-axis entries that are contiguous on the other side
    std::int64_t tile_rows = 0;   // internal: rows of the second-last axis per tile (kernel 2)
};

// Compile a conversion. dst_shape is the plain shape to produce (cropped) when decoding, the full device shape when
// encoding (see device_shape()), the permuted shape for plain -> plain. groups: FRACTAL_Z's sub_format (0 or 1 = not
// grouped). Throws std::invalid_argument, saying what is wrong and what was expected, for: unsupported pairs, shapes
// that do not fit the layout (wrong rank, C1/N1/M1 not matching the plain dims, C0 = 0, ...), groups that do not
// divide N or are given for a format without groups, element sizes other than 1, 2, 4, 8, and sizes that overflow.
Plan make_plan(Format src_format, const std::vector<std::int64_t>& src_shape, Format dst_format,
               const std::vector<std::int64_t>& dst_shape, int groups, std::size_t elem_size);

// The plain shape (in dst_format's order) to decode a device tensor into, or to permute a plain tensor into.
//   original_shape: the framework's shape, written in original_format's order; original_format NULL_FORMAT means
//     "the same as dst_format" (ND = the family's canonical NCHW/NCDHW order, positional for FRACTAL_NZ).
//     It fixes the crop: C for NC1HWC0/NDC1HWC0, N and C (and D, H, W, which the fractal shape does not hold) for
//     FRACTAL_Z/FRACTAL_Z_3D, M and N (and the batch dims) for FRACTAL_NZ.
//   padded: keep the padding (C1*C0 channels, N1*16 kernels, M1*16 x N1*C0 matrices) instead of cropping.
// Without an original shape: NC1HWC0/NDC1HWC0/FRACTAL_NZ give their padded shape when padded is set; FRACTAL_Z
// needs H and W from an original shape in any case. Throws std::invalid_argument naming what is missing.
std::vector<std::int64_t> infer_plain_shape(Format src_format, const std::vector<std::int64_t>& src_shape,
                                            Format dst_format, const std::vector<std::int64_t>& original_shape,
                                            int groups, bool padded, Format original_format = Format::NULL_FORMAT);

// The device shape that encoding a plain tensor (plain_format, plain_shape) into device_format with cube width c0
// produces (grouped FRACTAL_Z by the spec's formula when groups > 1).
std::vector<std::int64_t> device_shape(Format device_format, Format plain_format,
                                       const std::vector<std::int64_t>& plain_shape, std::int64_t c0, int groups);

// Run a whole plan: src holds plan.src_count elements, dst plan.dst_count elements (elem_size bytes each).
// Encoding writes every destination element (padding = zeros). threads: 0 = num_threads(); small tensors run on one.
void convert(const Plan& plan, const void* src, void* dst, unsigned threads = 0);

// Destination elements [first, first + count) in row-major order of the plain destination shape, into dst
// (count elements). For decode and plain -> plain plans; throws std::invalid_argument for encode plans and
// std::out_of_range when the window passes the end.
void decode_range(const Plan& plan, const void* src, std::uint64_t first, std::uint64_t count, void* dst);

// The source element index of each destination element [first, first + count) (same plans and errors as
// decode_range): lets a caller decode any data type, packed sub-byte ones included, element by element.
void source_indices(const Plan& plan, std::uint64_t first, std::uint64_t count, std::uint64_t* out);

// Format classes and the pairs convert() accepts.
bool is_device_format(Format f) noexcept;
bool is_plain_format(Format f) noexcept;
std::vector<std::pair<Format, Format>> supported_pairs();

}  // namespace dumpcmp
