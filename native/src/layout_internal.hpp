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

}  // namespace dumpcmp::layout_detail
