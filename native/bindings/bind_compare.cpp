#include <algorithm>
#include <cerrno>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpcmp/checked.hpp"
#include "dumpcmp/dump.hpp"
#include "dumpcmp/engine.hpp"
#include "dumpcmp/errors.hpp"
#include "dumpcmp/format.hpp"
#include "dumpcmp/layout.hpp"
#include "dumpcmp/mapped_file.hpp"
#include "dumpcmp/parallel.hpp"
#include "dumpcmp/source.hpp"
#include "dumpcmp/stats.hpp"
#include "pycommon.hpp"

namespace dumpcmp::bindings {

namespace {

TensorKind kind_of(const std::string& s) {
    if (s == "input") return TensorKind::input;
    if (s == "output") return TensorKind::output;
    throw std::invalid_argument("a compared tensor is an input or an output, not '" + s + "'");
}

Format format_of(const std::string& name) {
    const std::int32_t v = format_from_name(name);
    if (v < 0) throw std::invalid_argument("unknown format '" + name + "'");
    return static_cast<Format>(v);
}

// A .npy header exactly as NumPy writes it, `{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }` and its
// padding: (descr, shape), or nothing for any other text (the caller's general reader then decides). Whatever it
// accepts, ast.literal_eval and NumPy's reader read the same way (tests/dumps/test_npy_header_parser.py).
struct NpyHeader {
    std::string descr;
    std::vector<std::uint64_t> shape;
};

std::optional<NpyHeader> strict_npy_header(std::string_view t) {
    auto take = [&t](std::string_view lit) {
        if (t.substr(0, lit.size()) != lit) return false;
        t.remove_prefix(lit.size());
        return true;
    };
    NpyHeader h;
    if (!take("{'descr': '")) return std::nullopt;
    const auto quote = t.find('\'');
    if (quote == std::string_view::npos || quote == 0 || quote > 16) return std::nullopt;
    for (char c : t.substr(0, quote))
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '<' || c == '>' ||
              c == '|' || c == '='))
            return std::nullopt;
    h.descr = std::string(t.substr(0, quote));
    t.remove_prefix(quote);
    if (!take("', 'fortran_order': False, 'shape': (")) return std::nullopt;
    bool comma = false;  // a single number is a tuple only with its comma: (3,)
    while (!t.empty() && t.front() != ')') {
        if (!h.shape.empty() && !take(" ")) return std::nullopt;
        if (t.empty() || t.front() < '1' || t.front() > '9') return std::nullopt;  // no 0, no leading zeros
        std::uint64_t d = 0;
        std::size_t n = 0;
        while (n < t.size() && t[n] >= '0' && t[n] <= '9') {
            if (n >= 18) return std::nullopt;  // below 2**63 for sure; longer: the general reader
            d = d * 10 + static_cast<std::uint64_t>(t[n] - '0');
            ++n;
        }
        t.remove_prefix(n);
        h.shape.push_back(d);
        comma = take(",");
        if (!comma && (t.empty() || t.front() != ')')) return std::nullopt;
    }
    if (h.shape.size() == 1 && !comma) return std::nullopt;
    if (!take("), }")) return std::nullopt;
    for (char c : t)
        if (c != ' ' && c != '\t' && c != '\n') return std::nullopt;
    return h;
}

// The strict header at the start of a .npy file's bytes (the first `limit` bytes at most are looked at) and where
// its data starts, or nothing (not a .npy, a longer header, any doubt: the general reader).
std::optional<NpyHeader> npy_head(std::string_view bytes, std::uint64_t& offset, std::size_t limit = 4096) {
    const std::string_view head = bytes.substr(0, limit);
    const std::size_t got = head.size();
    if (got < 10 || head.compare(0, 6, "\x93NUMPY") != 0 || head[7] != 0 || head[6] < 1 || head[6] > 3)
        return std::nullopt;
    const std::size_t width = head[6] == 1 ? 2 : 4;
    std::uint64_t length = 0;
    for (std::size_t i = 0; i < width; ++i)
        length |= static_cast<std::uint64_t>(static_cast<unsigned char>(head[8 + i])) << (8 * i);
    offset = 8 + width + length;
    if (length == 0 || offset > got) return std::nullopt;  // longer headers: the general reader
    return strict_npy_header(head.substr(8 + width, length));
}

