// Live policy reload. See policy_reloader.hpp.
#include "proxy/reload/policy_reloader.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "proxy/settings/policy_loader.hpp"

namespace sandgate::reload {
namespace {

using clock = std::chrono::steady_clock;
using settings::Settings;

// Quiet time after the last event before reading: an editor's save is several events.
constexpr auto kQuiet = std::chrono::milliseconds(100);

// One row per setting: its key, whether the reloader applies it live, and whether two loads
// agree on it. Only the policy options apply live (they go into the next Policy); the rest are
// read once by the server, the resolver, the log or the LaunchDarkly client at start-up.
struct SettingRow {
  std::string_view key;
  bool live;
  bool (*same)(const Settings&, const Settings&);
};

#define SANDGATE_SAME(expression) [](const Settings& a, const Settings& b) { return expression; }
const std::vector<SettingRow>& setting_rows() {
  static const std::vector<SettingRow> rows = {
      {"blocklist", false, SANDGATE_SAME(a.blocklist_path == b.blocklist_path)},
      {"allowlist", false, SANDGATE_SAME(a.allowlist_path == b.allowlist_path)},
      {"block_loopback", true, SANDGATE_SAME(a.policy.block_loopback == b.policy.block_loopback)},
      {"allow_ip", true, SANDGATE_SAME(a.policy.allow_ip == b.policy.allow_ip)},
      {"allow_ssh", true, SANDGATE_SAME(a.policy.allow_ssh == b.policy.allow_ssh)},
      {"ssh_all_hosts", true, SANDGATE_SAME(a.policy.ssh_all_hosts == b.policy.ssh_all_hosts)},
      {"git_hosts", true, SANDGATE_SAME(a.policy.git_hosts == b.policy.git_hosts)},
      {"ssh_ports", true, SANDGATE_SAME(a.policy.ssh_ports == b.policy.ssh_ports)},
      {"allowed_ports", true, SANDGATE_SAME(a.policy.allowed_ports == b.policy.allowed_ports)},
      {"block_private", true, SANDGATE_SAME(a.policy.block_private == b.policy.block_private)},
      {"allow_metadata", true, SANDGATE_SAME(a.policy.allow_metadata == b.policy.allow_metadata)},
      {"sni_check", false, SANDGATE_SAME(a.sni_check == b.sni_check)},
      {"tls_ports", false, SANDGATE_SAME(a.tls_ports == b.tls_ports)},
      {"revoke_on_reload", false, SANDGATE_SAME(a.revoke_on_reload == b.revoke_on_reload)},
      {"launchdarkly_client_id", false,
       SANDGATE_SAME(a.launchdarkly_client_id == b.launchdarkly_client_id)},
      {"ld_failover", false,
       SANDGATE_SAME(a.ld_failover == b.ld_failover && a.ld_failover_given == b.ld_failover_given)},
      {"ld_mode", false, SANDGATE_SAME(a.ld_mode == b.ld_mode)},
      {"ld_flag", false, SANDGATE_SAME(a.ld_flag == b.ld_flag)},
      {"ld_cache_ttl", false, SANDGATE_SAME(a.ld_cache_ttl == b.ld_cache_ttl)},
      {"ld_cache_size", false, SANDGATE_SAME(a.ld_cache_size == b.ld_cache_size)},
      {"ld_timeout", false, SANDGATE_SAME(a.ld_timeout == b.ld_timeout)},
      {"ld_context_key", false, SANDGATE_SAME(a.ld_context_key == b.ld_context_key)},
      {"ld_base_uri", false, SANDGATE_SAME(a.ld_base_uri.text() == b.ld_base_uri.text())},
      {"ld_stream_uri", false, SANDGATE_SAME(a.ld_stream_uri.text() == b.ld_stream_uri.text())},
      {"protect_files", false, SANDGATE_SAME(a.sandbox.protect_files == b.sandbox.protect_files)},
      {"block_raw_sockets", false, SANDGATE_SAME(a.sandbox.block_raw_sockets == b.sandbox.block_raw_sockets)},
      {"block_tunneling", false, SANDGATE_SAME(a.sandbox.block_tunneling == b.sandbox.block_tunneling)},
      {"listen", false, SANDGATE_SAME(a.listen == b.listen)},
      {"allow_remote_clients", false,
       SANDGATE_SAME(a.allow_remote_clients == b.allow_remote_clients)},
      {"port_file", false, SANDGATE_SAME(a.port_file == b.port_file)},
      {"token", false, SANDGATE_SAME(a.token == b.token)},
      {"token_file", false, SANDGATE_SAME(a.token_file == b.token_file)},
      {"threads", false, SANDGATE_SAME(a.threads == b.threads)},
      {"drain_seconds", false, SANDGATE_SAME(a.drain == b.drain)},
      {"dns_servers", false, SANDGATE_SAME(a.dns_servers == b.dns_servers)},
      {"dns_timeout", false, SANDGATE_SAME(a.dns_timeout == b.dns_timeout)},
      {"head_timeout", false, SANDGATE_SAME(a.head_timeout == b.head_timeout)},
      {"connect_timeout", false, SANDGATE_SAME(a.connect_timeout == b.connect_timeout)},
      {"idle_timeout", false, SANDGATE_SAME(a.idle_timeout == b.idle_timeout)},
      {"max_connections", false, SANDGATE_SAME(a.max_connections == b.max_connections)},
      {"log_format", false, SANDGATE_SAME(a.log_format == b.log_format)},
      {"log_level", false, SANDGATE_SAME(a.log_level == b.log_level)},
      {"admin", false, SANDGATE_SAME(a.admin == b.admin)},
      {"log_file", false, SANDGATE_SAME(a.log_file == b.log_file)},
  };
  return rows;
}
#undef SANDGATE_SAME

// `key (--flag / VARIABLE)`, the names a person can look up in --help and the README.
std::string setting_name(std::string_view key) {
  for (const auto& info : settings::all_settings()) {
    if (info.key == key) {
      return std::string(key) + " (" + std::string(info.flag) + " / " + std::string(info.env) + ")";
    }
  }
  return std::string(key);
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : ", ") + item;
  }
  return out;
}

