// File access for the post-run audit, which runs outside the confinement with the user's rights
// over folders the command could write: every path is taken one component at a time and no
// symbolic link is ever followed, at the end or on the way (a `.git` the command replaced with a
// link to ~/.ssh must not lead the audit to rename or write ~/.ssh/config). Paths are absolute
// and resolved (run's working folder, git folders and --allow-write folders are resolved before
// the command starts), so a link met on the way is one the command planted: the call fails.
//
// openat2(RESOLVE_NO_SYMLINKS) where the kernel has it (5.6+), else a walk from "/" with
// O_NOFOLLOW at each step. Linux only; thread-safe.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <optional>
#include <string>

#include "sandbox-profile/process/unique_fd.hpp"

namespace sandgate::sandbox {

// Opens `path` with `flags` (O_NOFOLLOW and O_CLOEXEC added), never through a link; `mode` for
// O_CREAT. Invalid (errno set: ELOOP for a link) on failure.
UniqueFd open_no_follow(const std::string& path, int flags, mode_t mode = 0);

// open_no_follow() as it is on kernels without openat2: a walk from "/", O_NOFOLLOW at each
// step. Exposed so that it is tested where openat2 exists.
UniqueFd open_no_follow_walking(const std::string& path, int flags, mode_t mode = 0);

// The entry itself, not what a link at `path` points to; nothing if missing or unreachable.
std::optional<struct stat> stat_no_follow(const std::string& path);

// The target of the link at `path`; nothing if it is not a link.
std::optional<std::string> link_target(const std::string& path);

// The first `limit` bytes of the regular file at `path` (one byte more says "longer"), never
// waiting on a FIFO; "?" when it is not a regular file or cannot be read.
std::string read_no_follow(const std::string& path, std::size_t limit);

// Renames `from` to `to` (both in one folder, reached without links). 0 or -1 (errno set).
int rename_no_follow(const std::string& from, const std::string& to);

// Creates `path` (it must not exist) with `content`. False (errno set) on failure.
bool create_no_follow(const std::string& path, const std::string& content);

}  // namespace sandgate::sandbox
