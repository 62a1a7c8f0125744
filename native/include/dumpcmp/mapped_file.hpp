// A read-only view of a whole file (RAII). Dumps are many GB: a large file is never read into memory, it is mapped
// and the page cache does the work. A small one (at most kReadWholeBytes) is read into a buffer the object owns:
// for a few KB, mapping, faulting and unmapping cost the kernel three times what one read does
// (docs/performance.md#design-measurements), and a model of many small tensors opens tens of thousands.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <unistd.h>

struct stat;

namespace dumpcmp {

// A file descriptor closed when it goes out of scope (-1: none), for the readers that open a file by hand.
struct OwnedFd {
    int fd;
    explicit OwnedFd(int f) : fd(f) {}
    ~OwnedFd() {
        if (fd >= 0) ::close(fd);
    }
    OwnedFd(const OwnedFd&) = delete;
    OwnedFd& operator=(const OwnedFd&) = delete;
};

// Access hints: not MADV_SEQUENTIAL, which lets the kernel drop pages right behind a pass (the KLD metric and the
// detail writer read a tensor twice); instead each tensor's range is prefaulted (prefault below) before it is read.
class MappedFile {
public:
    // Throws DumpError naming the file when it cannot be opened or mapped (missing, a directory, no permission).
    // `expected`: the size the caller knows the file had (its header's file_size), kUnknownSize if none.
    // A small file is read without an fstat (issue #35: one system call less a file): up to `expected` + 1 bytes, or
    // kReadWholeBytes + 1 without it, and a read that ends short of that is the whole file; a read that fills it, an
    // empty one or an error asks fstat and goes on as before (is it a directory, a regular file, its size).
    static constexpr std::uint64_t kUnknownSize = ~std::uint64_t{0};
    explicit MappedFile(std::string path, std::uint64_t expected = kUnknownSize);
    // The same from a descriptor the caller opened (and still owns, and closes); `st` its fstat.
    MappedFile(std::string path, int fd, const struct stat& st);
    // The same from a descriptor the caller opened (and still owns, and closes), read first as above.
    MappedFile(std::string path, int fd, std::uint64_t expected);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const std::uint8_t* data() const noexcept { return data_; }
    std::size_t size() const noexcept { return size_; }
    const std::string& path() const noexcept { return path_; }
    // Whether the bytes were read into a buffer (a small file) rather than mapped.
    bool is_read() const noexcept { return owned_; }

    // Files up to this size are read whole, larger ones mapped (docs/performance.md#design-measurements). Only the
    // sources of the batches being compared and opened hold one (compare.py: 64 pairs of two sides, two batches at
    // once), so what they hold stays under 16 MiB at any model size.
    static constexpr std::size_t kReadWholeBytes = std::size_t{64} << 10;

private:
    void load(int fd, const struct stat& st);
    void load_read_first(int fd, std::uint64_t expected);

    std::string path_;
    const std::uint8_t* data_ = nullptr;
    std::size_t size_ = 0;
    bool owned_ = false;
};

using MappedFilePtr = std::shared_ptr<const MappedFile>;

// Fault in the pages of [p, p + n) of any mapping, one read per page, before a hot loop reads them (compare_many does
// it for a batch's large pairs on a thread of its own, ahead of the comparison): page faults inside the loop would
// stall it and, on older kernels, take the address-space lock that every thread's faults share. [p, p + n) must lie
// inside the mapping.
void prefault(const void* p, std::size_t n) noexcept;

}  // namespace dumpcmp
