// What every binding file shares: the pybind11 includes, error translation and zero-copy array helpers.
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "dumpcmp/dtype.hpp"
#include "dumpcmp/mapped_file.hpp"
#include "dumpcmp/metrics.hpp"

namespace dumpcmp::bindings {
namespace py = pybind11;

// Each defines its area's names in the submodule _core.<area> of `core`.
void bind_dtype(py::module_& core);
void bind_dump(py::module_& core);
void bind_metrics(py::module_& core);
void bind_layout(py::module_& core);
void bind_compare(py::module_& core);
void bind_detail(py::module_& core);
void bind_histogram(py::module_& core);
void bind_graph(py::module_& core);
void bind_scan(py::module_& core);
void bind_table(py::module_& core);

// Translate core exceptions; dumpcmp::DumpError becomes dumpcmp.errors.DumpError (defined in Python, a ValueError).
void register_errors(py::module_& m);

// A read-only NumPy view of bytes inside a mapping; the array keeps the mapping alive.
py::array mapped_view(const py::dtype& dtype, std::vector<py::ssize_t> shape, const void* data, MappedFilePtr owner);

// The dump data type of a NumPy dtype (ml_dtypes' bfloat16 and fp8 by name); `side` names the argument in errors.
DataType numpy_data_type(const py::dtype& dt, const char* side);
// A metric mask from indices 0-9 (None = all ten).
MetricMask mask_from(const std::optional<std::vector<int>>& metrics);

// Text from a file (a header string, a path): any bytes, so decoded with surrogateescape (os.fsdecode's rule) rather
// than raising UnicodeDecodeError on a hostile or foreign header; os.fsencode gives the bytes back.
inline py::str file_text(const std::string& s) {
    PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<py::ssize_t>(s.size()), "surrogateescape");
    if (o == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(o);
}

inline std::vector<py::ssize_t> to_ssize(const std::vector<std::int64_t>& v) {
    return std::vector<py::ssize_t>(v.begin(), v.end());
}

}  // namespace dumpcmp::bindings
