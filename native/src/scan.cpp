// See dumpcmp/scan.hpp.
#include "dumpcmp/scan.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <tuple>

namespace dumpcmp {

namespace {

// digits, and whether the value fits 64 bits
bool number(std::string_view s, std::uint64_t& value, bool& fits) noexcept {
    if (s.empty()) return false;
    std::uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return false;
        if (fits && (__builtin_mul_overflow(v, std::uint64_t{10}, &v) ||
                     __builtin_add_overflow(v, static_cast<std::uint64_t>(c - '0'), &v)))
            fits = false;
    }
    value = v;
    return true;
}

bool word(std::string_view s) noexcept {  // [A-Za-z0-9_]+
    if (s.empty()) return false;
    for (char c : s)
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
    return true;
}

bool part(std::string_view s) noexcept {  // [^./]+ (the split already took the dots)
    return !s.empty() && s.find('/') == std::string_view::npos;
}

}  // namespace

ParsedDumpName parse_dump_name(std::string_view name, NameDigits* digits) noexcept {
    ParsedDumpName p;
    std::string_view f[11];
    std::size_t n = 0, start = 0;
    for (;;) {
        const std::size_t dot = name.find('.', start);
        if (n == 11) return p;  // more fields than either scheme has
        f[n++] = name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
        if (dot == std::string_view::npos) break;
        start = dot + 1;
    }
    bool fits = true;
    const char last = name.empty() ? '\0' : name.back();
    if (last >= '0' && last <= '9' && n >= 4 && part(f[0]) && part(f[1])) {
        const std::size_t k = n - 2;  // fields after the op name
        std::size_t base = 0;
        if (k >= 2 && k <= 4) {
            base = k;
        } else if (k >= 6 && k <= 8 && word(f[n - 4])) {
            base = k - 4;
        }
        if (base != 0) {
            std::uint64_t v[4];
            bool ok = true;
            for (std::size_t i = 0; i < base && ok; ++i) ok = number(f[2 + i], v[i], fits);
            std::uint64_t tail[3] = {0, 0, 0};
            if (ok && base != k)
                for (std::size_t i = 0; i < 3 && ok; ++i) ok = number(f[n - 3 + i], tail[i], fits);
            if (ok) {
                p.kind = NameKind::device;
                p.fits = fits;
                p.op_type = f[0];
                p.op_name = f[1];
                p.timestamp = v[base - 1];
                std::string_view* d = digits != nullptr ? digits->v : nullptr;
                if (d != nullptr) d[1] = f[2 + base - 1];
                if (base == 4) {
                    p.has_dump_number = p.has_stream = true;
                    p.dump_number = v[0], p.task_id = v[1], p.stream_id = v[2];
                    if (d != nullptr) d[3] = f[2], d[0] = f[3], d[2] = f[4];
                } else if (base == 3) {
                    p.has_stream = true;
                    p.task_id = v[0], p.stream_id = v[1];
                    if (d != nullptr) d[0] = f[2], d[2] = f[3];
                } else {
                    p.task_id = v[0];
                    if (d != nullptr) d[0] = f[2];
                }
                if (base != k) {
                    p.has_ffts = true;
                    p.task_type = f[n - 4];
                    p.context_id = tail[0], p.thread_id = tail[1], p.device_id = tail[2];
                    if (d != nullptr) d[4] = f[n - 3], d[5] = f[n - 2], d[6] = f[n - 1];
                }
            }
        }
        return p;  // ends in a digit: never a framework name
    }
    if (n == 4 && part(f[0]) && (f[3] == "npy" || f[3] == "pb" || f[3] == "quant") &&
        number(f[1], p.task_id, fits) && number(f[2], p.timestamp, fits)) {
        p.kind = NameKind::framework;
        p.fits = fits;
        p.op_name = f[0];
        p.extension = f[3];
        if (digits != nullptr) digits->v[0] = f[1], digits->v[1] = f[2];
    }
    return p;
}

int list_folder(const std::string& folder, std::vector<FolderItem>& items, long* device_found, bool check_devices) {
    if (device_found != nullptr) *device_found = -1;
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return errno;
    DIR* dir = ::fdopendir(fd);
    if (dir == nullptr) {
        const int e = errno;
        ::close(fd);
        return e;
    }
    for (;;) {
        errno = 0;
        const dirent* d = ::readdir(dir);
        if (d == nullptr) {
            const int e = errno;
            if (e != 0) {
                ::closedir(dir);
                items.clear();
                return e;
            }
            break;
        }
        const std::string_view name(d->d_name);
        if (name == "." || name == "..") continue;
        if (name.size() >= 13 && name.substr(0, 9) == ".dumpcmp-" && name.substr(name.size() - 4) == ".tmp") continue;
        FolderItem item{FolderItem::special, 0, std::string(name), {}};
        unsigned char type = d->d_type;
        if (type == DT_LNK || type == DT_UNKNOWN) {
            struct stat st;
            if (::fstatat(fd, d->d_name, &st, 0) != 0) {
                // DirEntry.is_dir() and is_file() take a missing target for "no"; other errors are raised
                if (errno != ENOENT) item.type = FolderItem::stat_error, item.error = errno;
                type = DT_UNKNOWN;
            } else {
                type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
            }
        }
        if (type == DT_DIR) {
            item.type = FolderItem::dir;
        } else if (type == DT_REG) {
            item.type = FolderItem::file;
        }
        items.push_back(std::move(item));
    }
    for (FolderItem& item : items) {
        if (item.type != FolderItem::file) continue;
        item.parsed = parse_dump_name(item.name);
        if (!item.parsed.fits) item.parsed.kind = NameKind::other;
    }
    if (device_found != nullptr) {  // a probe: the first readable device dump answers it, no other file is asked
        for (std::size_t i = 0; i < items.size(); ++i) {
            FolderItem& item = items[i];
            if (item.type != FolderItem::file || item.parsed.kind != NameKind::device) continue;
            if (::faccessat(fd, item.name.c_str(), R_OK, AT_EACCESS) == 0) {
                *device_found = static_cast<long>(i);
                ::closedir(dir);
                return 0;
            }
        }
    }
    for (FolderItem& item : items) {
        if (item.type != FolderItem::file) continue;
        // AT_EACCESS: readable by the effective ids, which open() uses (not the real ones: a setuid tool, a process
        // that gave root up with seteuid)
        if (item.parsed.kind == NameKind::other || (item.parsed.kind == NameKind::device && !check_devices)) continue;
        if (::faccessat(fd, item.name.c_str(), R_OK, AT_EACCESS) != 0)
            item.type = FolderItem::unreadable;
    }
    ::closedir(dir);
    return 0;
}

void sort_device_items(const std::vector<FolderItem>& items, std::vector<std::uint32_t>& idx) {
    auto key = [&](std::uint32_t i) {
        const ParsedDumpName& p = items[i].parsed;
        // -1 for no FFTS+ suffix sorts before any context or thread
        return std::make_tuple(p.timestamp, p.task_id, p.has_ffts, p.context_id, p.has_ffts, p.thread_id);
    };
    std::sort(idx.begin(), idx.end(), [&](std::uint32_t a, std::uint32_t b) {
        const auto ka = key(a), kb = key(b);
        if (ka != kb) return ka < kb;
        return std::string_view(items[a].name) < std::string_view(items[b].name);
    });
}

}  // namespace dumpcmp
