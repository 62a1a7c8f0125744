// The graph JSON read in C++ (native/src/graph_json.cpp), its ops made into graph_json's records here: the frozen
// dataclasses' instances built without their __init__ (object.__new__, then each field set by object.__setattr__
// in the class's order), so the Graph the Python code gets is the one parse_graph would give.
#include <cstring>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "dumpcmp/graph_json.hpp"
#include "pycommon.hpp"

namespace dumpcmp::bindings {

namespace {

using namespace dumpcmp::graphjson;

py::object steal(PyObject* p) {
    if (p == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(p);
}

// The records' fields, in the classes' order (checked against the classes at each call).
const char* const op_fields[] = {"name", "type", "id", "graph", "position", "inputs", "data_inputs",
                                 "control_inputs", "attrs", "input_desc", "output_desc", "original_op_names",
                                 "l1_fusion_no", "is_multiop", "unmerged_original_op_names"};
const char* const desc_fields[] = {"dtype", "layout", "shape", "origin_name", "origin_output_index",
                                   "origin_format", "origin_shape", "origin_data_type", "attrs"};
const char* const ref_fields[] = {"slot", "producer", "index"};
constexpr std::size_t n_op = std::size(op_fields), n_desc = std::size(desc_fields), n_ref = std::size(ref_fields);

struct Keys {
    std::vector<py::object> op, desc, ref;
    py::object original_op_names, l1_fusion_no, is_multiop, origin_name, origin_output_index, origin_format,
        origin_format_ge, origin_shape, origin_data_type, origin_data_type_ge;
    py::object empty_tuple;
};

const Keys& keys() {
    static const Keys* k = [] {
        auto* made = new Keys;  // kept for the life of the process
        auto intern = [](const char* s) { return steal(PyUnicode_InternFromString(s)); };
        for (const char* f : op_fields) made->op.push_back(intern(f));
        for (const char* f : desc_fields) made->desc.push_back(intern(f));
        for (const char* f : ref_fields) made->ref.push_back(intern(f));
        made->original_op_names = intern("_datadump_original_op_names");
        made->l1_fusion_no = intern("_L1_fusion_sub_graph_no");
        made->is_multiop = intern("_datadump_is_multiop");
        made->origin_name = intern("_datadump_origin_name");
        made->origin_output_index = intern("_datadump_origin_output_index");
        made->origin_format = intern("_datadump_origin_format");
        made->origin_format_ge = intern("origin_format");
        made->origin_shape = intern("origin_shape");
        made->origin_data_type = intern("_datadump_origin_data_type");
        made->origin_data_type_ge = intern("origin_data_type");
        made->empty_tuple = steal(PyTuple_New(0));
        return made;
    }();
    return *k;
}

// The class must be a dataclass with exactly these fields, in this order.
void check_fields(PyObject* cls, const char* const* names, std::size_t n) {
    py::object fields = py::reinterpret_borrow<py::object>(cls).attr("__dataclass_fields__");
    std::size_t i = 0;
    for (py::handle name : fields) {
        if (i >= n || std::string(py::str(name)) != names[i])
            throw std::invalid_argument("the record class's fields are not the ones the graph reader makes");
        ++i;
    }
    if (i != n) throw std::invalid_argument("the record class's fields are not the ones the graph reader makes");
}

// An instance of `cls` without its __init__ holding `values` under `names` (what records.frozen_record makes).
py::object record(PyObject* cls, const std::vector<py::object>& names, py::object* values, PyObject** made_out) {
    py::object obj = steal(PyBaseObject_Type.tp_new(reinterpret_cast<PyTypeObject*>(cls),
                                                    keys().empty_tuple.ptr(), nullptr));
    // set as object.__setattr__ sets them (the frozen class's own __setattr__ refuses): in the instance's inline
    // values, with the keys its class shares, no dict per instance
    for (std::size_t i = 0; i < names.size(); ++i)
        if (PyObject_GenericSetAttr(obj.ptr(), names[i].ptr(), values[i].ptr()) != 0) throw py::error_already_set();
    if (made_out != nullptr) *made_out = obj.ptr();  // borrowed: the list of ops holds it
    return obj;
}

// Out of the cyclic collector's passes: what the reader makes holds no cycle (records of strings, numbers and of
// each other, lists and dicts of atoms), and a graph of 10^5 ops is millions of objects that the first collection
// after the reader would walk (0.7 s at 300,000 ops) for nothing. Reference counting frees them as before; a dict
// given a container later is tracked again by CPython itself.
py::object untracked(py::object o) {
    PyObject_GC_UnTrack(o.ptr());
    return o;
}

py::object text(std::string_view s) {
    return steal(PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "strict"));
}

py::object integer(std::int64_t v) { return steal(PyLong_FromLongLong(v)); }

py::object none() { return py::none(); }

// `_str_or_none` of a value the attributes hold
py::object str_or_none(PyObject* v) {
    if (v != nullptr && PyUnicode_Check(v) && PyUnicode_GetLength(v) > 0) return py::reinterpret_borrow<py::object>(v);
    return none();
}

PyObject* get(PyObject* dict, const py::object& key) {
    PyObject* v = PyDict_GetItemWithError(dict, key.ptr());
    if (v == nullptr && PyErr_Occurred()) throw py::error_already_set();
    return v;
}

// Strings made once per call: the short ones that repeat (types, dtypes, layouts, attribute keys, formats). An
// open-addressing table keyed by the bytes; keys are views into the document's text (which outlives the table) or
// copies kept here.
class StrCache {
public:
    StrCache(const char* text, std::size_t size) : text_(text), size_(size), slots_(1024) {}
    ~StrCache() {
        for (Slot& s : slots_) Py_XDECREF(s.obj);
    }
    StrCache(const StrCache&) = delete;
    StrCache& operator=(const StrCache&) = delete;

