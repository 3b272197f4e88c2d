// What git's configuration points at. See git_config_targets.hpp.
#include "sandbox-profile/plan/git_config_targets.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "rules/ascii.hpp"

namespace sandgate::sandbox {
namespace {

namespace fs = std::filesystem;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// A value from `at` to the end of its line (or of its continued lines), as git reads it.
std::string read_value(std::string_view text, std::size_t& at) {
  std::string value;
  std::size_t kept = 0;  // length of the value without trailing unquoted blanks
  bool quoted = false;
  while (at < text.size() && is_space(text[at])) {
    ++at;
  }
  for (; at < text.size(); ++at) {
    const char c = text[at];
    if (c == '\n' && !quoted) {
      break;
    }
    if (!quoted && (c == '#' || c == ';')) {
      while (at < text.size() && text[at] != '\n') {
        ++at;
      }
      break;
    }
    if (c == '"') {
      quoted = !quoted;
      kept = value.size();
      continue;
    }
    if (c == '\\' && at + 1 < text.size()) {
      const char next = text[++at];
      if (next == '\n') {
        continue;  // a continued line
      }
      value += next == 'n' ? '\n' : next == 't' ? '\t' : next == 'b' ? '\b' : next;
      kept = value.size();
      continue;
    }
    value += c;
    if (quoted || !is_space(c)) {
      kept = value.size();
    }
  }
  value.resize(kept);
  return value;
}

std::string home_expanded(const std::string& path, const std::string& home) {
  if (home.empty()) {
    return path;
  }
  if (path == "~") {
    return home;
  }
  return path.starts_with("~/") ? home + path.substr(1) : path;
}

std::string absolute_from(const std::string& path, const std::string& base) {
  if (path.empty()) {
    return {};
  }
  const fs::path given(path);
  return (given.is_absolute() ? given : fs::path(base) / given).lexically_normal().string();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Adds `file`'s targets, and those of the files it includes, to `out`.
void collect(const std::string& file, const std::string& worktree_top, const std::string& home,
             int depth, GitConfigTargets& out) {
  if (depth > 10 || file.empty()) {
    return;
  }
  const std::string text = read_text(file);
  for (const auto& value : git_config_values(text, "core", "hookspath")) {
    const std::string base =
        worktree_top.empty() ? fs::path(file).parent_path().string() : worktree_top;
    const std::string folder = absolute_from(home_expanded(value, home), base);
    if (!folder.empty() && std::find(out.hook_folders.begin(), out.hook_folders.end(), folder) ==
                               out.hook_folders.end()) {
      out.hook_folders.push_back(folder);
    }
  }
  for (const char* section : {"include", "includeif"}) {
    for (const auto& value : git_config_values(text, section, "path")) {
      const std::string included =
          absolute_from(home_expanded(value, home), fs::path(file).parent_path().string());
      if (included.empty() || std::find(out.included_files.begin(), out.included_files.end(),
                                        included) != out.included_files.end()) {
        continue;
      }
      out.included_files.push_back(included);
      collect(included, worktree_top, home, depth + 1, out);
    }
  }
}

}  // namespace

std::vector<std::string> git_config_values(std::string_view text, std::string_view section,
                                           std::string_view key) {
  const std::string wanted_section = rules::ascii_lower(section);
  const std::string wanted_key = rules::ascii_lower(key);
  std::vector<std::string> out;
  std::string current;  // the section's name, lower case, without its subsection
  std::size_t at = 0;
  while (at < text.size()) {
    while (at < text.size() && (is_space(text[at]) || text[at] == '\n')) {
      ++at;
    }
    if (at >= text.size()) {
      break;
    }
    const char c = text[at];
    if (c == '#' || c == ';') {
      while (at < text.size() && text[at] != '\n') {
        ++at;
      }
      continue;
    }
    if (c == '[') {
      std::size_t end = at + 1;
      bool quoted = false;
      while (end < text.size() && text[end] != '\n' && (quoted || text[end] != ']')) {
        if (text[end] == '\\' && quoted && end + 1 < text.size()) {
          ++end;
        } else if (text[end] == '"') {
          quoted = !quoted;
        }
        ++end;
      }
      std::string header(text.substr(at + 1, end - at - 1));
      const auto name_end = header.find_first_of(" \t\".");
      current = rules::ascii_lower(header.substr(0, name_end));
      at = end < text.size() && text[end] == ']' ? end + 1 : end;
      continue;  // a key may follow on the same line
    }
    std::size_t end = at;
    while (end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[end])) != 0 || text[end] == '-')) {
      ++end;
    }
    const std::string name = rules::ascii_lower(text.substr(at, end - at));
    at = end;
    while (at < text.size() && is_space(text[at])) {
      ++at;
    }
    std::string value = "true";
    if (at < text.size() && text[at] == '=') {
      ++at;
      value = read_value(text, at);
    } else if (name.empty()) {
      while (at < text.size() && text[at] != '\n') {  // not git's: skip the line
        ++at;
      }
      continue;
    }
    if (current == wanted_section && name == wanted_key) {
      out.push_back(std::move(value));
    }
  }
  return out;
}

GitConfigTargets git_config_targets(const std::vector<std::string>& git_dirs,
                                    const std::string& worktree_top, const std::string& home) {
  GitConfigTargets out;
  std::vector<std::string> files;
  if (!home.empty()) {
    files.push_back(home + "/.gitconfig");
    files.push_back(home + "/.config/git/config");
  }
  for (const auto& dir : git_dirs) {
    files.push_back(dir + "/config");
    files.push_back(dir + "/config.worktree");
  }
  for (const auto& file : files) {
    collect(file, worktree_top, home, 0, out);
  }
  return out;
}

}  // namespace sandgate::sandbox
