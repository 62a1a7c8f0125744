// Temporary files the core writes before renaming them into place: created exclusively (O_EXCL | O_NOFOLLOW, so a
// symlink planted under the name is never followed and an existing file never truncated) under names nobody can
// guess ahead (128 random bits), recognisable as dumpcmp's: ".dumpcmp-core-{pid}-{random}{-tag}.tmp".
// The Python layer goes further (src/dumpcmp/_io.py): it hands the core paths inside a private folder of its own.
#pragma once
#include <string>

namespace dumpcmp {

std::string random_token();  // 32 hex digits from getrandom (std::random_device if that fails)
// A temporary name in the folder of `final_path` (not derived from its name: that may already be 255 bytes).
std::string temp_path_beside(const std::string& final_path, const std::string& tag = "");
// open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666): the fd, or -1 with errno set.
int create_exclusive(const std::string& path) noexcept;

}  // namespace dumpcmp
