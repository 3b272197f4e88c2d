// Live reload against a running proxy and real files: every way a file can change flips the
// decision within a second, a domain blocked before and after a change is never let through in
// between, and broken, deleted, vanished or emptied files keep the last good rules. Files are
// read by the path resolved at start-up: a symlink re-pointed later changes nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "config/embedded_defaults.hpp"
#include "proxy/reload/policy_reloader.hpp"
#include "proxy/settings/load.hpp"
#include "proxy/settings/settings.hpp"
#include "tests/fakes/http_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"

namespace sandgate::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

std::size_t count_of(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// 403 when the policy denies; an allowed name the fake DNS does not know gets 502.
int status_of(std::uint16_t port, const std::string& host) {
  TestClient client(port);
  return send_connect(client, host + ":443").status;
}

// Waits until `host` gets `status`; returns whether it did within `limit`.
bool becomes(std::uint16_t port, const std::string& host, int status,
             std::chrono::milliseconds limit = 1000ms) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (status_of(port, host) == status) {
      return true;
    }
    std::this_thread::sleep_for(10ms);
  }
  return status_of(port, host) == status;
}

// A running gate, whose reloader publishes into its workers, and a guard thread that keeps asking
// about a domain blocked before and after every change: it must never be allowed.
class ReloadTest : public ::testing::Test {
 protected:
  void start(const std::string& initial = "stable.test\nold.test\n",
             std::function<void(settings::Settings&)> configure = {}) {
    proxy_ = std::make_unique<TestProxy>(initial, configure);
    guard_ = std::thread([this] {
      while (!stop_guard_) {
        const int status = status_of(proxy_->port(), "www.stable.test");
        if (status != 403) {
          if (guard_failures_ == 0) {
            std::fprintf(stderr, "guard saw status %d\n", status);
          }
          ++guard_failures_;
        }
        ++guard_checks_;
      }
    });
  }

