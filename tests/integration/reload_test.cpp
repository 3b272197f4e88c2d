// Live reload against a running proxy and real files: every way a file can change flips the
// decision within a second, a domain blocked before and after a change is never let through in
// between, and broken, deleted or vanished files keep the last good rules.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <thread>

#include "proxy/reload/policy_reloader.hpp"
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

// A running proxy with a reloader that publishes into it, and a guard thread that keeps asking
// about a domain blocked before and after every change: it must never be allowed.
class ReloadTest : public ::testing::Test {
 protected:
  void start(const std::string& initial = "stable.test\nold.test\n",
             std::function<void(settings::Settings&)> configure = {}) {
    proxy_ = std::make_unique<TestProxy>(initial, configure);
    reloader_ = std::make_unique<reload::PolicyReloader>(
        proxy_->settings(), settings::Sources{}, *log_sink(), proxy_->server().current_policy(),
        [this](std::shared_ptr<const rules::Policy> policy) {
          proxy_->server().publish(std::move(policy));
        });
    reloader_->start();
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
    stop_guard_ = true;
    if (guard_.joinable()) {
      guard_.join();
    }
    EXPECT_EQ(guard_failures_.load(), 0)
        << "a domain blocked before and after the change was allowed in between";
    EXPECT_GT(guard_checks_.load(), 0);
    if (HasFailure()) {
      std::ifstream in(proxy_->folder() + "/reload.log");
      std::cerr << "reload log:\n" << in.rdbuf() << "\n";
    }
    reloader_.reset();
    proxy_.reset();
  }

  log::DecisionLog* log_sink() {
    if (!log_) {
      auto opened =
          log::DecisionLog::open(settings::LogFormat::json, proxy_->folder() + "/reload.log");
      log_ = std::move(opened.value());
    }
    return log_.get();
  }

  std::string blocklist() const { return proxy_->settings().blocklist_path; }
  std::uint16_t port() const { return proxy_->port(); }

  std::unique_ptr<TestProxy> proxy_;
  std::unique_ptr<log::DecisionLog> log_;
  std::unique_ptr<reload::PolicyReloader> reloader_;
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

TEST_F(ReloadTest, SymlinkRetargeted) {
  start();
  const std::string a = proxy_->folder() + "/a.txt";
  const std::string b = proxy_->folder() + "/b.txt";
  write_file(a, "stable.test\nlink-a.test\n");
  write_file(b, "stable.test\nlink-b.test\n");
  fs::remove(blocklist());
  fs::create_symlink(a, blocklist());
  EXPECT_TRUE(becomes(port(), "link-a.test", 403));
  ASSERT_EQ(std::system(("ln -sfn " + b + " " + blocklist()).c_str()), 0);
  EXPECT_TRUE(becomes(port(), "link-b.test", 403));
  EXPECT_TRUE(becomes(port(), "link-a.test", 502));
  // And a write to the current target through the link.
  write_file(b, "stable.test\nlink-b2.test\n");
  EXPECT_TRUE(becomes(port(), "link-b2.test", 403));
}

TEST_F(ReloadTest, FolderDeletedAndRestored) {
  start("stable.test\n");
  // Move the blocklist into a folder of its own, then restart the reloader on it.
  const std::string folder = proxy_->folder() + "/rules";
  fs::create_directories(folder);
  const std::string path = folder + "/blocked.txt";
  write_file(path, "stable.test\nold.test\n");
  proxy_->settings().blocklist_path = path;
  reloader_ = std::make_unique<reload::PolicyReloader>(
      proxy_->settings(), settings::Sources{}, *log_sink(), proxy_->server().current_policy(),
      [this](std::shared_ptr<const rules::Policy> policy) {
        proxy_->server().publish(std::move(policy));
      });
  reloader_->start();
  reloader_->reload_all();
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
  const auto before = reloader_->generation();
  reloader_->reload_all();
  const auto deadline = std::chrono::steady_clock::now() + 1s;
  while (reloader_->generation() == before && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_GT(reloader_->generation(), before);
  EXPECT_EQ(status_of(port(), "old.test"), 403);
}

}  // namespace
}  // namespace sandgate::testing

namespace sandgate::testing {
namespace {

TEST(ReloadConfig, PolicySettingsInTheConfigFileApplyLive) {
  TestProxy proxy("stable.test\n");
  const std::string config = proxy.folder() + "/sandgate.toml";
  write_file(config, "allow_ssh = true\n");
  settings::Sources sources;
  sources.flags.emplace("--config", config);
  sources.home = proxy.folder();
  auto base = settings::load(sources);
  ASSERT_TRUE(base) << base.error();
  base->blocklist_path = proxy.settings().blocklist_path;
  auto opened = log::DecisionLog::open(settings::LogFormat::json, proxy.folder() + "/r.log");
  reload::PolicyReloader reloader(*base, sources, **opened, proxy.server().current_policy(),
                                  [&proxy](std::shared_ptr<const rules::Policy> policy) {
                                    proxy.server().publish(std::move(policy));
                                  });
  reloader.start();
  TestClient before(proxy.port());
  EXPECT_EQ(send_connect(before, "github.com:22").status, 502);  // allowed; the name is unknown

  write_file(config, "allow_ssh = false\n");
  bool flipped = false;
  for (int i = 0; i < 100 && !flipped; ++i) {
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
}

}  // namespace
}  // namespace sandgate::testing
