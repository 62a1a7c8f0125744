// Argument conversions shared by several binding files.
#include <optional>
#include <string>
#include <vector>

#include "dumpcmp/dtype.hpp"
#include "dumpcmp/metrics.hpp"
#include "pycommon.hpp"

namespace dumpcmp::bindings {

DataType numpy_data_type(const py::dtype& dt, const char* side) {
    const char kind = dt.kind();
    const auto size = dt.itemsize();
    const std::string byteorder = py::str(dt.attr("byteorder"));
    if (byteorder == ">")
        throw std::invalid_argument(std::string(side) + " is big-endian (" + std::string(py::str(dt)) +
                                    "); convert it with .astype(its native dtype) first");
    // ml_dtypes' types are known by name (some claim kind 'f' with an itemsize NumPy's own floats never have)
    const std::string name = py::str(dt.attr("name"));
    if (name == "bfloat16") return DataType::BF16;
    if (name == "float8_e5m2") return DataType::FLOAT8_E5M2;
    if (name == "float8_e4m3fn") return DataType::FLOAT8_E4M3FN;
    switch (kind) {
        case 'b': return DataType::BOOL;
        case 'f':
            if (size == 2) return DataType::FLOAT16;
            if (size == 4) return DataType::FLOAT;
            if (size == 8) return DataType::DOUBLE;
            break;
        case 'i':
            if (size == 1) return DataType::INT8;
            if (size == 2) return DataType::INT16;
            if (size == 4) return DataType::INT32;
            if (size == 8) return DataType::INT64;
            break;
        case 'u':
            if (size == 1) return DataType::UINT8;
            if (size == 2) return DataType::UINT16;
            if (size == 4) return DataType::UINT32;
            if (size == 8) return DataType::UINT64;
            break;
        default: break;
    }
    throw std::invalid_argument(std::string(side) + " has dtype " + std::string(py::str(dt)) +
                                ", which the metrics do not read; pass its raw bytes with " + side +
                                "_data_type= or convert it");
}

MetricMask mask_from(const std::optional<std::vector<int>>& metrics) {
    if (!metrics) return kAllMetrics;
    MetricMask mask = 0;
    for (int i : *metrics) {
        if (i < 0 || i >= kMetricCount)
            throw std::invalid_argument("metric index " + std::to_string(i) + " is not in 0..9");
        mask |= 1u << i;
    }
    return mask;
}

}  // namespace dumpcmp::bindings
