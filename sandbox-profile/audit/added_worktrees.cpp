// Worktrees added outside during the run. See added_worktrees.hpp.
#include "sandbox-profile/audit/added_worktrees.hpp"

#include <algorithm>
#include <string_view>

#include "sandbox-profile/audit/no_follow.hpp"
#include "sandbox-profile/plan/protected_paths.hpp"

namespace sandgate::sandbox {
namespace {

constexpr std::size_t kLineLimit = 4096;

// The first line of a small file, without its newline; "" if there is none.
std::string first_line(const std::string& path) {
  std::string text = read_no_follow(path, kLineLimit);
  if (text.size() > kLineLimit || text == "?") {
    return {};
  }
  text = text.substr(0, text.find('\n'));
  return text;
}

// No ".", "..", or empty component: is_within() compares spellings.
bool normal(std::string_view path) {
  return path.find("/./") == std::string_view::npos &&
         path.find("/../") == std::string_view::npos && path.find("//") == std::string_view::npos &&
         !path.ends_with("/.") && !path.ends_with("/..");
}

bool added_outside(const std::string& entry, const std::vector<std::string>& writable) {
  if (first_line(entry + "/commondir") != "../..") {
    return false;
  }
  const std::string gitfile = first_line(entry + "/gitdir");
  if (gitfile.empty() || gitfile.front() != '/' || !normal(gitfile) ||
      std::any_of(writable.begin(), writable.end(),
                  [&gitfile](const std::string& folder) { return is_within(gitfile, folder); })) {
    return false;
  }
  return first_line(gitfile) == "gitdir: " + entry;
}

}  // namespace

std::set<std::string> worktrees_added_outside(const std::set<std::string>& new_entries,
                                              const std::vector<std::string>& writable) {
  std::set<std::string> out;
  for (const auto& entry : new_entries) {
    if (added_outside(entry, writable)) {
      out.insert(entry);
    }
  }
  return out;
}

}  // namespace sandgate::sandbox
