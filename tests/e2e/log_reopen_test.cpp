// The decision log and logrotate, end to end: the real `sandgate serve` with --log-file; after
// the file is moved away and SIGHUP arrives, new lines go to a fresh file at the original path
// and the moved file keeps what was written before, as often as logrotate runs.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>

#include "tests/integration/harness/test_client.hpp"
#include "tests/support/eventually.hpp"
#include "tests/support/gate_process.hpp"

namespace sandgate::testing {
namespace {

namespace fs = std::filesystem;

const std::string kSandgate = std::string(SANDGATE_BINARY_DIR) + "/bin/sandgate";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class LogReopen : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "sandgate-logreopen-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    folder_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(folder_, ec);
  }
  std::string folder_;
};

// What logrotate does: move the file away, then SIGHUP. Waits until the gate has made a fresh
// file at `path`.
::testing::AssertionResult rotate(GateProcess& gate, const std::string& path,
                                  const std::string& moved_to) {
  fs::rename(path, moved_to);
  gate.signal(SIGHUP);
  if (!eventually([&] { return fs::exists(path); })) {
    return ::testing::AssertionFailure() << "no fresh log file after SIGHUP; the gate is "
                                         << gate.state() << "; stderr: " << gate.stderr_text();
  }
  return ::testing::AssertionSuccess();
}

// A denied CONNECT to `host`, and the wait until its decision line is in the file at `path`.
::testing::AssertionResult deny_and_log(GateProcess& gate, const std::string& host,
                                        const std::string& path) {
  try {
    TestClient client(gate.port());
    const int status = send_connect(client, host + ":443").status;
    if (status != 403) {
      return ::testing::AssertionFailure() << "CONNECT " << host << ": status " << status;
    }
  } catch (const std::exception& error) {
    return ::testing::AssertionFailure()
           << "CONNECT " << host << ": " << error.what() << "; the gate is " << gate.state()
           << "; stderr: " << gate.stderr_text();
  }
  if (!eventually([&] { return contains(read_text_file(path), "\"host\":\"" + host + "\""); })) {
    return ::testing::AssertionFailure()
           << "no line for " << host << " in " << path << ": " << read_text_file(path);
  }
  return ::testing::AssertionSuccess();
}

TEST_F(LogReopen, SighupAfterMoveWritesToAFreshFile) {
  const std::string blocklist = folder_ + "/blocked.txt";
  std::ofstream(blocklist) << "before-rotate.test\nafter-rotate.test\n";
  const std::string log_path = folder_ + "/decisions.log";
  const std::string moved_path = folder_ + "/decisions.log.1";

  GateProcess gate(kSandgate,
                   {"--listen", "127.0.0.1:0", "--blocklist", blocklist, "--log-file", log_path,
                    "--log-format", "json", "--threads", "1"},
                   folder_);
  ASSERT_TRUE(gate.ready()) << gate.error();

  ASSERT_TRUE(deny_and_log(gate, "before-rotate.test", log_path));
  ASSERT_TRUE(rotate(gate, log_path, moved_path));
  ASSERT_TRUE(deny_and_log(gate, "after-rotate.test", log_path))
      << "moved file: " << read_text_file(moved_path);

  const std::string fresh = read_text_file(log_path);
  const std::string moved = read_text_file(moved_path);
  EXPECT_FALSE(contains(fresh, "before-rotate.test")) << fresh;
  EXPECT_TRUE(contains(moved, "\"host\":\"before-rotate.test\"")) << moved;
  EXPECT_FALSE(contains(moved, "after-rotate.test")) << moved;
}

// logrotate runs every day: the gate must take any number of SIGHUPs, and SIGTERM after them
// must still drain and exit 0 (a signal handler that outlived its state crashed here).
TEST_F(LogReopen, RotatesRepeatedlyThenStopsCleanly) {
  const std::string blocklist = folder_ + "/blocked.txt";
  std::ofstream(blocklist) << "day0.test\nday1.test\nday2.test\n";
  const std::string log_path = folder_ + "/decisions.log";

  GateProcess gate(kSandgate,
                   {"--listen", "127.0.0.1:0", "--blocklist", blocklist, "--log-file", log_path,
                    "--log-format", "json", "--threads", "1"},
                   folder_);
  ASSERT_TRUE(gate.ready()) << gate.error();

  ASSERT_TRUE(deny_and_log(gate, "day0.test", log_path));
  for (int day = 1; day <= 2; ++day) {
    const std::string moved_path = log_path + "." + std::to_string(day);
    ASSERT_TRUE(rotate(gate, log_path, moved_path)) << "rotation " << day;
    ASSERT_TRUE(deny_and_log(gate, "day" + std::to_string(day) + ".test", log_path))
        << "after rotation " << day;
    EXPECT_TRUE(contains(read_text_file(moved_path),
                         "\"host\":\"day" + std::to_string(day - 1) + ".test\""));
  }

  const int status = gate.stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "after SIGTERM: "
      << (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                              : "exit " + std::to_string(WEXITSTATUS(status)))
      << "; stderr: " << gate.stderr_text();
}

}  // namespace
}  // namespace sandgate::testing
