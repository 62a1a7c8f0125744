// dumpcmp_testhooks: what only the tests call, never shipped (CMake option DUMPCMP_TEST_HOOKS;
// tests/helpers/native_hooks.py builds it on first use). It links its own copy of the C++ core, built from the same
// sources: state inside the core (the KLD pass's counters) is this copy's, so the hooks that read it run the pass
// here too.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "../../src/kld_hooks.hpp"
#include "dumpcmp/dtype.hpp"
#include "dumpcmp/metrics.hpp"

namespace py = pybind11;

namespace {

using F32Array = py::array_t<float, py::array::c_style | py::array::forcecast>;

}  // namespace

PYBIND11_MODULE(dumpcmp_testhooks, m) {
    m.doc() = "dumpcmp's test hooks (tests only: never installed; see native/bindings/testhooks/module.cpp)";

    m.def("numpy_sum_f32", [](const F32Array& a) {
        return dumpcmp::numpy_sum_f32(a.data(), static_cast<std::size_t>(a.size()));
    }, py::arg("a"),
       "NumPy 1.x's np.sum of a contiguous float32 array (pairwise blocks of 8192, added in order): the default "
       "metrics' float32 sums.");

    m.def("to_float32", [](const std::string& type_name, py::array_t<std::uint8_t, py::array::c_style> raw,
                           std::uint64_t count) {
        const dumpcmp::DataTypeInfo* info = dumpcmp::find_data_type(type_name);
        if (info == nullptr) throw std::invalid_argument("unknown data type name '" + type_name + "'");
        py::buffer_info b = raw.request();
        if (dumpcmp::storage_bytes(*info, count) > static_cast<std::uint64_t>(b.size))
            throw std::invalid_argument("buffer too small for " + std::to_string(count) + " elements");
        py::array_t<float> out(static_cast<py::ssize_t>(count));
        const auto* src = static_cast<const std::uint8_t*>(b.ptr);
        float* dst = out.mutable_data();
        {
            py::gil_scoped_release release;
            dumpcmp::decode_to_float32(info->type, src, 0, static_cast<std::size_t>(count), dst);
        }
        return out;
    }, py::arg("data_type"), py::arg("raw").noconvert(), py::arg("count"),
       "Decode device storage to float32 values, as the metrics see them (this module's copy of the decoders).");

    // The KLD pass (native/src/kld_hooks.hpp) evaluates log(p/q) in one of two forms per group of 16 elements.
    m.def("kld_general_only", &dumpcmp::detail::kld_general_only,
          "Whether DUMPCMP_KLD=general forces the general form (read once per process, as the shipped core does).");
    m.def("kld_group_counts", [] {
        const dumpcmp::detail::KldGroupCounts c = dumpcmp::detail::kld_group_counts();
        return py::make_tuple(c.close, c.general);
    }, "(close, general): groups of 16 elements whose log(p/q) took each form in this module since the last reset.");
    m.def("reset_kld_group_counts", &dumpcmp::detail::reset_kld_group_counts);
    m.def("kld_group_counts_of", [](const F32Array& x, const F32Array& y, bool precise, unsigned threads,
                                    std::size_t chunk_elements) {
        if (x.size() != y.size()) throw std::invalid_argument("x and y differ in size");
        const auto n = static_cast<std::uint64_t>(x.size());
        const auto* px = reinterpret_cast<const std::uint8_t*>(x.data());
        const auto* py_ = reinterpret_cast<const std::uint8_t*>(y.data());
        dumpcmp::CompareOptions opt;  // all metrics, as compare_arrays by default
        opt.precise = precise;
        opt.threads = threads;
        opt.chunk_elements = chunk_elements;
        {
            py::gil_scoped_release release;
            dumpcmp::detail::reset_kld_group_counts();
            dumpcmp::compare(px, dumpcmp::DataType::FLOAT, py_, dumpcmp::DataType::FLOAT, n, opt);
        }
        const dumpcmp::detail::KldGroupCounts c = dumpcmp::detail::kld_group_counts();
        return py::make_tuple(c.close, c.general);
    }, py::arg("x"), py::arg("y"), py::kw_only(), py::arg("precise") = false, py::arg("threads") = 0u,
       py::arg("chunk_elements") = dumpcmp::kDefaultChunkElements,
       "(close, general) of one comparison of float32 x and y (compare_arrays' options), run in this module's copy "
       "of the core: the shipped module's counters are not reachable from here.");
}
