// Ascend dump files: header (toolkit.dumpdata.DumpData protobuf) and tensor views into the mapped file.
//
// Reading never copies tensor bytes: a DumpHeader says where each tensor's raw bytes sit in the file, a DumpFile
// maps the file on first use and hands out pointers into the mapping.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "dumpcmp/mapped_file.hpp"

namespace dumpcmp {

enum class TensorKind : std::uint8_t { input, output, buffer, workspace };
const char* tensor_kind_name(TensorKind k) noexcept;

struct OriginalOp {
    std::string name;
    std::uint32_t output_index = 0;
    std::int32_t data_type = 0;
    std::int32_t format = 0;
};

struct TensorDesc {
    TensorKind kind = TensorKind::output;
    std::uint32_t index = 0;                // position among the tensors of its kind
    std::int32_t data_type = 0;             // OutputDataType value (validated: one of the spec's values)
    std::int32_t format = 2;                // OutputFormat value (validated); buffers and workspaces: ND
    std::vector<std::int64_t> shape;
    std::vector<std::int64_t> original_shape;
    bool has_original_shape = false;
    std::int32_t sub_format = 0;            // grouped FRACTAL_Z: the group count
    std::uint64_t address = 0;
    std::uint64_t offset = 0;               // the header's `offset` field (not where the bytes are in the file)
    std::uint64_t size = 0;                 // bytes of raw data
    std::uint64_t file_offset = 0;          // where the raw bytes start in the file
    // outputs only
    bool has_original_op = false;
    OriginalOp original_op;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> dim_range;
    // inputs only
    std::uint32_t arg_index = 0;
    std::uint32_t input_type = 0;
    // buffers: BufferType, workspaces: SpaceType
    std::int32_t sub_type = 0;

    std::uint64_t element_count() const noexcept;  // product of shape (1 for a scalar)
};

struct DumpHeader {
    std::string version;
    std::uint64_t dump_time = 0;
    std::string op_name;
    std::vector<std::pair<std::string, std::string>> attrs;
    std::string dfx_message;
    std::vector<TensorDesc> inputs, outputs, buffers, workspaces;
    bool legacy = false;            // the old format: one protobuf with the data inline
    std::uint64_t header_size = 0;  // N of the length prefix (legacy: the file size)
    std::uint64_t file_size = 0;

    const std::vector<TensorDesc>& tensors(TensorKind k) const noexcept;
    std::vector<TensorDesc>& tensors(TensorKind k) noexcept;
};

// Parse a dump held in memory (`bytes` is the whole file). Throws DumpError(path, ...) naming what is wrong.
DumpHeader parse_dump(const std::uint8_t* bytes, std::uint64_t size, const std::string& path);

// Read only the header of a dump file from disk (pread of the prefix and header; the legacy format is read whole).
// Cheap enough to index 100,000 files.
DumpHeader read_dump_header(const std::string& path);
// The same, the file opened as `name` in the folder `dir_fd` (one lookup, not the whole path's: 10^6 headers of a
// folder); `path` names it in errors and is what a format other than the current one is mapped by.
DumpHeader read_dump_header_at(int dir_fd, const char* name, const std::string& path);

// The bytes of a DumpData header message as the device's protobuf serializer writes them (fields in number order,
// proto3 defaults left out, packed dims). `data` fields stay empty, sizes and shapes come from the descs.
std::string serialize_header(const DumpHeader& header);

// Write a current-format dump: 8-byte length, header, raw bytes of inputs, outputs, buffers, workspaces.
// `data[k][i]` is the raw bytes of tensor i of kind k (its size must equal the desc's size). Writes to a temporary
// file beside `path` and renames it into place, so a failure never leaves a half-written dump.
struct RawSpan {
    const std::uint8_t* data;
    std::uint64_t size;
};
void write_dump(const std::string& path, const DumpHeader& header, const std::vector<RawSpan>& inputs,
                const std::vector<RawSpan>& outputs, const std::vector<RawSpan>& buffers,
                const std::vector<RawSpan>& workspaces);

// A dump file: its header, and its bytes mapped on request (many headers can be held without holding one mapping
// each; a process may map only ~65,000 files at once). The mapping lives as long as something that reads it (a
// TensorSource, an array, a caller's MappedFilePtr) holds it: the DumpFile itself only remembers it (weakly), so
// a run over 100,000 dumps holds as many mappings as its batch holds sources, never one per file.
class DumpFile {
public:
    explicit DumpFile(std::string path);                       // reads the header only
    DumpFile(std::string path, DumpHeader header) : path_(std::move(path)), header_(std::move(header)) {}