// A plain .npy file opened with one open (O_NONBLOCK: a FIFO put in its place never waits): its bytes (read whole
// when small, else mapped: MappedFile), the data offset and the header, or nothing for any other file or any doubt.
struct NpyFile {
    MappedFilePtr file;
    std::uint64_t offset;
    NpyHeader header;
};

std::optional<NpyFile> open_npy(const std::string& path) {
    OwnedFd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
    if (f.fd < 0) return std::nullopt;
    // header and data of a small file in one read and no fstat (the short read is its size), a larger one mapped
    // (MappedFile's read first): anything but a regular file is refused by its fstat
    MappedFilePtr file;
    try {
        file = std::make_shared<const MappedFile>(path, f.fd, MappedFile::kUnknownSize);
    } catch (const DumpError&) {
        return std::nullopt;
    }
    std::uint64_t offset = 0;
    auto h = npy_head(std::string_view(reinterpret_cast<const char*>(file->data()), file->size()), offset);
    if (!h) return std::nullopt;
    return NpyFile{std::move(file), offset, std::move(*h)};
}

// What a plain .npy holds, by the rule ground_truth.plain_npy and npy_sources share: a strict header whose descr
// is a key of data_types (naming a data type stored as it is compared) and exactly as many bytes after the header
// as its shape needs.
struct PlainNpy {
    std::string data_type;
    std::uint64_t count;
};

std::optional<PlainNpy> plain_npy_as(const NpyHeader& h, std::uint64_t offset, std::uint64_t size,
                                     const std::string& data_type) {  // data_type: what data_types maps descr to
    if (h.descr.size() < 3) return std::nullopt;
    const DataTypeInfo* info = find_data_type(data_type);
    if (info == nullptr || info->repr != Repr::native) return std::nullopt;
    std::uint64_t itemsize = 0;
    for (char c : h.descr.substr(2)) {
        if (c < '0' || c > '9' || itemsize > 64) return std::nullopt;
        itemsize = itemsize * 10 + static_cast<std::uint64_t>(c - '0');
    }
    std::uint64_t count = 1;
    for (auto d : h.shape) {
        const auto c = checked::mul(count, d);
        if (!c) return std::nullopt;
        count = *c;
    }
    const auto bytes = checked::mul(count, itemsize);
    if (!bytes || itemsize == 0 || offset > size || *bytes != size - offset) return std::nullopt;
    return PlainNpy{data_type, count};
}

std::optional<PlainNpy> plain_npy_of(const NpyHeader& h, std::uint64_t offset, std::uint64_t size,
                                     const std::map<std::string, std::string>& data_types) {
    const auto name = data_types.find(h.descr);
    if (name == data_types.end()) return std::nullopt;
    return plain_npy_as(h, offset, size, name->second);
}

// The header of a plain .npy read with one open and one read (4096 bytes: a short read is the file's size, else
// fstat tells it, and refuses anything but a regular file): (data type name, shape, offset, descr), or nothing.
constexpr std::uint64_t kMaxNpyHeader = std::uint64_t{1} << 16;

struct NpyHead {
    NpyHeader header;
    std::uint64_t offset, size;
};

std::optional<NpyHead> read_npy_head(const std::string& path) {
    OwnedFd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};  // a FIFO put in its place: no wait
    if (f.fd < 0) return std::nullopt;
    char first[4096];
    ssize_t got;
    do {
        got = ::pread(f.fd, first, sizeof first, 0);
    } while (got < 0 && errno == EINTR);
    if (got <= 0) return std::nullopt;  // an empty file, an error (a directory): the general reader says what
    std::uint64_t size = static_cast<std::uint64_t>(got);
    if (static_cast<std::size_t>(got) == sizeof first) {
        struct stat st {};
        if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
        size = static_cast<std::uint64_t>(st.st_size);
    }
    std::string_view bytes(first, static_cast<std::size_t>(got));
    std::string longer;  // a header past the first read (NumPy's limit: 64 KiB) read whole with a second
    if (got >= 10 && static_cast<std::size_t>(got) == sizeof first && first[6] >= 1 && first[6] <= 3) {
        const std::size_t width = first[6] == 1 ? 2 : 4;
        std::uint64_t length = 0;
        for (std::size_t i = 0; i < width; ++i)
            length |= static_cast<std::uint64_t>(static_cast<unsigned char>(first[8 + i])) << (8 * i);
        const std::uint64_t end = 8 + width + length;
        if (length <= kMaxNpyHeader && end > sizeof first && end <= size) {
            longer.assign(first, sizeof first);
            longer.resize(end);
            std::size_t done = sizeof first;
            while (done < end) {
                const ssize_t r = ::pread(f.fd, longer.data() + done, end - done, static_cast<off_t>(done));
                if (r < 0 && errno == EINTR) continue;
                if (r <= 0) return std::nullopt;
                done += static_cast<std::size_t>(r);
            }
            bytes = longer;
        }
    }
    std::uint64_t offset = 0;
    auto h = npy_head(bytes, offset, bytes.size());
    if (!h) return std::nullopt;
    return NpyHead{std::move(*h), offset, size};
}