    bool full() const { return used_ >= 4096; }

    py::object get(std::string_view s) {
        const std::uint64_t h = hash(s);
        std::size_t mask = slots_.size() - 1, i = static_cast<std::size_t>(h) & mask;
        for (;; i = (i + 1) & mask) {
            Slot& slot = slots_[i];
            if (slot.obj == nullptr) break;
            if (slot.hash == h && slot.key == s) return py::reinterpret_borrow<py::object>(slot.obj);
        }
        py::object made = text(s);
        if (2 * (used_ + 1) > slots_.size()) {
            grow();
            mask = slots_.size() - 1;
            for (i = static_cast<std::size_t>(h) & mask; slots_[i].obj != nullptr; i = (i + 1) & mask) {}
        }
        const bool inside = s.data() >= text_ && s.data() + s.size() <= text_ + size_;
        const std::string_view key = inside ? s : std::string_view(copies_.emplace_back(s));
        slots_[i] = Slot{key, h, made.inc_ref().ptr()};
        ++used_;
        return made;
    }

private:
    struct Slot {
        std::string_view key;
        std::uint64_t hash = 0;
        PyObject* obj = nullptr;
    };

    static std::uint64_t hash(std::string_view s) {
        std::uint64_t h = 0x9E3779B97F4A7C15ULL ^ s.size();
        std::size_t i = 0;
        for (; i + 8 <= s.size(); i += 8) {
            std::uint64_t w;
            std::memcpy(&w, s.data() + i, 8);
            h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
            h ^= h >> 32;
        }
        std::uint64_t w = 0;
        std::memcpy(&w, s.data() + i, s.size() - i);
        h = (h ^ w) * 0xC4CEB9FE1A85EC53ULL;
        return h ^ (h >> 29);
    }

    void grow() {
        std::vector<Slot> old(slots_.size() * 2);
        old.swap(slots_);
        const std::size_t mask = slots_.size() - 1;
        for (const Slot& slot : old) {
            if (slot.obj == nullptr) continue;
            std::size_t i = static_cast<std::size_t>(slot.hash) & mask;
            while (slots_[i].obj != nullptr) i = (i + 1) & mask;
            slots_[i] = slot;
        }
    }

