// Builds a rules::Policy from the settings: reads the blocklist and allowlist files and reports
// every line it had to skip. Used at start-up, by `sandgate check`, and on reload.
#pragma once

#include <memory>
#include <string>
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
};

// Fails (with a message naming the file and the system's reason) when a file that must exist
// cannot be read: an explicitly configured blocklist, or the allowlist.
Expected<LoadedPolicy, std::string> load_policy(const Settings& settings,
                                                MissingDefaultBlocklist missing);

// Reads a whole file. The error names the path and the reason.
Expected<std::string, std::string> read_text_file(const std::string& path);

}  // namespace sandgate::settings
