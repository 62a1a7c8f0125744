// One side of a comparison: a tensor's stored bytes, its data type, and how to walk it in the compared order.
//
// The compared order is the ground truth's: row-major over its (plain) shape. A device tensor in a fractal layout
// gets a layout Plan (device -> plain, cropped), and every reader asks for windows [first, first + n) of that order
// (in the stored data type for the metrics, decoded to float32 for the detail writer), so nothing ever holds more
// than a window of a tensor.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "dumpcmp/dtype.hpp"
#include "dumpcmp/layout.hpp"
#include "dumpcmp/mapped_file.hpp"

namespace dumpcmp {

// Per-thread working memory of a reader; reused across windows so the hot loop does not allocate.
struct SourceScratch {
    std::vector<std::uint8_t> bytes;
    std::vector<std::uint64_t> indices;
    std::vector<float> values;
};

class TensorSource {
public:
    // `stored_count` elements of `type` at `data`; with a plan (plan->src_count == stored_count) the compared order
    // is the plan's destination, else the stored order. `keep_alive` holds the mapping the bytes live in, if any.
    TensorSource(const std::uint8_t* data, DataType type, std::uint64_t stored_count,
                 std::shared_ptr<const Plan> plan = nullptr, MappedFilePtr keep_alive = nullptr);

    std::uint64_t count() const noexcept { return plan_ ? plan_->dst_count : stored_count_; }
    DataType type() const noexcept { return type_; }
    const Plan* plan() const noexcept { return plan_.get(); }
    const std::uint8_t* data() const noexcept { return data_; }
    std::uint64_t stored_bytes() const noexcept { return stored_bytes_; }

    // Elements [first, first + n) of the compared order as float32. Returns a pointer to them: into the stored bytes
    // when they already are aligned float32 in order, else into scratch.values.
    const float* read_float32(std::uint64_t first, std::size_t n, SourceScratch& scratch) const;

    // Elements [first, first + n) of the compared order in a form the metrics read directly: a pointer to the
    // window's first element and its data type. Stored bytes in place without a plan; gathered into scratch.bytes
    // (still in the stored data type, so float16 is decoded in registers by the metrics) through a plan; decoded to
    // FLOAT in scratch.values for packed sub-byte types.
    struct Window {
        const std::uint8_t* data;
        DataType type;
    };
    Window read_window(std::uint64_t first, std::size_t n, SourceScratch& scratch) const;

    // Fault in the stored bytes (prefault() in mapped_file.hpp) before a pass over them.
    void prefault() const noexcept;

    // The source index of each element (for coordinates in the stored layout).
    void source_indices(std::uint64_t first, std::size_t n, std::uint64_t* out) const;

private:
    const std::uint8_t* data_;
    DataType type_;
    std::uint64_t stored_count_;
    std::shared_ptr<const Plan> plan_;
    MappedFilePtr keep_alive_;
    std::size_t elem_bytes_;  // 0 for packed sub-byte types
    std::uint64_t stored_bytes_;
    bool direct_float_;
};

}  // namespace dumpcmp
