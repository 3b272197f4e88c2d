// Live policy reload: watches the blocklist, the allowlist and the config file, and when one
// changes, builds a new immutable Policy off the I/O threads and hands it to `publish` (which
// swaps it into every worker). It never loses a rule by accident: a file that cannot be read,
// that was deleted, that is blank (0 bytes or only whitespace: what a failed or unfinished
// rewrite leaves), or that holds nothing usable keeps its last good rules, with one warning
// naming the file per episode; a bad line is skipped and reported as at start-up. A file that
// holds only comments is a real, empty list and is applied. Every reload logs one line: file,
// entries, rejected lines, time.
//
// Every file is resolved once, when the reloader is made (after the default blocklist was
// created), and from then on only the resolved file is watched and read: re-pointing a symlink
// on the way (a folder a confined command can write) changes nothing but a warning, and a file
// reached through a symlink planted later is not read (its last good rules are kept). The
// config file re-read applies every reloadable setting that changed (the policy options go into
// the next Policy; the others, such as the token, the timeouts, the SNI check and the log level,
// into the next Settings snapshot); each restart-only one that changed is named in a warning as
// not applied until a restart (the table is in policy_reloader.cpp).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "proxy/log/decision_log.hpp"
#include "proxy/settings/load.hpp"
#include "proxy/settings/settings.hpp"
#include "proxy/watch/file_watcher.hpp"
#include "rules/policy.hpp"

namespace sandgate::reload {

// Which settings differ between two loads, each named `key (--flag / VARIABLE)`, in the order
// --help lists them.
struct SettingsChange {
  std::vector<std::string> applied;       // reloadable: the reloader applies them live
  std::vector<std::string> need_restart;  // restart-only: in force only after a restart
};
SettingsChange compare_settings(const settings::Settings& before, const settings::Settings& after);
// Takes into `in_force` every reloadable setting that differs between `before` and `after` (two
// loads from the same sources). `applied` names them; `policy`: a policy option is among them.
struct AppliedChange {
  std::vector<std::string> applied;
  bool policy = false;
};
AppliedChange apply_reloadable(settings::Settings& in_force, const settings::Settings& before,
                               const settings::Settings& after);
// The setting keys compare_settings() knows, and whether each applies live. A setting it does not
// know is never compared (a test checks that every key of settings::all_settings() is here).
struct ComparedSetting {
  std::string_view key;
  bool live;
};
std::vector<ComparedSetting> compared_settings();

class PolicyReloader {
 public:
  // Receives the policy and the settings in force after a reload that changed either (the
  // policy object is the previous one when only settings changed). Called on the watching
  // thread.
  using Publish = std::function<void(std::shared_ptr<const rules::Policy>,
                                     std::shared_ptr<const settings::Settings>)>;

  // `sources` are the inputs the settings were loaded from; the config file is re-read with them,
  // so flags and variables keep their precedence over it. `initial` is the policy in force.
  // Resolves the three paths (logging `blocklist X (resolved from Y)` where they differ) and
  // warns about a list file that is blank at start-up: there are no last good rules yet, so the
  // empty list is in force. Throws std::runtime_error if the file watcher cannot start.
  PolicyReloader(settings::Settings settings, settings::Sources sources, log::DecisionLog& log,
                 std::shared_ptr<const rules::Policy> initial, Publish publish);
  ~PolicyReloader();  // stops the watching thread
  PolicyReloader(const PolicyReloader&) = delete;
  PolicyReloader& operator=(const PolicyReloader&) = delete;

  // Before start(): a reload may not turn `unknown` to ask; it keeps the mode in force and warns
  // with `why` instead. (`run` sets up who answers questions, the user's terminal, when it
  // starts: asking turned on later would hold requests that no one is there to answer.)
  void forbid_asking(std::string why) { asking_forbidden_ = std::move(why); }

