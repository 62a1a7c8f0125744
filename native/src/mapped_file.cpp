#include "dumpcmp/mapped_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpcmp/errors.hpp"

namespace dumpcmp {

MappedFile::MappedFile(std::string path, std::uint64_t expected) : path_(std::move(path)) {
    // O_NONBLOCK: a FIFO or a terminal put in a file's place neither holds the open nor the first read (the fstat
    // after says what it is); no effect on a regular file
    OwnedFd f{::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
    if (f.fd < 0) throw DumpError(path_, std::string("cannot open: ") + std::strerror(errno));
    load_read_first(f.fd, expected);
}

MappedFile::MappedFile(std::string path, int fd, const struct stat& st) : path_(std::move(path)) { load(fd, st); }

MappedFile::MappedFile(std::string path, int fd, std::uint64_t expected) : path_(std::move(path)) {
    load_read_first(fd, expected);
}

void MappedFile::load_read_first(int fd, std::uint64_t expected) {
    if (expected == 0 || (expected != kUnknownSize && expected > kReadWholeBytes)) expected = kUnknownSize;
    const std::size_t cap = static_cast<std::size_t>(expected == kUnknownSize ? kReadWholeBytes : expected) + 1;
    // With `expected`, the buffer the bytes are kept in; without, the thread's scratch buffer, the bytes copied
    // into one of their size after (not a 64 KiB allocation cut down: the heap would keep the pieces)
    static thread_local std::unique_ptr<std::uint8_t[]> scratch;
    std::uint8_t* buffer;
    if (expected != kUnknownSize) {
        buffer = static_cast<std::uint8_t*>(std::malloc(cap));
        if (buffer == nullptr) throw std::bad_alloc();
    } else {
        if (!scratch) scratch.reset(new std::uint8_t[kReadWholeBytes + 1]);
        buffer = scratch.get();
    }
    // One read: on a regular file it ends short only at the end of the file. With `expected`, a read short of it
    // (a partial read, a file that shrank) is followed by more until the end or `expected` bytes.
    std::size_t done = 0;
    bool failed = false;
    for (;;) {
        const ssize_t got = ::pread(fd, buffer + done, cap - done, static_cast<off_t>(done));
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            failed = true;  // a directory (EISDIR), a terminal (EAGAIN), an I/O error: the fstat path says which
            break;
        }
        done += static_cast<std::size_t>(got);
        if (got == 0 || expected == kUnknownSize || done >= expected) break;
    }
    if (!failed && done > 0 && done < cap) {  // the end of the file reached short of the buffer: its size
        if (expected == kUnknownSize) {
            auto* kept = static_cast<std::uint8_t*>(std::malloc(done));
            if (kept == nullptr) throw std::bad_alloc();
            std::memcpy(kept, buffer, done);
            buffer = kept;
        }
        data_ = buffer;
        size_ = done;
        owned_ = true;
        return;
    }
    if (expected != kUnknownSize) std::free(buffer);
    struct stat st {};
    if (::fstat(fd, &st) != 0) throw DumpError(path_, std::string("cannot stat: ") + std::strerror(errno));
    load(fd, st);
}

void MappedFile::load(int fd, const struct stat& st) {
    if (S_ISDIR(st.st_mode)) throw DumpError(path_, "is a directory, not a file");
    if (!S_ISREG(st.st_mode)) throw DumpError(path_, "is not a regular file");
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size == 0) return;  // an empty view is legal here; readers decide whether empty is an error
    if (size <= kReadWholeBytes) {
        auto* buffer = static_cast<std::uint8_t*>(std::malloc(size));
        if (buffer == nullptr) throw std::bad_alloc();
        std::size_t done = 0;
        while (done < size) {  // a file that shrank since its fstat: the bytes it still has (size() says how many)
            const ssize_t got = ::pread(fd, buffer + done, size - done, static_cast<off_t>(done));
            if (got < 0 && errno == EINTR) continue;
            if (got < 0) {
                const int e = errno;
                std::free(buffer);
                throw DumpError(path_, std::string("cannot read: ") + std::strerror(e));
            }
            if (got == 0) break;
            done += static_cast<std::size_t>(got);
        }
        data_ = buffer;
        size_ = done;
        owned_ = true;
        return;
    }
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) throw DumpError(path_, std::string("cannot map: ") + std::strerror(errno));
    data_ = static_cast<const std::uint8_t*>(p);
    size_ = size;
}

MappedFile::~MappedFile() {
    if (data_ == nullptr) return;
    if (owned_) std::free(const_cast<std::uint8_t*>(data_));
    else ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

void prefault(const void* p, std::size_t n) noexcept {
    if (p == nullptr || n == 0) return;
    // One read per 64 KiB. A page fault maps its page and the neighbours already in the page cache within the
    // aligned 64 KiB around it (fault-around, the kernel's default fault_around_bytes since Linux 3.15), so one read
    // per window maps the window: less CPU time than MADV_POPULATE_READ, which walks the page tables once more for
    // every page, and pages are mapped on kernels without MADV_POPULATE_READ (before 5.14) too. A read per page takes
    // the same faults and more time, as each read waits for its line from memory
    // (docs/performance.md#design-measurements). A page left unmapped (a kernel with less fault-around, a page
    // not cached) is faulted in by the comparison's own read, as without this.
    constexpr std::size_t kWindow = std::size_t{1} << 16;
    const volatile std::uint8_t* b = static_cast<const std::uint8_t*>(p);  // volatile: every read happens
    for (std::size_t at = 0; at < n; at += kWindow) static_cast<void>(b[at]);
    static_cast<void>(b[n - 1]);
}

}  // namespace dumpcmp
