// Live policy reload: watches the blocklist, the allowlist and the config file, and when one
// changes, builds a new immutable Policy off the I/O threads and hands it to `publish` (which
// swaps it into every worker). It never loses a rule: a file that cannot be read, that was
// deleted, or that holds nothing usable keeps its last good rules; a bad line is skipped and
// reported as at start-up. Every reload logs one line: file, entries, rejected lines, time.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "proxy/log/decision_log.hpp"
#include "proxy/settings/settings.hpp"
#include "proxy/watch/file_watcher.hpp"
#include "rules/policy.hpp"

namespace sandgate::reload {

class PolicyReloader {
 public:
  using Publish = std::function<void(std::shared_ptr<const rules::Policy>)>;

  // `sources` are the inputs the settings were loaded from; the config file is re-read with them,
  // so flags and variables keep their precedence over it. `initial` is the policy in force.
  PolicyReloader(settings::Settings settings, settings::Sources sources, log::DecisionLog& log,
                 std::shared_ptr<const rules::Policy> initial, Publish publish);
  ~PolicyReloader();  // stops the watching thread
  PolicyReloader(const PolicyReloader&) = delete;
  PolicyReloader& operator=(const PolicyReloader&) = delete;

  // Starts watching on a thread of its own.
  void start();
  // Reloads every file now (SIGHUP), on the watching thread. Thread-safe.
  void reload_all();
  // The policy most recently published (for tests and `check`-like tools). Thread-safe.
  std::shared_ptr<const rules::Policy> current() const;
  // How many reloads have published a new policy. Thread-safe.
  std::uint64_t generation() const;

  // Reload results per file kind, for /metrics. Thread-safe.
  struct Counts {
    std::atomic<std::uint64_t> ok{0};
    std::atomic<std::uint64_t> failed{0};
  };
  const Counts& blocklist_counts() const { return counts_[0]; }
  const Counts& allowlist_counts() const { return counts_[1]; }
  const Counts& config_counts() const { return counts_[2]; }

 private:
  enum class Which { blocklist, allowlist };
  void run();
  void reload(const std::vector<std::string>& changed, bool everything);
  // Loads one list file; returns the new set, or null to keep the last good one.
  std::shared_ptr<const rules::DomainSet> load_list(Which which, const std::string& path);
  bool reload_config();

  settings::Settings settings_;
  settings::Sources sources_;
  log::DecisionLog& log_;
  Publish publish_;
  std::unique_ptr<watch::FileWatcher> watcher_;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> reload_all_requested_{false};

  mutable std::mutex mutex_;  // guards current_ (read by other threads); never on a hot path
  std::shared_ptr<const rules::Policy> current_;
  std::atomic<std::uint64_t> generation_{0};
  std::string last_text_[2];          // last good text per list: unchanged content is skipped
  bool missing_reported_[2] = {false, false};
  Counts counts_[3];
};

}  // namespace sandgate::reload