    const char* text_;
    std::size_t size_;
    std::vector<Slot> slots_;
    std::size_t used_ = 0;
    std::deque<std::string> copies_;
};

class Builder : public Sink {
public:
    Builder(PyObject* op_cls, PyObject* desc_cls, PyObject* ref_cls, const char* text_begin, std::size_t size)
        : op_cls_(op_cls), desc_cls_(desc_cls), ref_cls_(ref_cls), text_(text_begin), ops_(steal(PyList_New(0))),
          cache_(text_begin, size) {}

    void op(const Op& o, const Pools& p) override {
        const Keys& k = keys();
        py::object v[n_op];
        v[0] = text(o.name);
        recent_[recent_next_++ % n_recent] = v[0];
        v[1] = cached(o.type);
        v[2] = integer(o.id);
        v[3] = none();  // the graph's name, set when the graph is done
        // its place if the file's ops are in execution order (by graph, then id), as they are in real files
        const std::size_t place = static_cast<std::size_t>(PyList_GET_SIZE(ops_.ptr()));
        if (place > 0 && o.graph == last_graph_ && o.id < last_id_) in_order_ = false;
        last_graph_ = o.graph;
        last_id_ = o.id;
        v[4] = integer(static_cast<std::int64_t>(place));
        py::object inputs = steal(PyTuple_New(static_cast<Py_ssize_t>(o.inputs_count)));
        std::vector<py::object> data, control;
        for (std::size_t i = 0; i < o.inputs_count; ++i) {
            const Input& in = p.inputs[o.inputs_first + i];
            PyTuple_SET_ITEM(inputs.ptr(), static_cast<Py_ssize_t>(i), text(in.text).release().ptr());
            if (in.text.empty()) continue;
            if (in.index < 0) {
                control.push_back(name(in.producer));
            } else {
                py::object r[n_ref] = {integer(static_cast<std::int64_t>(i)), name(in.producer), integer(in.index)};
                data.push_back(untracked(record(ref_cls_, k.ref, r, nullptr)));
            }
        }
        v[5] = untracked(inputs);
        v[6] = tuple_of(data);
        v[7] = tuple_of(control);
        py::object attrs = attr_dict(p, o.attrs_first, o.attrs_count);
        v[8] = attrs;
        v[9] = descs(p, o.in_first, o.in_count);
        v[10] = descs(p, o.out_first, o.out_count);
        PyObject* originals_raw = get(attrs.ptr(), k.original_op_names);
        py::object originals;
        if (originals_raw == nullptr) {
            originals = none();
        } else if (originals_raw == Py_None) {
            originals = k.empty_tuple;  // null says as much as an empty list
        } else if (PyList_Check(originals_raw)) {
            std::vector<py::object> names;
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(originals_raw); ++i) {
                py::object s = steal(PyObject_Str(PyList_GET_ITEM(originals_raw, i)));
                if (PyUnicode_GetLength(s.ptr()) > 0) names.push_back(s);
            }
            originals = tuple_of(names);
        } else if (PyUnicode_Check(originals_raw)) {
            originals = PyUnicode_GetLength(originals_raw) > 0
                            ? steal(PyTuple_Pack(1, originals_raw)) : k.empty_tuple;
        } else {
            throw NotCanonical("_datadump_original_op_names is not a list of strings");
        }
        v[11] = originals;
        PyObject* l1 = get(attrs.ptr(), k.l1_fusion_no);
        v[12] = none();
        if (l1 != nullptr && l1 != Py_None) {
            py::object s = steal(PyObject_Str(l1));
            if (PyUnicode_GetLength(s.ptr()) > 0) v[12] = s;
        }
        PyObject* multiop = get(attrs.ptr(), k.is_multiop);
        bool is_multiop = false;
        if (multiop != nullptr && multiop != Py_None) {
            const int t = PyObject_IsTrue(multiop);
            if (t < 0) throw py::error_already_set();
            is_multiop = t != 0;
        }
        v[13] = py::bool_(is_multiop);
        v[14] = originals;
        PyObject* held = nullptr;
        py::object made = untracked(record(op_cls_, k.op, v, &held));
        if (PyList_Append(ops_.ptr(), made.ptr()) != 0) throw py::error_already_set();
        pending_.push_back(held);
        if (unique_names_) {  // the first op of each name, while no name repeats
            PyObject* first = PyDict_SetDefault(by_name_.ptr(), v[0].ptr(), made.ptr());
            if (first == nullptr) throw py::error_already_set();
            if (first != made.ptr()) unique_names_ = false;
        }
    }

