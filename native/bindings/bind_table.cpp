// _core.table: a batch of the result file's rows made CSV text in one call (issue #35: a model's worth of rows).
// The cells are Python strings and the formula rule is Python's (output/table.py csv_safe, asked of the few cells
// it may change), so this works on Python objects under the GIL: what it saves is the interpreter's per-cell work.
#include <string>

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
            PyObject* cell = items[k];
            py::object kept;  // a cell csv_safe returned, alive while appended
            const bool text = PyUnicode_Check(cell);
            if (!text || (PyUnicode_GET_LENGTH(cell) > 0 &&
                          (maybe_formula(PyUnicode_READ_CHAR(cell, 0)) ||
                           PyUnicode_FindChar(cell, ';', 0, PyUnicode_GET_LENGTH(cell), 1) >= 0))) {
                kept = safe(py::handle(cell));
                cell = kept.ptr();
                if (cell == Py_None) continue;  // the csv module writes None as an empty field
                if (!PyUnicode_Check(cell)) {
                    kept = py::str(kept);
                    cell = kept.ptr();
                }
            }
            append_field(out, text_of(cell), end);
        }
        if (n == 1 && out.size() == start) out += U"\"\"";  // a lone empty field, as the csv module writes it
        out += end;
    }
    PyObject* s = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out.data(), static_cast<Py_ssize_t>(out.size()));
    if (s == nullptr) throw py::error_already_set();
    return py::reinterpret_steal<py::str>(s);
}

}  // namespace

void bind_table(py::module_& core) {
    auto m = core.def_submodule("table", "The result file's CSV text made in the core (issue #35).");
    m.def("csv_text", &csv_text, py::arg("rows"), py::arg("safe"), py::arg("line_end"),
          "Rows of cells as the csv module writes them (QUOTE_MINIMAL, ',' and '\"', rows ending in `line_end`), "
          "each cell first passed through `safe` where its first character or a ';' says it may change it.");
}

}  // namespace dumpcmp::bindings
