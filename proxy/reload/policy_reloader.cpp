// Live policy reload. See policy_reloader.hpp.
#include "proxy/reload/policy_reloader.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "proxy/settings/load.hpp"
#include "proxy/settings/policy_loader.hpp"

namespace sandgate::reload {
namespace {

using clock = std::chrono::steady_clock;
using settings::Settings;

// Quiet time after the last event before reading: an editor's save is several events.
constexpr auto kQuiet = std::chrono::milliseconds(100);

// The table of settings, one row per setting: its key, its class, whether two loads agree on it,
// and (for the reloadable ones) how to take its value from a fresh load.
//   policy      goes into the next Policy (rebuilt and posted to every worker);
//   live        posted to every worker in a new Settings snapshot (a request in flight keeps the
//               snapshot it started with), or applied to the log (its level);
//   restart     read once at start-up (listeners, threads, resolvers, LaunchDarkly, the log's
//               file and format, the sandbox of `run`): a change is named in a warning and is in
//               force only after a restart.
enum class Kind : std::uint8_t { policy, live, restart };

struct SettingRow {
  std::string_view key;
  Kind kind;
  bool (*same)(const Settings&, const Settings&);
  void (*take)(Settings& into, const Settings& from);  // policy and live rows only
};

#define SANDGATE_ROW(key, kind, member)                                                   \
  SettingRow {                                                                            \
    key, kind, [](const Settings& a, const Settings& b) { return a.member == b.member; }, \
        [](Settings& into, const Settings& from) { into.member = from.member; }           \
  }
#define SANDGATE_RESTART(key, expression)                                                        \
  SettingRow {                                                                                   \
    key, Kind::restart, [](const Settings& a, const Settings& b) { return expression; }, nullptr \
  }
const std::vector<SettingRow>& setting_rows() {
  static const std::vector<SettingRow> rows = {
      SANDGATE_RESTART("blocklist", a.blocklist_path == b.blocklist_path),
      SANDGATE_RESTART("allowlist", a.allowlist_path == b.allowlist_path &&
                                        a.allowlist_presets == b.allowlist_presets),
      SANDGATE_RESTART("request_rules", a.request_rules_path == b.request_rules_path),
      SANDGATE_RESTART("budgets", a.budgets_path == b.budgets_path),
      SANDGATE_RESTART("inspect", a.inspect == b.inspect),
      SANDGATE_RESTART("ca_dir", a.ca_dir == b.ca_dir),
      SANDGATE_RESTART("secrets", a.secrets == b.secrets),
      SANDGATE_RESTART("sentinels_file", a.sentinels_file == b.sentinels_file),
      SANDGATE_RESTART("mask_known_secrets", a.mask_known_secrets == b.mask_known_secrets),
      SANDGATE_RESTART("stable_sentinels", a.stable_sentinels == b.stable_sentinels),
      SANDGATE_RESTART("inspect_extra_ca", a.inspect_extra_ca == b.inspect_extra_ca),
      SANDGATE_ROW("block_loopback", Kind::policy, policy.block_loopback),
      SANDGATE_ROW("allow_ip", Kind::policy, policy.allow_ip),
      SANDGATE_ROW("allow_ssh", Kind::policy, policy.allow_ssh),
      SANDGATE_ROW("ssh_all_hosts", Kind::policy, policy.ssh_all_hosts),
      SANDGATE_ROW("git_hosts", Kind::policy, policy.git_hosts),
      SANDGATE_ROW("ssh_ports", Kind::policy, policy.ssh_ports),
      SANDGATE_ROW("allowed_ports", Kind::policy, policy.allowed_ports),
      SANDGATE_ROW("block_private", Kind::policy, policy.block_private),
      SANDGATE_ROW("allow_metadata", Kind::policy, policy.allow_metadata),
      SANDGATE_ROW("sni_check", Kind::live, sni_check),
      SANDGATE_ROW("tls_ports", Kind::live, tls_ports),
      SANDGATE_ROW("revoke_on_reload", Kind::live, revoke_on_reload),
      // Report-only and ask modes: the next request decides with them.
      SANDGATE_ROW("enforce", Kind::live, enforce),
      SANDGATE_ROW("unknown", Kind::policy, policy.unknown),
      SANDGATE_ROW("ask_timeout", Kind::live, ask_timeout),
      SANDGATE_ROW("ask_default", Kind::live, ask_default_allow),
      SANDGATE_RESTART("launchdarkly_client_id",
                       a.launchdarkly_client_id == b.launchdarkly_client_id),
      SANDGATE_RESTART("ld_failover", a.ld_failover == b.ld_failover &&
                                          a.ld_failover_given == b.ld_failover_given),
      SANDGATE_RESTART("ld_mode", a.ld_mode == b.ld_mode),
      SANDGATE_RESTART("ld_flag", a.ld_flag == b.ld_flag),
      SANDGATE_RESTART("ld_cache_ttl", a.ld_cache_ttl == b.ld_cache_ttl),
      SANDGATE_RESTART("ld_cache_size", a.ld_cache_size == b.ld_cache_size),
      SANDGATE_RESTART("ld_timeout", a.ld_timeout == b.ld_timeout),
      SANDGATE_RESTART("ld_context_key", a.ld_context_key == b.ld_context_key),
      SANDGATE_RESTART("ld_base_uri", a.ld_base_uri.text() == b.ld_base_uri.text()),
      SANDGATE_RESTART("ld_stream_uri", a.ld_stream_uri.text() == b.ld_stream_uri.text()),
      SANDGATE_RESTART("ld_max_payload", a.ld_max_payload == b.ld_max_payload),
      SANDGATE_RESTART("ld_max_lookups", a.ld_max_lookups == b.ld_max_lookups),
      SANDGATE_RESTART("protect_files", a.sandbox.protect_files == b.sandbox.protect_files),
      SANDGATE_RESTART("block_raw_sockets",
                       a.sandbox.block_raw_sockets == b.sandbox.block_raw_sockets),
      SANDGATE_RESTART("block_tunneling", a.sandbox.block_tunneling == b.sandbox.block_tunneling),
      SANDGATE_RESTART("capture", a.sandbox.capture == b.sandbox.capture),
      SANDGATE_RESTART("listen", a.listen == b.listen),
      SANDGATE_RESTART("allow_remote_clients", a.allow_remote_clients == b.allow_remote_clients),
      SANDGATE_RESTART("port_file", a.port_file == b.port_file),
      // The token and the file it was read from go together: either may bring a new token.
      SettingRow{"token", Kind::live,
                 [](const Settings& a, const Settings& b) { return a.token == b.token; },
                 [](Settings& into, const Settings& from) {
                   into.token = from.token;
                   into.token_file = from.token_file;
                 }},
      SettingRow{"token_file", Kind::live,
                 [](const Settings& a, const Settings& b) { return a.token_file == b.token_file; },
                 [](Settings& into, const Settings& from) {
                   into.token = from.token;
                   into.token_file = from.token_file;
                 }},
      // The admin token, likewise: /pending and /decide read it afresh for every request.
      SettingRow{
          "admin_token", Kind::live,
          [](const Settings& a, const Settings& b) { return a.admin_token == b.admin_token; },
          [](Settings& into, const Settings& from) {
            into.admin_token = from.admin_token;
            into.admin_token_file = from.admin_token_file;
          }},
      SettingRow{"admin_token_file", Kind::live,
                 [](const Settings& a, const Settings& b) {
                   return a.admin_token_file == b.admin_token_file;
                 },
                 [](Settings& into, const Settings& from) {
                   into.admin_token = from.admin_token;
                   into.admin_token_file = from.admin_token_file;
                 }},
      SANDGATE_RESTART("threads", a.threads == b.threads),
      SANDGATE_RESTART("drain_seconds", a.drain == b.drain),
      SANDGATE_RESTART("dns_servers", a.dns_servers == b.dns_servers),
      SANDGATE_RESTART("dns_timeout", a.dns_timeout == b.dns_timeout),
      SANDGATE_RESTART("dns_cache_size", a.dns_cache_size == b.dns_cache_size),
      SANDGATE_RESTART("dns_max_ttl", a.dns_max_ttl == b.dns_max_ttl),
      SANDGATE_RESTART("dns_negative_ttl", a.dns_negative_ttl == b.dns_negative_ttl),
      SANDGATE_ROW("head_timeout", Kind::live, head_timeout),
      SANDGATE_ROW("connect_timeout", Kind::live, connect_timeout),
      SANDGATE_ROW("idle_timeout", Kind::live, idle_timeout),
      SANDGATE_RESTART("max_connections", a.max_connections == b.max_connections),
      SANDGATE_RESTART("log_format", a.log_format == b.log_format),
      SANDGATE_ROW("log_level", Kind::live, log_level),
      SANDGATE_ROW("log_mcp_arguments", Kind::live, log_mcp_arguments),
      SANDGATE_ROW("log_websocket_messages", Kind::live, log_websocket_messages),
      SANDGATE_RESTART("admin", a.admin == b.admin),
      SANDGATE_RESTART("log_file", a.log_file == b.log_file),
      // The parent proxy: read once, like the resolvers its name goes through.
      SANDGATE_RESTART("parent_proxy", a.parent_proxy_url == b.parent_proxy_url),
      SANDGATE_RESTART("parent_proxy_credentials",
                       a.parent_credentials_file == b.parent_credentials_file &&
                           a.parent_credentials.has_value() == b.parent_credentials.has_value() &&
                           (!a.parent_credentials ||
                            (a.parent_credentials->user == b.parent_credentials->user &&
                             a.parent_credentials->password == b.parent_credentials->password))),
      SANDGATE_RESTART("parent_proxy_exclude", a.parent_exclude_text == b.parent_exclude_text),
  };
  return rows;
}
#undef SANDGATE_ROW
#undef SANDGATE_RESTART

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
      (row.kind != Kind::restart ? change.applied : change.need_restart)
          .push_back(setting_name(row.key));
    }
  }
  return change;
}