  void TearDown() override {
    // A test can end before the guard thread was first scheduled (a loaded machine): let it ask
    // at least once, so "never allowed" is never said of no question at all.
    for (int i = 0; i < 1000 && guard_.joinable() && guard_checks_.load() == 0; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    stop_guard_ = true;
    if (guard_.joinable()) {
      guard_.join();
    }
    EXPECT_EQ(guard_failures_.load(), 0)
        << "a domain blocked before and after the change was allowed in between";
    EXPECT_GT(guard_checks_.load(), 0);
    if (HasFailure()) {
      std::cerr << "gate log:\n" << reload_log() << "\n";
    }
    proxy_.reset();
  }

  reload::PolicyReloader& reloader() { return proxy_->gate().reloader(); }
  std::string blocklist() const { return proxy_->settings().blocklist_path; }
  std::uint16_t port() const { return proxy_->port(); }
  // The gate's log: the reloader writes its notes there, as in `serve`.
  std::string reload_log() const { return proxy_->log_text(); }
  // Waits until the reload log holds `text` (up to 5 s: a truncate(2) without a close makes the
  // watcher wait up to 2 s for the writer it assumes).
  bool log_says(const std::string& text) const {
    for (int i = 0; i < 500; ++i) {
      if (reload_log().find(text) != std::string::npos) {
        return true;
      }
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  std::unique_ptr<TestProxy> proxy_;
  std::thread guard_;
  std::atomic<bool> stop_guard_{false};
  std::atomic<int> guard_failures_{0};
  std::atomic<int> guard_checks_{0};
};

TEST_F(ReloadTest, InPlaceWrite) {
  start();
  ASSERT_EQ(status_of(port(), "new.test"), 502);
  write_file(blocklist(), "stable.test\nnew.test\n");
  EXPECT_TRUE(becomes(port(), "new.test", 403));
}

TEST_F(ReloadTest, AtomicRenameSaveSeenEveryTime) {
  start();
  // Editors write a temporary file and rename it over the original; goose stopped seeing
  // changes after the first one, so do it three times.
  for (const char* name : {"one.test", "two.test", "three.test"}) {
    const std::string temporary = blocklist() + ".swp";
    write_file(temporary, std::string("stable.test\n") + name + "\n");
    fs::rename(temporary, blocklist());
    EXPECT_TRUE(becomes(port(), name, 403)) << name;
  }
  EXPECT_TRUE(becomes(port(), "one.test", 502));
}

TEST_F(ReloadTest, SedInPlace) {
  start();
  ASSERT_EQ(std::system(("sed -i 's/old.test/sed.test/' " + blocklist()).c_str()), 0);
  EXPECT_TRUE(becomes(port(), "sed.test", 403));
  EXPECT_TRUE(becomes(port(), "old.test", 502));
}

TEST_F(ReloadTest, CopyOver) {
  start();
  const std::string source = proxy_->folder() + "/other.txt";
  write_file(source, "stable.test\ncopied.test\n");
  ASSERT_EQ(std::system(("cp " + source + " " + blocklist()).c_str()), 0);
  EXPECT_TRUE(becomes(port(), "copied.test", 403));
}

TEST_F(ReloadTest, TruncateThenWriteSlowly) {
  start();
  {
    std::ofstream out(blocklist(), std::ios::trunc);  // empty for a moment
    out.flush();
    std::this_thread::sleep_for(50ms);
    out << "stable.test\n";
    out.flush();
    std::this_thread::sleep_for(50ms);
    out << "slow.test\n";
  }
  EXPECT_TRUE(becomes(port(), "slow.test", 403));
}

TEST_F(ReloadTest, DeleteKeepsRulesAndRecreateApplies) {
  start();
  fs::remove(blocklist());
  std::this_thread::sleep_for(600ms);
  EXPECT_EQ(status_of(port(), "old.test"), 403) << "a deleted file must not empty the list";
  write_file(blocklist(), "stable.test\nback.test\n");
  EXPECT_TRUE(becomes(port(), "back.test", 403));
  EXPECT_TRUE(becomes(port(), "old.test", 502));
}

TEST_F(ReloadTest, GarbageKeepsTheOldRules) {
  start();
  write_file(blocklist(), std::string("\x7f\x45\x4c\x46\x00\x01\x02garbage", 14));
  std::this_thread::sleep_for(600ms);
  EXPECT_EQ(status_of(port(), "old.test"), 403);
  write_file(blocklist(), "not a host name!\n@@@\nhttp://x/y\n");
  std::this_thread::sleep_for(600ms);
  EXPECT_EQ(status_of(port(), "old.test"), 403);
  // A good file afterwards is taken.
  write_file(blocklist(), "stable.test\nfine.test\n");
  EXPECT_TRUE(becomes(port(), "fine.test", 403));
}

TEST_F(ReloadTest, BadLinesAreSkippedGoodOnesApply) {
  start();
  write_file(blocklist(), "stable.test\nbad..name\npartial.test\n");
  EXPECT_TRUE(becomes(port(), "partial.test", 403));
}

// The resolved file itself replaced by a symlink after start: the gate does not read through
// it (that would let whoever can write the folder point the gate at any file), keeps the last
// good rules, and says so. A real file put back is read again.
TEST_F(ReloadTest, FileReplacedBySymlinkIsNotFollowed) {
  start();
  const std::string elsewhere = proxy_->folder() + "/elsewhere.txt";
  write_file(elsewhere, "stable.test\nlink.test\n");
  fs::remove(blocklist());
  fs::create_symlink(elsewhere, blocklist());
  EXPECT_TRUE(log_says("now leads to " + elsewhere)) << reload_log();
  EXPECT_EQ(status_of(port(), "link.test"), 502);
  EXPECT_EQ(status_of(port(), "old.test"), 403) << "the last good rules are kept";
  fs::remove(blocklist());
  write_file(blocklist(), "stable.test\nreal-again.test\n");
  EXPECT_TRUE(becomes(port(), "real-again.test", 403));
}

TEST_F(ReloadTest, FolderDeletedAndRestored) {
  // The blocklist in a folder of its own.
  std::string folder;
  std::string path;
  start("stable.test\n", [&](settings::Settings& s) {
    folder = fs::path(s.blocklist_path).parent_path().string() + "/rules";
    fs::create_directories(folder);
    path = folder + "/blocked.txt";
    write_file(path, "stable.test\nold.test\n");
    s.blocklist_path = path;
  });
  ASSERT_TRUE(becomes(port(), "old.test", 403));

  fs::remove_all(folder);
  std::this_thread::sleep_for(600ms);
  EXPECT_EQ(status_of(port(), "old.test"), 403);
  fs::create_directories(folder);
  write_file(path, "stable.test\nrestored.test\n");
  EXPECT_TRUE(becomes(port(), "restored.test", 403, 2000ms));
}

TEST_F(ReloadTest, ForcedReloadOfEverything) {
  start();
  const auto before = reloader().generation();
  proxy_->gate().reload();
  const auto deadline = std::chrono::steady_clock::now() + 1s;
  while (reloader().generation() == before && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_GT(reloader().generation(), before);
  EXPECT_EQ(status_of(port(), "old.test"), 403);
}

// ---- An empty file is not a policy change by accident (issue 14, item 7) ----

// Truncated in place to 0 bytes (what a failed or slow rewrite leaves): the rules stay, one
// warning names the file, however many events follow.
TEST_F(ReloadTest, TruncatedInPlaceKeepsTheRulesAndWarnsOnce) {
  start();
  fs::resize_file(blocklist(), 0);  // truncate(2), as `truncate -s 0` does
  ASSERT_TRUE(log_says(blocklist() + " is empty (0 bytes)")) << reload_log();
  EXPECT_EQ(status_of(port(), "old.test"), 403) << "an emptied blocklist must not allow all";
  EXPECT_TRUE(log_says("keeping the last good rules (2 entries)"));
  // Read again and again while still empty (a forced reload each time, as SIGHUP does; a
  // touch that changes nothing is not even read): no second warning.
  const auto failed = reloader().blocklist_counts().failed.load();
  for (int round = 1; round <= 2; ++round) {
    proxy_->gate().reload();
    for (int i = 0; i < 100 && reloader().blocklist_counts().failed.load() < failed + round; ++i) {
      std::this_thread::sleep_for(10ms);
    }
  }
  EXPECT_EQ(reloader().blocklist_counts().failed.load(), failed + 2) << "not read again";
  EXPECT_EQ(status_of(port(), "old.test"), 403);
  EXPECT_EQ(count_of(reload_log(), "is empty (0 bytes)"), 1u) << reload_log();
  // Written again: applied; emptied again: a new episode, a new warning.
  write_file(blocklist(), "stable.test\nnext.test\n");
  ASSERT_TRUE(becomes(port(), "next.test", 403));
  EXPECT_EQ(status_of(port(), "old.test"), 502);
  { std::ofstream truncate(blocklist(), std::ios::trunc); }
  for (int i = 0; i < 300 && count_of(reload_log(), "is empty (0 bytes)") < 2; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(count_of(reload_log(), "is empty (0 bytes)"), 2u) << reload_log();
  EXPECT_EQ(status_of(port(), "next.test"), 403);
}

// An empty file renamed over the list (an editor's save of an empty buffer, a script whose
// output was empty): the same.
TEST_F(ReloadTest, EmptyFileRenamedOverKeepsTheRules) {
  start();
  const std::string temporary = blocklist() + ".new";
  write_file(temporary, "");
  fs::rename(temporary, blocklist());
  ASSERT_TRUE(log_says(blocklist() + " is empty (0 bytes)")) << reload_log();
  EXPECT_EQ(status_of(port(), "old.test"), 403);
}

// Only whitespace says nothing either (`echo > file`, a rewrite that has written its leading
// blank lines only).
TEST_F(ReloadTest, WhitespaceOnlyKeepsTheRules) {
  start();
  write_file(blocklist(), "\n  \t\r\n\n");
  ASSERT_TRUE(log_says(blocklist() + " is empty (only whitespace)")) << reload_log();
  EXPECT_EQ(status_of(port(), "old.test"), 403);
}

// A file with only comments is a real, empty list, and is applied: the bundled template is one.
TEST_F(ReloadTest, CommentsOnlyEmptiesTheList) {
  start();
  // stable.test is meant to be unblocked here: stop the guard once it has looked.
  while (guard_checks_ == 0) {
    std::this_thread::sleep_for(1ms);
  }
  stop_guard_ = true;
  guard_.join();
  write_file(blocklist(), std::string(defaults::blocklist_template()));
  EXPECT_TRUE(becomes(port(), "old.test", 502));
  EXPECT_EQ(status_of(port(), "www.stable.test"), 502);
  EXPECT_TRUE(log_says("reloaded " + blocklist() + ": 0 entries"));
  EXPECT_EQ(reload_log().find("is empty"), std::string::npos) << reload_log();
  // A one-line comment is a real empty list too.
  write_file(blocklist(), "stable.test\nold.test\n");
  EXPECT_TRUE(becomes(port(), "old.test", 403));
  write_file(blocklist(), "# nothing blocked for now\n");
  EXPECT_TRUE(becomes(port(), "old.test", 502));
}

// The allowlist: empty means "deny everything" in allowlist mode, so a truncated allowlist
// must neither deny everything suddenly nor (if it were dropped) allow everything.
TEST_F(ReloadTest, TruncatedAllowlistKeepsItsRules) {
  start("stable.test\n", [](settings::Settings& s) {
    s.allowlist_path = fs::path(s.blocklist_path).parent_path().string() + "/allow.txt";
    write_file(s.allowlist_path, "allowed.test\nstable.test\n");
  });
  const std::string allowlist = proxy_->settings().allowlist_path;
  ASSERT_EQ(status_of(port(), "allowed.test"), 502);  // allowed; the fake DNS does not know it
  ASSERT_EQ(status_of(port(), "other.test"), 403);
  {
    std::ofstream truncate(allowlist, std::ios::trunc);  // in place, left empty
  }
  EXPECT_TRUE(log_says("allowlist " + allowlist + " is empty (0 bytes)")) << reload_log();
  EXPECT_EQ(status_of(port(), "allowed.test"), 502) << "an emptied allowlist must not deny all";
  EXPECT_EQ(status_of(port(), "other.test"), 403) << "nor allow all";
  // Atomic rename of an empty file: the same.
  write_file(allowlist + ".new", "");
  fs::rename(allowlist + ".new", allowlist);
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(status_of(port(), "allowed.test"), 502);
  // Only comments: a real empty allowlist, which denies everything.
  write_file(allowlist, "# nothing is allowed\n");
  EXPECT_TRUE(becomes(port(), "allowed.test", 403));
}

// An allowlist file given with a preset: a reload of the file keeps the preset's rules beside
// the file's new ones (the preset is built in, never re-read).
TEST_F(ReloadTest, AReloadedAllowlistFileKeepsItsPreset) {
  start("", [](settings::Settings& s) {
    s.allowlist_presets = {"dev"};
    s.allowlist_path = fs::path(s.blocklist_path).parent_path().string() + "/allow.txt";
    write_file(s.allowlist_path, "allowed.test\n");
  });
  const std::string allowlist = proxy_->settings().allowlist_path;
  ASSERT_EQ(status_of(port(), "allowed.test"), 502);  // allowed; the fake DNS does not know it
  ASSERT_EQ(status_of(port(), "pypi.org"), 502);      // preset:dev
  ASSERT_EQ(status_of(port(), "other.test"), 403);
  write_file(allowlist, "other.test\n");
  EXPECT_TRUE(becomes(port(), "other.test", 502));
  EXPECT_EQ(status_of(port(), "allowed.test"), 403);
  EXPECT_EQ(status_of(port(), "pypi.org"), 502) << "the preset must outlive the reload";
}

// At start-up there are no last good rules: an empty list file gives an empty list, with a
// warning naming the file.
TEST(ReloadStartUp, EmptyListAtStartUpIsEmptyWithAWarning) {
  TestProxy proxy("", [](settings::Settings& s) {
    s.allowlist_path = fs::path(s.blocklist_path).parent_path().string() + "/allow.txt";
    write_file(s.allowlist_path, "");
  });
  const std::string log = proxy.log_text();
  EXPECT_NE(log.find("blocklist " + proxy.settings().blocklist_path +
                     " is empty (0 bytes): starting with an empty blocklist"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("allowlist " + proxy.settings().allowlist_path +
                     " is empty (0 bytes): starting with an empty allowlist"),
            std::string::npos)
      << log;
  EXPECT_EQ(status_of(proxy.port(), "any.test"), 403);  // empty allowlist: nothing allowed
  // Entries written later apply; emptied again, they are kept, with one new warning.
  write_file(proxy.settings().allowlist_path, "any.test\n");
  EXPECT_TRUE(becomes(proxy.port(), "any.test", 502));
  { std::ofstream truncate(proxy.settings().allowlist_path, std::ios::trunc); }
  const std::string warning =
      "allowlist " + proxy.settings().allowlist_path + " is empty (0 bytes)";
  for (int i = 0; i < 300 && count_of(proxy.log_text(), warning) < 2; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(count_of(proxy.log_text(), warning), 2u) << proxy.log_text();
  EXPECT_EQ(status_of(proxy.port(), "any.test"), 502);
}

// ---- The policy cannot be swapped through a symlink (issue 20, item 10) ----

// `--allowlist proj/cfg/allow.txt` where `cfg` is a symlink in a folder the confined command
// can write: re-pointing `cfg` at the command's own folder changes nothing (the gate reads the
// file it resolved at start-up), and says so; editing the real file still reloads.
TEST_F(ReloadTest, SymlinkedFolderRepointedAfterStartChangesNothing) {
  std::string real_folder;
  std::string evil_folder;
  std::string given;
  start("stable.test\n", [&](settings::Settings& s) {
    const std::string project = fs::path(s.blocklist_path).parent_path().string() + "/proj";
    real_folder = project + "/real";
    evil_folder = project + "/evil";
    fs::create_directories(real_folder);
    fs::create_directories(evil_folder);
    write_file(real_folder + "/allow.txt", "allowed.test\nstable.test\n");
    write_file(evil_folder + "/allow.txt", "allowed.test\nstable.test\nevil.test\n");
    fs::create_directory_symlink("real", project + "/cfg");
    given = project + "/cfg/allow.txt";
    s.allowlist_path = given;
  });
  const std::string real = fs::canonical(real_folder + "/allow.txt").string();
  EXPECT_EQ(reloader().allowlist_path(), real);
  EXPECT_TRUE(log_says("allowlist " + real + " (resolved from " + given + ")")) << reload_log();
  ASSERT_EQ(status_of(port(), "allowed.test"), 502);
  ASSERT_EQ(status_of(port(), "evil.test"), 403);

  // The command re-points the folder (atomically, as `ln -sfn` does) and edits its own list.
  const std::string project = fs::path(real_folder).parent_path().string();
  ASSERT_EQ(std::system(("ln -sfn evil " + project + "/cfg").c_str()), 0);
  write_file(evil_folder + "/allow.txt", "allowed.test\nstable.test\nevil.test\nmore-evil.test\n");
  EXPECT_TRUE(log_says("allowlist " + given + " now leads to " + evil_folder + "/allow.txt"))
      << reload_log();
  proxy_->gate().reload();  // a SIGHUP (the command may send one) does not resolve again
  std::this_thread::sleep_for(700ms);
  EXPECT_EQ(status_of(port(), "evil.test"), 403) << "the re-pointed folder's list was read";
  EXPECT_EQ(status_of(port(), "more-evil.test"), 403);
  EXPECT_EQ(status_of(port(), "allowed.test"), 502);

  // Editing the real file still reloads.
  write_file(real, "allowed.test\nstable.test\nreal-edit.test\n");
  EXPECT_TRUE(becomes(port(), "real-edit.test", 502));
  EXPECT_EQ(status_of(port(), "evil.test"), 403);
}

// The same for the blocklist given through a symlinked folder: a re-pointed folder whose list
// blocks nothing does not unblock anything.
TEST_F(ReloadTest, SymlinkedBlocklistFolderRepointedChangesNothing) {
  start("stable.test\nold.test\n", [](settings::Settings& s) {
    const std::string project = fs::path(s.blocklist_path).parent_path().string() + "/proj";
    fs::create_directories(project + "/real");
    fs::create_directories(project + "/evil");
    write_file(project + "/real/blocked.txt", "stable.test\nold.test\n");
    write_file(project + "/evil/blocked.txt", "# blocks nothing\n");
    fs::create_directory_symlink("real", project + "/cfg");
    s.blocklist_path = project + "/cfg/blocked.txt";
  });
  const std::string project = proxy_->folder() + "/proj";
  ASSERT_EQ(status_of(port(), "old.test"), 403);
  ASSERT_EQ(std::system(("ln -sfn evil " + project + "/cfg").c_str()), 0);
  EXPECT_TRUE(log_says("now leads to " + fs::canonical(project + "/evil").string()))
      << reload_log();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(status_of(port(), "old.test"), 403);
  write_file(project + "/real/blocked.txt", "stable.test\nold.test\nnew.test\n");
  EXPECT_TRUE(becomes(port(), "new.test", 403));
}

}  // namespace
}  // namespace sandgate::testing

namespace sandgate::testing {
namespace {

// A gate started as `serve` starts one: with the settings loaded from `sources` (which name the
// config file), the test's own listener, blocklist, DNS and log kept.
std::unique_ptr<TestProxy> gate_with_config(const std::string& blocklist_text,
                                            settings::Sources sources) {
  return std::make_unique<TestProxy>(
      blocklist_text,
      [sources](settings::Settings& s) {
        auto loaded = settings::load(sources);
        if (!loaded) {
          throw std::runtime_error(loaded.error());
        }
        settings::Settings test = s;
        s = std::move(*loaded);
        s.listen = test.listen;
        s.threads = test.threads;
        s.blocklist_path = test.blocklist_path;
        s.blocklist_is_default = false;
        s.dns_servers = test.dns_servers;
        s.log_format = test.log_format;
        s.log_file = test.log_file;
        s.drain = test.drain;
      },
      sources);
}

// A folder for a test's config file, made before the gate that reads it.
std::string config_folder() {
  char pattern[] = "/tmp/sandgate-config-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  return pattern;
}

struct FolderRemover {
  std::string folder;
  ~FolderRemover() {
    std::error_code ignored;
    fs::remove_all(folder, ignored);
  }
};

TEST(ReloadConfig, PolicySettingsInTheConfigFileApplyLive) {
  FolderRemover folder{config_folder()};
  const std::string config = folder.folder + "/sandgate.toml";
  write_file(config, "allow_ssh = true\n");
  settings::Sources sources;
  sources.flags.emplace("--config", config);
  sources.home = folder.folder;
  auto gate = gate_with_config("stable.test\n", sources);
  TestProxy& proxy = *gate;
  TestClient before(proxy.port());
  EXPECT_EQ(send_connect(before, "github.com:22").status, 502);  // allowed; the name is unknown

  write_file(config, "allow_ssh = false\n");
  bool flipped = false;
  // Up to 10 s: the watcher's debounce and a loaded sanitizer run can take more than a second.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!flipped && std::chrono::steady_clock::now() < deadline) {
    TestClient client(proxy.port());
    auto head = send_connect(client, "github.com:22");
    flipped = head.status == 403 && head.proxy_status.find("ssh-disabled") != std::string::npos;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(flipped);

  // A broken config keeps the previous settings.
  write_file(config, "allow_ssh = maybe\n");
  std::this_thread::sleep_for(500ms);
  TestClient after(proxy.port());
  EXPECT_EQ(send_connect(after, "github.com:22").status, 403);

  // So does an emptied one: it would reset every setting it held to its default.
  { std::ofstream truncate(config, std::ios::trunc); }
  const std::string warning = "config " + config + " is empty (0 bytes)";
  for (int i = 0; i < 300 && count_of(proxy.log_text(), warning) == 0; ++i) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(count_of(proxy.log_text(), warning), 1u) << proxy.log_text();
  TestClient emptied(proxy.port());
  EXPECT_EQ(send_connect(emptied, "github.com:22").status, 403);
}

// A config reload applies every reloadable setting that changed and names each restart-only one
// that changed in a warning (key, flag, variable and file); a setting a flag overrides is not
// reported; a secret is never echoed.
TEST(ReloadConfig, ReloadableSettingsApplyAndRestartOnlyOnesAreNamed) {
  FolderRemover folder{config_folder()};
  const std::string config = folder.folder + "/sandgate.toml";
  write_file(config, "allow_ssh = true\nsni_check = true\nthreads = 2\n");
  settings::Sources sources;
  sources.flags.emplace("--config", config);
  sources.flags.emplace("--head-timeout", "7");  // a flag wins over the file
  sources.home = folder.folder;
  auto gate = gate_with_config("stable.test\n", sources);
  TestProxy& proxy = *gate;

  const std::string token = "s3cret-token-value-1234";
  write_file(config,
             "allow_ssh = false\nsni_check = false\nthreads = 3\n"
             "tls_ports = [443, 8443]\nhead_timeout = 30\ntoken = \"" +
                 token + "\"\n");
  const std::string applied =
      "reloaded " + config +
      ": applied allow_ssh (--allow-ssh / GOOSE_SANDBOX_ALLOW_SSH), sni_check (--sni-check / "
      "SANDGATE_SNI_CHECK), tls_ports (--tls-ports / SANDGATE_TLS_PORTS), token (--token / "
      "SANDGATE_TOKEN)";
  const std::string restart = "config " + config +
                              ": threads (--threads / SANDGATE_THREADS) changed; not applied, in "
                              "force only after a restart";
  bool said = false;
  for (int i = 0; i < 200 && !said; ++i) {
    const std::string log = proxy.log_text();
    said = log.find(applied) != std::string::npos && log.find(restart) != std::string::npos;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(said) << proxy.log_text();
  EXPECT_EQ(proxy.log_text().find(token), std::string::npos) << "the token was logged";
  EXPECT_EQ(proxy.log_text().find("head_timeout"), std::string::npos);
  EXPECT_EQ(count_of(proxy.log_text(), "in force only after a restart"), 1u) << proxy.log_text();

  // Nothing changed: nothing is published, and the pending restart is still named.
  const auto generation = proxy.gate().reloader().generation();
  write_file(config,
             "allow_ssh = false\nsni_check = false\nthreads = 3\n"
             "tls_ports = [443, 8443]\nhead_timeout = 30\ntoken = \"" +
                 token + "\"\n# a comment\n");
  said = false;
  for (int i = 0; i < 200 && !said; ++i) {
    said = proxy.log_text().find("no reloadable setting changed") != std::string::npos &&
           count_of(proxy.log_text(), "in force only after a restart") == 2;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(said) << proxy.log_text();
  EXPECT_EQ(proxy.gate().reloader().generation(), generation);
}

std::string base64(std::string_view text) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (std::size_t i = 0; i < text.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, text.size() - i);
    std::uint32_t bits = 0;
    for (std::size_t j = 0; j < 3; ++j) {
      bits = (bits << 8) | (j < n ? static_cast<unsigned char>(text[i + j]) : 0U);
    }
    for (std::size_t j = 0; j < 4; ++j) {
      out += j <= n ? kAlphabet[(bits >> (18 - 6 * j)) & 0x3f] : '=';
    }
  }
  return out;
}

// The status of a CONNECT carrying `token` (none when empty).
int status_with_token(std::uint16_t port, const std::string& token) {
  TestClient client(port);
  std::string request = "CONNECT blocked.test:443 HTTP/1.1\r\nHost: blocked.test:443\r\n";
  if (!token.empty()) {
    request += "Proxy-Authorization: Basic " + base64("agent:" + token) + "\r\n";
  }
  client.send(request + "\r\n");
  return read_response_head(client).status;
}

// The token in the config file changes: the next request needs the new one, and the old one is
// refused (407); requests are decided as before (403 for the blocked name) once authorised.
TEST(ReloadConfig, ChangedTokenIsNeededByTheNextRequest) {
  FolderRemover folder{config_folder()};
  const std::string config = folder.folder + "/sandgate.toml";
  const std::string first = "first-token-0123456789";
  const std::string second = "second-token-9876543210";
  write_file(config, "token = \"" + first + "\"\n");
  settings::Sources sources;
  sources.flags.emplace("--config", config);
  sources.home = folder.folder;
  auto gate = gate_with_config("blocked.test\n", sources);
  TestProxy& proxy = *gate;
  ASSERT_EQ(status_with_token(proxy.port(), ""), 407);
  ASSERT_EQ(status_with_token(proxy.port(), first), 403);

  write_file(config, "token = \"" + second + "\"\n");
  bool flipped = false;
  for (int i = 0; i < 200 && !flipped; ++i) {
    flipped = status_with_token(proxy.port(), first) == 407;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(flipped) << proxy.log_text();
  EXPECT_EQ(status_with_token(proxy.port(), second), 403);
  EXPECT_EQ(status_with_token(proxy.port(), ""), 407);

  // Removed from the file: the gate serves without a token again.
  write_file(config, "# no token\n");
  flipped = false;
  for (int i = 0; i < 200 && !flipped; ++i) {
    flipped = status_with_token(proxy.port(), "") == 403;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(flipped) << proxy.log_text();
}

// The status of a plain GET for http://origin.test:PORT/ on `client`'s kept-alive connection,
// carrying `token`; reads the whole response (a 2-byte body, or the gate's own answer).
int get_with_token(TestClient& client, std::uint16_t origin_port, const std::string& token) {
  const std::string url = "http://origin.test:" + std::to_string(origin_port) + "/";
  client.send("GET " + url + " HTTP/1.1\r\nHost: origin.test\r\nProxy-Authorization: Basic " +
              base64("agent:" + token) + "\r\n\r\n");
  const ResponseHead head = read_response_head(client);
  client.pending = head.body_after;
  if (head.status == 200) {
    client.read_exact(2);  // "ok"
  }
  return head.status;
}

// A connection kept alive across a reload that changes the token: its next request is
// authorised with the new token, not the one it was admitted with.
TEST(ReloadConfig, ChangedTokenIsNeededByTheNextRequestOfAKeptAliveConnection) {
  fakes::HttpOrigin origin(
      [](const fakes::HttpOrigin::Request&) { return fakes::HttpOrigin::Reply::fixed(200, "ok"); });
  FolderRemover folder{config_folder()};
  const std::string config = folder.folder + "/sandgate.toml";
  const std::string first = "first-token-0123456789";
  const std::string second = "second-token-9876543210";
  write_file(config, "block_loopback = false\ntoken = \"" + first + "\"\n");
  settings::Sources sources;
  sources.flags.emplace("--config", config);
  sources.home = folder.folder;
  auto gate = gate_with_config("", sources);
  TestProxy& proxy = *gate;
  proxy.dns().set("origin.test", {"127.0.0.1"});

  TestClient kept(proxy.port());
  ASSERT_EQ(get_with_token(kept, origin.port(), first), 200) << proxy.log_text();

  write_file(config, "block_loopback = false\ntoken = \"" + second + "\"\n");
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("applied token (--token / SANDGATE_TOKEN)") != std::string::npos;
  })) << proxy.log_text();
  // The reload is posted to the workers after the line above: wait until a new connection sees
  // it, so that the kept one is asked only once the new token is in force.
  bool applied = false;
  for (int i = 0; i < 200 && !applied; ++i) {
    applied = status_with_token(proxy.port(), first) == 407;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(applied) << proxy.log_text();

  EXPECT_EQ(get_with_token(kept, origin.port(), first), 407)
      << "the kept-alive connection was let through with the replaced token\n"
      << proxy.log_text();
  TestClient fresh(proxy.port());
  EXPECT_EQ(get_with_token(fresh, origin.port(), second), 200) << proxy.log_text();
}

// A connection accepted before the reload whose first request comes after it: that request is
// checked against the token in force when its head arrives, not when the connection was opened.
TEST(ReloadConfig, ChangedTokenIsNeededByTheFirstRequestOfAConnectionOpenedBefore) {
  fakes::HttpOrigin origin(
      [](const fakes::HttpOrigin::Request&) { return fakes::HttpOrigin::Reply::fixed(200, "ok"); });
  FolderRemover folder{config_folder()};
  const std::string config = folder.folder + "/sandgate.toml";
  const std::string first = "first-token-0123456789";
  const std::string second = "second-token-9876543210";
  write_file(config, "block_loopback = false\ntoken = \"" + first + "\"\n");
  settings::Sources sources;
  sources.flags.emplace("--config", config);
  sources.home = folder.folder;
  auto gate = gate_with_config("", sources);
  TestProxy& proxy = *gate;
  proxy.dns().set("origin.test", {"127.0.0.1"});

  TestClient early(proxy.port());  // accepted now, asks nothing yet
  ASSERT_EQ(get_with_token(early, origin.port(), first), 200) << proxy.log_text();
  TestClient opened_before(proxy.port());
  for (int i = 0; i < 200 && proxy.server().open_connections() < 2; ++i) {
    std::this_thread::sleep_for(10ms);
  }

  write_file(config, "block_loopback = false\ntoken = \"" + second + "\"\n");
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("applied token (--token / SANDGATE_TOKEN)") != std::string::npos;
  })) << proxy.log_text();
  bool applied = false;
  for (int i = 0; i < 200 && !applied; ++i) {
    applied = status_with_token(proxy.port(), first) == 407;
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(applied) << proxy.log_text();

  EXPECT_EQ(get_with_token(opened_before, origin.port(), first), 407)
      << "the first request of a connection opened before the reload passed with the old token\n"
      << proxy.log_text();
}

// How long the gate waits for a request head that never ends (it answers 408 then).
std::chrono::milliseconds head_wait(std::uint16_t port) {
  TestClient client(port);
  const auto started = std::chrono::steady_clock::now();
  client.send("CONNECT slow.test:443 HTTP/1.1\r\n");
  const auto head = read_response_head(client);
  EXPECT_EQ(head.status, 408);
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                               started);
}

// A timeout in the config file changes: connections accepted after the reload use it.
TEST(ReloadConfig, ChangedTimeoutAppliesToNewConnections) {
  FolderRemover folder{config_folder()};
  const std::string config = folder.folder + "/sandgate.toml";
  write_file(config, "head_timeout = 3\n");
  settings::Sources sources;
  sources.flags.emplace("--config", config);
  sources.home = folder.folder;
  auto gate = gate_with_config("", sources);
  TestProxy& proxy = *gate;
  const auto before = head_wait(proxy.port());
  EXPECT_GE(before, 2900ms);

  write_file(config, "head_timeout = 1\n");
  ASSERT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("applied head_timeout (--head-timeout / SANDGATE_HEAD_TIMEOUT)") !=
           std::string::npos;
  })) << proxy.log_text();
  const auto after = head_wait(proxy.port());
  EXPECT_GE(after, 900ms);
  EXPECT_LT(after, 2500ms);
}

// A restart-only setting (listen) changes: a warning names it, the file and the key, and the
// gate keeps serving on the listener it has.
TEST(ReloadConfig, ChangedListenIsNamedAndTheListenerKept) {
  FolderRemover folder{config_folder()};
  const std::string config = folder.folder + "/sandgate.toml";
  write_file(config, "listen = \"127.0.0.1:0\"\n");
  settings::Sources sources;
  sources.flags.emplace("--config", config);
  sources.home = folder.folder;
  auto gate = gate_with_config("blocked.test\n", sources);
  TestProxy& proxy = *gate;
  ASSERT_EQ(status_of(proxy.port(), "blocked.test"), 403);

  write_file(config, "listen = \"127.0.0.1:1\"\n");
  EXPECT_TRUE(proxy.wait_for_log([&config](const std::string& log) {
    return log.find("config " + config +
                    ": listen (--listen / SANDGATE_LISTEN) changed; not applied, in force only "
                    "after a restart") != std::string::npos;
  })) << proxy.log_text();
  EXPECT_EQ(status_of(proxy.port(), "blocked.test"), 403) << "the old listener is kept";
  EXPECT_EQ(proxy.gate().listen_text(), "127.0.0.1:" + std::to_string(proxy.port()));
}

// The config file given through a symlinked folder: re-pointing the folder changes nothing;
// editing the real file still applies.
TEST(ReloadConfig, SymlinkedConfigFolderRepointedChangesNothing) {
  FolderRemover folder{config_folder()};
  const std::string project = folder.folder + "/proj";
  fs::create_directories(project + "/real");
  fs::create_directories(project + "/evil");
  write_file(project + "/real/sandgate.toml", "allow_ssh = false\n");
  write_file(project + "/evil/sandgate.toml", "allow_ssh = true\n");
  fs::create_directory_symlink("real", project + "/cfg");
  const std::string given = project + "/cfg/sandgate.toml";
  settings::Sources sources;
  sources.flags.emplace("--config", given);
  sources.home = folder.folder;
  auto gate = gate_with_config("stable.test\n", sources);
  TestProxy& proxy = *gate;
  const std::string real = fs::canonical(project + "/real/sandgate.toml").string();
  EXPECT_EQ(proxy.gate().reloader().config_path(), real);
  EXPECT_NE(proxy.log_text().find("config " + real + " (resolved from " + given + ")"),
            std::string::npos)
      << proxy.log_text();

  auto ssh_status = [&proxy] {
    TestClient client(proxy.port());
    return send_connect(client, "github.com:22").status;
  };
  ASSERT_EQ(ssh_status(), 403);
  ASSERT_EQ(std::system(("ln -sfn evil " + project + "/cfg").c_str()), 0);
  write_file(project + "/evil/sandgate.toml", "allow_ssh = true\nallow_ip = true\n");
  proxy.gate().reload();
  std::this_thread::sleep_for(800ms);
  EXPECT_EQ(ssh_status(), 403) << "the re-pointed folder's config was applied";
  EXPECT_NE(proxy.log_text().find("config " + given + " now leads to"), std::string::npos)
      << proxy.log_text();

  write_file(real, "allow_ssh = true\n");
  bool flipped = false;
  for (int i = 0; i < 100 && !flipped; ++i) {
    flipped = ssh_status() == 502;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_TRUE(flipped) << proxy.log_text();
}

}  // namespace
}  // namespace sandgate::testing
