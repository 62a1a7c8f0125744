// _core.scan: one folder of a dump tree listed, its names parsed and checked readable in C++ (GIL released), and the
// entries of its device dumps (in execution order) and ground-truth files made here (issue #35: 10^6 files).
#include <algorithm>
#include <cstring>

#include "dumpcmp/scan.hpp"
#include "pycommon.hpp"

namespace dumpcmp::bindings {

namespace {

PyObject* interned(const char* s) {
    PyObject* o = PyUnicode_InternFromString(s);  // kept for the life of the process
    if (o == nullptr) throw py::error_already_set();
    return o;
}

struct Names {
    PyObject *path, *file_name, *name, *dump, *op_type, *op_name, *task_id, *timestamp, *stream_id, *dump_number,
        *ffts, *task_type, *context_id, *thread_id, *device_id, *output_index, *extension;
};

const Names& names() {
    static const Names n{interned("path"), interned("file_name"), interned("name"), interned("dump"),
                         interned("op_type"), interned("op_name"), interned("task_id"), interned("timestamp"),
                         interned("stream_id"), interned("dump_number"), interned("ffts"), interned("task_type"),
                         interned("context_id"), interned("thread_id"), interned("device_id"),
                         interned("output_index"), interned("extension")};
    return n;
}

py::object fs_text(std::string_view s) {
    PyObject* o = PyUnicode_DecodeFSDefaultAndSize(s.data(), static_cast<Py_ssize_t>(s.size()));
    if (o == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(o);
}

py::object number(std::uint64_t v) {
    PyObject* o = PyLong_FromUnsignedLongLong(v);
    if (o == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(o);
}

// object.__new__(cls) and its slots set as object.__setattr__ sets them (a frozen dataclass's own __setattr__ refuses)
py::object make(const py::handle& cls) {
    auto* t = reinterpret_cast<PyTypeObject*>(cls.ptr());
    PyObject* o = t->tp_alloc(t, 0);
    if (o == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(o);
}

void put(const py::object& o, PyObject* attr, const py::handle& value) {
    if (PyObject_GenericSetAttr(o.ptr(), attr, value.ptr()) < 0) throw py::error_already_set();
}

// The same text for equal bytes in a row (op types, extensions, task types): one string object shared.
struct Shared {
    std::string bytes;
    py::object text;
    const py::object& get(std::string_view s) {
        if (!text || s != bytes) {
            text = fs_text(s);
            bytes.assign(s);
        }
        return text;
    }
};

bool utf8(std::string_view s) {
    for (char c : s)
        if (static_cast<unsigned char>(c) >= 0x80) {
            PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "strict");
            if (o == nullptr) {
                PyErr_Clear();
                return false;
            }
            Py_DECREF(o);
            return true;
        }
    return true;
}

py::tuple list_folder(const py::str& folder, const py::handle& dump_entry, const py::handle& device_name,
                      const py::handle& ffts_suffix, const py::handle& ground_truth_entry,
                      const py::handle& framework_name) {
    PyObject* encoded = PyUnicode_EncodeFSDefault(folder.ptr());
    if (encoded == nullptr) throw py::error_already_set();
    std::string dir(PyBytes_AS_STRING(encoded), static_cast<std::size_t>(PyBytes_GET_SIZE(encoded)));
    Py_DECREF(encoded);
    std::vector<FolderItem> items;
    std::vector<std::uint32_t> device;
    int error;
    {
        py::gil_scoped_release release;
        error = dumpcmp::list_folder(dir, items);
        for (std::uint32_t i = 0; i < items.size(); ++i)
            if (items[i].type == FolderItem::file && items[i].parsed.kind == NameKind::device) device.push_back(i);
        sort_device_items(items, device);
    }
    if (error != 0) return py::make_tuple(py::str(std::strerror(error)), py::none(), py::none(), py::none(),
                                          py::none(), py::none(), py::none());
    const std::string prefix = !dir.empty() && dir.back() == '/' ? dir : dir + "/";
    const Names& n = names();
    py::list subdirs, skipped, slow, devices, framework;
    bool in_order = true;
    for (const FolderItem& item : items) {
        switch (item.type) {
            case FolderItem::dir: subdirs.append(fs_text(item.name)); break;
            case FolderItem::special:
                skipped.append(py::make_tuple(fs_text(item.name), "not a regular file (a broken link, socket, ...)"));
                break;
            case FolderItem::stat_error:
                skipped.append(py::make_tuple(fs_text(item.name),
                                              std::string("cannot stat: ") + std::strerror(item.error)));
                break;
            case FolderItem::unreadable:
                skipped.append(py::make_tuple(fs_text(item.name), "not readable (permission denied)"));
                break;
            case FolderItem::file:
                if (item.parsed.kind == NameKind::other) slow.append(fs_text(item.name));
                break;
        }
    }
    Shared op_types, task_types, extensions;
    std::string path = prefix;
    for (std::uint32_t i : device) {
        const FolderItem& item = items[i];
        const ParsedDumpName& p = item.parsed;
        in_order = in_order && utf8(item.name);
        py::object name = make(device_name);
        put(name, n.op_type, op_types.get(p.op_type));
        put(name, n.op_name, fs_text(p.op_name));
        put(name, n.task_id, number(p.task_id));
        put(name, n.timestamp, number(p.timestamp));
        put(name, n.stream_id, p.has_stream ? number(p.stream_id) : py::none());
        put(name, n.dump_number, p.has_dump_number ? number(p.dump_number) : py::none());
        if (p.has_ffts) {
            py::object ffts = make(ffts_suffix);
            put(ffts, n.task_type, task_types.get(p.task_type));
            put(ffts, n.context_id, number(p.context_id));
            put(ffts, n.thread_id, number(p.thread_id));
            put(ffts, n.device_id, number(p.device_id));
            put(name, n.ffts, ffts);
        } else {
            put(name, n.ffts, py::none());
        }
        path.resize(prefix.size());
        path += item.name;
        py::object entry = make(dump_entry);
        put(entry, n.path, fs_text(path));
        put(entry, n.file_name, fs_text(item.name));
        put(entry, n.name, name);
        put(entry, n.dump, py::none());
        devices.append(entry);
    }
    // by key ({op_name}.{output_index}, bytes: the order of the index's keys for UTF-8 names), so that sorting the
    // keys of a folder's ground truth in Python finds them in order
    std::vector<std::pair<std::string, std::uint32_t>> keyed;
    for (std::uint32_t i = 0; i < items.size(); ++i) {
        const FolderItem& item = items[i];
        if (item.type != FolderItem::file || item.parsed.kind != NameKind::framework) continue;
        keyed.emplace_back(std::string(item.parsed.op_name) + "." + std::to_string(item.parsed.task_id), i);
    }
    std::sort(keyed.begin(), keyed.end());
    for (const auto& [key, i] : keyed) {
        const FolderItem& item = items[i];
        const ParsedDumpName& p = item.parsed;
        py::object name = make(framework_name);
        put(name, n.op_name, fs_text(p.op_name));
        put(name, n.output_index, number(p.task_id));
        put(name, n.timestamp, number(p.timestamp));
        put(name, n.extension, extensions.get(p.extension));
        path.resize(prefix.size());
        path += item.name;
        py::object entry = make(ground_truth_entry);
        put(entry, n.path, fs_text(path));
        put(entry, n.file_name, fs_text(item.name));
        put(entry, n.name, name);
        framework.append(entry);
    }
    return py::make_tuple(py::none(), subdirs, skipped, slow, devices, py::bool_(in_order), framework);
}

}  // namespace

void bind_scan(py::module_& core) {
    py::module_ m = core.def_submodule("scan", "One folder of a dump tree listed and its names parsed (issue #35).");
    m.def("list_folder", &list_folder, py::arg("folder"), py::arg("dump_entry"), py::arg("device_name"),
          py::arg("ffts_suffix"), py::arg("ground_truth_entry"), py::arg("framework_name"),
          "(error, subdirs, skipped, others, devices, in_order, framework) of one folder, as the scan sees it:\n"
          "error the strerror text that stopped the listing (then the rest is None), else None; subdirs the names\n"
          "of its folders (links followed); skipped (name, reason) for special files, files that do not stat and\n"
          "dump or ground-truth names that are not readable; others the names of the other files, for the Python\n"
          "rules (mapping.csv, hashed, statistics, converted, names of no scheme, numbers past 64 bits); devices\n"
          "the DumpEntry of each device dump (the classes given), sorted by DumpEntry.order if in_order; framework\n"
          "the GroundTruthEntry of each {op_name}.{output_index}.{timestamp}.pb|quant|npy file, sorted by\n"
          "the bytes of {op_name}.{output_index}.\n"
          "Files named .dumpcmp-*.tmp are left out.");
    m.def("parse_name", [](const py::bytes& name) -> py::object {
        const std::string s = name;
        const ParsedDumpName p = parse_dump_name(s);
        auto opt = [](bool has, std::uint64_t v) -> py::object { return has ? number(v) : py::none(); };
        if (p.kind == NameKind::device)
            return py::make_tuple("device", fs_text(p.op_type), fs_text(p.op_name), number(p.task_id),
                                  number(p.timestamp), opt(p.has_stream, p.stream_id),
                                  opt(p.has_dump_number, p.dump_number),
                                  p.has_ffts ? py::object(py::make_tuple(fs_text(p.task_type), number(p.context_id),
                                                                         number(p.thread_id), number(p.device_id)))
                                             : py::none());
        if (p.kind == NameKind::framework)
            return py::make_tuple("framework", fs_text(p.op_name), number(p.task_id), number(p.timestamp),
                                  fs_text(p.extension));
        return py::none();
    }, py::arg("name"),
          "The scan's C++ parse of a file name's bytes (for tests): ('device', op_type, op_name, task_id, timestamp,\n"
          "stream_id, dump_number, (task_type, context_id, thread_id, device_id) or None), ('framework', op_name,\n"
          "output_index, timestamp, extension), or None (neither scheme, or a number past 64 bits).");
}

}  // namespace dumpcmp::bindings
