// Writing a person's `always` or `never` answer into a list file (the allowlist or the
// blocklist), so that the live reload makes it a rule like any other.
//
// The write is atomic: the file's text as it is now, the new entry appended under a comment
// that says when, by whom and how, written to a temporary file in the same folder (with the
// file's mode), flushed to disk, then renamed over the file, and the folder flushed. A reader
// (the reloader, an editor) sees the old file or the new one, never half of one; what was in the
// file is kept byte for byte. A symbolic link is followed: the file it names is replaced, and
// the link stays (a list kept in a dotfiles repository stays there). The new file keeps the old
// one's owner and group as well as its mode; when they cannot be kept (a gate that is not root
// writing another user's file), nothing is written and the error says so. Appends within one
// process are serialised, so two answers at once cannot lose one another's entry.
//
// Blocking file I/O: call it from an answering front end's thread, never from a worker.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::ask {

// The line an answer adds: `host` or `host:port` (IPv6 in brackets).
std::string list_entry(std::string_view host, std::uint16_t port);

// Appends "# added DATE by WHO" (`who` says who and how: "alice via sandgate decide (...)") and
// `entry` to the file at `path` (the
// resolved file the reloader watches). Returns the error sentence (naming the file), or
// nothing once the new file is in place. Files larger than 64 MiB are refused.
std::optional<std::string> append_entry(const std::string& path, std::string_view entry,
                                        std::string_view who);

}  // namespace sandgate::ask
