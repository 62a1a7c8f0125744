#include <fcntl.h>
#include <unistd.h>

#include <memory>

#include "dumpcmp/checked.hpp"
#include "dumpcmp/dtype.hpp"
#include "dumpcmp/dump.hpp"
#include "dumpcmp/errors.hpp"
#include "dumpcmp/format.hpp"
#include "dumpcmp/parallel.hpp"
#include "pycommon.hpp"
#include "read_files.hpp"

namespace dumpcmp::bindings {

namespace {

TensorKind kind_from_name(const std::string& s) {
    if (s == "input") return TensorKind::input;
    if (s == "output") return TensorKind::output;
    if (s == "buffer") return TensorKind::buffer;
    if (s == "workspace") return TensorKind::workspace;
    throw std::invalid_argument("tensor kind must be input, output, buffer or workspace, not '" + s + "'");
}

py::object shape_or_none(bool has, const std::vector<std::int64_t>& dims) {
    if (!has) return py::none();
    return py::tuple(py::cast(dims));
}

// The tensor in dumpcmp's NumPy representation: zero-copy for NumPy's own types, decoded otherwise. `File`: a
// DumpFile or a DumpHead.
template <class File>
py::array tensor_array(const std::shared_ptr<File>& self, const TensorDesc& t) {
    const DataTypeInfo* info = find_data_type(t.data_type);
    if (info == nullptr || info->repr == Repr::none)
        throw DumpError(self->path(), std::string(tensor_kind_name(t.kind)) + " " + std::to_string(t.index) +
                                          ": data type " + (info ? info->name : std::to_string(t.data_type)) +
                                          " has no numeric value (use raw() for its bytes)");
    MappedFilePtr keep;
    const std::uint8_t* bytes;
    {
        py::gil_scoped_release release;
        bytes = self->tensor_bytes(t, &keep);
    }
    if (info->repr == Repr::native) return mapped_view(py::dtype(info->numpy), to_ssize(t.shape), bytes, keep);
    py::array out(py::dtype(info->numpy), to_ssize(t.shape));
    void* dst = out.mutable_data();
    const auto count = static_cast<std::size_t>(t.element_count());
    const auto out_item = static_cast<std::size_t>(out.itemsize());
    {
        py::gil_scoped_release release;  // no Python object is touched below: bytes and dst are plain memory
        constexpr std::size_t kChunk = std::size_t{1} << 20;
        const std::size_t chunks = (count + kChunk - 1) / kChunk;
        parallel_for(chunks, [&](std::size_t c) {
            const std::size_t first = c * kChunk;
            const std::size_t n = std::min(kChunk, count - first);
            decode_to_numpy_repr(info->type, bytes, first, n, static_cast<std::uint8_t*>(dst) + first * out_item);
        });
    }
    return out;
}

std::vector<std::int64_t> dims_from(const py::handle& h) {
    std::vector<std::int64_t> dims;
    for (auto d : h) {
        const auto v = d.cast<std::int64_t>();
        if (v < 0) throw std::invalid_argument("negative dimension in a shape");
        dims.push_back(v);
    }
    return dims;
}

// Many dump headers read in parallel: a `File` (DumpFile or DumpHead) made of each, or its error text.
template <class File>
py::list read_many(const std::vector<std::string>& paths, unsigned threads) {
    std::vector<std::shared_ptr<File>> files;
    std::vector<std::string> errors;
    {
        py::gil_scoped_release release;
        read_files(paths, threads, files, errors);
    }
    py::list out;
    for (std::size_t i = 0; i < paths.size(); ++i) {
        if (files[i]) out.append(py::cast(files[i]));
        else out.append(file_text(errors[i]));
    }
    return out;
}

// What a DumpFile and a DumpHead both say of their header, the same way
bool legacy_of(const DumpFile& f) { return f.header().legacy; }
bool legacy_of(const DumpHead& f) { return f.legacy(); }
std::uint64_t header_size_of(const DumpFile& f) { return f.header().header_size; }
std::uint64_t header_size_of(const DumpHead& f) { return f.header_size(); }
std::uint64_t file_size_of(const DumpFile& f) { return f.header().file_size; }
std::uint64_t file_size_of(const DumpHead& f) { return f.file_size(); }

// The bindings a DumpFile and a DumpHead share: `File` read by its path, its sizes, one tensor's description, check,
// array and raw bytes.
template <class File>
void bind_file_common(py::class_<File, std::shared_ptr<File>>& cls) {
    cls.def_property_readonly("path", [](const File& f) { return file_text(f.path()); })
        .def_property_readonly("legacy", [](const File& f) { return legacy_of(f); })
        .def_property_readonly("header_size", [](const File& f) { return header_size_of(f); })
        .def_property_readonly("file_size", [](const File& f) { return file_size_of(f); })
        .def("tensor", [](const File& f, const std::string& kind, std::size_t index) {
                 return TensorDesc(f.tensor(kind_from_name(kind), index));
             }, py::arg("kind"), py::arg("index"))
        .def("check", [](const File& f, const std::string& kind, std::size_t index) {
                 return check_tensor_desc(f.tensor(kind_from_name(kind), index));
             }, py::arg("kind"), py::arg("index"), "Empty string if the tensor's bytes fit its dtype and shape, else why not.")
        .def("array", [](const std::shared_ptr<File>& self, const std::string& kind, std::size_t index) {
                 return tensor_array(self, self->tensor(kind_from_name(kind), index));
             }, py::arg("kind"), py::arg("index"),
             "The tensor as stored (device layout and shape), zero-copy for NumPy's own dtypes (read-only).")
        .def("raw", [](const std::shared_ptr<File>& self, const std::string& kind, std::size_t index) {
                 const TensorDesc t = self->tensor(kind_from_name(kind), index);
                 MappedFilePtr keep = self->mapping();
                 if (!checked::within(t.file_offset, t.size, keep->size()))
                     throw DumpError(self->path(), std::string(tensor_kind_name(t.kind)) + " " + std::to_string(t.index) +
                                                       ": its bytes run past the end of the file");
                 return mapped_view(py::dtype("u1"), {static_cast<py::ssize_t>(t.size)},
                                    keep->data() == nullptr ? nullptr : keep->data() + t.file_offset, keep);
             }, py::arg("kind"), py::arg("index"), "The tensor's raw bytes, zero-copy (read-only).");
}

}  // namespace

void bind_dump(py::module_& core) {
    py::module_ m = core.def_submodule("dump",
        "Dump files: read (DumpFile, TensorDesc, read_headers) and write (write_dump).");
    py::class_<TensorDesc>(m, "TensorDesc", "One input, output, buffer or workspace of a dump: metadata only.")
        .def_property_readonly("kind", [](const TensorDesc& t) { return tensor_kind_name(t.kind); })
        .def_readonly("index", &TensorDesc::index)
        .def_readonly("data_type_value", &TensorDesc::data_type)
        .def_property_readonly("data_type", [](const TensorDesc& t) {
            const DataTypeInfo* info = find_data_type(t.data_type);
            return info ? std::string(info->name) : "UNKNOWN(" + std::to_string(t.data_type) + ")";
        })
        .def_readonly("format_value", &TensorDesc::format)
        .def_property_readonly("format", [](const TensorDesc& t) {
            const char* name = format_name(t.format);
            return name ? std::string(name) : "UNKNOWN(" + std::to_string(t.format) + ")";
        })
        .def_property_readonly("shape", [](const TensorDesc& t) { return py::tuple(py::cast(t.shape)); })
        .def_property_readonly("original_shape",
                               [](const TensorDesc& t) { return shape_or_none(t.has_original_shape, t.original_shape); })
        .def_readonly("sub_format", &TensorDesc::sub_format)
        .def_readonly("address", &TensorDesc::address)
        .def_readonly("offset", &TensorDesc::offset)
        .def_readonly("size", &TensorDesc::size)
        .def_readonly("file_offset", &TensorDesc::file_offset)
        .def_property_readonly("original_op", [](const TensorDesc& t) -> py::object {
            if (!t.has_original_op) return py::none();
            py::dict d;
            d["name"] = file_text(t.original_op.name);
            d["output_index"] = t.original_op.output_index;
            d["data_type"] = t.original_op.data_type;
            d["format"] = t.original_op.format;
            return std::move(d);
        })
        .def_readonly("dim_range", &TensorDesc::dim_range)
        .def_readonly("arg_index", &TensorDesc::arg_index)
        .def_readonly("input_type", &TensorDesc::input_type)
        .def_readonly("sub_type", &TensorDesc::sub_type)
        .def_property_readonly("element_count", &TensorDesc::element_count);

    py::class_<DumpFile, std::shared_ptr<DumpFile>> file(m, "DumpFile",
                                                         "A dump file: header parsed, tensor bytes mapped on first use.");
    file.def(py::init([](const std::string& path) {
                 py::gil_scoped_release release;
                 return std::make_shared<DumpFile>(path);
             }),
             py::arg("path"))
        .def_property_readonly("version", [](const DumpFile& f) { return file_text(f.header().version); })
        .def_property_readonly("dump_time", [](const DumpFile& f) { return f.header().dump_time; })
        .def_property_readonly("op_name", [](const DumpFile& f) { return file_text(f.header().op_name); })
        .def_property_readonly("attrs", [](const DumpFile& f) {
            py::list out;
            for (const auto& [k, v] : f.header().attrs) out.append(py::make_tuple(file_text(k), file_text(v)));
            return out;
        })
        .def_property_readonly("dfx_message",
                               [](const DumpFile& f) { return py::bytes(f.header().dfx_message); })
        .def("tensors", [](const DumpFile& f, const std::string& kind) { return f.header().tensors(kind_from_name(kind)); },
             py::arg("kind"));
    bind_file_common(file);

    py::class_<DumpHead, std::shared_ptr<DumpHead>> head(m, "DumpHead",
        "A dump's header kept small (read_heads): its inputs and outputs, every field of theirs; of the buffers and "
        "workspaces their count only. Tensor bytes are read on first use, as a DumpFile's.");
    head.def("count", [](const DumpHead& f, const std::string& kind) { return f.count(kind_from_name(kind)); },
             py::arg("kind"), "How many tensors of this kind the dump has (buffers and workspaces too).")
        .def("tensors", [](const DumpHead& f, const std::string& kind) {
                 const TensorKind k = kind_from_name(kind);
                 std::vector<TensorDesc> out;
                 for (std::size_t i = 0; i < f.count(k); ++i) out.push_back(f.tensor(k, i));
                 return out;
             }, py::arg("kind"), "The inputs or outputs (ValueError for buffers and workspaces: not kept).");
    bind_file_common(head);

    m.def("read_headers", &read_many<DumpFile>, py::arg("paths"), py::arg("threads") = 0,
          "Read many dump headers in parallel: a DumpFile, or the error text, per path.");
    m.def("read_heads", &read_many<DumpHead>, py::arg("paths"), py::arg("threads") = 0,
          "Read many dump headers in parallel, each kept small: a DumpHead, or the error text, per path.");

    m.def("write_dump", [](const std::string& path, const std::string& version, std::uint64_t dump_time,
                           const std::string& op_name, const std::vector<std::pair<std::string, std::string>>& attrs,
                           const std::string& dfx_message, py::list tensors) {
        DumpHeader h;
        h.version = version;
        h.dump_time = dump_time;
        h.op_name = op_name;
        h.attrs = attrs;
        h.dfx_message = dfx_message;
        std::vector<RawSpan> spans[4];
        std::vector<py::buffer_info> keep;  // buffers stay requested (and their owners alive) until written
        keep.reserve(tensors.size());
        for (py::handle item : tensors) {
            py::dict d = py::reinterpret_borrow<py::dict>(item);
            TensorDesc t;
            t.kind = kind_from_name(d["kind"].cast<std::string>());
            t.data_type = d["data_type"].cast<std::int32_t>();
            t.format = d["format"].cast<std::int32_t>();
            t.shape = dims_from(d["shape"]);
            if (!d["original_shape"].is_none()) {
                t.original_shape = dims_from(d["original_shape"]);
                t.has_original_shape = true;
            }
            t.sub_format = d["sub_format"].cast<std::int32_t>();
            t.address = d["address"].cast<std::uint64_t>();
            t.offset = d["offset"].cast<std::uint64_t>();
            if (!d["original_op"].is_none()) {
                py::dict o = d["original_op"];
                t.has_original_op = true;
                t.original_op.name = o["name"].cast<std::string>();
                t.original_op.output_index = o["output_index"].cast<std::uint32_t>();
                t.original_op.data_type = o["data_type"].cast<std::int32_t>();
                t.original_op.format = o["format"].cast<std::int32_t>();
            }
            t.dim_range = d["dim_range"].cast<std::vector<std::pair<std::uint64_t, std::uint64_t>>>();
            t.arg_index = d["arg_index"].cast<std::uint32_t>();
            t.input_type = d["input_type"].cast<std::uint32_t>();
            t.sub_type = d["sub_type"].cast<std::int32_t>();
            py::buffer data = d["data"];
            keep.push_back(data.request());
            const py::buffer_info& b = keep.back();
            if (b.ndim != 1 || b.itemsize != 1 || (b.size > 1 && b.strides[0] != 1))
                throw std::invalid_argument("tensor data must be a contiguous 1-D byte buffer");
            t.size = static_cast<std::uint64_t>(b.size * b.itemsize);
            auto& vec = h.tensors(t.kind);
            t.index = static_cast<std::uint32_t>(vec.size());
            vec.push_back(std::move(t));
            spans[static_cast<int>(vec.back().kind)].push_back({static_cast<const std::uint8_t*>(b.ptr), vec.back().size});
        }
        py::gil_scoped_release release;
        write_dump(path, h, spans[0], spans[1], spans[2], spans[3]);
    }, py::arg("path"), py::arg("version"), py::arg("dump_time"), py::arg("op_name"), py::arg("attrs"),
       py::arg("dfx_message"), py::arg("tensors"),
       "Write a current-format dump. Each tensor is a dict with its metadata and a contiguous `data` buffer "
       "holding its device storage bytes.");
}

}  // namespace dumpcmp::bindings
