// The graph JSON read in C++ (native/src/graph_json.cpp), its ops made into graph_json's records here: the frozen
// dataclasses' instances built without their __init__ (object.__new__, then each field set by object.__setattr__
// in the class's order), so the Graph the Python code gets is the one parse_graph would give.
#include <cmath>
#include <cstring>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_set>
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
    // set as object.__setattr__ sets them (the frozen class's own __setattr__ refuses): in the instance's slots
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

    // the object made for the bytes `s` (a string of them, or what `make` makes)
    py::object get(std::string_view s) {
        return get(s, [&] { return text(s); });
    }

    template <class Make>
    py::object get(std::string_view s, Make&& make) {
        const std::uint64_t h = hash(s);
        std::size_t mask = slots_.size() - 1, i = static_cast<std::size_t>(h) & mask;
        for (;; i = (i + 1) & mask) {
            Slot& slot = slots_[i];
            if (slot.obj == nullptr) break;
            if (slot.hash == h && slot.key == s) return py::reinterpret_borrow<py::object>(slot.obj);
        }
        py::object made = make();
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

// A ValueError of graph_json's rules: its text (the caller adds where it happened).
struct Fail {
    std::string msg;
};

std::string utf8_of(PyObject* s) {
    Py_ssize_t size = 0;
    const char* u = PyUnicode_AsUTF8AndSize(s, &size);
    if (u == nullptr) throw py::error_already_set();
    return std::string(u, static_cast<std::size_t>(size));
}

std::string repr_text(py::handle v) { return utf8_of(steal(PyObject_Repr(v.ptr())).ptr()); }

// The Python error just raised as the Fail it stands for: ValueError (int("x"), float("x")), TypeError (iterating
// a number) and OverflowError (float() of a huge integer) are the value's fault; anything else is not.
[[noreturn]] void python_fail() {
    if (PyErr_ExceptionMatches(PyExc_ValueError) || PyErr_ExceptionMatches(PyExc_TypeError) ||
        PyErr_ExceptionMatches(PyExc_OverflowError)) {
        py::error_already_set e;
        throw Fail{utf8_of(steal(PyObject_Str(e.value().ptr())).ptr())};
    }
    throw py::error_already_set();
}

py::object checked(PyObject* p) {
    if (p == nullptr) python_fail();
    return py::reinterpret_steal<py::object>(p);
}

py::object method(py::handle v, const char* name) { return checked(PyObject_CallMethod(v.ptr(), name, nullptr)); }

// graph_json's conversions of a value written in an unusual way (the common spellings are read from the tree)

py::object to_int(py::handle v) {  // an integer, also written as a string or as an integral float; not a bool
    if (PyLong_CheckExact(v.ptr())) return py::reinterpret_borrow<py::object>(v);
    if (PyFloat_Check(v.ptr())) {
        const double d = PyFloat_AS_DOUBLE(v.ptr());
        if (std::isfinite(d) && d == std::floor(d)) return checked(PyLong_FromDouble(d));
    } else if (PyUnicode_Check(v.ptr())) {
        return checked(PyLong_FromUnicodeObject(method(v, "strip").ptr(), 10));
    }
    throw Fail{"expected an integer, got " + repr_text(v)};
}

py::object to_bool(py::handle v) {
    if (PyBool_Check(v.ptr())) return py::reinterpret_borrow<py::object>(v);
    if (PyLong_Check(v.ptr()) || PyFloat_Check(v.ptr())) return py::bool_(PyObject_IsTrue(v.ptr()) == 1);
    if (PyUnicode_Check(v.ptr())) {
        const std::string s = utf8_of(method(method(v, "strip"), "lower").ptr());
        if (s == "true" || s == "1") return py::bool_(true);
        if (s == "false" || s == "0") return py::bool_(false);
    }
    throw Fail{"expected a bool, got " + repr_text(v)};
}

py::object to_float(py::handle v) {
    if (!PyBool_Check(v.ptr()) && (PyLong_Check(v.ptr()) || PyFloat_Check(v.ptr()) || PyUnicode_Check(v.ptr())))
        return checked(PyNumber_Float(v.ptr()));
    throw Fail{"expected a number, got " + repr_text(v)};
}

// tuple(to_int(d) for d in items), iterating whatever `items` is (a string's characters, a dict's keys)
py::object ints_of(py::handle items) {
    py::object t = checked(PySequence_Tuple(items.ptr()));
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(t.ptr()); ++i) {
        PyObject* d = PyTuple_GET_ITEM(t.ptr(), i);
        if (PyLong_CheckExact(d)) continue;
        py::object made = to_int(d);
        PyTuple_SET_ITEM(t.ptr(), i, made.release().ptr());
        Py_DECREF(d);
    }
    return t;
}