    void graph_done(std::size_t, const std::string& name) override {
        py::object n = text(name);
        const PyObject* key = keys().op[3].ptr();
        for (PyObject* op : pending_)
            if (PyObject_GenericSetAttr(op, const_cast<PyObject*>(key), n.ptr()) != 0) throw py::error_already_set();
        pending_.clear();
    }

    py::object ops() const { return ops_; }
    bool in_order() const { return in_order_; }
    // {name: op} in file order when no two ops share a name, else None
    py::object by_name() const { return unique_names_ ? by_name_ : py::none(); }

private:
    // short strings (types, dtypes, layouts, attribute keys, formats) made once; longer ones (names) shared with
    // the last ops' names when equal (a table of every name costs more in cache misses than the strings it saves)
    py::object cached(std::string_view s) { return s.size() > 16 || cache_.full() ? name(s) : cache_.get(s); }

    // A name: the string of one of the last ops read when it is one of them (an op's own origin, the producer of
    // its input: the common cases), else a new one.
    py::object name(std::string_view s) {
        for (const py::object& r : recent_) {
            if (!r) continue;
            Py_ssize_t size = 0;
            const char* utf8 = PyUnicode_AsUTF8AndSize(r.ptr(), &size);
            if (utf8 == nullptr) throw py::error_already_set();
            if (static_cast<std::size_t>(size) == s.size() && std::memcmp(utf8, s.data(), s.size()) == 0) return r;
        }
        return text(s);
    }

    static py::object tuple_of(const std::vector<py::object>& items) {
        py::object t = steal(PyTuple_New(static_cast<Py_ssize_t>(items.size())));
        for (std::size_t i = 0; i < items.size(); ++i)
            PyTuple_SET_ITEM(t.ptr(), static_cast<Py_ssize_t>(i), items[i].inc_ref().ptr());
        return untracked(t);
    }

    template <class T, class F>
    static py::object list_of(const std::vector<T>& pool, std::size_t first, std::size_t count, F&& make) {
        py::object l = steal(PyList_New(static_cast<Py_ssize_t>(count)));
        for (std::size_t i = 0; i < count; ++i)
            PyList_SET_ITEM(l.ptr(), static_cast<Py_ssize_t>(i), make(pool[first + i]).release().ptr());
        return untracked(l);
    }

    // A JSON value of the document's text (already checked by the reader) as the standard library gives it.
    py::object generic(Cursor& c) {
        const char k = c.peek();
        if (k == '"') return cached(c.string());
        if (k == '{') {
            py::object d = steal(PyDict_New());
            Py_ssize_t members = 0;
            c.expect('{');
            if (c.peek() != '}') {
                for (;;) {
                    py::object key = cached(c.string());
                    c.expect(':');
                    py::object item = generic(c);
                    if (PyDict_SetItem(d.ptr(), key.ptr(), item.ptr()) != 0) throw py::error_already_set();
                    ++members;
                    if (c.peek() == '}') break;
                    c.expect(',');
                }
            }
            c.expect('}');
            if (PyDict_GET_SIZE(d.ptr()) != members) throw NotCanonical("a duplicate key in an attribute value");
            return d;
        }
        if (k == '[') {
            py::object l = steal(PyList_New(0));
            c.expect('[');
            if (c.peek() != ']') {
                for (;;) {
                    py::object item = generic(c);
                    if (PyList_Append(l.ptr(), item.ptr()) != 0) throw py::error_already_set();
                    if (c.peek() == ']') break;
                    c.expect(',');
                }
            }
            c.expect(']');
            return l;
        }
        if (k == '-' || (k >= '0' && k <= '9')) {
            const Number n = c.number();
            return n.is_int ? integer(n.i) : steal(PyFloat_FromDouble(n.f));
        }
        const char l = c.literal();
        return l == 'n' ? none() : py::bool_(l == 't');
    }

