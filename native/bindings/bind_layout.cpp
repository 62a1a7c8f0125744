#include <cstring>

#include "dumpcmp/format.hpp"
#include "dumpcmp/layout.hpp"
#include "pycommon.hpp"

namespace dumpcmp::bindings {

namespace {

Format format_arg(const std::string& name) {
    const std::int32_t v = format_from_name(name);
    if (v < 0) throw std::invalid_argument("unknown format name '" + name + "'");
    return static_cast<Format>(v);
}

std::string name_of(Format f) {
    const char* n = format_name(static_cast<std::int32_t>(f));
    return n != nullptr ? n : std::to_string(static_cast<int>(f));
}

// Arrays cross as they are (any dtype, ml_dtypes' too): only the layout of their bytes matters here.
const void* checked_buffer(const py::array& a, std::uint64_t count, std::size_t elem, const char* what,
                           bool writeable) {
    if (!(a.flags() & py::array::c_style))
        throw std::invalid_argument(std::string(what) + " array must be C-contiguous");
    if (static_cast<std::size_t>(a.itemsize()) != elem)
        throw std::invalid_argument(std::string(what) + " array has " + std::to_string(a.itemsize()) +
                                    "-byte elements, the plan moves " + std::to_string(elem) +
                                    "-byte elements");
    if (static_cast<std::uint64_t>(a.size()) != count)
        throw std::invalid_argument(std::string(what) + " array has " + std::to_string(a.size()) +
                                    " elements, the plan needs " + std::to_string(count));
    if (writeable && !a.writeable()) throw std::invalid_argument(std::string(what) + " array is read-only");
    return a.data();
}

const char* kernel_name(int k) { return k == 2 ? "tiles" : k == 1 ? "runs" : "elements"; }

}  // namespace

void bind_layout(py::module_& core) {
    py::module_ m = core.def_submodule("layout",
        "Device layout conversions: compiled plans (LayoutPlan) and the shapes they produce.");
    py::class_<Plan>(m, "LayoutPlan", "A compiled layout conversion (see dumpcmp/layout.hpp).")
        .def(py::init([](const std::string& src, std::vector<std::int64_t> src_shape, const std::string& dst,
                         std::vector<std::int64_t> dst_shape, int groups, std::size_t elem_size) {
                 return make_plan(format_arg(src), src_shape, format_arg(dst), dst_shape, groups, elem_size);
             }),
             py::arg("src_format"), py::arg("src_shape"), py::arg("dst_format"), py::arg("dst_shape"),
             py::arg("groups"), py::arg("elem_size"))
        .def_property_readonly("src_format", [](const Plan& p) { return name_of(p.src_format); })
        .def_property_readonly("dst_format", [](const Plan& p) { return name_of(p.dst_format); })
        .def_property_readonly("src_shape", [](const Plan& p) { return py::tuple(py::cast(p.src_shape)); })
        .def_property_readonly("dst_shape", [](const Plan& p) { return py::tuple(py::cast(p.dst_shape)); })
        .def_readonly("elem_size", &Plan::elem_size)
        .def_readonly("groups", &Plan::groups)
        .def_readonly("encode", &Plan::encode)
        .def_readonly("src_count", &Plan::src_count)
        .def_readonly("dst_count", &Plan::dst_count)
        .def_property_readonly("kernel", [](const Plan& p) { return kernel_name(p.kernel); },
                               "which loop nest runs the plan: runs, tiles or elements")
        .def("run", [](const Plan& p, const py::array& src, py::array& dst, unsigned threads) {
            const void* s = checked_buffer(src, p.src_count, p.elem_size, "source", false);
            void* d = const_cast<void*>(checked_buffer(dst, p.dst_count, p.elem_size, "destination", true));
            py::gil_scoped_release release;  // only raw pointers from here on
            convert(p, s, d, threads);
        }, py::arg("src"), py::arg("dst"), py::arg("threads") = 0,
           "Convert src into dst (both C-contiguous, elem_size bytes per element; dst is fully written).")
        .def("decode_range", [](const Plan& p, const py::array& src, std::uint64_t first, std::uint64_t count) {
            const void* s = checked_buffer(src, p.src_count, p.elem_size, "source", false);
            if (first > p.dst_count || count > p.dst_count - first)
                throw std::out_of_range("decode_range: window passes the end of the destination");
            py::array out(src.dtype(), std::vector<py::ssize_t>{static_cast<py::ssize_t>(count)});
            void* d = out.mutable_data();
            {
                py::gil_scoped_release release;
                decode_range(p, s, first, count, d);
            }
            return out;
        }, py::arg("src"), py::arg("first"), py::arg("count"),
           "Destination elements [first, first+count) (row-major order of the plain destination).")
        .def("source_indices", [](const Plan& p, std::uint64_t first, std::uint64_t count) {
            if (first > p.dst_count || count > p.dst_count - first)
                throw std::out_of_range("source_indices: window passes the end of the destination");
            py::array_t<std::uint64_t> out(static_cast<py::ssize_t>(count));
            std::uint64_t* d = out.mutable_data();
            {
                py::gil_scoped_release release;
                source_indices(p, first, count, d);
            }
            return out;
        }, py::arg("first"), py::arg("count"),
           "Source element index of each destination element [first, first+count).");

    m.def("infer_shape", [](const std::string& src, std::vector<std::int64_t> src_shape, const std::string& dst,
                            std::vector<std::int64_t> original_shape, int groups, bool padded,
                            const std::string& original_format) {
        const Format of = original_format.empty() ? Format::NULL_FORMAT : format_arg(original_format);
        return py::tuple(py::cast(infer_plain_shape(format_arg(src), src_shape, format_arg(dst), original_shape, groups,
                                                    padded, of)));
    }, py::arg("src_format"), py::arg("src_shape"), py::arg("dst_format"), py::arg("original_shape"),
       py::arg("groups") = 1, py::arg("padded") = false, py::arg("original_format") = "",
       "The plain shape a conversion produces (see infer_plain_shape in layout.hpp).");
    m.def("device_shape", [](const std::string& device, const std::string& plain,
                             std::vector<std::int64_t> plain_shape, std::int64_t c0, int groups) {
        return py::tuple(py::cast(device_shape(format_arg(device), format_arg(plain), plain_shape, c0, groups)));
    }, py::arg("device_format"), py::arg("plain_format"), py::arg("plain_shape"), py::arg("c0"), py::arg("groups") = 1,
       "The device shape encoding a plain tensor produces.");
    m.def("supported_pairs", [] {
        py::list out;
        for (const auto& [a, b] : supported_pairs()) out.append(py::make_tuple(name_of(a), name_of(b)));
        return out;
    }, "(source, destination) format pairs the codec converts.");
    m.def("is_device_format", [](const std::string& f) { return is_device_format(format_arg(f)); });
}

}  // namespace dumpcmp::bindings