constexpr std::string_view list_fields[] = {"s", "i", "f", "b", "bt", "dt", "tf", "g", "t", "na"};

// The graph JSON's records, made from the JSON layer's layout and one op's tree at a time: graph_json's rules
// (what each field may hold, the errors' words) live here and only here.
class Reader : public Visitor {
public:
    // `attrs_as`: None keeps each op's and tensor description's attribute dict; any other object is put in their
    // place (the dicts are still read: they give the other fields and their errors)
    Reader(PyObject* op_cls, PyObject* desc_cls, PyObject* ref_cls, std::string_view text, py::handle attrs_as)
        : op_cls_(op_cls), desc_cls_(desc_cls), ref_cls_(ref_cls), attrs_as_(py::reinterpret_borrow<py::object>(attrs_as)),
          text_(text), ops_(steal(PyList_New(0))),
          cache_(text.data(), text.size()), cursor_(text.data(), text.data() + text.size(), own_.arena()) {}

    // (ops, graph names, model name, in order, by name), or the text of the error (after the file's name), read by
    // the layout `scan` found
    py::object run(const Layout& l) {
        try {
            return read(l);
        } catch (const Fail& f) {
            return py::str(f.msg);
        }
    }

    // each op of a one-pass reading (graph_json.hpp's walk): its graph's name is known at the graph's end
    void op(const Dom& dom, std::uint32_t root, std::size_t g, std::size_t n) override {
        tree_ = &dom;
        op(dom.nodes[root], g, n);
        tree_ = &own_;
    }

    void graph_done(std::size_t g, const std::string* name) override {
        name_graph(g, name != nullptr ? *name : std::string());
    }

    // (ops, graph names, model name, in order, by name)
    py::object result(const std::string& model) {
        py::tuple graph_names(names_.size());
        for (std::size_t i = 0; i < names_.size(); ++i) graph_names[i] = text(names_[i]);
        return py::make_tuple(ops_, graph_names, text(model), in_order_, unique_names_ ? by_name_ : py::none());
    }

private:
    // graph_json's name of graph `g` whose 'name' is `name` ("graph_<g>" without one, "<name>#<g>" for a name taken
    // before), given to its ops read so far
    void name_graph(std::size_t g, std::string name) {
        if (name.empty()) name = "graph_" + std::to_string(g);
        if (taken_.count(name) != 0) name += "#" + std::to_string(g);  // a set: 10^5 graphs took 6 s as a list
        names_.push_back(name);
        taken_.insert(name);
        graph_name_ = text(name);
        name_pending();
    }

    py::object read(const Layout& l) {
        if (!l.top_object) throw Fail{"not a graph file: the top level is not a JSON object"};
        if (l.graph == absent) throw Fail{"not a graph file: there is no 'graph' key"};
        if (l.graph_kind != '{' && l.graph_kind != '[') throw Fail{"'graph' is not an array"};
        const int graph_depth = l.graph_kind == '{' ? 2 : 3;
        for (std::size_t g = 0; g < l.graphs.size(); ++g) {
            const GraphSpan& span = l.graphs[g];
            if (!span.object) throw Fail{"graph #" + std::to_string(g) + " is not an object"};
            std::string name;
            if (span.name != absent) {
                cursor_.seek(span.name);
                if (cursor_.peek() == '"') name = std::string(cursor_.string());
            }
            name_graph(g, name);  // named before its ops: their errors name it
            if (span.op != absent) ops(span.op, graph_depth + 1, g);
            name_pending();
        }
        std::string model;
        if (l.name != absent) {
            cursor_.seek(l.name);
            if (cursor_.peek() == '"') model = std::string(cursor_.string());
        }
        return result(model);
    }

