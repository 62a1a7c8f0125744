// The file-name rules of the device dump and framework (ground-truth) schemes, the only place they live:
// naming.parse_name and the scan's folder listing both parse with them (issue #35: a scan of 10^6 files).
// tests/dumps/test_naming_main_rules.py holds them to what the Python rules they replaced gave.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dumpcmp {

enum class NameKind : std::uint8_t { other = 0, device = 1, framework = 2 };

// A parsed name: views into the name's bytes. `other` for a name of neither scheme. `fits` false when a number does
// not fit 64 bits: then the numbers are only in the digits (NameDigits).
struct ParsedDumpName {
    NameKind kind = NameKind::other;
    bool fits = true;
    std::string_view op_type;    // device only
    std::string_view op_name;
    std::uint64_t task_id = 0;   // device; output_index for framework
    std::uint64_t timestamp = 0;
    bool has_stream = false, has_dump_number = false, has_ffts = false;
    std::uint64_t stream_id = 0, dump_number = 0;
    std::string_view task_type;  // FFTS+ suffix
    std::uint64_t context_id = 0, thread_id = 0, device_id = 0;
    std::string_view extension;  // framework: pb, quant or npy
};

// The digits of a parsed name's numbers: device task_id, timestamp, stream_id, dump_number, context_id, thread_id,
// device_id; framework output_index, timestamp (empty where the name has none).
struct NameDigits {
    std::string_view v[7];
};

// The device rule ({op_type}.{op_name}.{numbers: 2-4}[.{task_type}.{ctx}.{thread}.{device}]: any bytes but '.' and
// '/' in the two names, ASCII digits in the numbers, [A-Za-z0-9_] in the task type) and the framework rule
// ({op_name}.{output_index}.{timestamp}.pb|quant|npy), on the bytes of a file name (no '/': its last part).
ParsedDumpName parse_dump_name(std::string_view name, NameDigits* digits = nullptr) noexcept;

// One folder's entries as DirEntry.is_dir()/is_file() (links followed) see them.
struct FolderItem {
    enum Type : std::uint8_t { file, dir, special, stat_error, unreadable } type;
    int error = 0;        // errno of stat_error
    std::string name;
    ParsedDumpName parsed;  // for a file: views into `name` (kept alive by the item)
};

// Lists `folder` (readdir order; `.dumpcmp-*.tmp` left out), each file's name parsed (a name with numbers past 64 bits
// taken for `other`: the Python side makes its entry); files of the two bulk schemes are checked readable (faccessat R_OK) and marked `unreadable` if not. 0, or the errno that stopped the listing.
// With `device_found` (a probe: does the folder hold a readable device dump?), the checks stop at the first readable
// device dump, whose index it is set to (else to -1, and every check is made as without it).
// Without `check_devices`, device dumps are not checked (the caller opens each: its open says "not readable").
int list_folder(const std::string& folder, std::vector<FolderItem>& items, long* device_found = nullptr,
                bool check_devices = true);

// DumpEntry.order over the device items `idx` (timestamp, task, FFTS+ context and thread or -1, file name bytes):
// sorted in place.
void sort_device_items(const std::vector<FolderItem>& items, std::vector<std::uint32_t>& idx);

}  // namespace dumpcmp