std::vector<ComparedSetting> compared_settings() {
  std::vector<ComparedSetting> out;
  for (const auto& row : setting_rows()) {
    out.push_back({row.key, row.kind != Kind::restart});
  }
  return out;
}

AppliedChange apply_reloadable(Settings& in_force, const Settings& before, const Settings& after) {
  AppliedChange out;
  for (const auto& row : setting_rows()) {
    if (row.kind == Kind::restart || row.same(before, after)) {
      continue;
    }
    // token and token_file share one take(): name the one that changed, apply once each.
    row.take(in_force, after);
    out.applied.push_back(setting_name(row.key));
    out.policy |= row.kind == Kind::policy;
  }
  return out;
}

PolicyReloader::PolicyReloader(settings::Settings settings, settings::Sources sources,
                               log::DecisionLog& log, std::shared_ptr<const rules::Policy> initial,
                               Publish publish)
    : settings_(std::move(settings)),
      started_(settings_),
      last_loaded_(settings_),
      sources_(std::move(sources)),
      log_(log),
      publish_(std::move(publish)),
      current_(std::move(initial)) {
  // Resolve once: from here on only these files are watched and read.
  const Settings resolved = settings::with_resolved_paths(settings_);
  lists_[0] = {"blocklist", settings_.blocklist_path, resolved.blocklist_path, {}, {}, {}};
  lists_[1] = {"allowlist", settings_.allowlist_path, resolved.allowlist_path, {}, {}, {}};
  lists_[2] = {
      "request rules", settings_.request_rules_path, resolved.request_rules_path, {}, {}, {}};
  lists_[3] = {"budgets", settings_.budgets_path, resolved.budgets_path, {}, {}, {}};
  config_ = {"config", settings_.config_path, resolved.config_path, {}, {}, {}};
  std::vector<std::string> paths;
  for (File* file : {&lists_[0], &lists_[1], &lists_[2], &lists_[3], &config_}) {
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
      last_loaded_ = started_;
    }
  }

  // What the initial policy was built from, so an unchanged file is not rebuilt. A blank file at
  // start-up has no last good rules to keep: the empty list is in force, and that is said.
  for (int index = 0; index < kLists; ++index) {
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
                    (index == 0   ? " (it blocks nothing)"
                     : index == 1 ? " (allowlist mode with no entry denies every destination)"
                     : index == 2 ? " (no request is judged)"
                                  : " (nothing is limited)") +
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

bool PolicyReloader::load_list(int index, std::size_t entries_in_force, const ParseList& parse,
                               Notes& said_after_publishing) {
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
    return false;
  }
  if (settings::is_blank(*text)) {
    // A truncated file (a failed or slow rewrite) is no decision to drop every rule, nor, for
    // the allowlist, to deny everything. Writing any line (a comment will do) ends it.
    ++counts_[index].failed;
    hold(file, "blank", "warning",
         file.kind + " " + path + " is empty (" + blank_description(*text) + "); " + keeping +
             ": an empty file is taken for a failed or unfinished write (to empty the list on "
             "purpose, leave a comment in it)");
    return false;
  }
  if (*text == file.last_text) {
    if (!file.held.empty()) {
      log_.note("info", path + " is back, with the rules in force");
    }
    release(file);
    return false;  // touched, but the same rules
  }
  if (text->find('\0') != std::string::npos) {
    ++counts_[index].failed;
    hold(file, "not text", "error", path + ": holds NUL bytes (not a text file); " + keeping);
    return false;
  }
  std::vector<rules::LoadIssue> issues;
  const std::size_t entries = parse(*text, path, issues);
  for (const auto& issue : issues) {
    log_.note("warning", issue.source + ":" + std::to_string(issue.line) + ": skipped '" +
                             issue.text + "': " + issue.message);
  }
  if (entries == 0 && !issues.empty()) {
    // Nothing usable at all: more likely a broken file than an intended empty list.
    ++counts_[index].failed;
    log_.note("error", path + ": no usable entry (" + std::to_string(issues.size()) +
                           " rejected lines); " + keeping);
    file.held = "nothing usable";
    return false;
  }
  release(file);
  file.last_text = std::move(*text);
  ++counts_[index].ok;
  const auto millis = std::chrono::duration<double, std::milli>(clock::now() - started).count();
  char took[32];
  std::snprintf(took, sizeof took, "%.1f", millis);
  said_after_publishing.emplace_back("info", "reloaded " + path + ": " + std::to_string(entries) +
                                                 " entries, " + std::to_string(issues.size()) +
                                                 " rejected lines, " + took + " ms");
  return true;
}

