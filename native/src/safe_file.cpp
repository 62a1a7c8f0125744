#include "dumpcmp/safe_file.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdint>
#include <random>

namespace dumpcmp {

std::string random_token() {
    std::uint8_t bytes[16];
    std::size_t got = 0;
    while (got < sizeof bytes) {
        const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    if (got < sizeof bytes) {
        std::random_device rd;
        for (auto& b : bytes) b = static_cast<std::uint8_t>(rd());
    }
    static const char hex[] = "0123456789abcdef";
    std::string out;
    for (std::uint8_t b : bytes) {
        out += hex[b >> 4];
        out += hex[b & 15];
    }
    return out;
}

std::string temp_path_beside(const std::string& final_path, const std::string& tag) {
    const auto slash = final_path.rfind('/');
    const std::string folder =
        slash == std::string::npos ? std::string(".") : (slash == 0 ? std::string("/") : final_path.substr(0, slash));
    return folder + (folder == "/" ? "" : "/") + ".dumpcmp-core-" + std::to_string(::getpid()) + "-" +
           random_token() + (tag.empty() ? "" : "-" + tag) + ".tmp";
}

int create_exclusive(const std::string& path) noexcept {
    return ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
}

}  // namespace dumpcmp
