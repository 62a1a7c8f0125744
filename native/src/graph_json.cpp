#include "dumpcmp/graph_json.hpp"

#include <charconv>
#include <cstdlib>
#include <limits>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dumpcmp::graphjson {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

void put_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

}  // namespace

void Cursor::expect(char c) {
    ws();
    if (p_ == end_ || *p_ != c) give_up("unexpected character");
    ++p_;
}

namespace {

// The length of the UTF-8 sequence at p (a byte >= 0x80), or 0 when it is not valid UTF-8 as Python's strict
// decoder takes it (no overlong forms, no surrogates, nothing past U+10FFFF).
std::size_t utf8_sequence(const char* p, const char* end) {
    const auto* s = reinterpret_cast<const unsigned char*>(p);
    const unsigned c = s[0];
    std::size_t n;
    unsigned lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 2;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        return 0;
    }
    if (static_cast<std::size_t>(end - p) <= n) return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (std::size_t k = 2; k <= n; ++k)
        if (s[k] < 0x80 || s[k] > 0xBF) return 0;
    return n + 1;
}

// The first byte at or after p that a string scan must look at: '"', '\\', a control character or a byte >= 0x80.
const char* next_special(const char* p, const char* end) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), control = _mm_set1_epi8(0x1F);
    while (end - p >= 16) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                                         _mm_cmpeq_epi8(_mm_subs_epu8(x, control), _mm_setzero_si128()));
        const int mask = _mm_movemask_epi8(hit) | _mm_movemask_epi8(x);  // the high bit: >= 0x80
        if (mask != 0) return p + __builtin_ctz(static_cast<unsigned>(mask));
        p += 16;
    }
#endif
    for (; p < end; ++p) {
        const auto c = static_cast<unsigned char>(*p);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) return p;
    }
    return end;
}


// The string at the cursor: its text decoded into `out` when given, else only checked.
template <bool Decode>
const char* string_body(const char*& p, const char* end, const char* start, std::string* out) {
    auto hex4 = [&]() -> std::uint32_t {
        if (end - p < 4) Cursor::give_up("short \\u escape");
        std::uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            const int h = hex_value(p[k]);
            if (h < 0) Cursor::give_up("bad \\u escape");
            v = v * 16 + static_cast<std::uint32_t>(h);
        }
        p += 4;
        return v;
    };
    if constexpr (Decode) out->assign(start, static_cast<std::size_t>(p - start));
    for (;;) {
        const char* run = p;
        p = next_special(p, end);
        if constexpr (Decode) out->append(run, static_cast<std::size_t>(p - run));
        if (p == end) Cursor::give_up("unterminated string");
        const auto c = static_cast<unsigned char>(*p);
        if (c == '"') {
            ++p;
            return p;
        }
        if (c < 0x20) Cursor::give_up("control character in a string");
        if (c >= 0x80) {
            const std::size_t n = utf8_sequence(p, end);
            if (n == 0) Cursor::give_up("not UTF-8");
            if constexpr (Decode) out->append(p, n);
            p += n;
            continue;
        }
        // a backslash
        if (++p == end) Cursor::give_up("unterminated string");
        const char e = *p++;
        char plain = 0;
        switch (e) {
            case '"': plain = '"'; break;
            case '\\': plain = '\\'; break;
            case '/': plain = '/'; break;
            case 'b': plain = '\b'; break;
            case 'f': plain = '\f'; break;
            case 'n': plain = '\n'; break;
            case 'r': plain = '\r'; break;
            case 't': plain = '\t'; break;
            case 'u': {
                std::uint32_t cp = hex4();
                // jsonfile refuses an unpaired surrogate escape (it stands for no character)
                if (cp >= 0xDC00 && cp <= 0xDFFF) Cursor::give_up("unpaired surrogate escape");
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (end - p < 2 || p[0] != '\\' || p[1] != 'u') Cursor::give_up("unpaired surrogate escape");
                    p += 2;
                    const std::uint32_t low = hex4();
                    if (low < 0xDC00 || low > 0xDFFF) Cursor::give_up("unpaired surrogate escape");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                }
                if constexpr (Decode) put_utf8(*out, cp);
                continue;
            }
            default: Cursor::give_up("bad escape");
        }
        if constexpr (Decode) out->push_back(plain);
    }
}

}  // namespace

