// Reading policy files from disk into an immutable rules::Policy.
#include "proxy/settings/policy_loader.hpp"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <system_error>

#include "config/embedded_defaults.hpp"

namespace sandgate::settings {
namespace {

namespace fs = std::filesystem;

// Writes `text` to `path` through a temporary file and a rename, so no reader ever sees a
// half-written file. Creates the folder if needed.
std::optional<std::string> write_file_atomically(const fs::path& path, std::string_view text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) {
    return "cannot create folder " + path.parent_path().string() + ": " + ec.message();
  }
  const fs::path temporary = path.string() + ".sandgate-new";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.close();
    if (!out) {
      return "cannot write " + temporary.string() + ": " + std::strerror(errno);
    }
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    fs::remove(temporary, ec);
    return "cannot rename into " + path.string() + ": " + ec.message();
  }
  return std::nullopt;
}

// The path the kernel says an open descriptor refers to, where it can tell.
std::optional<std::string> path_of_descriptor(int fd) {
#if defined(__linux__)
  char link[64];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  char buffer[PATH_MAX];
  const ssize_t n = ::readlink(link, buffer, sizeof buffer);
  if (n > 0 && static_cast<std::size_t>(n) < sizeof buffer) {
    return std::string(buffer, static_cast<std::size_t>(n));
  }
#elif defined(__APPLE__)
  char buffer[PATH_MAX];
  if (::fcntl(fd, F_GETPATH, buffer) == 0) {
    return std::string(buffer);
  }
#else
  (void)fd;
#endif
  return std::nullopt;
}

// Opens the regular file at exactly `path`, or says why not. The descriptor is checked after
// opening, so a symlink swapped in between a check and the open cannot slip through.
Expected<int, std::string> open_exactly(const std::string& path) {
  // O_NONBLOCK: a FIFO put where the file was must not hang the reader; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    return Unexpected{path + ": " + std::strerror(errno)};
  }
  auto fail = [fd](std::string message) -> Expected<int, std::string> {
    ::close(fd);
    return Unexpected{std::move(message)};
  };
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    return fail(path + ": " + std::strerror(errno));
  }
  if (S_ISDIR(info.st_mode)) {
    return fail(path + ": is a folder, not a file");
  }
  if (!S_ISREG(info.st_mode)) {
    return fail(path + ": is not a regular file");
  }
  // Where the file opened really is. Without the kernel's answer, resolve the path again (which
  // leaves a short race, on systems other than Linux and macOS only).
  auto actual = path_of_descriptor(fd);
  if (!actual) {
    actual = resolve_path(path);
  }
  if (*actual != path) {
    return fail(path + ": now leads to " + *actual +
                " (a folder on the way or the file itself was replaced by a symlink); policy "
                "files are resolved once at start-up and never read through a new symlink");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) {
    ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  }
  return fd;
}

}  // namespace

std::string resolve_path(const std::string& path) {
  if (path.empty() || path.find('\0') != std::string::npos) {
    return path;
  }
  char buffer[PATH_MAX];
  if (::realpath(path.c_str(), buffer) != nullptr) {
    return buffer;
  }
  // Not there (yet): resolve its folder, so a symlinked folder is still pinned.
  const fs::path given(path);
  const std::string folder = given.has_parent_path() ? given.parent_path().string() : ".";
  if (given.has_filename() && ::realpath(folder.c_str(), buffer) != nullptr) {
    return (fs::path(buffer) / given.filename()).string();
  }
  return path;
}

Settings with_resolved_paths(Settings settings) {
  for (std::string* path :
       {&settings.blocklist_path, &settings.allowlist_path, &settings.request_rules_path,
        &settings.budgets_path, &settings.config_path}) {
    if (!path->empty()) {
      *path = resolve_path(*path);
    }
  }
  return settings;
}

