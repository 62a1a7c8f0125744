#include "dumpcmp/graph_json.hpp"

#include <charconv>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dumpcmp::graphjson {

namespace {

constexpr int max_digit_run = 18;  // a run of 19 digits or more: jsonfile reads such files with the standard library

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

// An integer written as a string ("12", "-3"), as int() reads it; false for any other spelling (int() may still
// take it: the caller gives up).
bool int_text(std::string_view s, std::int64_t& out) {
    bool neg = false;
    if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
        neg = s[0] == '-';
        s.remove_prefix(1);
    }
    if (s.empty() || s.size() > static_cast<std::size_t>(max_digit_run)) return false;
    std::int64_t v = 0;
    for (const char d : s) {
        if (!is_digit(d)) return false;
        v = v * 10 + (d - '0');
    }
    out = neg ? -v : v;
    return true;
}

// A number written as a string ("0.05", "-1e-3"), as float() reads it; false for any other spelling.
bool float_text(std::string_view s, double& out) {
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    std::size_t i = 0, run = 0;
    auto digits = [&] {
        const std::size_t from = i;
        while (i < s.size() && is_digit(s[i])) ++i;
        run = i - from;
        return run > 0 && run <= static_cast<std::size_t>(max_digit_run);
    };
    if (i < s.size() && s[i] == '-') ++i;
    if (!digits()) return false;
    if (i < s.size() && s[i] == '.') {
        ++i;
        if (!digits()) return false;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
        if (!digits()) return false;
    }
    if (i != s.size()) return false;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), out, std::chars_format::general);
    return r.ec == std::errc() && r.ptr == s.data() + s.size();
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

}  // namespace

std::string_view Cursor::string() {
    expect('"');
    const char* start = p_;
    for (;;) {
        p_ = next_special(p_, end_);
        if (p_ == end_) give_up("unterminated string");
        const auto c = static_cast<unsigned char>(*p_);
        if (c == '"') {
            std::string_view v(start, static_cast<std::size_t>(p_ - start));
            ++p_;
            return v;
        }
        if (c == '\\') break;
        if (c < 0x20) give_up("control character in a string");
        const std::size_t n = utf8_sequence(p_, end_);
        if (n == 0) give_up("not UTF-8");
        p_ += n;
    }
    std::string& out = arena_->emplace_back(start, static_cast<std::size_t>(p_ - start));
    auto hex4 = [&]() -> std::uint32_t {
        if (end_ - p_ < 4) give_up("short \\u escape");
        std::uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            const int h = hex_value(p_[k]);
            if (h < 0) give_up("bad \\u escape");
            v = v * 16 + static_cast<std::uint32_t>(h);
        }
        p_ += 4;
        return v;
    };
    while (p_ < end_) {
        const char c = *p_;
        if (c == '"') {
            ++p_;
            return out;
        }
        if (static_cast<unsigned char>(c) < 0x20) give_up("control character in a string");
        if (static_cast<unsigned char>(c) >= 0x80) {
            const std::size_t n = utf8_sequence(p_, end_);
            if (n == 0) give_up("not UTF-8");
            out.append(p_, n);
            p_ += n;
            continue;
        }
        if (c != '\\') {
            out.push_back(c);
            ++p_;
            continue;
        }
        if (++p_ == end_) break;
        const char e = *p_++;
        switch (e) {
            case '"': out.push_back('"'); break;
            case '\\': out.push_back('\\'); break;
            case '/': out.push_back('/'); break;
            case 'b': out.push_back('\b'); break;
            case 'f': out.push_back('\f'); break;
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 't': out.push_back('\t'); break;
            case 'u': {
                std::uint32_t cp = hex4();
                if (cp >= 0xDC00 && cp <= 0xDFFF) give_up("unpaired surrogate escape");
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') give_up("unpaired surrogate escape");
                    p_ += 2;
                    const std::uint32_t low = hex4();
                    if (low < 0xDC00 || low > 0xDFFF) give_up("unpaired surrogate escape");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                }
                put_utf8(out, cp);
                break;
            }
            default: give_up("bad escape");
        }
    }
    give_up("unterminated string");
}