std::string_view Cursor::string() {
    expect('"');
    const char* start = p_;
    p_ = next_special(p_, end_);
    if (p_ < end_ && *p_ == '"') {  // the common case: no escape, nothing past ASCII
        ++p_;
        return {start, static_cast<std::size_t>(p_ - 1 - start)};
    }
    for (const char* q = p_;;) {  // a string without escapes is a view into the text
        q = next_special(q, end_);
        if (q == end_) give_up("unterminated string");
        const auto c = static_cast<unsigned char>(*q);
        if (c == '"') {
            p_ = q + 1;
            return {start, static_cast<std::size_t>(q - start)};
        }
        if (c == '\\') break;
        if (c < 0x20) give_up("control character in a string");
        const std::size_t n = utf8_sequence(q, end_);
        if (n == 0) give_up("not UTF-8");
        q += n;
    }
    std::string& out = arena_->emplace_back();
    string_body<true>(p_, end_, start, &out);
    return out;
}

void Cursor::skip_string() {
    expect('"');
    string_body<false>(p_, end_, p_, nullptr);
}

Number Cursor::number() {
    ws();
    const char* start = p_;
    Number n;
    auto word = [&](const char* w, std::size_t len) {
        if (static_cast<std::size_t>(end_ - p_) < len || std::memcmp(p_, w, len) != 0) give_up("bad literal");
        p_ += len;
    };
    if (p_ < end_ && *p_ == 'N') {  // the json module's extensions: NaN, Infinity, -Infinity
        word("NaN", 3);
        n.f = std::numeric_limits<double>::quiet_NaN();
        return n;
    }
    const bool neg = p_ < end_ && *p_ == '-';
    if (neg) ++p_;
    if (p_ < end_ && *p_ == 'I') {
        word("Infinity", 8);
        n.f = neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
        return n;
    }
    auto digits = [&]() {
        const char* d = p_;
        while (p_ < end_ && is_digit(*p_)) ++p_;
        return p_ - d;
    };
    if (p_ == end_) give_up("bad number");
    std::ptrdiff_t int_digits = 1;
    if (*p_ == '0') {
        ++p_;
    } else if (is_digit(*p_)) {
        int_digits = digits();
    } else {
        give_up("bad number");
    }
    bool integer = true;
    if (p_ < end_ && *p_ == '.') {
        ++p_;
        if (digits() == 0) give_up("bad number");
        integer = false;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
        ++p_;
        if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
        if (digits() == 0) give_up("bad number");
        integer = false;
    }
    n.text = std::string_view(start, static_cast<std::size_t>(p_ - start));
    if (integer) {
        if (int_digits > 18) {
            n.big = true;
            return n;
        }
        std::int64_t v = 0;
        for (const char* d = start + (neg ? 1 : 0); d < p_; ++d) v = v * 10 + (*d - '0');
        n.is_int = true;
        n.i = neg ? -v : v;
        return n;
    }
    const auto r = std::from_chars(start, p_, n.f, std::chars_format::general);
    if (r.ec != std::errc() || r.ptr != p_) {  // past a double's range: float() gives inf or 0.0, as strtod does
        const std::string copy(start, p_);
        n.f = std::strtod(copy.c_str(), nullptr);
    }
    return n;
}

char Cursor::literal() {
    ws();
    auto word = [&](const char* w, std::size_t len) {
        if (static_cast<std::size_t>(end_ - p_) < len || std::memcmp(p_, w, len) != 0) give_up("bad literal");
        p_ += len;
    };
    if (p_ == end_) give_up("a value expected");
    switch (*p_) {
        case 't': word("true", 4); return 't';
        case 'f': word("false", 5); return 'f';
        case 'n': word("null", 4); return 'n';
        default: give_up("a value expected");
    }
}

