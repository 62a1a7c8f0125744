// The file-name rules of a dump folder's two bulk schemes, and one folder listed and sorted into columns
// (issue #35: a scan of 10^6 files). src/dumpcmp/dumps/naming.py keeps the reference rules (its regular
// expressions); tests/dumps/test_scan_native.py holds this parser equal to them on every name form and random names.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dumpcmp {

enum class NameKind : std::uint8_t { other = 0, device = 1, framework = 2 };

// A parsed name: views into the name's bytes. `other` for a name of neither scheme, or one whose numbers do not fit
// 64 bits (the Python rules, with Python's integers, handle those).
struct ParsedDumpName {
    NameKind kind = NameKind::other;
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

// naming.parse_name's device rule ({op_type}.{op_name}.{numbers: 2-4}[.{task_type}.{ctx}.{thread}.{device}]) and
// framework rule ({op_name}.{output_index}.{timestamp}.pb|quant|npy), on the bytes of a file name.
ParsedDumpName parse_dump_name(std::string_view name) noexcept;

// One folder's entries as DirEntry.is_dir()/is_file() (links followed) see them.
struct FolderItem {
    enum Type : std::uint8_t { file, dir, special, stat_error, unreadable } type;
    int error = 0;        // errno of stat_error
    std::string name;
    ParsedDumpName parsed;  // for a file: views into `name` (kept alive by the item)
};

// Lists `folder` (readdir order; `.dumpcmp-*.tmp` left out), each file's name parsed; files of the two bulk schemes
// are checked readable (faccessat R_OK) and marked `unreadable` if not. 0, or the errno that stopped the listing.
int list_folder(const std::string& folder, std::vector<FolderItem>& items);

// DumpEntry.order over the device items `idx` (timestamp, task, FFTS+ context and thread or -1, file name bytes):
// sorted in place.
void sort_device_items(const std::vector<FolderItem>& items, std::vector<std::uint32_t>& idx);

}  // namespace dumpcmp
