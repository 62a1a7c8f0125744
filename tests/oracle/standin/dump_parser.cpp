// A stand-in for CANN's libascend_dump_parser.so, for the oracle harness only (never part of dumpcmp).
//
// The current msaccucmp (msprobe 8ff00da3, dump_parse/big_dump_data.py) loads that library through ctypes and calls
//     int ParseDumpProtoToJson(const char *file_bytes, size_t size, const char *json_path)
// with a whole dump file (8-byte little-endian header length, the DumpData protobuf header, then the raw tensors);
// 0 means the header was written to json_path as a JSON object whose keys are DumpData's field names
// (dump_parse/proto_dump_data.py reads it): version, dump_time, op_name, input/output/buffer/space lists and attr
// [{name, value}], a tensor with data_type and format as their enum numbers, shape and original_shape as {"dim": [..]},
// size (the byte count the reader then takes from the file after the header), sub_format, address, offset,
// original_op and dim_range. No "data": the reader reads the bytes itself. Fields the reader does not know
// (our writer's arg_index, input_type, ...) are left out; malformed input returns -1 and writes nothing.
//
// Built by tests/oracle/regenerate.py: c++ -std=c++17 -O2 -shared -fPIC dump_parser.cpp -o libascend_dump_parser.so

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Reader {
    const unsigned char *p;
    const unsigned char *end;
    bool ok = true;

    bool more() const { return ok && p < end; }

    uint64_t varint() {
        uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (p >= end) { ok = false; return 0; }
            unsigned char b = *p++;
            v |= static_cast<uint64_t>(b & 0x7f) << shift;
            if (!(b & 0x80)) return v;
        }
        ok = false;
        return 0;
    }

    Reader sub() {  // a length-delimited field's bytes
        uint64_t n = varint();
        if (!ok || n > static_cast<uint64_t>(end - p)) { ok = false; return Reader{p, p}; }
        Reader r{p, p + n};
        p += n;
        return r;
    }

    void skip(unsigned wire) {
        switch (wire) {
            case 0: varint(); break;
            case 1: if (end - p < 8) ok = false; else p += 8; break;
            case 2: sub(); break;
            case 5: if (end - p < 4) ok = false; else p += 4; break;
            default: ok = false;
        }
    }
};

std::string quoted(const unsigned char *s, size_t n) {
    std::string out = "\"";
    for (size_t i = 0; i < n; ++i) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') { out += '\\'; out += static_cast<char>(c); }
        else if (c < 0x20) { char buf[8]; std::snprintf(buf, sizeof buf, "\\u%04x", c); out += buf; }
        else out += static_cast<char>(c);
    }
    return out + "\"";
}

std::string text(Reader r) { return quoted(r.p, static_cast<size_t>(r.end - r.p)); }

// Shape {repeated uint64 dim = 1}, packed or not.
std::string shape(Reader r, bool &ok) {
    std::string dims;
    while (r.more()) {
        uint64_t key = r.varint();
        if ((key >> 3) == 1 && (key & 7) == 2) {
            Reader packed = r.sub();
            while (packed.more()) dims += (dims.empty() ? "" : ",") + std::to_string(packed.varint());
            ok = ok && packed.ok;
        } else if ((key >> 3) == 1 && (key & 7) == 0) {
            dims += (dims.empty() ? "" : ",") + std::to_string(r.varint());
        } else {
            r.skip(key & 7);
        }
    }
    ok = ok && r.ok;
    return "{\"dim\":[" + dims + "]}";
}

struct Field {
    std::string name;
    std::string value;
};