namespace {

bool number_start(char c) { return c == '-' || is_digit(c) || c == 'N' || c == 'I'; }

// Calls `member(key)` for each member of the object at the cursor, at `depth`; the member's value is at the cursor.
template <class F>
void object(Cursor& c, int depth, F&& member) {
    Cursor::nest(depth);
    c.expect('{');
    if (c.peek() == '}') {
        c.expect('}');
        return;
    }
    for (;;) {
        const std::string_view key = c.string();
        c.expect(':');
        member(key);
        if (c.peek() == '}') {
            c.expect('}');
            return;
        }
        c.expect(',');
    }
}

template <class F>
void array(Cursor& c, int depth, F&& item) {
    Cursor::nest(depth);
    c.expect('[');
    if (c.peek() == ']') {
        c.expect(']');
        return;
    }
    for (;;) {
        item();
        if (c.peek() == ']') {
            c.expect(']');
            return;
        }
        c.expect(',');
    }
}

}  // namespace

void Cursor::skip(int depth) {
    const char c = peek();
    if (c == '"') {
        skip_string();
    } else if (c == '{') {
        object(*this, depth, [&](std::string_view) { skip(depth + 1); });
    } else if (c == '[') {
        array(*this, depth, [&] { skip(depth + 1); });
    } else if (number_start(c)) {
        number();
    } else {
        literal();
    }
}

namespace {

// a key compared once decoded (a key written with escapes is the same key)
bool key_is(std::string_view key, std::string_view name) { return key == name; }

void scan_graph(Cursor& c, int depth, GraphSpan& g) {
    g.at = c.offset();
    g.object = true;
    object(c, depth, [&](std::string_view key) {
        c.ws();
        if (key_is(key, "name")) g.name = c.offset();
        else if (key_is(key, "op")) g.op = c.offset();
        c.skip(depth + 1);
    });
}

}  // namespace

Layout scan(const char* data, std::size_t size) {
    const std::string_view text = body(data, size);
    std::deque<std::string> arena;
    Cursor c(text.data(), text.data() + text.size(), &arena);
    Layout l;
    if (c.peek() != '{') {
        c.skip(1);
    } else {
        l.top_object = true;
        object(c, 1, [&](std::string_view key) {
            c.ws();
            const std::size_t at = c.offset();
            if (key == "name") {
                l.name = at;
                c.skip(2);
            } else if (key == "graph") {  // a later 'graph' key is the one the document holds
                l.graph = at;
                l.graphs.clear();
                l.graph_kind = c.peek();
                if (l.graph_kind == '{') {
                    l.graphs.emplace_back();
                    scan_graph(c, 2, l.graphs.back());
                } else if (l.graph_kind == '[') {
                    array(c, 2, [&] {
                        GraphSpan& g = l.graphs.emplace_back();
                        c.ws();
                        if (c.peek() == '{') {
                            scan_graph(c, 3, g);
                        } else {
                            g.at = c.offset();
                            c.skip(3);
                        }
                    });
                } else {
                    c.skip(2);
                }
            } else {
                c.skip(2);
            }
            arena.clear();
        });
    }
    if (!c.at_end()) Cursor::give_up("data after the document");
    return l;
}

namespace {

struct NotPlain {};

class Walker {
public:
    Walker(std::string_view text, Visitor& v) : c_(text.data(), text.data() + text.size(), dom_.arena()), v_(v) {}

    bool run(std::string& model_name) {
        if (c_.peek() != '{') return false;
        bool seen_graph = false, seen_name = false;
        try {
            object(c_, 1, [&](std::string_view key) {
                if (key == "graph") {
                    if (seen_graph) throw NotPlain();
                    seen_graph = true;
                    graphs();
                } else if (key == "name") {
                    if (seen_name) throw NotPlain();
                    seen_name = true;
                    if (c_.peek() == '"') model_name = std::string(c_.string());
                    else c_.skip(2);
                } else {
                    c_.skip(2);
                }
            });
        } catch (const NotPlain&) {
            return false;
        }
        if (!c_.at_end()) Cursor::give_up("data after the document");
        return seen_graph;
    }

private:
    void graphs() {
        const char k = c_.peek();
        std::size_t g = 0;
        if (k == '{') {
            graph(2, g);
        } else if (k == '[') {
            array(c_, 2, [&] {
                if (c_.peek() != '{') throw NotPlain();
                graph(3, g++);
            });
        } else {
            throw NotPlain();
        }
    }