// Replaces every `from` in `text` by `to` (error messages that name a descriptor path).
std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  if (from.empty() || from == to) {
    return text;
  }
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string blank_description(const std::string& text) {
  return text.empty() ? "0 bytes" : "only whitespace";
}

}  // namespace

SettingsChange compare_settings(const Settings& before, const Settings& after) {
  SettingsChange change;
  for (const auto& row : setting_rows()) {
    if (!row.same(before, after)) {
      (row.live ? change.applied : change.need_restart).push_back(setting_name(row.key));
    }
  }
  return change;
}

std::vector<ComparedSetting> compared_settings() {
  std::vector<ComparedSetting> out;
  for (const auto& row : setting_rows()) {
    out.push_back({row.key, row.live});
  }
  return out;
}

PolicyReloader::PolicyReloader(settings::Settings settings, settings::Sources sources,
                               log::DecisionLog& log, std::shared_ptr<const rules::Policy> initial,
                               Publish publish)
    : settings_(std::move(settings)),
      started_(settings_),
      sources_(std::move(sources)),
      log_(log),
      publish_(std::move(publish)),
      current_(std::move(initial)) {
  // Resolve once: from here on only these files are watched and read.
  const Settings resolved = settings::with_resolved_paths(settings_);
  lists_[0] = {"blocklist", settings_.blocklist_path, resolved.blocklist_path, {}, {}, {}};
  lists_[1] = {"allowlist", settings_.allowlist_path, resolved.allowlist_path, {}, {}, {}};
  config_ = {"config", settings_.config_path, resolved.config_path, {}, {}, {}};
  std::vector<std::string> paths;
  for (File* file : {&lists_[0], &lists_[1], &config_}) {
    if (file->path.empty()) {
      continue;
    }
    file->given_leads = file->path;
    paths.push_back(file->path);
    if (file->given != file->path) {
      log_.note("info", file->kind + " " + file->path + " (resolved from " + file->given + ")");
      paths.push_back(file->given);  // watched only to warn when it is re-pointed
    }
  }
  if (!config_.path.empty()) {
    // Flags win over the variable, so this makes every re-read use the resolved file.
    sources_.flags.insert_or_assign("--config", config_.path);
    // What the sources say now is what is in force (`run` clears the token it was given, say,
    // so the settings passed in are not the baseline for "changed").
    if (auto now = settings::load(sources_)) {
      started_ = std::move(*now);
    }
  }

  // What the initial policy was built from, so an unchanged file is not rebuilt. A blank file at
  // start-up has no last good rules to keep: the empty list is in force, and that is said.
  for (int index = 0; index < 2; ++index) {
    File& file = lists_[index];
    if (file.path.empty()) {
      continue;
    }
    auto text = settings::read_file_at(file.path);
    if (!text) {
      continue;
    }
    if (settings::is_blank(*text)) {
      file.held = "blank";
      log_.note("warning",
                file.kind + " " + file.path + " is empty (" + blank_description(*text) +
                    "): starting with an empty " + file.kind +
                    (index == 0 ? " (it blocks nothing)"
                                : " (allowlist mode with no entry denies every destination)") +
                    "; a list meant to be empty should say so with a comment");
    }
    file.last_text = std::move(*text);
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

void PolicyReloader::start() {
  thread_ = std::thread([this] { run(); });
}

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

void PolicyReloader::hold(File& file, const std::string& reason, std::string_view level,
                          const std::string& message) {
  if (file.held != reason) {
    log_.note(level, message);
    file.held = reason;
  }
}

void PolicyReloader::release(File& file) {
  if (!file.held.empty()) {
    file.held.clear();
  }
}

void PolicyReloader::check_given(File& file) {
  const std::string leads = settings::resolve_path(file.given);
  if (leads == file.given_leads) {
    return;
  }
  file.given_leads = leads;
  if (leads == file.path) {
    log_.note("info", file.kind + " " + file.given + " leads to " + file.path + " again");
    return;
  }
  log_.note("warning", file.kind + " " + file.given + " now leads to " + leads +
                           "; the gate keeps reading " + file.path +
                           " (resolved at start-up): restart it to follow the new location");
}

std::shared_ptr<const rules::DomainSet> PolicyReloader::load_list(int index,
                                                                  std::size_t entries_in_force) {
  File& file = lists_[index];
  const std::string& path = file.path;
  const std::string keeping =
      "keeping the last good rules (" + std::to_string(entries_in_force) + " entries)";
  const auto started = clock::now();
  auto text = settings::read_file_at(path);
  if (!text) {
    // Deleted (perhaps mid-save), unreadable, or now behind a symlink: never fall back to an
    // empty list.
    ++counts_[index].failed;
    hold(file, "unreadable: " + text.error(), "warning",
         file.kind + " " + text.error() + "; " + keeping + " until it is back");
    return nullptr;
  }
  if (settings::is_blank(*text)) {
    // A truncated file (a failed or slow rewrite) is no decision to drop every rule, nor, for
    // the allowlist, to deny everything. Writing any line (a comment will do) ends it.
    ++counts_[index].failed;
    hold(file, "blank", "warning",
         file.kind + " " + path + " is empty (" + blank_description(*text) + "); " + keeping +
             ": an empty file is taken for a failed or unfinished write (to empty the list on "
             "purpose, leave a comment in it)");
    return nullptr;
  }
  if (*text == file.last_text) {
    if (!file.held.empty()) {
      log_.note("info", path + " is back, with the rules in force");
    }
    release(file);
    return nullptr;  // touched, but the same rules
  }
  if (text->find('\0') != std::string::npos) {
    ++counts_[index].failed;
    hold(file, "not text", "error", path + ": holds NUL bytes (not a text file); " + keeping);
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
                           " rejected lines); " + keeping);
    file.held = "nothing usable";
    return nullptr;
  }
  release(file);
  file.last_text = std::move(*text);
  ++counts_[index].ok;
  const auto millis = std::chrono::duration<double, std::milli>(clock::now() - started).count();
  char took[32];
  std::snprintf(took, sizeof took, "%.1f", millis);
  log_.note("info", "reloaded " + path + ": " + std::to_string(set->size()) + " entries, " +
                        std::to_string(issues.size()) + " rejected lines, " + took + " ms");
  return set;
}

// Re-reads the settings (flags and variables still win over the file), from the resolved config
// file only. The policy options apply; every other changed setting is named as not applied.
bool PolicyReloader::reload_config() {
  const std::string& path = config_.path;
  auto pinned = settings::PinnedFile::open(path);
  if (!pinned) {
    ++counts_[2].failed;
    hold(config_, "unreadable: " + pinned.error(), "warning",
         "config " + pinned.error() + "; keeping the previous settings until it is back");
    return false;
  }
  // Blank: as for the lists, a truncated file is no decision to reset every setting it held.
  std::string head(4096, '\0');
  const ssize_t n = ::pread((*pinned)->descriptor(), head.data(), head.size(), 0);
  head.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  if (n >= 0 && static_cast<std::size_t>(n) < 4096 && settings::is_blank(head)) {
    ++counts_[2].failed;
    hold(config_, "blank", "warning",
         "config " + path + " is empty (" + blank_description(head) +
             "); keeping the previous settings: an empty file is taken for a failed or unfinished "
             "write (to use only the defaults on purpose, leave a comment in it)");
    return false;
  }
  // Read through the open descriptor, so the file checked is the file parsed.
  settings::Sources sources = sources_;
  const std::string through = (*pinned)->descriptor_path();
  sources.flags.insert_or_assign("--config", through);
  auto fresh = settings::load(sources);
  if (!fresh) {
    ++counts_[2].failed;
    log_.note("error", "config reload failed, keeping the previous settings: " +
                           replace_all(fresh.error(), through, path));
    config_.held = "invalid";
    return false;
  }
  release(config_);
  ++counts_[2].ok;
  fresh->config_path = path;
  const auto applied = compare_settings(settings_, *fresh).applied;
  const auto not_applied = compare_settings(started_, *fresh).need_restart;
  settings_.policy = fresh->policy;
  std::string line = "reloaded " + path + ": ";
  line += applied.empty() ? "no policy setting changed" : "applied " + join(applied);
  if (!not_applied.empty()) {
    line += "; not applied, in force only after a restart: " + join(not_applied);
  }
  log_.note(not_applied.empty() ? "info" : "warning", line);
  return !applied.empty();
}

void PolicyReloader::reload(const std::vector<std::string>& changed, bool everything) {
  auto touched = [&](const std::string& path) {
    return everything || std::find(changed.begin(), changed.end(), path) != changed.end();
  };
  auto base = current();
  std::shared_ptr<const rules::DomainSet> blocklist = base->shared_blocklist();
  std::shared_ptr<const rules::DomainSet> allowlist = base->shared_allowlist();
  bool any = false;

  for (File* file : {&lists_[0], &lists_[1], &config_}) {
    if (!file->path.empty() && file->given != file->path && touched(file->given)) {
      check_given(*file);
    }
  }
  if (!config_.path.empty() && touched(config_.path)) {
    any |= reload_config();
  }
  if (touched(lists_[0].path)) {
    if (everything) {
      lists_[0].last_text.clear();  // SIGHUP rebuilds even an unchanged file
    }
    if (auto fresh = load_list(0, blocklist->size())) {
      blocklist = std::move(fresh);
      any = true;
    }
  }
  if (!lists_[1].path.empty() && touched(lists_[1].path)) {
    if (everything) {
      lists_[1].last_text.clear();
    }
    if (auto fresh = load_list(1, allowlist ? allowlist->size() : 0)) {
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
