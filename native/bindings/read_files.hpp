// Many dump headers read in parallel (GIL released by the caller): _core.dump.read_headers and read_heads, and
// _core.scan.read_records (info's records written straight from the headers, issue #35).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "dumpcmp/dump.hpp"
#include "dumpcmp/parallel.hpp"

namespace dumpcmp::bindings {

// A `File` (DumpFile or DumpHead) made of each path into `files`, or its error text into `errors`.
template <class File>
void read_files(const std::vector<std::string>& paths, unsigned threads, std::vector<std::shared_ptr<File>>& files,
                std::vector<std::string>& errors) {
    files.assign(paths.size(), nullptr);
    errors.assign(paths.size(), std::string());
    // each folder opened once, each file looked up in it (not along its whole path again: issue #35); at most
    // kFolders held at once, the files of any further folder opened by their whole path: each folder held is an open
    // file, and a batch spread over thousands of folders made the dumps' own opens fail ("Too many open files")
    constexpr std::size_t kFolders = 64;
    std::vector<int> dirs(paths.size(), -1);
    std::vector<int> opened;
    std::string last;
    int last_fd = -1;
    bool have_last = false;
    for (std::size_t i = 0; i < paths.size(); ++i) {
        const std::size_t slash = paths[i].rfind('/');
        if (slash == std::string::npos || slash + 1 == paths[i].size()) continue;
        const std::string dir = paths[i].substr(0, slash == 0 ? 1 : slash);
        if (!have_last || dir != last) {
            have_last = true;
            last = dir;
            last_fd = opened.size() < kFolders ? ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
            if (last_fd >= 0) opened.push_back(last_fd);
        }
        dirs[i] = last_fd;
    }
    parallel_for(paths.size(), [&](std::size_t i) {
        try {
            const std::string& p = paths[i];
            files[i] = std::make_shared<File>(p, dirs[i] < 0 ? read_dump_header(p) : read_dump_header_at(
                                                  dirs[i], p.c_str() + p.rfind('/') + 1, p));
        } catch (const std::exception& e) {
            errors[i] = e.what();
        }
    }, threads);
    for (int fd : opened) ::close(fd);
}

}  // namespace dumpcmp::bindings
