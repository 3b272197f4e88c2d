// Builds a rules::Policy from the settings: reads the blocklist and allowlist files and reports
// every line it had to skip. Used at start-up, by `sandgate check`, and on reload.
//
// Policy files are read by resolved path: each path is resolved once with realpath(3) (after the
// default blocklist is created), and a file is then only read when the file opened really is at
// that path. A symlink planted later anywhere along the path (a folder re-pointed by a confined
// command, say) is never followed.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/settings/settings.hpp"
#include "rules/domain_set.hpp"
#include "rules/expected.hpp"
#include "rules/policy.hpp"

namespace sandgate::settings {

// What to do when the blocklist at the default path does not exist yet.
enum class MissingDefaultBlocklist {
  create,        // the daemon: write the bundled template there (and its folder), as goose did
  use_template,  // `sandgate check`: read the bundled template, write nothing
};

struct LoadedPolicy {
  std::shared_ptr<const rules::Policy> policy;
  std::vector<rules::LoadIssue> issues;  // lines skipped, with file and line
  std::vector<std::string> notes;        // things worth telling the operator (file created, ...)
  // The files the policy was read from, resolved (see resolve_path); the allowlist is empty when
  // there is none.
  std::string blocklist_path;
  std::string allowlist_path;
  std::string request_rules_path;  // empty: none
  std::string budgets_path;        // empty: none
};

// The request rules: the text of the file at `path` (none: both empty) with the inspection
// patterns of settings.inspect. Bad lines go to `issues`. Used at start-up and on reload.
std::shared_ptr<const rules::RequestRules> build_request_rules(
    const Settings& settings, std::string_view file_text, std::string_view path,
    std::vector<rules::LoadIssue>& issues);

// The allowlist: the bundled presets named (config/presets, embedded) and then the file's text,
// as one set whose rules say where each came from (`preset:dev:12 github.com:443,22`,
// `/home/me/allow.txt:3 internal.example`). `file_path` empty: no file. Bad lines go to
// `issues`. Used at start-up and by the reloader (which re-reads only the file). Thread-safe.
rules::DomainSet build_allowlist(const std::vector<std::string>& presets,
                                 std::string_view file_text, std::string_view file_path,
                                 std::vector<rules::LoadIssue>& issues);

// Fails (with a message naming the file and the system's reason) when a file that must exist
// cannot be read: an explicitly configured blocklist, or the allowlist.
Expected<LoadedPolicy, std::string> load_policy(const Settings& settings,
                                                MissingDefaultBlocklist missing);

// `path` with every symlink, `.` and `..` resolved (realpath(3)). A file that does not exist is
// resolved through its folder; a path whose folder does not exist either is returned as given.
std::string resolve_path(const std::string& path);

// `settings` with the blocklist, allowlist and config paths resolved by resolve_path().
Settings with_resolved_paths(Settings settings);

// Reads the regular file at exactly `path` (a resolved path): fails, naming the path and where
// it leads now, when the file opened is somewhere else because a component of the path became a
// symlink; fails without blocking on a FIFO or device. On systems that cannot tell which file a
// descriptor refers to, falls back to comparing resolve_path(path) before opening.
Expected<std::string, std::string> read_file_at(const std::string& path);

// An open descriptor on the regular file at exactly `path` (checked as read_file_at does), for
// readers that insist on a path: `descriptor_path()` names the same open file. Closes on
// destruction.
class PinnedFile {
 public:
  static Expected<std::unique_ptr<PinnedFile>, std::string> open(const std::string& path);
  ~PinnedFile();
  PinnedFile(const PinnedFile&) = delete;
  PinnedFile& operator=(const PinnedFile&) = delete;
  // A path that opens this very file (`/dev/fd/N`), or the original path where there is none.
  std::string descriptor_path() const;
  int descriptor() const { return fd_; }

 private:
  PinnedFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

// Whether a policy file says nothing at all: no byte but ASCII whitespace (after an optional
// UTF-8 byte-order mark). That is what a failed or half-done rewrite leaves; a list that is
// meant to be empty says so with a comment (the bundled template is one), which is not blank.
bool is_blank(std::string_view text);

}  // namespace sandgate::settings
