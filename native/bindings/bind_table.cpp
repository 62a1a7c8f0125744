// _core.table: a batch of the result file's rows made CSV text in one call (issue #35: a model's worth of rows).
// The cells are Python strings and the formula rule is Python's (output/table.py csv_safe, asked of the few cells
// it may change), so this works on Python objects under the GIL: what it saves is the interpreter's per-cell work.
#include <charconv>
#include <string>

#include "dumpcmp/metrics.hpp"

#include "pycommon.hpp"

namespace dumpcmp::bindings {

namespace {

// What output/table.py csv_safe can change: a cell starting with one of these, or holding a ';' (its first test).
bool maybe_formula(Py_UCS4 first) {
    switch (first) {
        case '\t': case '\r': case '\n': case 0xff1d: case 0xff0b: case 0xff0d: case '+': case '-': case '=':
        case '%': case '@':
            return true;
        default:
            return false;
    }
}

// csv_safe's formula rule: a formula character (maybe_formula's, bar the TAB, CR and LF it skips) at the start or
// right after a ';', behind any TABs, CRs or LFs (spreadsheets skip them: "\t=cmd" runs). `at(i)`: the i-th character.
template <class At>
bool formula_like_at(Py_ssize_t size, At at) {
    for (Py_ssize_t i = 0; i < size; ++i) {
        if (i > 0 && at(i - 1) != ';') continue;
        Py_ssize_t j = i;
        while (j < size && (at(j) == '\t' || at(j) == '\r' || at(j) == '\n')) ++j;
        if (j < size && maybe_formula(at(j)) && at(j) != '\t' && at(j) != '\r' && at(j) != '\n') return true;
    }
    return false;
}

bool formula_like(const py::str& cell) {
    PyObject* s = cell.ptr();
    const int kind = PyUnicode_KIND(s);
    const void* data = PyUnicode_DATA(s);
    return formula_like_at(PyUnicode_GET_LENGTH(s), [&](Py_ssize_t i) { return PyUnicode_READ(kind, data, i); });
}

struct Text {
    int kind;
    const void* data;
    Py_ssize_t size;
};

Text text_of(PyObject* s) {
    return {PyUnicode_KIND(s), PyUnicode_DATA(s), PyUnicode_GET_LENGTH(s)};
}

// The csv module's QUOTE_MINIMAL (lineterminator `end`, delimiter ',', quotechar '"', no escapechar): a field is
// quoted when it holds the delimiter, the quote or a character of the line terminator; a quote inside is doubled.
void append_field(std::u32string& out, const Text& t, const std::u32string& end) {
    bool quote = false;
    for (Py_ssize_t i = 0; i < t.size && !quote; ++i) {
        const Py_UCS4 c = PyUnicode_READ(t.kind, t.data, i);
        quote = c == ',' || c == '"' || end.find(static_cast<char32_t>(c)) != std::u32string::npos;
    }
    if (quote) out.push_back('"');
    for (Py_ssize_t i = 0; i < t.size; ++i) {
        const Py_UCS4 c = PyUnicode_READ(t.kind, t.data, i);
        if (c == '"') out.push_back('"');
        out.push_back(static_cast<char32_t>(c));
    }
    if (quote) out.push_back('"');
}

py::str as_str(const std::u32string& out) {
    PyObject* s = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out.data(), static_cast<Py_ssize_t>(out.size()));
    if (s == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(s);
}

// One cell as csv_text writes it: through `safe` where it may change it (not a str, a formula-like start or a ';').
void append_cell(std::u32string& out, PyObject* cell, const py::function& safe, const std::u32string& end) {
    py::object kept;  // a cell csv_safe returned, alive while appended
    const bool text = PyUnicode_Check(cell);
    if (!text || (PyUnicode_GET_LENGTH(cell) > 0 &&
                  (maybe_formula(PyUnicode_READ_CHAR(cell, 0)) ||
                   PyUnicode_FindChar(cell, ';', 0, PyUnicode_GET_LENGTH(cell), 1) >= 0))) {
        kept = safe(py::handle(cell));
        cell = kept.ptr();
        if (cell == Py_None) return;  // the csv module writes None as an empty field
        if (!PyUnicode_Check(cell)) {
            kept = py::str(kept);
            cell = kept.ptr();
        }
    }
    append_field(out, text_of(cell), end);
}

// An ASCII text made in the core (a metric, a shape), as a cell: through `safe` as append_cell sends a str there
// (a '-' start, StandardDeviation's ';'), the Python str made only then or where it needs quoting.
// A decimal number as the core prints one ("-12.5", "-inf", "-nan"): what csv_safe keeps (float() reads it) and
// no quoting touches, so it is written without asking.
bool plain_number(const std::string& s) {
    std::size_t i = s[0] == '-' ? 1 : 0;
    if (s.compare(i, std::string::npos, "inf") == 0 || s.compare(i, std::string::npos, "nan") == 0) return true;
    bool digits = false, point = false;
    for (; i < s.size(); ++i) {
        if (s[i] >= '0' && s[i] <= '9') {
            digits = true;
        } else if (s[i] == '.' && !point && digits) {
            point = true;
            digits = false;
        } else {
            return false;
        }
    }
    return digits;
}

void append_ascii(std::u32string& out, const std::string& s, const py::function& safe, const std::u32string& end) {
    if (!s.empty() && !plain_number(s) &&
        (maybe_formula(static_cast<unsigned char>(s[0])) || s.find(';') != std::string::npos)) {
        py::str cell(s);
        if (s.find('(') == std::string::npos) {  // else no number float() reads: csv_safe's rule, without a call
            append_cell(out, cell.ptr(), safe, end);
            return;
        }
        if (formula_like_at(static_cast<Py_ssize_t>(s.size()), [&](Py_ssize_t i) { return s[i]; }))
            out.push_back(' ');
        append_field(out, text_of(cell.ptr()), end);
        return;
    }
    for (char c : s) {
        if (c == ',' || c == '"' || end.find(static_cast<char32_t>(c)) != std::u32string::npos) {
            py::str cell(s);
            append_field(out, text_of(cell.ptr()), end);
            return;
        }
    }
    out.append(s.begin(), s.end());
}

py::object attr(PyObject* row, PyObject* name) {
    PyObject* got = PyObject_GetAttr(row, name);
    if (got == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::object>(got);
}

bool truthy(PyObject* o) {
    const int t = PyObject_IsTrue(o);
    if (t < 0) throw py::error_already_set();
    return t != 0;
}

// `value or ""` (a data type, the tensor index)
void append_or_empty(std::u32string& out, PyObject* v, const py::function& safe, const std::u32string& end) {
    if (v != Py_None && truthy(v)) append_cell(out, v, safe, end);
}

// str() of a Python object as a cell (an int: the Index, an address)
void append_str(std::u32string& out, PyObject* v, const py::function& safe, const std::u32string& end) {
    PyObject* s = PyObject_Str(v);
    if (s == nullptr) throw py::error_already_set();
    py::object kept = py::reinterpret_steal<py::object>(s);
    append_cell(out, s, safe, end);
}

// An int's decimal text without a Python str where it fits in 64 bits (the Index, an address, a shape's extent).
bool int_text(PyObject* v, std::string& text) {
    if (!PyLong_CheckExact(v)) return false;
    int overflow = 0;
    const long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow != 0 || (n == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return false;
    }
    char buf[24];
    const std::to_chars_result got = std::to_chars(buf, buf + sizeof buf, n);
    text.append(buf, got.ptr);
    return true;
}

// str() of an int as a cell (as `append_str`)
void append_int(std::u32string& out, PyObject* v, const py::function& safe, const std::u32string& end) {
    std::string text;
    if (int_text(v, text)) append_ascii(out, text, safe, end); else append_str(out, v, safe, end);
}

// The result file's lines of rows (output/table.py `_RowCells` for a result without OpSequence, overflow, custom or
// extra columns, then `csv_text`): the cells read from each Row's attributes and the metric texts formatted here.
py::str row_lines(const py::sequence& rows, const std::vector<int>& algorithms, bool npu_address, bool truth_address,
                  const py::function& safe, const std::string& line_end) {
    static const char* names[] = {"index", "op_type", "npu_dump", "npu_data_type", "npu_address", "ground_truth",
                                  "ground_truth_data_type", "ground_truth_address", "tensor_index", "shape",
                                  "result", "not_computed", "fail_reason", "unmatched", "data_types_unknown"};
    constexpr int count = sizeof(names) / sizeof(names[0]);
    py::object keys[count];
    for (int k = 0; k < count; ++k) keys[k] = py::reinterpret_steal<py::object>(PyUnicode_InternFromString(names[k]));
    enum { INDEX, OP_TYPE, NPU_DUMP, NPU_TYPE, NPU_ADDRESS, TRUTH, TRUTH_TYPE, TRUTH_ADDRESS, TENSOR, SHAPE, RESULT,
           NOT_COMPUTED, REASON, UNMATCHED, UNKNOWN };
    const std::u32string end(line_end.begin(), line_end.end());
    const std::u32string nan = U"NaN";
    std::u32string out;
    const py::object fast = py::reinterpret_steal<py::object>(PySequence_Fast(rows.ptr(), "rows is not a sequence"));
    if (!fast) throw py::error_already_set();
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast.ptr());
    PyObject** items = PySequence_Fast_ITEMS(fast.ptr());
    for (Py_ssize_t r = 0; r < n; ++r) {
        PyObject* row = items[r];
        auto get = [&](int k) { return attr(row, keys[k].ptr()); };
        append_int(out, get(INDEX).ptr(), safe, end);
        out.push_back(',');
        append_cell(out, get(OP_TYPE).ptr(), safe, end);
        out.push_back(',');
        append_cell(out, get(NPU_DUMP).ptr(), safe, end);
        out.push_back(',');
        const bool unmatched = truthy(get(UNMATCHED).ptr());
        const bool unknown = unmatched || truthy(get(UNKNOWN).ptr());
        if (unknown) out += nan; else append_or_empty(out, get(NPU_TYPE).ptr(), safe, end);
        auto address = [&](int k) {
            out.push_back(',');
            if (unmatched) { out += nan; return; }
            py::object a = get(k);
            if (a.is_none()) return;
            if (truthy(a.ptr())) append_int(out, a.ptr(), safe, end); else out += nan;
        };
        if (npu_address) address(NPU_ADDRESS);
        out.push_back(',');
        append_cell(out, get(TRUTH).ptr(), safe, end);
        out.push_back(',');
        if (unknown) out += nan; else append_or_empty(out, get(TRUTH_TYPE).ptr(), safe, end);
        if (truth_address) address(TRUTH_ADDRESS);
        out.push_back(',');
        if (unmatched) out += nan; else append_or_empty(out, get(TENSOR).ptr(), safe, end);
        out.push_back(',');
        if (unmatched) {
            out += nan;
        } else {
            py::object shape = get(SHAPE);
            if (!shape.is_none()) {
                std::string text = "[";
                bool first = true;
                for (py::handle d : shape) {
                    if (!first) text.push_back(',');
                    first = false;
                    if (int_text(d.ptr(), text)) continue;
                    PyObject* whole = PyNumber_Long(d.ptr());
                    if (whole == nullptr) throw py::error_already_set();
                    py::object kept = py::reinterpret_steal<py::object>(whole);
                    text += py::str(kept).cast<std::string>();
                }
                text.push_back(']');
                append_ascii(out, text, safe, end);
            }
        }
        py::object result = get(RESULT);
        if (result.is_none()) {
            for (std::size_t k = 0; k < algorithms.size(); ++k) { out.push_back(','); out += nan; }
        } else {
            const MetricResult& res = result.cast<const MetricResult&>();
            py::object skipped = get(NOT_COMPUTED);
            const bool some = truthy(skipped.ptr());
            for (int i : algorithms) {
                out.push_back(',');
                if (some) {
                    py::int_ key(i);
                    const int in = PySequence_Contains(skipped.ptr(), key.ptr());
                    if (in < 0) throw py::error_already_set();
                    if (in) { out += nan; continue; }
                }
                append_ascii(out, format_metric(i, res), safe, end);
            }
        }
        out.push_back(',');
        append_cell(out, get(REASON).ptr(), safe, end);
        out += end;
    }
    return as_str(out);
}

py::str csv_text(const py::iterable& rows, const py::function& safe, const std::string& line_end) {
    std::u32string end(line_end.begin(), line_end.end());
    std::u32string out;
    for (py::handle row : rows) {
        py::object cells = py::reinterpret_steal<py::object>(PySequence_Fast(row.ptr(), "a row is not a sequence"));
        if (!cells) throw py::error_already_set();
        const Py_ssize_t n = PySequence_Fast_GET_SIZE(cells.ptr());
        PyObject** items = PySequence_Fast_ITEMS(cells.ptr());
        const std::size_t start = out.size();
        for (Py_ssize_t k = 0; k < n; ++k) {
            if (k) out.push_back(',');
            append_cell(out, items[k], safe, end);
        }
        if (n == 1 && out.size() == start) out += U"\"\"";  // a lone empty field, as the csv module writes it
        out += end;
    }
    return as_str(out);
}

}  // namespace

void bind_table(py::module_& core) {
    auto m = core.def_submodule("table", "The result file's CSV text made in the core (issue #35).");
    m.def("csv_text", &csv_text, py::arg("rows"), py::arg("safe"), py::arg("line_end"),
          "Rows of cells as the csv module writes them (QUOTE_MINIMAL, ',' and '\"', rows ending in `line_end`), "
          "each cell first passed through `safe` where its first character or a ';' says it may change it.");
    m.def("formula_like", &formula_like, py::arg("cell"),
          "A formula character (= + - % @ or a full-width = + -) at the start of `cell` or right after a ';', behind "
          "any TABs, CRs or LFs: what a spreadsheet would run (output/table.py csv_safe's rule).");
    m.def("row_lines", &row_lines, py::arg("rows"), py::arg("algorithms"), py::arg("npu_address"),
          py::arg("truth_address"), py::arg("safe"), py::arg("line_end"),
          "The result file's CSV lines of Row objects (Index to CompareFailReason, without OpSequence, OverFlow, "
          "custom or extra columns): `csv_text` of their cells, made from the rows' attributes in one call.");
}

}  // namespace dumpcmp::bindings
