// A read-only memory mapping of a whole file (RAII). Dumps are many GB: we never read tensor bytes into memory,
// we map them and let the page cache do the work.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace dumpcmp {

// Access hints: not MADV_SEQUENTIAL, which lets the kernel drop pages right behind a pass (the KLD metric and the
// detail writer read a tensor twice); instead each tensor's range is prefaulted in one call before it is read.
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

// Fault in the pages of [p, p + n) of any mapping in one call (MADV_POPULATE_READ where the kernel has it), instead of
// one page fault per 4 KiB inside the hot loop: faults take the address-space lock and do not scale across threads.
// A hint only: failures are ignored.
void prefault(const void* p, std::size_t n) noexcept;

}  // namespace dumpcmp