    const std::string& path() const noexcept { return path_; }
    const DumpHeader& header() const noexcept { return header_; }
    const TensorDesc& tensor(TensorKind kind, std::size_t index) const;  // std::out_of_range naming the file

    // The mapping: the one still held elsewhere, else a new one (thread-safe). Throws DumpError if the file changed
    // size since the header was read.
    MappedFilePtr mapping() const;
    // Pointer to the raw bytes of a tensor. Checks that its size matches its dtype and shape; throws DumpError
    // naming the file, the tensor and both numbers otherwise.
    const std::uint8_t* tensor_bytes(const TensorDesc& t, MappedFilePtr* keep_alive = nullptr) const;
    // The same check without touching the data: empty when fine, else the reason.
    std::string check_tensor(const TensorDesc& t) const;

private:
    std::string path_;
    DumpHeader header_;
    mutable std::mutex mutex_;
    mutable std::weak_ptr<const MappedFile> mapping_;
};

// Empty when a tensor's bytes fit its data type and shape, else why not (DumpFile::check_tensor).
std::string check_tensor_desc(const TensorDesc& t);

// A dump's header kept small (issue #35): every field of its inputs and outputs, in about half a DumpFile's memory
// (a run of 10^5 dumps holds one per dump until its pairs are compared); of the buffers and workspaces only their
// count. Its bytes are read as a DumpFile's are: mapped (or read, when
// small) on request, and an error naming the file when its size changed since the header was read.
class DumpHead {
public:
    DumpHead(std::string path, const DumpHeader& header);

    std::string path() const { return std::string(path_data(), path_size_); }
    std::uint64_t file_size() const noexcept { return file_size_; }
    std::uint64_t header_size() const noexcept { return header_size_; }
    bool legacy() const noexcept { return legacy_; }
    std::size_t count(TensorKind kind) const noexcept { return counts_[static_cast<int>(kind)]; }
    // An input or output as the header said it (std::out_of_range naming the file; std::invalid_argument for a
    // buffer or workspace, which are not kept).
    TensorDesc tensor(TensorKind kind, std::size_t index) const;

    MappedFilePtr mapping() const;  // as DumpFile::mapping
    const std::uint8_t* tensor_bytes(const TensorDesc& t, MappedFilePtr* keep_alive = nullptr) const;

private:
    struct Packed {
        std::uint64_t address, size, file_offset, offset;
        std::int32_t data_type, format, sub_format;
        std::uint32_t arg_index, input_type;
        std::uint32_t dims;  // where its shape, then its original shape, start among the dimensions
        std::uint8_t ndim, original_ndim;
        bool has_original_shape;
        bool extra;  // an original_op or a dim_range, in extras_
    };
    struct Extra {  // the rare fields, kept only for the tensors that have them
        std::uint32_t tensor;
        bool has_original_op;
        OriginalOp original_op;
        std::vector<std::pair<std::uint64_t, std::uint64_t>> dim_range;
    };
    const char* path_data() const noexcept;
    // One block, no vector, string or mutex of its own (mapping() takes one of a few shared ones): 10^5 are held.
    // The block: the inputs' then the outputs' Packed, their dimensions (4 bytes each when every one fits, else 8),
    // the path's bytes; each read and written by memcpy.
    std::unique_ptr<unsigned char[]> block_;
    std::uint64_t file_size_ = 0;
    std::uint64_t header_size_ = 0;
    std::uint32_t counts_[4] = {0, 0, 0, 0};
    std::uint32_t path_size_ = 0;
    std::uint32_t dims_ = 0;  // how many dimensions the block holds
    bool legacy_ = false;
    bool wide_dims_ = false;  // 8 bytes a dimension
    std::unique_ptr<std::vector<Extra>> extras_;
    mutable std::weak_ptr<const MappedFile> mapping_;
};

}  // namespace dumpcmp