// A dump tensor as a comparison side (source_from_dump; `File`: a DumpFile, or a DumpHead kept small): read through
// a layout plan when dst_format is given. Touches no Python object: callers release the GIL around it.
template <class File>
std::shared_ptr<TensorSource> dump_source(const std::shared_ptr<File>& file, TensorKind kind, std::size_t index,
                                          const std::optional<std::string>& dst_format,
                                          const std::optional<std::vector<std::int64_t>>& dst_shape, int groups) {
    if (!file) throw std::invalid_argument("no dump file");
    const TensorDesc& t = file->tensor(kind, index);  // DumpHead gives a copy: bound here, it lives to the end
    const DataTypeInfo* info = find_data_type(t.data_type);
    if (info == nullptr || info->repr == Repr::none)
        throw DumpError(file->path(), std::string(tensor_kind_name(t.kind)) + " " + std::to_string(t.index) +
                                          ": data type has no numeric value to compare");
    std::shared_ptr<const Plan> plan;
    if (dst_format) {
        if (!dst_shape) throw std::invalid_argument("a layout conversion needs the destination shape");
        const std::size_t elem = info->bits % 8 == 0 ? static_cast<std::size_t>(info->bits / 8) : 1;
        plan = std::make_shared<const Plan>(
            make_plan(static_cast<Format>(t.format), t.shape, format_of(*dst_format), *dst_shape, groups, elem));
    }
    MappedFilePtr keep;
    const std::uint8_t* bytes = file->tensor_bytes(t, &keep);
    return std::make_shared<TensorSource>(bytes, info->type, t.element_count(), plan, keep);
}

template <class File>
std::shared_ptr<TensorSource> bound_source(const std::shared_ptr<File>& file, const std::string& kind,
                                           std::size_t index, std::optional<std::string> dst_format,
                                           std::optional<std::vector<std::int64_t>> dst_shape, int groups) {
    const TensorKind k = kind_of(kind);
    py::gil_scoped_release release;
    return dump_source(file, k, index, dst_format, dst_shape, groups);
}

// A dump handed in a batch: a DumpFile or a DumpHead (a run's dumps are held as heads).
struct AnyDump {
    std::shared_ptr<DumpFile> file;
    std::shared_ptr<DumpHead> head;

    static AnyDump of(py::handle h) {
        if (py::isinstance<DumpHead>(h)) return {nullptr, h.cast<std::shared_ptr<DumpHead>>()};
        return {h.cast<std::shared_ptr<DumpFile>>(), nullptr};
    }
    TensorDesc tensor(TensorKind kind, std::size_t index) const {
        if (head) return head->tensor(kind, index);
        if (!file) throw std::invalid_argument("no dump file");
        return file->tensor(kind, index);
    }
    std::shared_ptr<TensorSource> source(TensorKind kind, std::size_t index, const std::optional<std::string>& dst,
                                         const std::optional<std::vector<std::int64_t>>& shape, int groups) const {
        if (head) return dump_source(head, kind, index, dst, shape, groups);
        return dump_source(file, kind, index, dst, shape, groups);
    }
};

}  // namespace