    // the current graph's name given to its ops read so far
    void name_pending() {
        const PyObject* key = keys().op[3].ptr();
        for (PyObject* op : pending_)
            if (PyObject_GenericSetAttr(op, const_cast<PyObject*>(key), graph_name_.ptr()) != 0)
                throw py::error_already_set();
        pending_.clear();
    }

    // the graph's 'op' value at `at` (`depth` its level)
    void ops(std::size_t at, int depth, std::size_t g) {
        cursor_.seek(at);
        if (cursor_.peek() != '[') {
            own_.clear();
            const std::uint32_t v = own_.read(cursor_, depth);
            if (Dom::truthy(own_.nodes[v])) throw Fail{"graph " + repr_text(graph_name_) + ": 'op' is not an array"};
            return;
        }
        cursor_.expect('[');
        if (cursor_.peek() == ']') return;
        for (std::size_t n = 0;; ++n) {
            own_.clear();
            const std::uint32_t root = own_.read(cursor_, depth + 1);
            const std::size_t resume = cursor_.offset();
            op(own_.nodes[root], g, n);
            cursor_.seek(resume);
            if (cursor_.peek() == ']') return;
            cursor_.expect(',');
        }
    }

    void op(const Node& raw, std::size_t g, std::size_t n) {
        const Keys& k = keys();
        if (raw.kind != Kind::object)
            throw Fail{"graph " + repr_text(graph_name_) + " op #" + std::to_string(n) + " is not an object"};
        const Node* name_node = tree_->get(raw, "name");
        if (name_node == nullptr || name_node->kind != Kind::string || name_node->s.empty())
            throw Fail{"graph " + repr_text(graph_name_) + " op #" + std::to_string(n) + " has no 'name'"};
        py::object v[n_op];
        v[0] = text(name_node->s);
        recent_[recent_next_++ % n_recent] = v[0];
        auto where = [&] { return "graph " + repr_text(graph_name_) + " op " + repr_text(v[0]); };
        const Node* type = tree_->get(raw, "type");
        if (type == nullptr || type->kind == Kind::null) v[1] = vocab("");
        else if (type->kind == Kind::string) v[1] = vocab(type->s);
        else throw Fail{where() + ": 'type' is not a string"};
        const Node* id = tree_->get(raw, "id");
        if (id == nullptr || id->kind == Kind::null) {
            v[2] = integer(0);
        } else if (id->kind == Kind::integer) {
            v[2] = integer(id->i);
        } else {
            py::object value = pyval(*id);
            try {
                v[2] = to_int(value);
            } catch (const Fail&) {
                throw Fail{where() + ": 'id' " + repr_text(value) + " is not an integer"};
            }
        }
        v[3] = none();  // the graph's name, set when the graph is done
        // its place if the file's ops are in execution order (by graph, then id), as they are in real files
        int overflow = 0;
        const long long id_value = PyLong_AsLongLongAndOverflow(v[2].ptr(), &overflow);
        if (id_value == -1 && PyErr_Occurred()) throw py::error_already_set();
        const std::size_t place = static_cast<std::size_t>(PyList_GET_SIZE(ops_.ptr()));
        if (overflow != 0 || (place > 0 && g == last_graph_ && id_value < last_id_)) in_order_ = false;
        last_graph_ = g;
        last_id_ = id_value;
        // the id's object when it is the place (a file's ids count its ops from 0, as real ones do): one int, not two
        v[4] = !overflow && id_value == static_cast<long long>(place) ? v[2]
                                                                      : integer(static_cast<std::int64_t>(place));
        std::vector<py::object> data, control;
        const Node* inputs_node = tree_->get(raw, "input");
        if (inputs_node != nullptr && Dom::truthy(*inputs_node)) {
            if (inputs_node->kind != Kind::array) throw Fail{where() + ": 'input' is not an array"};
            py::object inputs = steal(PyTuple_New(static_cast<Py_ssize_t>(inputs_node->count)));
            for (std::size_t slot = 0; slot < inputs_node->count; ++slot) {
                const Node& item = tree_->kid(*inputs_node, slot);
                if (item.kind == Kind::null) {
                    PyTuple_SET_ITEM(inputs.ptr(), static_cast<Py_ssize_t>(slot), vocab("").release().ptr());
                    continue;
                }
                if (item.kind != Kind::string)
                    throw Fail{where() + ": input " + repr_text(pyval(item)) + " is not a string"};
                py::object item_text = text(item.s);
                PyTuple_SET_ITEM(inputs.ptr(), static_cast<Py_ssize_t>(slot), py::object(item_text).release().ptr());
                if (item.s.empty()) continue;
                input(item.s, item_text, slot, data, control, where);
            }
            v[5] = untracked(inputs);
        } else {
            v[5] = k.empty_tuple;
        }
        v[6] = tuple_of(data);
        v[7] = tuple_of(control);
        py::object attrs = attr_dict(tree_->get(raw, "attr"), where);
        v[8] = attrs_as_.is_none() ? attrs : attrs_as_;
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
            throw Fail{where() + ": _datadump_original_op_names is not a list of strings"};
        }
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
        v[9] = descs(raw, "input_desc", where);
        v[10] = descs(raw, "output_desc", where);
        v[11] = originals;
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