Number Cursor::number() {
    ws();
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    auto digits = [&]() {
        const char* d = p_;
        while (p_ < end_ && is_digit(*p_)) ++p_;
        if (p_ - d > max_digit_run) give_up("a number of 19 digits or more");
        return p_ - d;
    };
    if (p_ == end_) give_up("bad number");
    if (*p_ == '0') {
        ++p_;
    } else if (is_digit(*p_)) {
        digits();
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
    Number n;
    if (integer) {
        const char* d = start;
        const bool neg = *d == '-';
        if (neg) ++d;
        std::int64_t v = 0;
        for (; d < p_; ++d) v = v * 10 + (*d - '0');
        n.is_int = true;
        n.i = neg ? -v : v;
        return n;
    }
    const auto r = std::from_chars(start, p_, n.f, std::chars_format::general);
    if (r.ec != std::errc() || r.ptr != p_) give_up("a number out of a double's range");
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

void Cursor::skip(int depth) {
    const char c = peek();
    if (c == '"') {
        string();
    } else if (c == '{') {
        nest(depth + 1);
        expect('{');
        if (peek() == '}') {
            ++p_;
            return;
        }
        for (;;) {
            string();
            expect(':');
            skip(depth + 1);
            const char d = peek();
            if (d == '}') {
                ++p_;
                return;
            }
            expect(',');
        }
    } else if (c == '[') {
        nest(depth + 1);
        expect('[');
        if (peek() == ']') {
            ++p_;
            return;
        }
        for (;;) {
            skip(depth + 1);
            const char d = peek();
            if (d == ']') {
                ++p_;
                return;
            }
            expect(',');
        }
    } else if (c == '-' || is_digit(c)) {
        number();
    } else {
        literal();
    }
}

namespace {

// Calls `item(depth)` for each member of the object at the cursor with the key's view, `depth` being the object's
// own level.
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

void once(bool& seen) {
    if (seen) Cursor::give_up("a duplicate key");
    seen = true;
}

// null, or an array read by `read` (an absent or null array is empty)
template <class F>
void null_or_array(Cursor& c, int depth, F&& item) {
    const char k = c.peek();
    if (k == 'n') {
        c.literal();
    } else if (k == '[') {
        array(c, depth, item);
    } else {
        Cursor::give_up("not an array");
    }
}

class Walker {
public:
    Walker(const char* b, const char* e, Sink& sink) : c_(b, e, &arena_), sink_(sink) {}

    Document run() {
        Document doc;
        if (c_.peek() != '{') Cursor::give_up("the top level is not an object");
        bool seen_graph = false, seen_name = false;
        object(c_, 1, [&](std::string_view key) {
            if (key == "graph") {
                once(seen_graph);
                graphs(doc);
            } else if (key == "name") {
                once(seen_name);
                if (c_.peek() == '"') doc.model_name = std::string(c_.string());
                else c_.skip(1);
            } else {
                c_.skip(1);
            }
        });
        if (!c_.at_end()) Cursor::give_up("data after the document");
        if (!seen_graph) Cursor::give_up("no 'graph' key");
        return doc;
    }

private:
    void graphs(Document& doc) {
        const char k = c_.peek();
        if (k == '{') {
            graph(doc, 2);
        } else if (k == '[') {
            array(c_, 2, [&] {
                if (c_.peek() != '{') Cursor::give_up("a graph is not an object");
                graph(doc, 3);
            });
        } else {
            Cursor::give_up("'graph' is neither an array nor an object");
        }
    }

    void graph(Document& doc, int depth) {
        const std::size_t g = doc.graph_names.size();
        std::string name;
        bool seen_name = false, seen_op = false;
        object(c_, depth, [&](std::string_view key) {
            if (key == "name") {
                once(seen_name);
                if (c_.peek() == '"') name = std::string(c_.string());
                else c_.skip(depth);
            } else if (key == "op") {
                once(seen_op);
                null_or_array(c_, depth + 1, [&] {
                    if (c_.peek() != '{') Cursor::give_up("an op is not an object");
                    op(g, depth + 2);
                });
            } else {
                c_.skip(depth);
            }
        });
        if (name.empty()) name = "graph_" + std::to_string(g);
        for (const std::string& taken : doc.graph_names) {
            if (taken == name) {
                name += "#" + std::to_string(g);
                break;
            }
        }
        doc.graph_names.push_back(name);
        sink_.graph_done(g, name);
        arena_.clear();
    }

    void op(std::size_t g, int depth) {
        pools_.clear();
        arena_.clear();
        Op o;
        o.graph = g;
        bool seen_name = false, seen_type = false, seen_id = false, seen_input = false, seen_attr = false,
             seen_in = false, seen_out = false;
        object(c_, depth, [&](std::string_view key) {
            if (key == "name") {
                once(seen_name);
                if (c_.peek() != '"') Cursor::give_up("an op's name is not a string");
                o.name = c_.string();
                if (o.name.empty()) Cursor::give_up("an op's name is empty");
            } else if (key == "type") {
                once(seen_type);
                if (c_.peek() == 'n') c_.literal();
                else if (c_.peek() == '"') o.type = c_.string();
                else Cursor::give_up("an op's type is not a string");
            } else if (key == "id") {
                once(seen_id);
                const char k = c_.peek();
                if (k == 'n') {
                    c_.literal();
                } else if (k == '-' || is_digit(k)) {
                    const Number n = c_.number();
                    if (!n.is_int) Cursor::give_up("an op's id is not an integer");
                    o.id = n.i;
                } else if (k == '"') {  // int64 written as a string
                    if (!int_text(c_.string(), o.id)) Cursor::give_up("an op's id is not an integer");
                } else {
                    Cursor::give_up("an op's id is not an integer");
                }
            } else if (key == "input") {
                once(seen_input);
                o.inputs_first = pools_.inputs.size();
                null_or_array(c_, depth + 1, [&] { input(); });
                o.inputs_count = pools_.inputs.size() - o.inputs_first;
            } else if (key == "attr") {
                once(seen_attr);
                attrs(depth + 1, o.attrs_first, o.attrs_count);
            } else if (key == "input_desc" || key == "output_desc") {
                const bool in = key == "input_desc";
                once(in ? seen_in : seen_out);
                const std::size_t first = pools_.descs.size();
                null_or_array(c_, depth + 1, [&] { desc(depth + 2); });
                (in ? o.in_first : o.out_first) = first;
                (in ? o.in_count : o.out_count) = pools_.descs.size() - first;
            } else {
                c_.skip(depth);
            }
        });
        if (!seen_name) Cursor::give_up("an op without a name");
        sink_.op(o, pools_);
    }

    void input() {
        if (c_.peek() != '"') Cursor::give_up("an input is not a string");
        Input in;
        in.text = c_.string();
        if (!in.text.empty()) {
            const std::size_t colon = in.text.rfind(':');
            if (colon == std::string_view::npos) {
                in.producer = in.text;
            } else {
                in.producer = in.text.substr(0, colon);
                if (!int_text(in.text.substr(colon + 1), in.index))
                    Cursor::give_up("an input's index is not a plain integer");
            }
        }
        pools_.inputs.push_back(in);
    }

    void attrs(int depth, std::size_t& first, std::size_t& count) {
        // nothing inside an attribute list pushes attributes: the list's are contiguous
        first = pools_.attrs.size();
        null_or_array(c_, depth, [&] {
            if (c_.peek() != '{') Cursor::give_up("an attribute is not an object");
            Attr a;
            bool seen_key = false, seen_value = false;
            object(c_, depth + 1, [&](std::string_view key) {
                if (key == "key") {
                    once(seen_key);
                    if (c_.peek() != '"') Cursor::give_up("an attribute's key is not a string");
                    a.key = c_.string();
                } else if (key == "value") {
                    once(seen_value);
                    value(depth + 2, a);
                } else {
                    c_.skip(depth + 1);
                }
            });
            if (!seen_key) Cursor::give_up("an attribute without a key");
            pools_.attrs.push_back(a);
        });
        count = pools_.attrs.size() - first;
    }

    // A typed field of a value object: kind set from the token (null: none).
    void scalar(char field, Attr& a) {
        const char k = c_.peek();
        if (k == 'n') {
            c_.literal();
            a.kind = AttrKind::none;
            return;
        }
        switch (field) {
            case 's':
                if (k != '"') Cursor::give_up("an 's' value is not a string");
                a.kind = AttrKind::str;
                a.s = c_.string();
                return;
            case 'i': {
                if (k == '"') {  // int64 written as a string
                    if (!int_text(c_.string(), a.i)) Cursor::give_up("an 'i' value is not an integer");
                    a.kind = AttrKind::integer;
                    return;
                }
                if (k != '-' && !is_digit(k)) Cursor::give_up("an 'i' value is not an integer");
                const Number n = c_.number();
                if (!n.is_int) Cursor::give_up("an 'i' value is not an integer");
                a.kind = AttrKind::integer;
                a.i = n.i;
                return;
            }
            case 'b': {
                const char l = c_.literal();
                if (l == 'n') Cursor::give_up("unreachable");
                a.kind = AttrKind::boolean;
                a.i = l == 't';
                return;
            }
            default: {  // 'f'
                if (k == '"') {  // written as a string by some versions
                    if (!float_text(c_.string(), a.f)) Cursor::give_up("an 'f' value is not a number");
                    a.kind = AttrKind::real;
                    return;
                }
                if (k != '-' && !is_digit(k)) Cursor::give_up("an 'f' value is not a number");
                const Number n = c_.number();
                a.kind = AttrKind::real;
                a.f = n.is_int ? static_cast<double>(n.i) : n.f;
                return;
            }
        }
    }

    // An attribute's value object, as graph_json.attr_value reads it.
    void value(int depth, Attr& a) {
        const char k = c_.peek();
        if (k == 'n') {
            c_.literal();
            a.kind = AttrKind::none;
            return;
        }
        if (k != '{') Cursor::give_up("an attribute value is not an object");
        a.begin = c_.offset();
        // the typed fields in attr_value's order: s, i, b, f (present, even null), then list; the first one wins
        static constexpr char scalars[] = {'s', 'i', 'b', 'f'};
        bool present[5] = {false, false, false, false, false};
        Attr best;
        int best_rank = 5;
        object(c_, depth, [&](std::string_view key) {
            int rank = -1;
            if (key.size() == 1) {
                for (int n = 0; n < 4; ++n)
                    if (key[0] == scalars[n]) rank = n;
            } else if (key == "list") {
                rank = 4;
            }
            if (rank < 0) {
                c_.skip(depth);
                return;
            }
            once(present[rank]);
            Attr got;
            if (rank == 4) list_value(depth + 1, got);
            else scalar(scalars[rank], got);
            if (rank < best_rank) {
                best = got;
                best_rank = rank;
            }
        });
        a.end = c_.offset();
        if (best_rank < 5) {
            const std::string_view key = a.key;
            a = best;
            a.key = key;
            return;
        }
        a.kind = AttrKind::value;
    }

    void list_value(int depth, Attr& a) {
        const char k = c_.peek();
        if (k == 'n') {
            c_.literal();
            a.kind = AttrKind::list_empty;
            return;
        }
        if (k != '{') Cursor::give_up("a 'list' value is not an object");
        // graph_json._LIST_FIELDS, in its order
        static constexpr std::string_view fields[] = {"s", "i", "f", "b", "bt", "dt", "tf", "g", "t", "na"};
        constexpr int n_fields = 10;
        bool seen[n_fields] = {};
        int best_rank = n_fields;  // the first field in that order holding an array wins
        a.kind = AttrKind::list_empty;
        object(c_, depth, [&](std::string_view key) {
            int f = -1;
            for (int n = 0; n < n_fields; ++n)
                if (key == fields[n]) f = n;
            if (f < 0) {
                c_.skip(depth);
                return;
            }
            once(seen[f]);
            const char t = c_.peek();
            if (t == 'n') {
                c_.literal();
                return;
            }
            if (t != '[') Cursor::give_up("a list field is not an array");
            Attr r;
            read_list(depth, f, r);
            if (f < best_rank) {
                a = r;
                best_rank = f;
            }
        });
    }

    // The array of list field `f` (in _LIST_FIELDS' order) into `r`.
    void read_list(int depth, int f, Attr& r) {
        switch (f) {
            case 0:
                r.kind = AttrKind::list_str;
                r.first = pools_.strs.size();
                array(c_, depth + 1, [&] {
                    if (c_.peek() != '"') Cursor::give_up("a string list holds a non-string");
                    pools_.strs.push_back(c_.string());
                });
                r.count = pools_.strs.size() - r.first;
                return;
            case 1:
            case 3:
                r.kind = f == 1 ? AttrKind::list_int : AttrKind::list_bool;
                r.first = pools_.ints.size();
                array(c_, depth + 1, [&] {
                    const char e = c_.peek();
                    if (f == 1) {
                        pools_.ints.push_back(list_integer(e));
                    } else {
                        const char l = c_.literal();
                        if (l == 'n') Cursor::give_up("a bool list holds a null");
                        pools_.ints.push_back(l == 't');
                    }
                });
                r.count = pools_.ints.size() - r.first;
                return;
            case 2:
                r.kind = AttrKind::list_real;
                r.first = pools_.reals.size();
                array(c_, depth + 1, [&] {
                    const char e = c_.peek();
                    if (e != '-' && !is_digit(e)) Cursor::give_up("a float list holds a non-number");
                    const Number n = c_.number();
                    pools_.reals.push_back(n.is_int ? static_cast<double>(n.i) : n.f);
                });
                r.count = pools_.reals.size() - r.first;
                return;
            default:
                r.kind = AttrKind::list_value;
                r.begin = c_.offset();
                c_.skip(depth);
                r.end = c_.offset();
                return;
        }
    }

    // An item of an integer list (a shape, an `i` list) starting with `e`: an integer, or one written as a string
    // (graph_json._ints reads both).
    std::int64_t list_integer(char e) {
        std::int64_t v = 0;
        if (e == '"') {
            if (!int_text(c_.string(), v)) Cursor::give_up("an integer list holds a non-integer");
            return v;
        }
        if (e != '-' && !is_digit(e)) Cursor::give_up("an integer list holds a non-integer");
        const Number n = c_.number();
        if (!n.is_int) Cursor::give_up("an integer list holds a non-integer");
        return n.i;
    }

    void dims(int depth, Desc& d) {
        d.has_shape = true;
        d.dims_first = pools_.ints.size();
        array(c_, depth, [&] { pools_.ints.push_back(list_integer(c_.peek())); });
        d.dims_count = pools_.ints.size() - d.dims_first;
    }

    void desc(int depth) {
        Desc d;
        const char k = c_.peek();
        if (k == 'n') {
            c_.literal();
            d.null = true;
            pools_.descs.push_back(d);
            return;
        }
        if (k != '{') Cursor::give_up("a tensor desc is not an object");
        bool seen_dtype = false, seen_layout = false, seen_shape = false, seen_attr = false;
        object(c_, depth, [&](std::string_view key) {
            if (key == "dtype" || key == "layout") {
                const bool dt = key == "dtype";
                once(dt ? seen_dtype : seen_layout);
                if (c_.peek() == '"') (dt ? d.dtype : d.layout) = c_.string();
                else c_.skip(depth);
            } else if (key == "shape") {
                once(seen_shape);
                const char s = c_.peek();
                if (s == 'n') {
                    c_.literal();
                } else if (s == '[') {
                    dims(depth + 1, d);
                } else if (s == '{') {
                    d.has_shape = true;  // an object without dims: a scalar
                    bool seen_dim = false;
                    object(c_, depth + 1, [&](std::string_view k2) {
                        if (k2 != "dim") {
                            c_.skip(depth + 1);
                            return;
                        }
                        once(seen_dim);
                        if (c_.peek() == 'n') c_.literal();
                        else dims(depth + 2, d);
                    });
                } else {
                    Cursor::give_up("a shape is neither an object nor an array");
                }
            } else if (key == "attr") {
                once(seen_attr);
                attrs(depth + 1, d.attrs_first, d.attrs_count);
            } else {
                c_.skip(depth);
            }
        });
        pools_.descs.push_back(d);
    }

    std::deque<std::string> arena_;
    Cursor c_;
    Sink& sink_;
    Pools pools_;
};

}  // namespace

Document read_graph(const char* data, std::size_t size, Sink& sink) {
    if (size >= 3 && std::memcmp(data, "\xEF\xBB\xBF", 3) == 0) {
        data += 3;
        size -= 3;
    }
    // bytes past ASCII are only valid inside strings, where Cursor::string checks them as UTF-8
    Walker w(data, data + size, sink);
    return w.run();
}

}  // namespace dumpcmp::graphjson
