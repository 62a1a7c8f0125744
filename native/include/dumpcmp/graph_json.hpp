// The model compiler's graph JSON (`atc --mode=1 --json=`), read in one pass without a generic tree (issue #35).
//
// A strict RFC 8259 reader of this one schema: it walks the document once and hands each op, decoded into flat
// arrays, to a sink. It takes only what it can read exactly as the Python reader (dumpcmp/graph/graph_json.py over
// the standard library's json) would: documents in the shapes real files have. On anything else (invalid JSON,
// nesting past max_depth, a number of 19 digits or more, an unpaired surrogate escape, invalid UTF-8, a duplicate key
// the schema reads, a field of an unusual type) it throws NotCanonical and the caller reads the file the Python way,
// which gives the same records or says what is wrong. It never reads past the end of its bytes, recurses at most
// max_depth levels, and allocates in proportion to one op.
#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace dumpcmp::graphjson {

constexpr int max_depth = 256;  // dumpcmp.support.jsonfile.MAX_DEPTH

// The document is not one this reader takes as it is: the caller reads it the Python way. what() says why.
struct NotCanonical : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A number token: an integer of at most 18 digits (is_int) or a double, correctly rounded.
struct Number {
    bool is_int = false;
    std::int64_t i = 0;
    double f = 0.0;
};

// A strict JSON cursor over [begin, end). Strings are returned as views into the text, or, when they hold escapes,
// into `arena` (which keeps them until cleared).
class Cursor {
public:
    Cursor(const char* begin, const char* end, std::deque<std::string>* arena) : p_(begin), end_(end),
        begin_(begin), arena_(arena) {}
    void ws() {
        while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
    }
    // the next byte after white space (0 at the end)
    char peek() {
        ws();
        return p_ < end_ ? *p_ : '\0';
    }
    void expect(char c);
    bool at_end() {
        ws();
        return p_ == end_;
    }
    std::string_view string();
    Number number();
    // true, false, null: the literal at the cursor (t, f or n)
    char literal();
    // skip one value of any kind (checked), `depth` being the level of the container holding it
    void skip(int depth);
    std::size_t offset() const { return static_cast<std::size_t>(p_ - begin_); }
    [[noreturn]] static void give_up(const char* why) { throw NotCanonical(why); }
    // enter a container at `depth` (1 for the top level), refusing past max_depth
    static void nest(int depth) {
        if (depth > max_depth) give_up("nested too deeply");
    }

private:
    const char* p_;
    const char* end_;
    const char* begin_;
    std::deque<std::string>* arena_;
};

// What an attribute value (`{"s": ...}`, `{"list": {...}}`...) holds, as graph_json.attr_value reads it.
enum class AttrKind : std::uint8_t {
    none,        // null, an absent value, or a typed field that is null
    str,         // s
    integer,     // i
    boolean,     // b
    real,        // f (an integer given is a float)
    list_str,    // strs[first, first + count)
    list_int,    // ints[...]
    list_bool,   // ints[...] (0 or 1)
    list_real,   // reals[...]
    list_empty,  // a list with none of the typed fields (only val_type), or a null list
    value,       // another object (a tensor, a sub-graph...): its text [begin, end), returned as a dict
    list_value,  // a list of another kind (bt, dt, tf, g, t, na): its array's text [begin, end), returned as a list
};

struct Attr {
    std::string_view key;
    AttrKind kind = AttrKind::none;
    std::string_view s;
    std::int64_t i = 0;
    double f = 0.0;
    std::size_t first = 0, count = 0;
    std::size_t begin = 0, end = 0;
};

// One input_desc / output_desc entry (null: the JSON null).
struct Desc {
    bool null = false;
    std::string_view dtype, layout;  // empty: None (absent, not a string, or "")
    bool has_shape = false;          // false: None
    std::size_t dims_first = 0, dims_count = 0;
    std::size_t attrs_first = 0, attrs_count = 0;
};

struct Input {
    std::string_view text;      // the raw `input` string
    std::string_view producer;  // empty text: no data input
    std::int64_t index = 0;
};

struct Op {
    std::string_view name, type;
    std::int64_t id = 0;
    std::size_t graph = 0;  // index of its graph in the file
    std::size_t inputs_first = 0, inputs_count = 0;
    std::size_t attrs_first = 0, attrs_count = 0;
    std::size_t in_first = 0, in_count = 0;
    std::size_t out_first = 0, out_count = 0;
};

// The arrays one op's fields index; cleared before each op.
struct Pools {
    std::vector<std::string_view> strs;
    std::vector<std::int64_t> ints;
    std::vector<double> reals;
    std::vector<Attr> attrs;
    std::vector<Desc> descs;
    std::vector<Input> inputs;
    void clear() {
        strs.clear();
        ints.clear();
        reals.clear();
        attrs.clear();
        descs.clear();
        inputs.clear();
    }
};

class Sink {
public:
    virtual ~Sink() = default;
    // each op in file order; the views live until the call returns
    virtual void op(const Op& op, const Pools& pools) = 0;
    // a graph's ops are all given: its name (graph_json.parse_graph's rule: "graph_<n>" without one, "<name>#<n>"
    // for a name taken before)
    virtual void graph_done(std::size_t index, const std::string& name) = 0;
};

struct Document {
    std::string model_name;  // "" when absent or not a string
    std::vector<std::string> graph_names;
};

// Walk the graph JSON `data` (a UTF-8 byte-order mark allowed), giving each op to `sink`. Throws NotCanonical.
Document read_graph(const char* data, std::size_t size, Sink& sink);

}  // namespace dumpcmp::graphjson