    void graph(int depth, std::size_t g) {
        bool seen_name = false, seen_op = false, named = false;
        std::string name;
        object(c_, depth, [&](std::string_view key) {
            if (key == "name") {
                if (seen_name) throw NotPlain();
                seen_name = true;
                if (c_.peek() == '"') {
                    name = std::string(c_.string());
                    named = true;
                } else {
                    c_.skip(depth + 1);
                }
            } else if (key == "op") {
                if (seen_op) throw NotPlain();
                seen_op = true;
                if (c_.peek() != '[') {
                    dom_.clear();
                    if (Dom::truthy(dom_.nodes[dom_.read(c_, depth + 1)])) throw NotPlain();
                    return;
                }
                std::size_t n = 0;
                array(c_, depth + 1, [&] {
                    dom_.clear();
                    const std::uint32_t root = dom_.read(c_, depth + 2);
                    v_.op(dom_, root, g, n++);
                });
            } else {
                c_.skip(depth + 1);
            }
        });
        v_.graph_done(g, named ? &name : nullptr);
    }

    Dom dom_;
    Cursor c_;
    Visitor& v_;
};

}  // namespace

bool walk(const char* data, std::size_t size, Visitor& visitor, std::string& model_name) {
    Walker w(body(data, size), visitor);
    return w.run(model_name);
}

std::uint32_t Dom::read(Cursor& c, int depth) {
    const auto index = static_cast<std::uint32_t>(nodes.size());
    nodes.emplace_back();
    const char k = c.peek();
    auto close = [&](std::size_t from, std::uint32_t count) {
        Node& n = nodes[index];
        n.first = kids.size();
        n.count = count;
        kids.insert(kids.end(), stack_.begin() + static_cast<std::ptrdiff_t>(from), stack_.end());
        stack_.resize(from);
    };
    if (k == '"') {
        const std::string_view s = c.string();
        nodes[index].kind = Kind::string;
        nodes[index].s = s;
    } else if (k == '{') {
        const std::size_t from = stack_.size();
        std::uint32_t count = 0;
        object(c, depth, [&](std::string_view key) {
            const auto key_index = static_cast<std::uint32_t>(nodes.size());
            Node& kn = nodes.emplace_back();
            kn.kind = Kind::string;
            kn.s = key;
            stack_.push_back(key_index);
            const std::uint32_t value = read(c, depth + 1);
            stack_.push_back(value);
            ++count;
        });
        nodes[index].kind = Kind::object;
        close(from, count);
    } else if (k == '[') {
        const std::size_t from = stack_.size();
        std::uint32_t count = 0;
        array(c, depth, [&] {
            const std::uint32_t item = read(c, depth + 1);
            stack_.push_back(item);
            ++count;
        });
        nodes[index].kind = Kind::array;
        close(from, count);
    } else if (number_start(k)) {
        const Number n = c.number();
        Node& node = nodes[index];
        if (n.is_int) {
            node.kind = Kind::integer;
            node.i = n.i;
        } else if (n.big) {
            node.kind = Kind::big;
            node.s = n.text;
        } else {
            node.kind = Kind::real;
            node.f = n.f;
        }
    } else {
        const char l = c.literal();
        nodes[index].kind = l == 'n' ? Kind::null : l == 't' ? Kind::true_ : Kind::false_;
    }
    return index;
}

const Node* Dom::get(const Node& object, std::string_view key) const {
    for (std::size_t m = object.count; m-- > 0;) {
        if (nodes[kids[object.first + 2 * m]].s == key) return &nodes[kids[object.first + 2 * m + 1]];
    }
    return nullptr;
}

bool Dom::truthy(const Node& n) {
    switch (n.kind) {
        case Kind::null:
        case Kind::false_: return false;
        case Kind::true_:
        case Kind::big: return true;
        case Kind::integer: return n.i != 0;
        case Kind::real: return n.f != 0.0;  // NaN is true, as in Python
        case Kind::string: return !n.s.empty();
        case Kind::array:
        case Kind::object: return n.count != 0;
    }
    return true;
}

}  // namespace dumpcmp::graphjson
