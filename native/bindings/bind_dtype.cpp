#include <cstring>

#include "dumpcmp/dtype.hpp"
#include "dumpcmp/format.hpp"
#include "dumpcmp/parallel.hpp"
#include "pycommon.hpp"

namespace dumpcmp::bindings {

namespace {

const DataTypeInfo& info_by_name(const std::string& name) {
    const DataTypeInfo* info = find_data_type(name);
    if (info == nullptr) throw std::invalid_argument("unknown data type name '" + name + "'");
    return *info;
}

const char* repr_name(Repr r) {
    switch (r) {
        case Repr::none: return "none";
        case Repr::native: return "native";
        case Repr::decoded: return "decoded";
        case Repr::unpacked: return "unpacked";
        case Repr::complex32: return "complex32";
    }
    return "?";
}

}  // namespace

void bind_dtype(py::module_& core) {
    py::module_ m = core.def_submodule("dtype",
        "The spec's data types and formats; decoding and encoding device storage.");
    m.def("data_types", [] {
        py::list out;
        for (std::int32_t v = 0;; ++v) {
            const DataTypeInfo* info = find_data_type(v);
            if (info == nullptr) break;
            py::dict d;
            d["value"] = v;
            d["name"] = info->name;
            d["bits"] = info->bits;
            d["repr"] = repr_name(info->repr);
            d["numpy"] = info->numpy;
            out.append(d);
        }
        return out;
    }, "The spec's data types: value, name, storage bits, how they reach NumPy.");

    m.def("formats", [] {
        py::dict out;
        for (std::int32_t v = 0; v < 256; ++v)
            if (const char* name = format_name(v)) out[name] = v;
        return out;
    }, "The spec's formats: name -> number.");

    m.def("decode", [](const std::string& type_name, py::array_t<std::uint8_t, py::array::c_style> raw, std::uint64_t count) {
        const DataTypeInfo& info = info_by_name(type_name);
        py::buffer_info b = raw.request();
        const auto have = static_cast<std::uint64_t>(b.size);
        if (storage_bytes(info, count) > have)
            throw std::invalid_argument(std::to_string(count) + " elements of " + info.name + " need " +
                                        std::to_string(storage_bytes(info, count)) + " bytes, got " + std::to_string(have));
        if (info.repr == Repr::none) throw std::invalid_argument(std::string(info.name) + " has no numeric value");
        py::array out(py::dtype(info.numpy), std::vector<py::ssize_t>{static_cast<py::ssize_t>(count)});
        const auto* src = static_cast<const std::uint8_t*>(b.ptr);
        void* dst = out.mutable_data();
        {
            py::gil_scoped_release release;
            decode_to_numpy_repr(info.type, src, 0, static_cast<std::size_t>(count), dst);
        }
        return out;
    }, py::arg("data_type"), py::arg("raw").noconvert(), py::arg("count"),
       "Decode `count` elements of device storage into dumpcmp's NumPy representation of the type.");

    m.def("encode", [](const std::string& type_name, py::array values) {
        const DataTypeInfo& info = info_by_name(type_name);
        if (info.repr == Repr::none) throw std::invalid_argument(std::string(info.name) + " has no numeric value");
        py::dtype want(info.numpy);
        if (!values.dtype().is(want) && !values.dtype().equal(want))
            throw std::invalid_argument(std::string("encoding ") + info.name + " needs an array of " + info.numpy +
                                        ", got " + std::string(py::str(values.dtype())));
        if (!(values.flags() & py::array::c_style)) throw std::invalid_argument("encode needs a C-contiguous array");
        const auto count = static_cast<std::uint64_t>(values.size());
        py::array_t<std::uint8_t> out(static_cast<py::ssize_t>(storage_bytes(info, count)));
        const void* src = values.data();
        auto* dst = static_cast<std::uint8_t*>(out.mutable_data());
        {
            py::gil_scoped_release release;
            encode_from_numpy_repr(info.type, src, static_cast<std::size_t>(count), dst);
        }
        return out;
    }, py::arg("data_type"), py::arg("values"),
       "Encode values (in dumpcmp's NumPy representation of the type) into device storage bytes.");
}

}  // namespace dumpcmp::bindings