    // "name:index" (split at the last ':'; no ':' is output 0): a data input, or a control edge (index < 0)
    template <class W>
    void input(std::string_view s, const py::object& item, std::size_t slot, std::vector<py::object>& data,
               std::vector<py::object>& control, W&& where) {
        const Keys& k = keys();
        const std::size_t colon = s.rfind(':');
        py::object producer = name(colon == std::string_view::npos ? s : s.substr(0, colon));
        py::object index;
        bool negative = false;
        if (colon == std::string_view::npos) {
            index = integer(0);
        } else {
            std::string_view digits = s.substr(colon + 1);
            const bool neg = !digits.empty() && digits[0] == '-';
            if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) digits.remove_prefix(1);
            bool plain = !digits.empty() && digits.size() <= 18;
            std::int64_t value = 0;
            for (const char d : digits) {
                if (d < '0' || d > '9') plain = false;
                else value = value * 10 + (d - '0');
            }
            if (plain) {  // the common spelling; any other is int()'s to read
                index = integer(neg ? -value : value);
                negative = neg && value != 0;
            } else {
                py::object after = text(s.substr(colon + 1));
                PyObject* got = PyLong_FromUnicodeObject(after.ptr(), 10);
                if (got == nullptr) {
                    if (!PyErr_ExceptionMatches(PyExc_ValueError)) throw py::error_already_set();
                    PyErr_Clear();
                    throw Fail{where() + ": input " + repr_text(item) + " is not 'name:index'"};
                }
                index = steal(got);
                negative = _PyLong_Sign(index.ptr()) < 0;
            }
        }
        if (negative) {
            control.push_back(producer);
        } else {
            py::object r[n_ref] = {integer(static_cast<std::int64_t>(slot)), producer, index};
            data.push_back(untracked(record(ref_cls_, k.ref, r, nullptr)));
        }
    }

    // The words of the schema's vocabulary (types, dtypes, layouts, attribute and object keys), each made once
    // whatever its length; short values (formats, small names) too; longer values shared with the last ops' names
    // when equal (a table of every name costs more in cache misses than the strings it saves).
    py::object vocab(std::string_view s) { return cache_.get(s); }
    py::object cached(std::string_view s) {
        if (s.size() > 16) return name(s);
        py::object r = recent(s);  // an op's own name as its output's origin: not a second string of it
        return r ? r : cache_.get(s);
    }

    // The tuple of these integers: one made before for an equal shape (shapes repeat), else a new one kept.
    py::object shape(const std::vector<std::int64_t>& dims) {
        if (dims.empty()) return keys().empty_tuple;
        const std::string_view key(reinterpret_cast<const char*>(dims.data()), dims.size() * sizeof(std::int64_t));
        return shapes_.get(key, [&] {
            py::object t = steal(PyTuple_New(static_cast<Py_ssize_t>(dims.size())));
            for (std::size_t i = 0; i < dims.size(); ++i)
                PyTuple_SET_ITEM(t.ptr(), static_cast<Py_ssize_t>(i), integer(dims[i]).release().ptr());
            return untracked(t);
        });
    }

    // the integers of a tree's array of plain integers into dims_; false when it holds anything else
    bool plain_ints(const Node& n) {
        if (n.kind != Kind::array) return false;
        dims_.clear();
        for (std::size_t i = 0; i < n.count; ++i) {
            const Node& d = tree_->kid(n, i);
            if (d.kind != Kind::integer) return false;
            dims_.push_back(d.i);
        }
        return true;
    }

    // tuple(_to_int(d) for d in items) of a shape: shared when its items are plain integers
    py::object shape_of(const Node& n) { return plain_ints(n) ? shape(dims_) : untracked(ints_of(pyval(n))); }

    py::object shape_of(PyObject* items) {
        if (PyList_CheckExact(items)) {
            dims_.clear();
            bool plain = true;
            for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items) && plain; ++i) {
                PyObject* d = PyList_GET_ITEM(items, i);
                int overflow = 0;
                const long long v = PyLong_CheckExact(d) ? PyLong_AsLongLongAndOverflow(d, &overflow) : 0;
                plain = PyLong_CheckExact(d) && overflow == 0 && !(v == -1 && PyErr_Occurred());
                dims_.push_back(v);
            }
            if (plain) return shape(dims_);
        }
        return untracked(ints_of(items));
    }

    // A name: the string of one of the last ops read when it is one of them (an op's own origin, the producer of
    // its input: the common cases), else a new one.
    py::object name(std::string_view s) {
        py::object r = recent(s);
        return r ? r : text(s);
    }

    // the string of one of the last ops read whose name is `s`, else a null object
    py::object recent(std::string_view s) {
        for (const py::object& r : recent_) {
            if (!r) continue;
            Py_ssize_t size = 0;
            const char* utf8 = PyUnicode_AsUTF8AndSize(r.ptr(), &size);
            if (utf8 == nullptr) throw py::error_already_set();
            if (static_cast<std::size_t>(size) == s.size() && std::memcmp(utf8, s.data(), s.size()) == 0) return r;
        }
        return py::object();
    }

    static py::object tuple_of(const std::vector<py::object>& items) {
        if (items.empty()) return keys().empty_tuple;
        py::object t = steal(PyTuple_New(static_cast<Py_ssize_t>(items.size())));
        for (std::size_t i = 0; i < items.size(); ++i)
            PyTuple_SET_ITEM(t.ptr(), static_cast<Py_ssize_t>(i), items[i].inc_ref().ptr());
        return untracked(t);
    }

    // A JSON value as the json module gives it (a dict keeps a repeated key's first place and last value).
    py::object pyval(const Node& n) {
        switch (n.kind) {
            case Kind::null: return none();
            case Kind::false_: return py::bool_(false);
            case Kind::true_: return py::bool_(true);
            case Kind::integer: return integer(n.i);
            case Kind::big: {
                const std::string digits(n.s);
                return steal(PyLong_FromString(digits.c_str(), nullptr, 10));
            }
            case Kind::real: return steal(PyFloat_FromDouble(n.f));
            case Kind::string: return cached(n.s);
            case Kind::array: {
                py::object l = steal(PyList_New(static_cast<Py_ssize_t>(n.count)));
                for (std::size_t i = 0; i < n.count; ++i)
                    PyList_SET_ITEM(l.ptr(), static_cast<Py_ssize_t>(i), pyval(tree_->kid(n, i)).release().ptr());
                return l;
            }
            case Kind::object: {
                py::object d = steal(PyDict_New());
                for (std::size_t m = 0; m < n.count; ++m) {
                    py::object key = vocab(tree_->kid(n, 2 * m).s);
                    py::object item = pyval(tree_->kid(n, 2 * m + 1));
                    if (PyDict_SetItem(d.ptr(), key.ptr(), item.ptr()) != 0) throw py::error_already_set();
                }
                return d;
            }
        }
        return none();
    }

    // tuple(_to_int(d) for d in value) (a list when `list`): read from the tree for an array of plain integers
    py::object ints(const Node& n, bool list = false) {
        if (n.kind == Kind::array) {
            bool plain = true;
            for (std::size_t i = 0; i < n.count && plain; ++i) plain = tree_->kid(n, i).kind == Kind::integer;
            if (plain) {
                const auto size = static_cast<Py_ssize_t>(n.count);
                py::object t = steal(list ? PyList_New(size) : PyTuple_New(size));
                for (std::size_t i = 0; i < n.count; ++i) {
                    PyObject* d = integer(tree_->kid(n, i).i).release().ptr();
                    if (list) PyList_SET_ITEM(t.ptr(), static_cast<Py_ssize_t>(i), d);
                    else PyTuple_SET_ITEM(t.ptr(), static_cast<Py_ssize_t>(i), d);
                }
                return untracked(t);
            }
        }
        py::object t = untracked(ints_of(pyval(n)));
        return list ? untracked(steal(PySequence_List(t.ptr()))) : t;
    }

    // One typed field (`s`, `i`, `b` or `f`) of a value object, not null.
    py::object scalar(char field, const Node& n) {
        switch (field) {
            case 's': return n.kind == Kind::string ? cached(n.s) : steal(PyObject_Str(pyval(n).ptr()));
            case 'i': return n.kind == Kind::integer ? integer(n.i) : to_int(pyval(n));
            case 'b':
                if (n.kind == Kind::true_ || n.kind == Kind::false_) return py::bool_(n.kind == Kind::true_);
                return to_bool(pyval(n));
            default:
                if (n.kind == Kind::real) return steal(PyFloat_FromDouble(n.f));
                if (n.kind == Kind::integer) return steal(PyFloat_FromDouble(static_cast<double>(n.i)));
                return to_float(pyval(n));
        }
    }

    // graph_json.attr_value: the Python value of one attribute value object
    py::object attr_value(const Node* v) {
        if (v == nullptr || v->kind == Kind::null) return none();
        if (v->kind != Kind::object) throw Fail{"attribute value is not an object: " + repr_text(pyval(*v))};
        for (const char field : {'s', 'i', 'b', 'f'}) {
            const Node* raw = tree_->get(*v, std::string_view(&field, 1));
            if (raw != nullptr) return raw->kind == Kind::null ? none() : scalar(field, *raw);
        }
        const Node* list = tree_->get(*v, "list");
        if (list == nullptr) return pyval(*v);
        if (list->kind == Kind::null) return untracked(steal(PyList_New(0)));
        if (list->kind != Kind::object)
            throw Fail{"'list' attribute value is not an object: " + repr_text(pyval(*list))};
        for (const std::string_view field : list_fields) {
            const Node* items = tree_->get(*list, field);
            if (items == nullptr || items->kind == Kind::null) continue;
            if (items->kind != Kind::array)
                throw Fail{"list field '" + std::string(field) + "' is not an array: " + repr_text(pyval(*items))};
            if (field == "i") return ints(*items, true);
            if (field != "s" && field != "f" && field != "b") return pyval(*items);  // kept as they are
            py::object l = steal(PyList_New(static_cast<Py_ssize_t>(items->count)));
            for (std::size_t i = 0; i < items->count; ++i)
                PyList_SET_ITEM(l.ptr(), static_cast<Py_ssize_t>(i), scalar(field[0], tree_->kid(*items, i)).release().ptr());
            return untracked(l);
        }
        return untracked(steal(PyList_New(0)));
    }

    // graph_json's attribute list `[{"key": K, "value": V}, ...]` -> {K: attr_value(V)}; absent or null: {}
    template <class W>
    py::object attr_dict(const Node* raw, W&& where) {
        py::object d = steal(PyDict_New());
        if (raw == nullptr || raw->kind == Kind::null) return untracked(d);
        if (raw->kind != Kind::array) throw Fail{where() + ": 'attr' is not an array"};
        bool tracked = false;
        for (std::size_t n = 0; n < raw->count; ++n) {
            const Node& item = tree_->kid(*raw, n);
            const Node* key = item.kind == Kind::object ? tree_->get(item, "key") : nullptr;
            if (key == nullptr || key->kind != Kind::string)
                throw Fail{where() + ": attr[" + std::to_string(n) + "] has no string 'key'"};
            py::object key_text = vocab(key->s);
            py::object value;
            try {
                value = attr_value(tree_->get(item, "value"));
            } catch (const Fail& f) {
                throw Fail{where() + ": attribute " + repr_text(key_text) + ": " + f.msg};
            }
            tracked = tracked || PyDict_Check(value.ptr()) || (PyList_Check(value.ptr()) && PyObject_GC_IsTracked(value.ptr()));
            if (PyDict_SetItem(d.ptr(), key_text.ptr(), value.ptr()) != 0) throw py::error_already_set();
        }
        return tracked ? d : untracked(d);  // a generic value may hold anything
    }

    // the op's input_desc or output_desc (absent, null or empty: none)
    template <class W>
    py::object descs(const Node& raw, const char* key, W&& op_where) {
        const Node* items = tree_->get(raw, key);
        if (items == nullptr || !Dom::truthy(*items)) return keys().empty_tuple;
        if (items->kind != Kind::array) throw Fail{op_where() + ": '" + key + "' is not an array"};
        py::object t = steal(PyTuple_New(static_cast<Py_ssize_t>(items->count)));
        for (std::size_t i = 0; i < items->count; ++i) {
            auto where = [&] { return op_where() + " " + key + "[" + std::to_string(i) + "]"; };
            PyTuple_SET_ITEM(t.ptr(), static_cast<Py_ssize_t>(i), desc(tree_->kid(*items, i), where).release().ptr());
        }
        return untracked(t);
    }

    template <class W>
    py::object desc(const Node& raw, W&& where) {
        const Keys& k = keys();
        if (raw.kind == Kind::null) return steal(PyObject_CallNoArgs(desc_cls_));
        if (raw.kind != Kind::object) throw Fail{where() + " is not an object"};
        py::object attrs = attr_dict(tree_->get(raw, "attr"), where);
        py::object v[n_desc];
        PyObject* origin_shape = get(attrs.ptr(), k.origin_shape);
        try {
            const Node* shape = tree_->get(raw, "shape");
            if (shape == nullptr || shape->kind == Kind::null) {
                v[2] = none();
            } else if (shape->kind == Kind::object) {
                const Node* dims = tree_->get(*shape, "dim");  // a shape object without dims is a scalar
                v[2] = dims == nullptr || dims->kind == Kind::null ? keys().empty_tuple : shape_of(*dims);
            } else if (shape->kind == Kind::array) {
                v[2] = shape_of(*shape);
            } else {
                throw Fail{"shape is neither an object nor an array: " + repr_text(pyval(*shape))};
            }
            v[6] = origin_shape == nullptr || origin_shape == Py_None ? none()
                                                                      : shape_of(origin_shape);
        } catch (const Fail& f) {
            throw Fail{where() + ": bad shape: " + f.msg};
        }
        const Node* dtype = tree_->get(raw, "dtype");
        const Node* layout = tree_->get(raw, "layout");
        v[0] = dtype != nullptr && dtype->kind == Kind::string && !dtype->s.empty() ? vocab(dtype->s) : none();
        v[1] = layout != nullptr && layout->kind == Kind::string && !layout->s.empty() ? vocab(layout->s) : none();
        v[3] = str_or_none(get(attrs.ptr(), k.origin_name));
        PyObject* index = get(attrs.ptr(), k.origin_output_index);
        v[4] = index != nullptr && PyLong_Check(index) ? py::reinterpret_borrow<py::object>(index) : none();
        v[5] = str_or_none(get(attrs.ptr(), k.origin_format));
        if (v[5].is_none()) v[5] = str_or_none(get(attrs.ptr(), k.origin_format_ge));
        v[7] = str_or_none(get(attrs.ptr(), k.origin_data_type));
        if (v[7].is_none()) v[7] = str_or_none(get(attrs.ptr(), k.origin_data_type_ge));
        v[8] = attrs_as_.is_none() ? attrs : attrs_as_;
        return untracked(record(desc_cls_, k.desc, v, nullptr));
    }

    PyObject* op_cls_;
    PyObject* desc_cls_;
    PyObject* ref_cls_;
    py::object attrs_as_;
    std::string_view text_;
    py::object ops_;
    bool in_order_ = true;
    bool unique_names_ = true;
    py::object by_name_ = steal(PyDict_New());
    std::size_t last_graph_ = 0;
    long long last_id_ = 0;
    std::vector<PyObject*> pending_;  // the current graph's ops (held by the list of ops)
    py::object graph_name_ = steal(PyUnicode_FromString(""));  // for errors (a one-pass reading's are not told)
    StrCache shapes_{nullptr, 0};  // shapes by their integers' bytes
    std::vector<std::int64_t> dims_;
    StrCache cache_;
    Dom own_;
    const Dom* tree_ = &own_;  // the tree of the op being read
    Cursor cursor_;
    std::vector<std::string> names_;
    std::unordered_set<std::string> taken_;
    static constexpr std::size_t n_recent = 4;
    py::object recent_[n_recent];
    std::size_t recent_next_ = 0;
};

}  // namespace

