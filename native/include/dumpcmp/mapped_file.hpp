// A read-only memory mapping of a whole file (RAII). Dumps are many GB: we never read tensor bytes into memory,
// we map them and let the page cache do the work.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace dumpcmp {

// Access hints: not MADV_SEQUENTIAL, which lets the kernel drop pages right behind a pass (the KLD metric and the
// detail writer read a tensor twice); instead each tensor's range is prefaulted (prefault below) before it is read.
class MappedFile {
public:
    // Throws DumpError naming the file when it cannot be opened or mapped (missing, a directory, no permission).
    explicit MappedFile(std::string path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const std::uint8_t* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
    const std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;
};

using MappedFilePtr = std::shared_ptr<const MappedFile>;

// Fault in the pages of [p, p + n) of any mapping, one read per page, before a hot loop reads them (compare_many does
// it for a batch's large pairs on a thread of its own, ahead of the comparison): page faults inside the loop would
// stall it and, on older kernels, take the address-space lock that every thread's faults share. [p, p + n) must lie
// inside the mapping.
void prefault(const void* p, std::size_t n) noexcept;

}  // namespace dumpcmp