void bind_compare(py::module_& core) {
    py::module_ m = core.def_submodule("compare",
        "Comparison sides (TensorSource from a dump, an array or a file) and comparing them, one pair or many.");
    py::class_<TensorSource, std::shared_ptr<TensorSource>>(
        m, "TensorSource", "One side of a comparison: stored bytes, data type, and the layout plan to walk them.")
        .def_property_readonly("count", &TensorSource::count, "elements in the compared order")
        .def_property_readonly("data_type", [](const TensorSource& s) { return data_type_info(s.type()).name; })
        .def_property_readonly("has_plan", [](const TensorSource& s) { return s.plan() != nullptr; })
        .def_property_readonly("stored_bytes", &TensorSource::stored_bytes, "bytes of the stored tensor it reads");

    m.def("source_from_dump", &bound_source<DumpFile>, py::arg("file"), py::arg("kind"), py::arg("index"),
          py::arg("dst_format") = py::none(), py::arg("dst_shape") = py::none(), py::arg("groups") = 1,
          "A dump tensor as a comparison side; with dst_format/dst_shape it is read through a layout plan "
          "(device layout -> plain, cropped).");
    m.def("source_from_dump", &bound_source<DumpHead>, py::arg("file"), py::arg("kind"), py::arg("index"),
          py::arg("dst_format") = py::none(), py::arg("dst_shape") = py::none(), py::arg("groups") = 1,
          "The same from a DumpHead (read_heads).");

    m.def("dump_tensor_facts", [](const py::list& items) {
        // per (DumpFile, kind, index): what a compared row and the layout choice read of the tensor, in one call
        py::list out;
        for (py::handle item : items) {
            py::object facts = py::none();
            if (!py::isinstance<py::tuple>(item) || py::len(item) != 3) {
                out.append(facts);
                continue;
            }
            auto t = py::reinterpret_borrow<py::tuple>(item);
            try {
                const AnyDump file = AnyDump::of(t[0]);
                const TensorDesc d = file.tensor(kind_of(t[1].cast<std::string>()), t[2].cast<std::size_t>());
                const DataTypeInfo* info = find_data_type(d.data_type);
                const char* format = format_name(d.format);
                if (info != nullptr && format != nullptr) {
                    py::object original = py::none();
                    if (d.has_original_shape) original = py::tuple(py::cast(d.original_shape));
                    facts = py::make_tuple(std::string(info->name), std::string(format), py::tuple(py::cast(d.shape)),
                                           original, d.address, d.sub_format, check_tensor_desc(d));
                }
            } catch (const std::exception&) {
                facts = py::none();
            }
            out.append(facts);
        }
        return out;
    }, py::arg("items"),
       "Per (DumpFile or DumpHead, kind, index): (data type name, format name, shape, original shape or None, address, "
       "sub_format, problem: empty when the bytes fit) as TensorDesc and DumpFile.check give them, or None (no such "
       "tensor, an unknown data type or format, any error: ask that one through the general path).");

    m.def("sources_from_dumps", [](const py::list& items) {
        // per (DumpFile, kind, index, dst_format, dst_shape, groups): source_from_dump's source, or None on any error
        struct Item {
            AnyDump file;
            TensorKind kind;
            std::size_t index;
            std::optional<std::string> dst;
            std::optional<std::vector<std::int64_t>> shape;
            int groups;
        };
        std::vector<std::optional<Item>> wanted;
        wanted.reserve(items.size());
        for (py::handle item : items) {
            if (!py::isinstance<py::tuple>(item) || py::len(item) != 6) {
                wanted.emplace_back();
                continue;
            }
            auto t = py::reinterpret_borrow<py::tuple>(item);
            try {
                wanted.push_back(Item{AnyDump::of(t[0]), kind_of(t[1].cast<std::string>()),
                                      t[2].cast<std::size_t>(), t[3].cast<std::optional<std::string>>(),
                                      t[4].cast<std::optional<std::vector<std::int64_t>>>(), t[5].cast<int>()});
            } catch (const std::exception&) {
                wanted.emplace_back();
            }
        }
        std::vector<std::shared_ptr<TensorSource>> made(wanted.size());
        {
            py::gil_scoped_release release;
            for (std::size_t k = 0; k < wanted.size(); ++k) {
                if (!wanted[k]) continue;
                const Item& w = *wanted[k];
                try {
                    made[k] = w.file.source(w.kind, w.index, w.dst, w.shape, w.groups);
                } catch (const std::exception&) {
                    made[k] = nullptr;
                }
            }
        }
        py::list out;
        for (auto& s : made) {
            if (s) out.append(py::make_tuple(s, s->count(), s->stored_bytes()));
            else out.append(py::none());
        }
        return out;
    }, py::arg("items"),
       "source_from_dump for many tensors in one call: per (file, kind, index, dst_format, dst_shape, groups) "
       "(source, count, stored_bytes), or None where it fails (source_from_dump then gives that one's error).");

    m.def("source_from_array", [](const py::array& a, std::optional<std::string> data_type) {
        if (!(a.flags() & py::array::c_style))
            throw std::invalid_argument("the array is not C-contiguous (a Fortran-order .npy?): copy it explicitly");
        DataType type;
        std::uint64_t count = static_cast<std::uint64_t>(a.size());
        if (data_type) {
            const DataTypeInfo* info = find_data_type(*data_type);
            if (info == nullptr) throw std::invalid_argument("unknown data type name '" + *data_type + "'");
            type = info->type;
            if (info->bits <= 0) throw std::invalid_argument(std::string(info->name) + " has no element size");
            // raw storage bytes: as many whole elements as they hold (two per byte for INT4, ...)
            count = static_cast<std::uint64_t>(a.nbytes()) * 8u / static_cast<std::uint64_t>(info->bits);
        } else {
            type = numpy_data_type(a.dtype(), "array");
        }
        return std::make_shared<TensorSource>(static_cast<const std::uint8_t*>(a.data()), type, count);
    }, py::arg("array").noconvert(), py::arg("data_type") = py::none(), py::keep_alive<0, 1>(),
       "A NumPy array (e.g. a memory-mapped .npy) as a comparison side, in its own row-major order.");

    m.def("source_from_file", [](const std::string& path, std::uint64_t offset, const std::string& data_type,
                                 std::uint64_t count) {
        const DataTypeInfo* info = find_data_type(data_type);
        if (info == nullptr || info->repr != Repr::native)
            throw std::invalid_argument("source_from_file reads a data type stored as it is compared, not '" +
                                        data_type + "'");
        const auto elem = static_cast<std::uint64_t>(info->bits / 8);
        MappedFilePtr keep;
        {
            py::gil_scoped_release release;
            keep = std::make_shared<const MappedFile>(path);
        }
        // the file may have changed since its header was read: never point past the mapping
        const auto bytes = checked::mul(count, elem);
        if (!bytes || !checked::within(offset, *bytes, keep->size()))
            throw DumpError(path, "holds " + std::to_string(keep->size()) + " bytes, fewer than its header's " +
                                      std::to_string(count) + " elements after byte " + std::to_string(offset));
        return std::make_shared<TensorSource>(keep->data() + offset, info->type, count, nullptr, keep);
    }, py::arg("path"), py::arg("offset"), py::arg("data_type"), py::arg("count"),
       "count elements of a data type stored as it is compared (a name of data_types(): FLOAT, FLOAT16, BOOL, ...) "
       "at byte offset of a file (a .npy's data after its header), mapped here: one open and one mapping, no NumPy.");

    m.def("npy_sources", [](const std::vector<std::string>& paths,
                            const std::map<std::string, std::string>& data_types) {
        // per file: (source, shape, data type name) of a plain .npy as NumPy writes it, or None (any other file,
        // any doubt, any error: the caller reads that one with its general reader, whose messages the user sees)
        struct Opened {
            std::shared_ptr<TensorSource> source;
            std::vector<std::uint64_t> shape;
            std::string data_type;
        };
        std::vector<std::optional<Opened>> opened(paths.size());
        {
            py::gil_scoped_release release;
            for (std::size_t k = 0; k < paths.size(); ++k) {
                std::optional<NpyFile> npy;
                try {
                    npy = open_npy(paths[k]);
                } catch (const std::exception&) {
                    continue;
                }
                if (!npy) continue;
                const std::uint64_t offset = npy->offset;
                const MappedFilePtr& keep = npy->file;
                const auto plain = plain_npy_of(npy->header, offset, keep->size(), data_types);
                if (!plain) continue;
                opened[k] = Opened{std::make_shared<TensorSource>(keep->data() + offset,
                                                                  find_data_type(plain->data_type)->type, plain->count,
                                                                  nullptr, keep),
                                   npy->header.shape, plain->data_type};
            }
        }
        py::list out;
        for (auto& o : opened) {
            if (!o) {
                out.append(py::none());
                continue;
            }
            py::tuple shape(o->shape.size());
            for (std::size_t i = 0; i < o->shape.size(); ++i) shape[i] = py::int_(o->shape[i]);
            out.append(py::make_tuple(o->source, shape, o->data_type));
        }
        return out;
    }, py::arg("paths"), py::arg("data_types"),
       "Plain .npy files as comparison sides, one call for many: per path (source, shape, data type name) where the "
       "header is one NumPy writes (descr a key of data_types, which names its data type; C order; the size "
       "agreeing), else None.");

    m.def("npy_heads", [](const std::vector<std::string>& paths, const py::dict& data_types) {
        // data_types looked up per header (not made a std::map each call: plain_npy asks for one file at a time)
        std::vector<std::optional<NpyHead>> heads(paths.size());
        {
            py::gil_scoped_release release;
            for (std::size_t k = 0; k < paths.size(); ++k) {
                try {
                    heads[k] = read_npy_head(paths[k]);
                } catch (const std::exception&) {
                    heads[k].reset();
                }
            }
        }
        py::list out;
        for (auto& h : heads) {
            std::optional<PlainNpy> plain;
            if (h) {
                PyObject* name = PyDict_GetItemString(data_types.ptr(), h->header.descr.c_str());  // borrowed
                if (name != nullptr && PyUnicode_Check(name))
                    plain = plain_npy_as(h->header, h->offset, h->size, py::handle(name).cast<std::string>());
            }
            if (!plain) {
                out.append(py::none());
                continue;
            }
            py::tuple shape(h->header.shape.size());
            for (std::size_t i = 0; i < h->header.shape.size(); ++i) shape[i] = py::int_(h->header.shape[i]);
            out.append(py::make_tuple(plain->data_type, shape, h->offset, h->header.descr));
        }
        return out;
    }, py::arg("paths"), py::arg("data_types"),
       "The headers of plain .npy files, by npy_sources' rule (a header up to 64 KiB), nothing mapped (one open and "
       "one 4096-byte read a file): per path (data type name, shape, data offset, descr), else None.");

    m.def("compare_sources", [](const std::shared_ptr<TensorSource>& x, const std::shared_ptr<TensorSource>& y,
                                std::optional<std::vector<int>> metrics, unsigned threads, bool scalar,
                                std::size_t chunk_elements, bool precise) {
        CompareOptions o;
        o.metrics = mask_from(metrics);
        o.threads = threads;
        o.scalar = scalar;
        o.precise = precise;
        o.chunk_elements = chunk_elements;
        py::gil_scoped_release release;  // the sources own (or keep alive) all the memory they read
        return compare_sources(*x, *y, o);
    }, py::arg("x"), py::arg("y"), py::kw_only(), py::arg("metrics") = py::none(), py::arg("threads") = 0u,
       py::arg("scalar") = false, py::arg("chunk_elements") = kDefaultChunkElements, py::arg("precise") = false);

    m.def("compare_many", [](const py::list& pairs, std::optional<std::vector<int>> metrics, unsigned threads,
                             bool precise) {
        std::vector<CompareJob> jobs;
        jobs.reserve(pairs.size());
        const MetricMask mask = mask_from(metrics);
        for (py::handle item : pairs) {
            auto t = py::reinterpret_borrow<py::tuple>(item);
            CompareJob j;
            j.x = t[0].cast<std::shared_ptr<TensorSource>>();
            j.y = t[1].cast<std::shared_ptr<TensorSource>>();
            j.options.metrics = mask;
            j.options.precise = precise;
            j.options.scalar = t[2].cast<bool>();
            jobs.push_back(std::move(j));
        }
        std::vector<JobOutcome> out;
        {
            py::gil_scoped_release release;
            out = compare_many(jobs, threads);
        }
        py::list results;
        for (auto& o : out) {
            if (o.ok) results.append(py::cast(o.result));
            else results.append(py::str(o.error));
        }
        return results;
    }, py::arg("pairs"), py::arg("metrics") = py::none(), py::arg("threads") = 0u, py::arg("precise") = false,
       "Compare (x, y, scalar) source pairs; small pairs in parallel, large ones on all threads. "
       "Returns a MetricResult or the error text per pair.");

    m.def("float32_windows", [](const std::shared_ptr<TensorSource>& x, const std::shared_ptr<TensorSource>& y,
                                py::function callback, unsigned threads, std::size_t chunk_elements) {
        if (x->count() != y->count())
            throw std::invalid_argument("element counts differ: " + std::to_string(x->count()) + " vs " +
                                        std::to_string(y->count()));
        if (chunk_elements == 0) throw std::invalid_argument("window size must be at least one element");
        if (threads == 0) threads = num_threads();
        const std::uint64_t n = x->count();
        const std::uint64_t windows = (n + chunk_elements - 1) / chunk_elements;
        // Windows are decoded a round at a time on the engine's threads, without the interpreter lock, while this
        // thread hands the round before to Python in window order. Python is called from this thread only: calling
        // it from every engine thread made them queue for the lock, slower on 2 threads than on 1 (measured,
        // docs/performance.md#metric-plug-ins).
        const std::size_t per_round = std::max<std::size_t>(2, 4 * static_cast<std::size_t>(threads));
        struct Round {
            std::vector<SourceScratch> sx, sy;  // a window's decoded values, unless it is read in place
            std::vector<const float*> x, y;
            std::vector<std::size_t> counts;
            std::uint64_t first_window = 0;
            std::size_t windows = 0;
        };
        auto decode = [&](Round& r, std::uint64_t first_window, unsigned decode_threads) {
            r.first_window = first_window;
            r.windows = static_cast<std::size_t>(std::min<std::uint64_t>(per_round, windows - first_window));
            for (auto* v : {&r.sx, &r.sy}) v->resize(per_round);
            for (auto* v : {&r.x, &r.y}) v->resize(per_round);
            r.counts.resize(per_round);
            parallel_for(r.windows, [&](std::size_t i) {
                const std::uint64_t first = (first_window + i) * chunk_elements;
                r.counts[i] = static_cast<std::size_t>(std::min<std::uint64_t>(chunk_elements, n - first));
                r.x[i] = x->read_float32(first, r.counts[i], r.sx[i]);
                r.y[i] = y->read_float32(first, r.counts[i], r.sy[i]);
            }, decode_threads);
        };
        Round current, next;
        {
            py::gil_scoped_release release;
            if (windows > 0) decode(current, 0, threads);
        }
        for (std::uint64_t at = 0; at < windows; at += per_round) {
            const std::uint64_t after = at + per_round;
            std::exception_ptr ahead_error;
            ThreadGroup ahead;  // the next round, decoded while Python reads this one (joined on every way out)
            const bool overlap = threads > 1 && after < windows &&
                                 ahead.spawn([&] {
                                     try {
                                         decode(next, after, threads - 1);
                                     } catch (...) {
                                         ahead_error = std::current_exception();
                                     }
                                 });
            for (std::size_t i = 0; i < current.windows; ++i) {
                // copies: the callback may keep them, the buffers are a later round's
                const auto count = static_cast<py::ssize_t>(current.counts[i]);
                py::array_t<float> ax(count, current.x[i]);
                py::array_t<float> ay(count, current.y[i]);
                callback(current.first_window + i, ax, ay);
            }
            {
                py::gil_scoped_release release;
                ahead.join();
                if (ahead_error) std::rethrow_exception(ahead_error);
                if (!overlap && after < windows) decode(next, after, threads);
            }
            std::swap(current, next);
        }
    }, py::arg("x"), py::arg("y"), py::arg("callback"), py::arg("threads") = 0u,
       py::arg("chunk_elements") = kDefaultChunkElements,
       "Both sides' windows of chunk_elements in the compared order, decoded to float32 on up to `threads` threads: "
       "callback(window_index, x_window, y_window) (1-D float32 copies) once per window, in window order, on the "
       "calling thread. An exception in the callback stops the windows and is raised as it is.");

    m.def("stats_many", [](const py::list& sources, unsigned threads) {
        std::vector<std::shared_ptr<TensorSource>> list;
        list.reserve(sources.size());
        for (py::handle item : sources) list.push_back(item.cast<std::shared_ptr<TensorSource>>());
        std::vector<StatsOutcome> out;
        {
            py::gil_scoped_release release;
            out = stats_many(list, threads);
        }
        py::list results;
        for (auto& o : out) {
            if (!o.ok) {
                results.append(py::str(o.error));
                continue;
            }
            const TensorStats& t = o.stats;
            py::dict d;
            d["count"] = t.count;
            d["max"] = t.max;
            d["min"] = t.min;
            d["mean"] = t.mean;
            d["l2norm"] = t.l2norm;
            d["nan_count"] = t.nan;
            d["pos_inf_count"] = t.pos_inf;
            d["neg_inf_count"] = t.neg_inf;
            d["zero_count"] = t.zero;
            results.append(std::move(d));
        }
        return results;
    }, py::arg("sources"), py::arg("threads") = 0u,
       "Each source's statistics in one pass, in the compared order (its layout plan): a dict with count, max, "
       "min, mean, l2norm (float32 values, float64 sums; NaN in the tensor makes the four NaN) and nan_count, "
       "pos_inf_count, neg_inf_count, zero_count; or the error text of a source that could not be read.");
}

}  // namespace dumpcmp::bindings