// Re-reads the settings (flags and variables still win over the file), from the resolved config
// file only. Every reloadable setting that changed applies; every restart-only one that differs
// from what the gate started with is named in a warning.
PolicyReloader::ConfigResult PolicyReloader::reload_config() {
  const std::string& path = config_.path;
  auto pinned = settings::PinnedFile::open(path);
  if (!pinned) {
    ++counts_[kConfig].failed;
    hold(config_, "unreadable: " + pinned.error(), "warning",
         "config " + pinned.error() + "; keeping the previous settings until it is back");
    return {};
  }
  // Blank: as for the lists, a truncated file is no decision to reset every setting it held.
  std::string head(4096, '\0');
  const ssize_t n = ::pread((*pinned)->descriptor(), head.data(), head.size(), 0);
  head.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  if (n >= 0 && static_cast<std::size_t>(n) < 4096 && settings::is_blank(head)) {
    ++counts_[kConfig].failed;
    hold(config_, "blank", "warning",
         "config " + path + " is empty (" + blank_description(head) +
             "); keeping the previous settings: an empty file is taken for a failed or unfinished "
             "write (to use only the defaults on purpose, leave a comment in it)");
    return {};
  }
  // Read through the open descriptor, so the file checked is the file parsed.
  settings::Sources sources = sources_;
  const std::string through = (*pinned)->descriptor_path();
  sources.flags.insert_or_assign("--config", through);
  auto fresh = settings::load(sources);
  if (!fresh) {
    ++counts_[kConfig].failed;
    log_.note("error", "config reload failed, keeping the previous settings: " +
                           replace_all(fresh.error(), through, path));
    config_.held = "invalid";
    return {};
  }
  release(config_);
  ++counts_[kConfig].ok;
  fresh->config_path = path;
  if (!asking_forbidden_.empty() && fresh->policy.unknown == rules::UnknownMode::ask &&
      last_loaded_.policy.unknown != rules::UnknownMode::ask) {
    log_.note("warning",
              "config " + path + ": unknown changed to ask; not applied, " + asking_forbidden_);
    fresh->policy.unknown = last_loaded_.policy.unknown;
  }
  // Only what changed since the last load is taken: the settings in force may differ from what
  // the sources say on purpose (`run` serves without the token its environment may hold).
  const AppliedChange change = apply_reloadable(settings_, last_loaded_, *fresh);
  const auto not_applied = compare_settings(started_, *fresh).need_restart;
  last_loaded_ = std::move(*fresh);
  ConfigResult result{change.policy, !change.applied.empty(), {}};
  result.notes.emplace_back(
      "info", "reloaded " + path + ": " +
                  (change.applied.empty() ? std::string("no reloadable setting changed")
                                          : "applied " + join(change.applied)));
  for (const auto& name : not_applied) {
    result.notes.emplace_back("warning", "config " + path + ": " + name +
                                             " changed; not applied, in force only after a "
                                             "restart");
  }
  return result;
}