  // Starts watching on a thread of its own.
  void start();
  // Reloads every file now (SIGHUP), on the watching thread. Does not resolve the paths again.
  // Thread-safe.
  void reload_all();
  // The policy most recently published (for tests and `check`-like tools). Thread-safe.
  std::shared_ptr<const rules::Policy> current() const;
  // How many reloads have published a new policy or new settings. Thread-safe.
  std::uint64_t generation() const;
  // The files read, as resolved at construction (empty: none). Thread-safe (never change).
  const std::string& blocklist_path() const { return lists_[0].path; }
  const std::string& allowlist_path() const { return lists_[1].path; }
  const std::string& request_rules_path() const { return lists_[2].path; }
  const std::string& config_path() const { return config_.path; }

  // Reload results per file kind, for /metrics. Thread-safe.
  struct Counts {
    std::atomic<std::uint64_t> ok{0};
    std::atomic<std::uint64_t> failed{0};
  };
  const Counts& blocklist_counts() const { return counts_[0]; }
  const Counts& allowlist_counts() const { return counts_[1]; }
  const Counts& request_rules_counts() const { return counts_[2]; }
  const Counts& budgets_counts() const { return counts_[3]; }
  const Counts& config_counts() const { return counts_[kConfig]; }

 private:
  std::string asking_forbidden_;  // see forbid_asking(); empty: asking may be turned on
  // One watched file. Touched by the constructor, then only on the watching thread.
  struct File {
    std::string kind;         // "blocklist", "allowlist", "config"
    std::string given;        // as configured (may lead through symlinks)
    std::string path;         // resolved at construction: the only file read; empty: none
    std::string given_leads;  // where `given` led when last looked (warned once per target)
    std::string last_text;    // lists: last good text, so unchanged content is skipped
    std::string held;         // why the last good rules are kept ("": they are not); a warning
                              // is logged when this changes, not on every event
  };

  void run();
  void reload(const std::vector<std::string>& changed, bool everything);
  // Reads one list file (lists_[index]): its text when it changed and may be used, or nothing
  // to keep the last good rules (the reason logged). `parse` builds the new rules from the text
  // and returns how many entries they hold; then the reload is counted, and its line added to
  // `said_after_publishing`.
  using Notes = std::vector<std::pair<std::string, std::string>>;  // level, text
  using ParseList = std::function<std::size_t(const std::string& text, const std::string& path,
                                              std::vector<rules::LoadIssue>& issues)>;
  bool load_list(int index, std::size_t entries_in_force, const ParseList& parse,
                 Notes& said_after_publishing);
  struct ConfigResult {
    bool policy = false;    // a policy option changed: build a new Policy
    bool settings = false;  // a reloadable setting changed: publish new settings
    // What the reload says ("reloaded ...: applied ...", the restart-only warnings), logged
    // once the new settings are published: a client that sees "applied" and connects is served
    // with them (the workers take the update before any connection accepted after it).
    Notes notes;
  };
  ConfigResult reload_config();
  // Warns when a configured path now leads somewhere other than the file read.
  void check_given(File& file);
  // Keeps the last good rules of `file` for `reason`; logs `message` if the reason is new.
  void hold(File& file, const std::string& reason, std::string_view level,
            const std::string& message);
  void release(File& file);

  settings::Settings settings_;     // the settings in force (paths as configured)
  settings::Settings started_;      // what the sources said at start
  settings::Settings last_loaded_;  // what they said at the last good load
  settings::Sources sources_;       // with --config set to the resolved config file
  log::DecisionLog& log_;
  Publish publish_;
  // The blocklist, the allowlist, the request rules, the budgets; counts_ has theirs, then the
  // config's.
  static constexpr int kLists = 4;
  static constexpr int kConfig = kLists;
  File lists_[kLists];
  File config_;
  std::unique_ptr<watch::FileWatcher> watcher_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> reload_all_requested_{false};

  mutable std::mutex mutex_;  // guards current_ (read by other threads); never on a hot path
  std::shared_ptr<const rules::Policy> current_;
  std::atomic<std::uint64_t> generation_{0};
  Counts counts_[kLists + 1];
};

}  // namespace sandgate::reload