    py::object span(std::size_t begin, std::size_t end) {
        std::deque<std::string> arena;
        Cursor c(text_ + begin, text_ + end, &arena);
        return generic(c);
    }

    py::object attr_value(const Pools& p, const Attr& a) {
        switch (a.kind) {
            case AttrKind::none: return none();
            case AttrKind::str: return cached(a.s);
            case AttrKind::integer: return integer(a.i);
            case AttrKind::boolean: return py::bool_(a.i != 0);
            case AttrKind::real: return steal(PyFloat_FromDouble(a.f));
            case AttrKind::list_str:
                return list_of(p.strs, a.first, a.count, [&](std::string_view s) { return cached(s); });
            case AttrKind::list_int: return list_of(p.ints, a.first, a.count, integer);
            case AttrKind::list_bool:
                return list_of(p.ints, a.first, a.count, [](std::int64_t b) -> py::object { return py::bool_(b); });
            case AttrKind::list_real:
                return list_of(p.reals, a.first, a.count, [](double f) { return steal(PyFloat_FromDouble(f)); });
            case AttrKind::list_empty: return untracked(steal(PyList_New(0)));
            case AttrKind::value:
            case AttrKind::list_value: return span(a.begin, a.end);
        }
        throw NotCanonical("an attribute of an unknown kind");
    }

    py::object attr_dict(const Pools& p, std::size_t first, std::size_t count) {
        py::object d = steal(PyDict_New());
        bool generic = false;
        for (std::size_t i = 0; i < count; ++i) {
            const Attr& a = p.attrs[first + i];
            py::object key = cached(a.key);
            py::object value = attr_value(p, a);
            if (PyDict_SetItem(d.ptr(), key.ptr(), value.ptr()) != 0) throw py::error_already_set();
            generic = generic || a.kind == AttrKind::value || a.kind == AttrKind::list_value;
        }
        return generic ? d : untracked(d);  // a generic value may hold anything
    }

    py::object descs(const Pools& p, std::size_t first, std::size_t count) {
        const Keys& k = keys();
        py::object t = steal(PyTuple_New(static_cast<Py_ssize_t>(count)));
        for (std::size_t n = 0; n < count; ++n) {
            const Desc& d = p.descs[first + n];
            py::object made;
            if (d.null) {
                made = steal(PyObject_CallNoArgs(desc_cls_));
            } else {
                py::object attrs = attr_dict(p, d.attrs_first, d.attrs_count);
                py::object v[n_desc];
                v[0] = d.dtype.empty() ? none() : cached(d.dtype);
                v[1] = d.layout.empty() ? none() : cached(d.layout);
                if (d.has_shape) {
                    py::object shape = steal(PyTuple_New(static_cast<Py_ssize_t>(d.dims_count)));
                    for (std::size_t i = 0; i < d.dims_count; ++i)
                        PyTuple_SET_ITEM(shape.ptr(), static_cast<Py_ssize_t>(i),
                                         integer(p.ints[d.dims_first + i]).release().ptr());
                    v[2] = untracked(shape);
                } else {
                    v[2] = none();
                }
                v[3] = str_or_none(get(attrs.ptr(), k.origin_name));
                PyObject* index = get(attrs.ptr(), k.origin_output_index);
                v[4] = index != nullptr && PyLong_Check(index) ? py::reinterpret_borrow<py::object>(index) : none();
                v[5] = str_or_none(get(attrs.ptr(), k.origin_format));
                if (v[5].is_none()) v[5] = str_or_none(get(attrs.ptr(), k.origin_format_ge));
                PyObject* origin_shape = get(attrs.ptr(), k.origin_shape);
                if (origin_shape == nullptr || origin_shape == Py_None) {
                    v[6] = none();
                } else {
                    if (!PyList_CheckExact(origin_shape)) throw NotCanonical("origin_shape is not a list");
                    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(origin_shape); ++i)
                        if (!PyLong_CheckExact(PyList_GET_ITEM(origin_shape, i)))
                            throw NotCanonical("origin_shape holds a non-integer");
                    v[6] = untracked(steal(PyList_AsTuple(origin_shape)));
                }
                v[7] = str_or_none(get(attrs.ptr(), k.origin_data_type));
                if (v[7].is_none()) v[7] = str_or_none(get(attrs.ptr(), k.origin_data_type_ge));
                v[8] = attrs;
                made = untracked(record(desc_cls_, k.desc, v, nullptr));
            }
            PyTuple_SET_ITEM(t.ptr(), static_cast<Py_ssize_t>(n), made.release().ptr());
        }
        return untracked(t);
    }

