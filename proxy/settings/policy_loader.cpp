// Reading policy files from disk into an immutable rules::Policy.
#include "proxy/settings/policy_loader.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
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

}  // namespace

Expected<std::string, std::string> read_text_file(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    return Unexpected{path + ": is a folder, not a file"};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Unexpected{path + ": " + std::strerror(errno)};
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return Unexpected{path + ": read failed: " + std::strerror(errno)};
  }
  return text.str();
}

Expected<LoadedPolicy, std::string> load_policy(const Settings& settings,
                                                MissingDefaultBlocklist missing) {
  LoadedPolicy loaded;

  std::string blocklist_text;
  std::error_code ec;
  if (settings.blocklist_is_default && !fs::exists(settings.blocklist_path, ec)) {
    blocklist_text = std::string(defaults::blocklist_template());
    if (missing == MissingDefaultBlocklist::create) {
      if (auto error = write_file_atomically(settings.blocklist_path, blocklist_text)) {
        return Unexpected{"blocklist: " + *error};
      }
      loaded.notes.push_back("created " + settings.blocklist_path +
                             " from the bundled template (it blocks nothing yet)");
    } else {
      loaded.notes.push_back(settings.blocklist_path +
                             " does not exist yet; using the bundled template (blocks nothing)");
    }
  } else {
    auto text = read_text_file(settings.blocklist_path);
    if (!text) {
      return Unexpected{"blocklist " + text.error() +
                        (settings.blocklist_is_default ? "" : " (set by blocklist setting)")};
    }
    blocklist_text = std::move(*text);
  }
  auto blocklist = rules::DomainSet::parse(blocklist_text, settings.blocklist_path, loaded.issues);

  std::optional<rules::DomainSet> allowlist;
  if (!settings.allowlist_path.empty()) {
    auto text = read_text_file(settings.allowlist_path);
    if (!text) {
      return Unexpected{"allowlist " + text.error()};
    }
    allowlist = rules::DomainSet::parse(*text, settings.allowlist_path, loaded.issues);
  }

  loaded.policy = std::make_shared<const rules::Policy>(settings.policy, std::move(blocklist),
                                                        std::move(allowlist));
  return loaded;
}

}  // namespace sandgate::settings