void bind_graph(py::module_& core) {
    py::module_ m = core.def_submodule("graph", "The compiler's graph JSON, read in one pass.");
    m.def("read_graph_json", [](py::bytes data, py::handle op_cls, py::handle desc_cls,
                                py::handle ref_cls, py::handle attrs_as) -> py::object {
        check_fields(op_cls.ptr(), op_fields, n_op);
        check_fields(desc_cls.ptr(), desc_fields, n_desc);
        check_fields(ref_cls.ptr(), ref_fields, n_ref);
        char* bytes = nullptr;
        Py_ssize_t size = 0;
        if (PyBytes_AsStringAndSize(data.ptr(), &bytes, &size) != 0) throw py::error_already_set();
        const std::string_view text = body(bytes, static_cast<std::size_t>(size));
        {  // one pass, for a document laid out as real files are
            Reader reader(op_cls.ptr(), desc_cls.ptr(), ref_cls.ptr(), text, attrs_as);
            std::string model;
            try {
                if (walk(bytes, static_cast<std::size_t>(size), reader, model)) return reader.result(model);
            } catch (const NotJson&) {
                return py::none();
            } catch (const Fail&) {  // told by the reading by layout: which error comes first is its to say
            }
        }
        Layout layout;
        try {
            py::gil_scoped_release unlocked;  // the bytes object is held by the caller
            layout = scan(bytes, static_cast<std::size_t>(size));
        } catch (const NotJson&) {
            return py::none();
        }
        Reader reader(op_cls.ptr(), desc_cls.ptr(), ref_cls.ptr(), text, attrs_as);
        try {
            return reader.run(layout);
        } catch (const NotJson&) {  // not reached: scan checked the text
            return py::none();
        }
    }, py::arg("data"), py::arg("op_cls"), py::arg("desc_cls"), py::arg("ref_cls"), py::arg("attrs_as") = py::none(),
       "(ops, graph names, model name, in order, by name) of a graph JSON's bytes, the ops made as graph_json's "
       "Op, TensorDesc and InputRef records in file order, each op's position its place in the file, `in order` "
       "true when that is the execution order (by graph, then id), `by name` {name: op} in file order when no two "
       "ops share a name (else None); a str, the error's text after the file's name, for a document that is not "
       "a graph file as graph_json's rules say; None for text that is not JSON as dumpcmp.support.jsonfile reads "
       "it (invalid, too deep, an unpaired surrogate escape: jsonfile words why). `attrs_as`: None keeps each "
       "record's `attrs` dict; any other object is every record's `attrs` instead (the attributes still read and "
       "checked: the other fields and the errors are the same).");
}

}  // namespace dumpcmp::bindings
