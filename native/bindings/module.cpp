#include "pycommon.hpp"

#include <cstring>

#include "dumpcmp/errors.hpp"
#include "dumpcmp/parallel.hpp"

namespace dumpcmp::bindings {

namespace {
// Messages name files and header strings, which may be any bytes: decoded leniently, so a hostile name never turns
// the error into a UnicodeDecodeError.
void set(PyObject* type, const char* what) {
    PyObject* msg = PyUnicode_DecodeUTF8(what, static_cast<Py_ssize_t>(std::strlen(what)), "surrogateescape");
    if (msg == nullptr) return;  // the decode error stays set
    PyErr_SetObject(type, msg);
    Py_DECREF(msg);
}
}  // namespace

void register_errors(py::module_& m) {
    // Imported once; errors.py is pure Python and does not import _core, so there is no cycle.
    static py::handle dump_error = [] {
        py::object cls = py::module_::import("dumpcmp.errors").attr("DumpError");
        return cls.release();  // kept for the life of the process
    }();
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const DumpError& e) {
            set(dump_error.ptr(), e.what());
        } catch (const std::out_of_range& e) {
            set(PyExc_IndexError, e.what());
        } catch (const std::invalid_argument& e) {
            set(PyExc_ValueError, e.what());
        }
    });
    m.attr("DumpError") = dump_error;
}

py::array mapped_view(const py::dtype& dtype, std::vector<py::ssize_t> shape, const void* data, MappedFilePtr owner) {
    auto* holder = new MappedFilePtr(std::move(owner));
    py::capsule base(holder, [](void* p) { delete static_cast<MappedFilePtr*>(p); });
    // pybind11 computes C-contiguous strides from the dtype's item size
    py::array a(dtype, std::move(shape), data, base);
    py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    return a;
}

}  // namespace dumpcmp::bindings

PYBIND11_MODULE(_core, m) {
    using namespace dumpcmp::bindings;
    m.doc() =
        "dumpcmp's C++ core (private: use the dumpcmp package).\n\n"
        "One submodule per area, each from its native/bindings/bind_<area>.cpp: dtype, dump, metrics, layout, "
        "compare, detail, histogram, graph, scan, table. What belongs to the whole module stays at the top: __version__, DumpError "
        "(the error every area raises), and the process-wide settings every area's parallel loops and kernels "
        "follow: num_threads, set_num_threads, simd_level. The tests' hooks are not here: they are a separate, "
        "test-only module (DUMPCMP_TEST_HOOKS, native/bindings/testhooks).";
    m.attr("__version__") = DUMPCMP_VERSION;
    register_errors(m);
    m.def("num_threads", &dumpcmp::num_threads, "Threads the core uses for one big job.");
    m.def("set_num_threads", &dumpcmp::set_num_threads, py::arg("n"),
          "Set the thread count (0 = DUMPCMP_NUM_THREADS or the hardware's).");
    m.def("simd_level", &dumpcmp::simd_level_name,
          "The instruction set the hot loops run with here: scalar, avx2 or avx512 (DUMPCMP_SIMD lowers it).");
    bind_dtype(m);
    bind_dump(m);
    bind_metrics(m);
    bind_layout(m);
    bind_compare(m);
    bind_detail(m);
    bind_histogram(m);
    bind_graph(m);
    bind_scan(m);
    bind_table(m);
}
