// Error types of the core. Bindings translate them: DumpError -> dumpcmp.errors.DumpError (a ValueError),
// std::invalid_argument -> ValueError, std::out_of_range -> IndexError, std::runtime_error -> RuntimeError.
#pragma once
#include <stdexcept>
#include <string>

namespace dumpcmp {

// A file that cannot be used as what it claims to be: truncated, corrupt, inconsistent, unknown enum values.
// The message always names the file and what is wrong with it.
class DumpError : public std::runtime_error {
public:
    DumpError(const std::string& path, const std::string& what)
        : std::runtime_error(path.empty() ? what : path + ": " + what), path_(path) {}
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
};

}  // namespace dumpcmp
