// _core.scan: one folder of a dump tree listed, its names parsed and checked readable in C++ (GIL released), and the
// entries of its device dumps (in execution order) and ground-truth files made here (issue #35: 10^6 files).
#include <algorithm>
#include <cstring>
#include <unordered_map>

#include "dumpcmp/dtype.hpp"
#include "dumpcmp/dump.hpp"
#include "dumpcmp/format.hpp"
#include "dumpcmp/scan.hpp"
#include "pycommon.hpp"
#include "read_files.hpp"

namespace dumpcmp::bindings {

namespace {

PyObject* interned(const char* s) {
    PyObject* o = PyUnicode_InternFromString(s);  // kept for the life of the process
    if (o == nullptr) throw py::error_already_set();
    return o;
}

struct Names {
    PyObject *head, *file_name, *name, *dump, *op_type, *op_name, *task_id, *timestamp, *stream_id, *dump_number,
        *ffts, *task_type, *context_id, *thread_id, *device_id, *output_index, *extension;
};

const Names& names() {
    static const Names n{interned("head"), interned("file_name"), interned("name"), interned("dump"),
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

enum class Text { op_type, op_name, task_type, extension };

struct NameClasses {
    py::handle device, ffts, framework;
};

// The DeviceDumpName or FrameworkDumpName (with its FftsSuffix) of a parsed name: text(Text, bytes) makes its texts,
// num(i, value) its numbers (i: the NameDigits index).
template <class TextOf, class NumberOf>
py::object name_object(const ParsedDumpName& p, const NameClasses& c, TextOf&& text, NumberOf&& num) {
    const Names& n = names();
    if (p.kind == NameKind::framework) {
        py::object name = make(c.framework);
        put(name, n.op_name, text(Text::op_name, p.op_name));
        put(name, n.output_index, num(0, p.task_id));
        put(name, n.timestamp, num(1, p.timestamp));
        put(name, n.extension, text(Text::extension, p.extension));
        return name;
    }
    py::object name = make(c.device);
    put(name, n.op_type, text(Text::op_type, p.op_type));
    put(name, n.op_name, text(Text::op_name, p.op_name));
    put(name, n.task_id, num(0, p.task_id));
    put(name, n.timestamp, num(1, p.timestamp));
    put(name, n.stream_id, p.has_stream ? num(2, p.stream_id) : py::none());
    put(name, n.dump_number, p.has_dump_number ? num(3, p.dump_number) : py::none());
    if (p.has_ffts) {
        py::object ffts = make(c.ffts);
        put(ffts, n.task_type, text(Text::task_type, p.task_type));
        put(ffts, n.context_id, num(4, p.context_id));
        put(ffts, n.thread_id, num(5, p.thread_id));
        put(ffts, n.device_id, num(6, p.device_id));
        put(name, n.ffts, ffts);
    } else {
        put(name, n.ffts, py::none());
    }
    return name;
}

// naming.parse_name's rule for the two schemes the C++ parses: `name` (a str, any code points: its UTF-8 with
// surrogates passed, where '.', '/' and digits are the same bytes) parsed, or None.
py::object parse_name(const py::str& name, const py::handle& device_name, const py::handle& ffts_suffix,
                      const py::handle& framework_name) {
    PyObject* encoded = PyUnicode_AsEncodedString(name.ptr(), "utf-8", "surrogatepass");
    if (encoded == nullptr) throw py::error_already_set();
    const py::object keep = py::reinterpret_steal<py::object>(encoded);
    const std::string_view bytes(PyBytes_AS_STRING(encoded), static_cast<std::size_t>(PyBytes_GET_SIZE(encoded)));
    NameDigits digits;
    const ParsedDumpName p = parse_dump_name(bytes, &digits);
    if (p.kind == NameKind::other) return py::none();
    auto text = [](Text, std::string_view s) {
        PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogatepass");
        if (o == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(o);
    };
    auto num = [&](int i, std::uint64_t v) {
        if (p.fits) return number(v);
        const std::string s(digits.v[i]);  // past 64 bits: Python's int of the digits
        PyObject* o = PyLong_FromString(s.c_str(), nullptr, 10);
        if (o == nullptr) throw py::error_already_set();
        return py::reinterpret_steal<py::object>(o);
    };
    return name_object(p, NameClasses{device_name, ffts_suffix, framework_name}, text, num);
}

py::tuple list_folder(const py::str& folder, const py::handle& dump_entry, const py::handle& device_name,
                      const py::handle& ffts_suffix, const py::handle& ground_truth_entry,
                      const py::handle& framework_name, bool probe, bool check_devices) {
    PyObject* encoded = PyUnicode_EncodeFSDefault(folder.ptr());
    if (encoded == nullptr) throw py::error_already_set();
    std::string dir(PyBytes_AS_STRING(encoded), static_cast<std::size_t>(PyBytes_GET_SIZE(encoded)));
    Py_DECREF(encoded);
    std::vector<FolderItem> items;
    std::vector<std::uint32_t> device;
    int error;
    long found = -1;
    {
        py::gil_scoped_release release;
        error = dumpcmp::list_folder(dir, items, probe ? &found : nullptr, check_devices || probe);
        if (found >= 0) {
            device.push_back(static_cast<std::uint32_t>(found));
        } else {
            for (std::uint32_t i = 0; i < items.size(); ++i)
                if (items[i].type == FolderItem::file && items[i].parsed.kind == NameKind::device) device.push_back(i);
            sort_device_items(items, device);
        }
    }
    if (error != 0) return py::make_tuple(py::str(std::strerror(error)), py::none(), py::none(), py::none(),
                                          py::none(), py::none(), py::none());
    const std::string prefix = !dir.empty() && dir.back() == '/' ? dir : dir + "/";
    const Names& n = names();
    py::list subdirs, skipped, slow, devices, framework;
    bool in_order = true;
    for (const FolderItem& item : items) {
        if (found >= 0) break;  // a probe answered by a readable device dump: that entry alone
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
    // op names one string object for a row of equal ones (the outputs of an op, whose ground truth files are made in
    // key order), op types one for each type of the folder (thousands of dumps each; issue #35: 10^6 entries)
    Shared op_names, task_types, extensions;
    std::unordered_map<std::string_view, py::object> op_types;
    auto op_type = [&](std::string_view s) -> py::object {
        auto found = op_types.find(s);
        if (found != op_types.end()) return found->second;
        return op_types.emplace(s, fs_text(s)).first->second;
    };
    const NameClasses classes{device_name, ffts_suffix, framework_name};
    auto cached = [&](Text field, std::string_view s) -> py::object {
        switch (field) {
            case Text::op_type: return op_type(s);
            case Text::task_type: return task_types.get(s);
            case Text::extension: return extensions.get(s);
            default: return op_names.get(s);
        }
    };
    auto plain = [](int, std::uint64_t v) { return number(v); };
    const py::object head = fs_text(prefix);  // every entry's folder: one string (`path` is head + file_name)
    // a DumpEntry or GroundTruthEntry (`cls`): head, file_name, name (and dump: None, for a DumpEntry)
    auto entry_of = [&](const FolderItem& item, const py::handle& cls, bool with_dump) {
        py::object name = name_object(item.parsed, classes, cached, plain);
        py::object entry = make(cls);
        put(entry, n.head, head);
        put(entry, n.file_name, fs_text(item.name));
        put(entry, n.name, name);
        if (with_dump) put(entry, n.dump, py::none());
        return entry;
    };
    for (std::uint32_t i : device) {
        in_order = in_order && utf8(items[i].name);
        devices.append(entry_of(items[i], dump_entry, true));
    }
    // by key ({op_name}.{output_index}, bytes: the order of the index's keys for UTF-8 names), so that sorting the
    // keys of a folder's ground truth in Python finds them in order
    std::vector<std::pair<std::string, std::uint32_t>> keyed;
    for (std::uint32_t i = 0; i < items.size(); ++i) {
        const FolderItem& item = items[i];
        if (found >= 0 || item.type != FolderItem::file || item.parsed.kind != NameKind::framework) continue;
        keyed.emplace_back(std::string(item.parsed.op_name) + "." + std::to_string(item.parsed.task_id), i);
    }
    std::sort(keyed.begin(), keyed.end());
    for (const auto& [key, i] : keyed) framework.append(entry_of(items[i], ground_truth_entry, false));
    return py::make_tuple(py::none(), subdirs, skipped, slow, devices, py::bool_(in_order), framework);
}


// --- info records ---------------------------------------------------------------------------------------------------

// JSON text as jsonfile.dumps_text writes it (orjson's two-space indent) for values whose strings are plain printable
// ASCII: there every writer dumpcmp uses gives the same bytes. `ok` turns false at the first string that is not.
class JsonText {
public:
    std::string s;
    bool ok = true;
    std::size_t indent = 0;  // the level the text is written at (every line after the first two spaces more a level)

    void begin(char c) {
        s += c;
        first_.push_back(true);
    }
    void end(char c) {
        const bool empty = first_.back();
        first_.pop_back();
        if (!empty) newline();
        s += c;
    }
    void item() {
        if (!first_.back()) s += ',';
        first_.back() = false;
        newline();
    }
    void key(const char* k) {
        item();
        s += '"';
        s += k;
        s += "\": ";
    }
    void text(std::string_view v) {
        for (char c : v)
            if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') ok = false;
        s += '"';
        s += v;
        s += '"';
    }
    void number(std::uint64_t v) { s += std::to_string(v); }
    void number(std::int64_t v) { s += std::to_string(v); }
    void null() { s += "null"; }
    void reset(std::size_t size) {  // back to `size`, at the outermost level
        s.resize(size);
        first_.clear();
    }
    void boolean(bool v) { s += v ? "true" : "false"; }

private:
    std::vector<bool> first_;
    void newline() {
        s += '\n';
        s.append(2 * (first_.size() + indent), ' ');
    }
};

// A Python attribute of a parsed name: plain ASCII text, a 64-bit non-negative int or None; else `ok` false.
void name_field(JsonText& j, const py::handle& obj, PyObject* attr, bool text) {
    py::object v = py::reinterpret_steal<py::object>(PyObject_GetAttr(obj.ptr(), attr));
    if (!v) throw py::error_already_set();
    if (v.is_none()) return j.null();
    if (text) {
        Py_ssize_t size = 0;
        const char* data = PyUnicode_Check(v.ptr()) ? PyUnicode_AsUTF8AndSize(v.ptr(), &size) : nullptr;
        if (data == nullptr) {
            PyErr_Clear();
            j.ok = false;
            return;
        }
        return j.text(std::string_view(data, static_cast<std::size_t>(size)));
    }
    if (!PyLong_CheckExact(v.ptr())) {
        j.ok = false;
        return;
    }
    const unsigned long long n = PyLong_AsUnsignedLongLong(v.ptr());
    if (n == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
        PyErr_Clear();
        j.ok = false;
        return;
    }
    j.number(static_cast<std::uint64_t>(n));
}

struct NameField {
    const char* key;
    PyObject* attr;
    bool text;
};

void name_fields(JsonText& j, const py::handle& obj, std::initializer_list<NameField> fields) {
    for (const NameField& f : fields) {
        j.key(f.key);
        name_field(j, obj, f.attr, f.text);
    }
}

std::string type_name(std::int32_t v) {
    const DataTypeInfo* info = find_data_type(v);
    return info ? std::string(info->name) : "UNKNOWN(" + std::to_string(v) + ")";
}

std::string format_text(std::int32_t v) {
    const char* name = format_name(v);
    return name ? std::string(name) : "UNKNOWN(" + std::to_string(v) + ")";
}

// info's record of a device dump (cli/info.py `_dump_dict` of the header and `_parsed_dict` of the name), written at
// the end of `j.s` (`j` at its outermost level); false, with `j.s` as it was, where Python writes it: text that is not
// plain ASCII, numbers past 64 bits, an OpDebug dump's overflow list.
bool write_record(JsonText& j, const DumpFile& file, const py::handle& name) {
    const Names& n = names();
    const DumpHeader& h = file.header();
    const std::size_t mark = j.s.size();
    const std::size_t indent = j.indent;
    j.ok = true;
    j.begin('{');
    j.key("path");
    j.text(file.path());
    j.key("file_name");
    const std::size_t slash = file.path().rfind('/');
    j.text(slash == std::string::npos ? std::string_view(file.path()) : std::string_view(file.path()).substr(slash + 1));
    j.key("name");
    j.begin('{');
    j.key("scheme");
    j.text("device");
    const std::size_t op_type_at = j.s.size() + std::strlen(",\n    \"op_type\": ") + 2 * indent;
    j.key("op_type");
    name_field(j, name, n.op_type, true);
    const std::string op_type = j.s.substr(op_type_at);
    j.key("op_name");
    const std::size_t op_name_at = j.s.size();
    name_field(j, name, n.op_name, true);
    const bool opdebug = op_type == "\"Opdebug\"" && j.s.compare(op_name_at, std::string::npos, "\"Node_OpDebug\"") == 0;
    name_fields(j, name, {{"task_id", n.task_id, false}, {"timestamp", n.timestamp, false},
                          {"stream_id", n.stream_id, false}, {"dump_number", n.dump_number, false}});
    j.key("ffts");
    py::object ffts = py::reinterpret_steal<py::object>(PyObject_GetAttr(name.ptr(), n.ffts));
    if (!ffts) throw py::error_already_set();
    if (ffts.is_none()) {
        j.null();
    } else {
        j.begin('{');
        name_fields(j, ffts, {{"task_type", n.task_type, true}, {"context_id", n.context_id, false},
                              {"thread_id", n.thread_id, false}, {"device_id", n.device_id, false}});
        j.end('}');
    }
    j.end('}');
    if (opdebug) {  // an OpDebug file: Python adds its overflow list
        j.reset(mark);
        return false;
    }
    j.key("type");
    j.text("dump");
    j.key("op_name");
    j.text(h.op_name);
    j.key("op_type");
    j.s += op_type;
    j.key("version");
    j.text(h.version);
    j.key("dump_time");
    j.number(h.dump_time);
    j.key("legacy");
    j.boolean(h.legacy);
    j.key("file_size");
    j.number(h.file_size);
    j.key("tensors");
    j.begin('[');
    for (TensorKind kind : {TensorKind::input, TensorKind::output, TensorKind::buffer, TensorKind::workspace}) {
        for (const TensorDesc& t : h.tensors(kind)) {
            j.item();
            j.begin('{');
            j.key("kind");
            j.text(tensor_kind_name(t.kind));
            j.key("index");
            j.number(std::uint64_t{t.index});
            j.key("data_type");
            j.text(type_name(t.data_type));
            j.key("format");
            j.text(format_text(t.format));
            j.key("shape");
            j.begin('[');
            for (std::int64_t d : t.shape) j.item(), j.number(d);
            j.end(']');
            j.key("original_shape");
            if (t.has_original_shape) {
                j.begin('[');
                for (std::int64_t d : t.original_shape) j.item(), j.number(d);
                j.end(']');
            } else {
                j.null();
            }
            j.key("sub_format");
            j.number(std::int64_t{t.sub_format});
            j.key("size");
            j.number(t.size);
            j.end('}');
        }
    }
    j.end(']');
    j.end('}');
    if (!j.ok) j.reset(mark);
    return j.ok;
}

// info's records of many device dumps, their headers read here (in parallel) and written straight from them: no
// DumpFile object made for a record the core writes (issue #35: 10^6 dumps). (start, stop, text, None) for the
// consecutive records [start, stop) joined by ",\n" (each line after a record's first `indent` levels in), else
// (i, i + 1, None, the DumpFile or the error text) for a record left to Python or a file that did not open.
py::list read_records(const py::list& entries, std::size_t indent, unsigned threads) {
    // each entry's path (its folder's `head`, one string shared by the folder's entries, and `file_name`: a head
    // that is not a string holds the whole path, see dumps/scan.py _InFolder) as os.fsencode gives it, and its name
    const Names& n = names();
    std::vector<std::string> paths;
    std::vector<py::object> parsed;
    paths.reserve(entries.size());
    parsed.reserve(entries.size());
    PyObject* last_head = nullptr;
    std::string head;
    auto encoded = [](PyObject* text) {
        PyObject* bytes = PyUnicode_EncodeFSDefault(text);
        if (bytes == nullptr) throw py::error_already_set();
        std::string out(PyBytes_AS_STRING(bytes), static_cast<std::size_t>(PyBytes_GET_SIZE(bytes)));
        Py_DECREF(bytes);
        return out;
    };
    for (py::handle entry : entries) {
        py::object h = py::reinterpret_steal<py::object>(PyObject_GetAttr(entry.ptr(), n.head));
        if (!h) throw py::error_already_set();
        if (PyUnicode_Check(h.ptr())) {
            if (h.ptr() != last_head) head = encoded(h.ptr());
            last_head = h.ptr();  // (kept alive by the entries)
            py::object file_name = py::reinterpret_steal<py::object>(PyObject_GetAttr(entry.ptr(), n.file_name));
            if (!file_name) throw py::error_already_set();
            paths.push_back(head + encoded(file_name.ptr()));
        } else {
            paths.push_back(encoded(py::tuple(h)[0].ptr()));
        }
        py::object name = py::reinterpret_steal<py::object>(PyObject_GetAttr(entry.ptr(), n.name));
        if (!name) throw py::error_already_set();
        parsed.push_back(std::move(name));
    }
    std::vector<std::shared_ptr<DumpFile>> files;
    std::vector<std::string> errors;
    {
        py::gil_scoped_release release;
        read_files(paths, threads, files, errors);
    }
    py::list out;
    JsonText j;
    j.indent = indent;
    const std::string separator = ",\n" + std::string(2 * indent, ' ');
    std::size_t start = 0, count = 0;
    auto flush = [&](std::size_t stop) {
        if (count != 0) {  // ASCII (the records the core writes are): copied, not decoded
            PyObject* text = PyUnicode_New(static_cast<Py_ssize_t>(j.s.size()), 127);
            if (text == nullptr) throw py::error_already_set();
            std::memcpy(PyUnicode_1BYTE_DATA(text), j.s.data(), j.s.size());
            out.append(py::make_tuple(start, stop, py::reinterpret_steal<py::str>(text), py::none()));
        }
        j.s.clear();
        count = 0;
    };
    for (std::size_t i = 0; i < paths.size(); ++i) {
        if (files[i]) {
            const std::size_t mark = j.s.size();
            if (count != 0) j.s += separator;
            if (write_record(j, *files[i], parsed[i])) {
                if (count++ == 0) start = i;
                continue;
            }
            j.s.resize(mark);
        }
        flush(i);
        out.append(py::make_tuple(i, i + 1, py::none(),
                                  files[i] ? py::cast(files[i]) : py::object(file_text(errors[i]))));
    }
    flush(paths.size());
    return out;
}

}  // namespace

void bind_scan(py::module_& core) {
    py::module_ m = core.def_submodule("scan", "One folder of a dump tree listed and its names parsed (issue #35).");
    m.def("list_folder", &list_folder, py::arg("folder"), py::arg("dump_entry"), py::arg("device_name"),
          py::arg("ffts_suffix"), py::arg("ground_truth_entry"), py::arg("framework_name"), py::arg("probe") = false,
          py::arg("check_devices") = true,
          "(error, subdirs, skipped, others, devices, in_order, framework) of one folder, as the scan sees it:\n"
          "error the strerror text that stopped the listing (then the rest is None), else None; subdirs the names\n"
          "of its folders (links followed); skipped (name, reason) for special files, files that do not stat and\n"
          "dump or ground-truth names that are not readable; others the names of the other files, for the Python\n"
          "rules (mapping.csv, hashed, statistics, converted, names of no scheme, numbers past 64 bits); devices\n"
          "the DumpEntry of each device dump (the classes given), sorted by DumpEntry.order if in_order; framework\n"
          "the GroundTruthEntry of each {op_name}.{output_index}.{timestamp}.pb|quant|npy file, sorted by\n"
          "the bytes of {op_name}.{output_index}.\n"
          "Files named .dumpcmp-*.tmp are left out.\n"
          "With probe (does the folder hold a readable device dump?): when it does, devices is the first such\n"
          "entry alone and subdirs, skipped, others and framework are empty; else the whole answer.\n"
          "Without check_devices, device dumps are not checked readable (the caller opens each: its open says).");
    m.def("read_records", &read_records, py::arg("entries"), py::arg("indent") = 0, py::arg("threads") = 0,
          "`dumpcmp info --json`'s records of device dumps (DumpEntry objects: path and parsed name), each header\n"
          "read here (in parallel, `threads` 0 = all cores) and its record written as jsonfile.dumps_text writes it, no\n"
          "DumpFile made for it: a list of (start, stop, text, None) for records [start, stop) joined by ',\\n'\n"
          "(every line after a record's first `indent` levels in), and (i, i + 1, None, the DumpFile or the error\n"
          "text) for a record left to Python (text that is not plain printable ASCII, numbers past 64 bits,\n"
          "OpDebug dumps) or a file that does not open, in order.");
    m.def("parse_name", &parse_name, py::arg("name"), py::arg("device_name"), py::arg("ffts_suffix"),
          py::arg("framework_name"),
          "The device dump and framework name rules (naming.parse_name's, which calls this): `name` (no '/') as a\n"
          "device_name (with an ffts_suffix) or a framework_name (the classes given), or None if it is neither.");
}

}  // namespace dumpcmp::bindings