std::string object(const std::vector<Field> &fields) {
    std::string out = "{";
    for (size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + quoted(
        reinterpret_cast<const unsigned char *>(fields[i].name.data()), fields[i].name.size()) + ":" + fields[i].value;
    return out + "}";
}

void set(std::vector<Field> &fields, const std::string &name, const std::string &value) {
    for (auto &f : fields) if (f.name == name) { f.value = value; return; }
    fields.push_back({name, value});
}

// OriginalOp {string name = 1; uint32 output_index = 2; data_type = 3; format = 4}
std::string original_op(Reader r, bool &ok) {
    std::vector<Field> f{{"name", "\"\""}, {"output_index", "0"}, {"data_type", "0"}, {"format", "0"}};
    while (r.more()) {
        uint64_t key = r.varint();
        unsigned n = static_cast<unsigned>(key >> 3), wire = key & 7;
        if (n == 1 && wire == 2) set(f, "name", text(r.sub()));
        else if (n >= 2 && n <= 4 && wire == 0) set(f, f[n - 1].name, std::to_string(r.varint()));
        else r.skip(wire);
    }
    ok = ok && r.ok;
    return object(f);
}

// DimRange {uint64 dim_start = 1; uint64 dim_end = 2}
std::string dim_range(Reader r, bool &ok) {
    uint64_t v[2] = {0, 0};
    while (r.more()) {
        uint64_t key = r.varint();
        unsigned n = static_cast<unsigned>(key >> 3);
        if ((n == 1 || n == 2) && (key & 7) == 0) v[n - 1] = r.varint();
        else r.skip(key & 7);
    }
    ok = ok && r.ok;
    return "{\"dim_start\":" + std::to_string(v[0]) + ",\"dim_end\":" + std::to_string(v[1]) + "}";
}

// OpOutput (output = true) and OpInput: the same fields under other numbers.
std::string tensor(Reader r, bool output, bool &ok) {
    std::vector<Field> f{{"data_type", "0"}, {"format", "0"}, {"shape", "{\"dim\":[]}"}, {"size", "0"},
                         {"original_shape", "{\"dim\":[]}"}, {"sub_format", "0"}, {"address", "0"}, {"offset", "0"}};
    if (output) f.push_back({"original_op", "{\"name\":\"\",\"output_index\":0,\"data_type\":0,\"format\":0}"});
    std::string ranges;
    while (r.more()) {
        uint64_t key = r.varint();
        unsigned n = static_cast<unsigned>(key >> 3), wire = key & 7;
        // OpOutput: 1 data_type, 2 format, 3 shape, 4 original_op, 5 data, 6 size, 7 original_shape, 8 sub_format,
        // 9 address, 10 dim_range, 11 offset; OpInput: 1, 2, 3, 4 data, 5 size, 6 original_shape, 7 sub_format,
        // 8 address, 9 offset
        const char *name = nullptr;
        if (n == 1) name = "data_type";
        else if (n == 2) name = "format";
        else if (n == 3) name = "shape";
        else if (output) {
            const char *names[] = {"original_op", "data", "size", "original_shape", "sub_format", "address",
                                   "dim_range", "offset"};
            if (n <= 11) name = names[n - 4];
        } else {
            const char *names[] = {"data", "size", "original_shape", "sub_format", "address", "offset"};
            if (n <= 9) name = names[n - 4];
        }
        std::string which = name ? name : "";
        if ((which == "shape" || which == "original_shape") && wire == 2) set(f, which, shape(r.sub(), ok));
        else if (which == "original_op" && wire == 2) set(f, which, original_op(r.sub(), ok));
        else if (which == "dim_range" && wire == 2) ranges += (ranges.empty() ? "" : ",") + dim_range(r.sub(), ok);
        else if (which == "sub_format" && wire == 0) set(f, which, std::to_string(static_cast<int32_t>(r.varint())));
        else if (!which.empty() && which != "data" && wire == 0) set(f, which, std::to_string(r.varint()));
        else r.skip(wire);
    }
    if (output) f.push_back({"dim_range", "[" + ranges + "]"});
    ok = ok && r.ok;
    return object(f);
}

// OpBuffer {buffer_type = 1; data = 2; size = 3} and Workspace {type = 1; data = 2; size = 3}
std::string blob(Reader r, const char *type_name, bool &ok) {
    uint64_t type = 0, size = 0;
    while (r.more()) {
        uint64_t key = r.varint();
        unsigned n = static_cast<unsigned>(key >> 3);
        if (n == 1 && (key & 7) == 0) type = r.varint();
        else if (n == 3 && (key & 7) == 0) size = r.varint();
        else r.skip(key & 7);
    }
    ok = ok && r.ok;
    return std::string("{\"") + type_name + "\":" + std::to_string(type) + ",\"size\":" + std::to_string(size) + "}";
}

// OpAttr {string name = 1; string value = 2}
std::string attr(Reader r, bool &ok) {
    std::string name = "\"\"", value = "\"\"";
    while (r.more()) {
        uint64_t key = r.varint();
        unsigned n = static_cast<unsigned>(key >> 3);
        if (n == 1 && (key & 7) == 2) name = text(r.sub());
        else if (n == 2 && (key & 7) == 2) value = text(r.sub());
        else r.skip(key & 7);
    }
    ok = ok && r.ok;
    return "{\"name\":" + name + ",\"value\":" + value + "}";
}

// DumpData {version = 1; dump_time = 2; output = 3; input = 4; buffer = 5; op_name = 6; attr = 7; space = 8}
bool to_json(Reader r, std::string &out) {
    bool ok = true;
    std::string version = "\"\"", op_name = "\"\"", dump_time = "0";
    std::vector<std::string> lists[5];  // output, input, buffer, attr, space
    while (r.more()) {
        uint64_t key = r.varint();
        unsigned n = static_cast<unsigned>(key >> 3), wire = key & 7;
        if (n == 1 && wire == 2) version = text(r.sub());
        else if (n == 2 && wire == 0) dump_time = std::to_string(r.varint());
        else if (n == 3 && wire == 2) lists[0].push_back(tensor(r.sub(), true, ok));
        else if (n == 4 && wire == 2) lists[1].push_back(tensor(r.sub(), false, ok));
        else if (n == 5 && wire == 2) lists[2].push_back(blob(r.sub(), "buffer_type", ok));
        else if (n == 6 && wire == 2) op_name = text(r.sub());
        else if (n == 7 && wire == 2) lists[3].push_back(attr(r.sub(), ok));
        else if (n == 8 && wire == 2) lists[4].push_back(blob(r.sub(), "type", ok));
        else r.skip(wire);
    }
    if (!ok || !r.ok) return false;
    const char *names[] = {"output", "input", "buffer", "attr", "space"};
    out = "{\"version\":" + version + ",\"dump_time\":" + dump_time + ",\"op_name\":" + op_name;
    for (int i = 0; i < 5; ++i) {
        out += std::string(",\"") + names[i] + "\":[";
        for (size_t k = 0; k < lists[i].size(); ++k) out += (k ? "," : "") + lists[i][k];
        out += "]";
    }
    out += "}\n";
    return true;
}

}  // namespace

extern "C" int ParseDumpProtoToJson(const char *data, size_t size, const char *json_path) {
    if (data == nullptr || json_path == nullptr || size < 8) return -1;
    uint64_t header = 0;
    for (int i = 7; i >= 0; --i) header = (header << 8) | static_cast<unsigned char>(data[i]);
    if (header > size - 8) return -1;
    const unsigned char *begin = reinterpret_cast<const unsigned char *>(data) + 8;
    std::string json;
    if (!to_json(Reader{begin, begin + header}, json)) return -1;
    std::FILE *f = std::fopen(json_path, "wb");
    if (f == nullptr) return -1;
    bool written = std::fwrite(json.data(), 1, json.size(), f) == json.size();
    return (std::fclose(f) == 0 && written) ? 0 : -1;
}
