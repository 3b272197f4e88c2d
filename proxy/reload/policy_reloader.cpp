// Live policy reload. See policy_reloader.hpp.
#include "proxy/reload/policy_reloader.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "proxy/settings/policy_loader.hpp"

namespace sandgate::reload {
namespace {

using clock = std::chrono::steady_clock;

// Quiet time after the last event before reading: an editor's save is several events.
constexpr auto kQuiet = std::chrono::milliseconds(100);
// A file that suddenly reads as empty is often mid-rewrite (truncate, then write): look again
// after this long before believing it.
constexpr auto kEmptyRecheck = std::chrono::milliseconds(250);

const char* name_of(int which) { return which == 0 ? "blocklist" : "allowlist"; }

}  // namespace

PolicyReloader::PolicyReloader(settings::Settings settings, settings::Sources sources,
                               log::DecisionLog& log,
                               std::shared_ptr<const rules::Policy> initial, Publish publish)
    : settings_(std::move(settings)),
      sources_(std::move(sources)),
      log_(log),
      publish_(std::move(publish)),
      current_(std::move(initial)) {
  // What the initial policy was built from, so an unchanged file is not rebuilt.
  if (auto text = settings::read_text_file(settings_.blocklist_path)) {
    last_text_[0] = std::move(*text);
  }
  if (!settings_.allowlist_path.empty()) {
    if (auto text = settings::read_text_file(settings_.allowlist_path)) {
      last_text_[1] = std::move(*text);
    }
  }
  std::vector<std::string> paths = {settings_.blocklist_path};
  if (!settings_.allowlist_path.empty()) {
    paths.push_back(settings_.allowlist_path);
  }
  if (!settings_.config_path.empty()) {
    paths.push_back(settings_.config_path);
  }
  watcher_ = std::make_unique<watch::FileWatcher>(std::move(paths));
}

PolicyReloader::~PolicyReloader() {
  stopping_ = true;
  watcher_->wake();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void PolicyReloader::start() { thread_ = std::thread([this] { run(); }); }

void PolicyReloader::reload_all() {
  reload_all_requested_ = true;
  watcher_->wake();
}

std::shared_ptr<const rules::Policy> PolicyReloader::current() const {
  std::lock_guard lock(mutex_);
  return current_;
}

std::uint64_t PolicyReloader::generation() const { return generation_.load(); }

void PolicyReloader::run() {
  while (!stopping_) {
    auto changed = watcher_->wait_for_change(kQuiet);
    if (stopping_) {
      return;
    }
    const bool everything = reload_all_requested_.exchange(false);
    if (!changed.empty() || everything) {
      reload(changed, everything);
    }
  }
}

std::shared_ptr<const rules::DomainSet> PolicyReloader::load_list(Which which,
                                                                 const std::string& path) {
  const int index = which == Which::blocklist ? 0 : 1;
  const auto started = clock::now();
  auto text = settings::read_text_file(path);
  if (!text) {
    // Deleted (perhaps mid-save) or unreadable: never fall back to an empty list.
    ++counts_[index].failed;
    if (!missing_reported_[index]) {
      log_.note("warning", std::string(name_of(index)) + " " + text.error() +
                               "; keeping the last good rules until it is back");
      missing_reported_[index] = true;
    }
    return nullptr;
  }
  missing_reported_[index] = false;
  if (text->empty() && !last_text_[index].empty()) {
    std::this_thread::sleep_for(kEmptyRecheck);
    auto again = settings::read_text_file(path);
    if (!again || !again->empty()) {
      return again ? load_list(which, path) : nullptr;
    }
  }
  if (*text == last_text_[index]) {
    return nullptr;  // touched, but the same rules
  }
  if (text->find('\0') != std::string::npos) {
    ++counts_[index].failed;
    log_.note("error", path + ": holds NUL bytes (not a text file); keeping the last good rules");
    return nullptr;
  }
  std::vector<rules::LoadIssue> issues;
  auto set = std::make_shared<const rules::DomainSet>(rules::DomainSet::parse(*text, path, issues));
  for (const auto& issue : issues) {
    log_.note("warning", issue.source + ":" + std::to_string(issue.line) + ": skipped '" +
                             issue.text + "': " + issue.message);
  }
  if (set->size() == 0 && !issues.empty()) {
    // Nothing usable at all: more likely a broken file than an intended empty list.
    ++counts_[index].failed;
    log_.note("error", path + ": no usable entry (" + std::to_string(issues.size()) +
                           " rejected lines); keeping the last good rules");
    return nullptr;
  }
  last_text_[index] = std::move(*text);
  ++counts_[index].ok;
  const auto millis =
      std::chrono::duration<double, std::milli>(clock::now() - started).count();
  char took[32];
  std::snprintf(took, sizeof took, "%.1f", millis);
  log_.note("info", "reloaded " + path + ": " + std::to_string(set->size()) + " entries, " +
                        std::to_string(issues.size()) + " rejected lines, " + took + " ms");
  return set;
}

// Re-reads the settings (flags and variables still win over the file). Only the policy options
// change at run time; paths and daemon settings need a restart, which is said.
bool PolicyReloader::reload_config() {
  auto fresh = settings::load(sources_);
  if (!fresh) {
    log_.note("error", "config reload failed, keeping the previous settings: " + fresh.error());
    ++counts_[2].failed;
    return false;
  }
  if (fresh->blocklist_path != settings_.blocklist_path ||
      fresh->allowlist_path != settings_.allowlist_path || fresh->listen != settings_.listen) {
    log_.note("warning",
              "config: a changed blocklist, allowlist or listen setting takes effect at restart");
  }
  settings_.policy = fresh->policy;
  ++counts_[2].ok;
  log_.note("info", "reloaded " + settings_.config_path + ": policy settings updated");
  return true;
}

void PolicyReloader::reload(const std::vector<std::string>& changed, bool everything) {
  auto touched = [&](const std::string& path) {
    return everything || std::find(changed.begin(), changed.end(), path) != changed.end();
  };
  auto base = current();
  std::shared_ptr<const rules::DomainSet> blocklist = base->shared_blocklist();
  std::shared_ptr<const rules::DomainSet> allowlist = base->shared_allowlist();
  bool any = false;

  if (!settings_.config_path.empty() && touched(settings_.config_path)) {
    any |= reload_config();
  }
  if (touched(settings_.blocklist_path)) {
    if (everything) {
      last_text_[0].clear();  // SIGHUP rebuilds even an unchanged file
    }
    if (auto fresh = load_list(Which::blocklist, settings_.blocklist_path)) {
      blocklist = std::move(fresh);
      any = true;
    }
  }
  if (!settings_.allowlist_path.empty() && touched(settings_.allowlist_path)) {
    if (everything) {
      last_text_[1].clear();
    }
    if (auto fresh = load_list(Which::allowlist, settings_.allowlist_path)) {
      allowlist = std::move(fresh);
      any = true;
    }
  }
  if (!any) {
    return;
  }
  auto policy = std::make_shared<const rules::Policy>(settings_.policy, blocklist, allowlist);
  {
    std::lock_guard lock(mutex_);
    current_ = policy;
  }
  publish_(std::move(policy));
  ++generation_;
}

}  // namespace sandgate::reload