    PyObject* op_cls_;
    PyObject* desc_cls_;
    PyObject* ref_cls_;
    const char* text_;
    py::object ops_;
    bool in_order_ = true;
    bool unique_names_ = true;
    py::object by_name_ = steal(PyDict_New());
    std::size_t last_graph_ = 0;
    std::int64_t last_id_ = 0;
    std::vector<PyObject*> pending_;  // the current graph's ops (held by the list of ops)
    StrCache cache_;
    static constexpr std::size_t n_recent = 4;
    py::object recent_[n_recent];
    std::size_t recent_next_ = 0;
};

}  // namespace

void bind_graph(py::module_& core) {
    py::module_ m = core.def_submodule("graph", "The compiler's graph JSON, read in one pass.");
    m.def("read_graph_json", [](py::bytes data, py::handle op_cls, py::handle desc_cls,
                                py::handle ref_cls) -> py::object {
        check_fields(op_cls.ptr(), op_fields, n_op);
        check_fields(desc_cls.ptr(), desc_fields, n_desc);
        check_fields(ref_cls.ptr(), ref_fields, n_ref);
        char* bytes = nullptr;
        Py_ssize_t size = 0;
        if (PyBytes_AsStringAndSize(data.ptr(), &bytes, &size) != 0) throw py::error_already_set();
        const bool bom = size >= 3 && std::string_view(bytes, 3) == "\xEF\xBB\xBF";
        const std::size_t skip = bom ? 3 : 0;
        Builder builder(op_cls.ptr(), desc_cls.ptr(), ref_cls.ptr(), bytes + skip,
                        static_cast<std::size_t>(size) - skip);
        try {
            Document doc = read_graph(bytes, static_cast<std::size_t>(size), builder);
            py::tuple names(doc.graph_names.size());
            for (std::size_t i = 0; i < doc.graph_names.size(); ++i) names[i] = text(doc.graph_names[i]);
            return py::make_tuple(builder.ops(), names, text(doc.model_name), builder.in_order(), builder.by_name());
        } catch (const NotCanonical& e) {
            return py::str(e.what());
        }
    }, py::arg("data"), py::arg("op_cls"), py::arg("desc_cls"), py::arg("ref_cls"),
       "(ops, graph names, model name, in order, by name) of a graph JSON's bytes, the ops made as graph_json's "
       "Op, TensorDesc and InputRef records in file order, each op's position its place in the file, `in order` "
       "true when that is the execution order (by graph, then id), `by name` {name: op} in file order when no two "
       "ops share a name (else None); or, for a document this reader does not "
       "take as it is (invalid, too deep, unusual fields: see graph_json.hpp), a str saying why, and the caller "
       "reads it the Python way.");
}

}  // namespace dumpcmp::bindings