Expected<std::string, std::string> read_file_at(const std::string& path) {
  auto fd = open_exactly(path);
  if (!fd) {
    return Unexpected{fd.error()};
  }
  std::string text;
  char buffer[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(*fd, buffer, sizeof buffer);
    if (n > 0) {
      text.append(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      const int error = errno;
      ::close(*fd);
      return Unexpected{path + ": read failed: " + std::strerror(error)};
    }
    break;
  }
  ::close(*fd);
  return text;
}

Expected<std::unique_ptr<PinnedFile>, std::string> PinnedFile::open(const std::string& path) {
  auto fd = open_exactly(path);
  if (!fd) {
    return Unexpected{fd.error()};
  }
  return std::unique_ptr<PinnedFile>(new PinnedFile(*fd, path));
}

PinnedFile::~PinnedFile() { ::close(fd_); }

std::string PinnedFile::descriptor_path() const {
  // /dev/fd/N opens the same file on Linux (a link into /proc/self/fd) and on macOS.
  const std::string link = "/dev/fd/" + std::to_string(fd_);
  std::error_code ec;
  return fs::exists(link, ec) ? link : path_;
}

bool is_blank(std::string_view text) {
  constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
  if (text.starts_with(kByteOrderMark)) {
    text.remove_prefix(kByteOrderMark.size());
  }
  return text.find_first_not_of(" \t\r\n\v\f") == std::string_view::npos;
}

rules::DomainSet build_allowlist(const std::vector<std::string>& presets,
                                 std::string_view file_text, std::string_view file_path,
                                 std::vector<rules::LoadIssue>& issues) {
  rules::DomainSet::Builder builder;
  for (const std::string& name : presets) {
    // The names were checked when the setting was read; a name unknown here would be a
    // programming error, reported like a bad line rather than ignored.
    if (const auto preset = defaults::find_preset(name)) {
      builder.add_text(preset->text, defaults::preset_source(name), issues);
    } else {
      issues.push_back({defaults::preset_source(name), 0, name, "no such bundled preset"});
    }
  }
  if (!file_path.empty()) {
    builder.add_text(file_text, file_path, issues);
  }
  return std::move(builder).build();
}

std::shared_ptr<const rules::RequestRules> build_request_rules(
    const Settings& settings, std::string_view file_text, std::string_view path,
    std::vector<rules::LoadIssue>& issues) {
  // The hosts secrets are bound to are inspected too: the gate fills secrets in only on the
  // requests it sees.
  std::vector<std::string> inspected = settings.inspect;
  for (auto& host : secrets::bound_hosts(settings.secrets)) {
    if (std::find(inspected.begin(), inspected.end(), host) == inspected.end()) {
      inspected.push_back(std::move(host));
    }
  }
  return std::make_shared<const rules::RequestRules>(
      rules::RequestRules::parse(file_text, path, inspected, "inspect setting", issues));
}

Expected<LoadedPolicy, std::string> load_policy(const Settings& given,
                                                MissingDefaultBlocklist missing) {
  LoadedPolicy loaded;

  std::string blocklist_text;
  bool from_template = false;
  std::error_code ec;
  if (given.blocklist_is_default && !fs::exists(given.blocklist_path, ec)) {
    blocklist_text = std::string(defaults::blocklist_template());
    from_template = true;
    if (missing == MissingDefaultBlocklist::create) {
      if (auto error = write_file_atomically(given.blocklist_path, blocklist_text)) {
        return Unexpected{"blocklist: " + *error};
      }
      loaded.notes.push_back("created " + given.blocklist_path +
                             " from the bundled template (it blocks nothing yet)");
    } else {
      loaded.notes.push_back(given.blocklist_path +
                             " does not exist yet; using the bundled template (blocks nothing)");
    }
  }
  // Resolved once, now that the default blocklist exists: from here on only these files count.
  const Settings settings = with_resolved_paths(given);
  loaded.blocklist_path = settings.blocklist_path;
  loaded.allowlist_path = settings.allowlist_path;
  if (!from_template) {
    auto text = read_file_at(settings.blocklist_path);
    if (!text) {
      return Unexpected{"blocklist " + text.error() +
                        (settings.blocklist_is_default ? "" : " (set by blocklist setting)")};
    }
    blocklist_text = std::move(*text);
  }
  auto blocklist = rules::DomainSet::parse(blocklist_text, settings.blocklist_path, loaded.issues);

  std::optional<rules::DomainSet> allowlist;
  if (!settings.allowlist_path.empty()) {
    auto text = read_file_at(settings.allowlist_path);
    if (!text) {
      return Unexpected{"allowlist " + text.error()};
    }
    allowlist =
        build_allowlist(settings.allowlist_presets, *text, settings.allowlist_path, loaded.issues);
  } else if (!settings.allowlist_presets.empty()) {
    allowlist = build_allowlist(settings.allowlist_presets, {}, {}, loaded.issues);
  }

  auto requests = std::make_shared<const rules::RequestRules>();
  loaded.request_rules_path = settings.request_rules_path;
  if (!settings.request_rules_path.empty()) {
    auto text = read_file_at(settings.request_rules_path);
    if (!text) {
      return Unexpected{"request rules " + text.error()};
    }
    requests = build_request_rules(settings, *text, settings.request_rules_path, loaded.issues);
  } else if (!settings.inspect.empty() || !settings.secrets.empty()) {
    requests = build_request_rules(settings, {}, {}, loaded.issues);
  }

  std::shared_ptr<const rules::BudgetRules> budgets;
  loaded.budgets_path = settings.budgets_path;
  if (!settings.budgets_path.empty()) {
    auto text = read_file_at(settings.budgets_path);
    if (!text) {
      return Unexpected{"budgets " + text.error()};
    }
    budgets = std::make_shared<const rules::BudgetRules>(
        rules::BudgetRules::parse(*text, settings.budgets_path, loaded.issues));
  }

  loaded.policy = std::make_shared<const rules::Policy>(
      settings.policy, std::make_shared<const rules::DomainSet>(std::move(blocklist)),
      allowlist ? std::make_shared<const rules::DomainSet>(std::move(*allowlist)) : nullptr,
      std::move(requests), std::move(budgets));
  return loaded;
}

}  // namespace sandgate::settings