void PolicyReloader::reload(const std::vector<std::string>& changed, bool everything) {
  auto touched = [&](const std::string& path) {
    return everything || std::find(changed.begin(), changed.end(), path) != changed.end();
  };
  auto base = current();
  std::shared_ptr<const rules::DomainSet> blocklist = base->shared_blocklist();
  std::shared_ptr<const rules::DomainSet> allowlist = base->shared_allowlist();
  std::shared_ptr<const rules::RequestRules> requests = base->shared_requests();
  std::shared_ptr<const rules::BudgetRules> budgets = base->shared_budgets();
  bool any = false;               // the policy changes
  bool settings_changed = false;  // a reloadable setting changed
  // "reloaded ..." is said once the workers have the new rules: a client that reads it and
  // connects is decided by them.
  Notes notes;
  const auto say_notes = [&] {
    for (const auto& [level, text] : notes) {
      log_.note(level, text);
    }
  };

  for (File* file : {&lists_[0], &lists_[1], &lists_[2], &lists_[3], &config_}) {
    if (!file->path.empty() && file->given != file->path && touched(file->given)) {
      check_given(*file);
    }
  }
  if (!config_.path.empty() && touched(config_.path)) {
    ConfigResult result = reload_config();
    any |= result.policy;
    settings_changed |= result.settings;
    notes = std::move(result.notes);
  }
  if (touched(lists_[0].path)) {
    if (everything) {
      lists_[0].last_text.clear();  // SIGHUP rebuilds even an unchanged file
    }
    any |= load_list(
        0, blocklist->size(),
        [&](const std::string& text, const std::string& path,
            std::vector<rules::LoadIssue>& issues) {
          blocklist =
              std::make_shared<const rules::DomainSet>(rules::DomainSet::parse(text, path, issues));
          return blocklist->size();
        },
        notes);
  }
  if (!lists_[1].path.empty() && touched(lists_[1].path)) {
    if (everything) {
      lists_[1].last_text.clear();
    }
    // The allowlist file comes with the presets named beside it (embedded, never re-read).
    any |= load_list(
        1, allowlist ? allowlist->size() : 0,
        [&](const std::string& text, const std::string& path,
            std::vector<rules::LoadIssue>& issues) {
          allowlist = std::make_shared<const rules::DomainSet>(
              settings::build_allowlist(settings_.allowlist_presets, text, path, issues));
          return allowlist->size();
        },
        notes);
  }
  if (!lists_[2].path.empty() && touched(lists_[2].path)) {
    if (everything) {
      lists_[2].last_text.clear();
    }
    any |= load_list(
        2, requests->size(),
        [&](const std::string& text, const std::string& path,
            std::vector<rules::LoadIssue>& issues) {
          requests = settings::build_request_rules(settings_, text, path, issues);
          return requests->size();
        },
        notes);
  }
  if (!lists_[3].path.empty() && touched(lists_[3].path)) {
    if (everything) {
      lists_[3].last_text.clear();
    }
    any |= load_list(
        3, budgets->size(),
        [&](const std::string& text, const std::string& path,
            std::vector<rules::LoadIssue>& issues) {
          budgets = std::make_shared<const rules::BudgetRules>(
              rules::BudgetRules::parse(text, path, issues));
          return budgets->size();
        },
        notes);
  }
  if (!any && !settings_changed) {
    say_notes();
    return;
  }
  auto policy = any ? std::make_shared<const rules::Policy>(settings_.policy, blocklist, allowlist,
                                                            requests, budgets)
                    : base;
  {
    std::lock_guard lock(mutex_);
    current_ = policy;
  }
  publish_(std::move(policy), std::make_shared<const Settings>(settings_));
  ++generation_;
  say_notes();
}

}  // namespace sandgate::reload
