// The model compiler's graph JSON (`atc --mode=1 --json=`), read without a generic tree of the whole file (#35).
//
// The JSON layer of the one graph JSON reader (the schema's rules are in native/bindings/bind_graph.cpp, which
// makes graph_json's records): a JSON reader that takes exactly what Python's json module takes (NaN, Infinity and
// -Infinity included, integers of any length, duplicate keys: the last one wins) and refuses what
// dumpcmp.support.jsonfile refuses (invalid JSON, nesting past max_depth, an unpaired surrogate escape, invalid
// UTF-8). `scan` checks the whole text once and finds where the graphs and their op arrays are; `Dom` then reads
// one op at a time into a small tree that lives until the next op. Neither reads past the end of its bytes, recurses
// more than max_depth levels, nor allocates more than in proportion to the text.
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

// The text is not JSON as dumpcmp.support.jsonfile reads it: the caller asks jsonfile for its words. what() says why.
struct NotJson : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A number token: an integer of at most 18 digits (is_int), one of more (big: its text), or a double as Python's
// float() of the text gives it (NaN, Infinity, -Infinity included).
struct Number {
    bool is_int = false;
    bool big = false;
    std::int64_t i = 0;
    double f = 0.0;
    std::string_view text;
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
    // skip one value of any kind (checked), `depth` being the level of the value itself (1 for the top level)
    void skip(int depth);
    std::size_t offset() const { return static_cast<std::size_t>(p_ - begin_); }
    void seek(std::size_t offset) { p_ = begin_ + (offset < static_cast<std::size_t>(end_ - begin_)
                                                       ? offset : static_cast<std::size_t>(end_ - begin_)); }
    [[noreturn]] static void give_up(const char* why) { throw NotJson(why); }
    // enter a container at `depth` (1 for the top level), refusing past max_depth
    static void nest(int depth) {
        if (depth > max_depth) give_up("nested too deeply");
    }

private:
    void skip_string();
    const char* p_;
    const char* end_;
    const char* begin_;
    std::deque<std::string>* arena_;
};

constexpr std::size_t absent = static_cast<std::size_t>(-1);

// Where one element of the 'graph' value is (offsets into the text, `absent` when there is none).
struct GraphSpan {
    std::size_t at = 0;      // the element's value
    bool object = false;     // the element is an object (else graph_json's "graph #n is not an object")
    std::size_t name = absent, op = absent;  // its last 'name' and 'op' members' values
};

// What `scan` found: the document's shape down to the graphs' members (duplicate keys: the last one).
struct Layout {
    bool top_object = false;
    std::size_t name = absent;   // the top level's last 'name' value
    std::size_t graph = absent;  // the top level's last 'graph' value
    char graph_kind = 0;         // its first byte: '{' (one graph), '[' (graphs) or another (not an array)
    std::vector<GraphSpan> graphs;
};

// Check the whole text (a UTF-8 byte-order mark allowed: offsets count after it) as JSON and find its layout.
// Throws NotJson.
Layout scan(const char* data, std::size_t size);

// The text after a UTF-8 byte-order mark.
inline std::string_view body(const char* data, std::size_t size) {
    if (size >= 3 && data[0] == '\xEF' && data[1] == '\xBB' && data[2] == '\xBF') return {data + 3, size - 3};
    return {data, size};
}

// One JSON value of a tree (Dom).
enum class Kind : std::uint8_t { null, false_, true_, integer, big, real, string, array, object };

struct Node {
    Kind kind = Kind::null;
    std::uint32_t count = 0;  // array items, object members
    std::size_t first = 0;    // kids[first...]: items, or members as key, value, key, value...
    std::string_view s;       // a string's text (decoded), a big integer's digits
    std::int64_t i = 0;
    double f = 0.0;
};

// The tree of one value (an op), read from a cursor of checked text; cleared for the next.
class Dom {
public:
    std::vector<Node> nodes;
    std::vector<std::uint32_t> kids;
    void clear() {
        nodes.clear();
        kids.clear();
        stack_.clear();
        arena_.clear();
    }
    // read the value at the cursor (over text `scan` took), `depth` being its level; its node's index
    std::uint32_t read(Cursor& c, int depth);
    std::deque<std::string>* arena() { return &arena_; }
    const Node& kid(const Node& n, std::size_t k) const { return nodes[kids[n.first + k]]; }
    // the value of an object's last member named `key`, or nullptr
    const Node* get(const Node& object, std::string_view key) const;
    // Python's truth of the value (`x or []`)
    static bool truthy(const Node& n);

private:
    std::vector<std::uint32_t> stack_;
    std::deque<std::string> arena_;
};

// What the one-pass reading hands on: each op's tree (in file order; `dom` and `root` live until the call returns),
// and each graph's end with its 'name' when that is a string.
class Visitor {
public:
    virtual ~Visitor() = default;
    virtual void op(const Dom& dom, std::uint32_t root, std::size_t graph, std::size_t n) = 0;
    virtual void graph_done(std::size_t graph, const std::string* name) = 0;
};

// Read the document in one pass, in file order, as long as its layout is plain (as real files are): one object with
// one 'graph' (an object, or an array of objects), each graph with at most one 'name' and one 'op' (an array, or
// a value that is not true), and at most one top-level 'name' (its string in `model_name`). Returns false, with
// whatever was handed on to be thrown away, for any other layout: then `scan` and a reading by layout tell what
// the document holds. Throws NotJson, and whatever `visitor` throws (the caller then reads by layout too: what
// an error is and which comes first is that reading's to say).
bool walk(const char* data, std::size_t size, Visitor& visitor, std::string& model_name);

}  // namespace dumpcmp::graphjson
