// The decision log to a file: lines are batched, yet each is on disk within the flush interval,
// operator notes are written at once and in order, reopen() leaves earlier lines in the moved
// file, and destruction loses nothing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "proxy/log/decision_log.hpp"

namespace sandgate::log {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string read_all(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::size_t lines_in(const std::string& text) {
  return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n'));
}

class DecisionLogFileTest : public ::testing::Test {
 protected:
  DecisionLogFileTest() {
    folder_ = fs::temp_directory_path() / ("sandgate-log-" + std::to_string(::getpid()));
    fs::create_directories(folder_);
    path_ = folder_ / "decisions.log";
  }
  ~DecisionLogFileTest() override { fs::remove_all(folder_); }

  std::unique_ptr<DecisionLog> open_log() {
    auto opened = DecisionLog::open(settings::LogFormat::json, path_.string());
    EXPECT_TRUE(opened.has_value());
    return std::move(*opened);
  }

  static Record allow(std::uint64_t id) {
    Record record;
    record.connection_id = id;
    record.method = "CONNECT";
    record.host = "example.com";
    record.port = 443;
    record.reason = "allowed";
    return record;
  }

  fs::path folder_;
  fs::path path_;
};

TEST_F(DecisionLogFileTest, ABatchedLineReachesTheFileWithinTheFlushInterval) {
  auto log = open_log();
  log->write(allow(1));
  const auto deadline = std::chrono::steady_clock::now() + 2s;
  while (lines_in(read_all(path_)) < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(lines_in(read_all(path_)), 1u);
}

TEST_F(DecisionLogFileTest, NotesAreWrittenAtOnceAfterWhatCameBefore) {
  auto log = open_log();
  log->write(allow(1));
  log->note("warning", "something to know");
  const std::string text = read_all(path_);  // no wait: the note flushed both
  ASSERT_EQ(lines_in(text), 2u) << text;
  EXPECT_LT(text.find("\"conn\":1"), text.find("something to know"));
}

TEST_F(DecisionLogFileTest, NothingIsLostFromManyThreadsAndNoLineIsTorn) {
  constexpr int kThreads = 4;
  constexpr int kLines = 20000;
  {
    auto log = open_log();
    std::vector<std::thread> writers;
    for (int t = 0; t < kThreads; ++t) {
      writers.emplace_back([&log, t] {
        for (int i = 0; i < kLines; ++i) {
          log->write(allow(static_cast<std::uint64_t>(t) * kLines + i + 1));
        }
      });
    }
    for (auto& writer : writers) {
      writer.join();
    }
  }  // destruction flushes
  std::ifstream in(path_);
  std::size_t count = 0;
  for (std::string line; std::getline(in, line); ++count) {
    ASSERT_TRUE(line.starts_with("{") && line.ends_with("}")) << line;
  }
  EXPECT_EQ(count, static_cast<std::size_t>(kThreads) * kLines);
}

TEST_F(DecisionLogFileTest, ReopenLeavesEarlierLinesInTheMovedFile) {
  auto log = open_log();
  log->write(allow(1));
  fs::rename(path_, folder_ / "decisions.log.1");
  log->reopen();
  log->write(allow(2));
  log->flush();
  const std::string moved = read_all(folder_ / "decisions.log.1");
  const std::string fresh = read_all(path_);
  EXPECT_NE(moved.find("\"conn\":1"), std::string::npos) << moved;
  EXPECT_EQ(fresh.find("\"conn\":1"), std::string::npos) << fresh;
  EXPECT_NE(fresh.find("\"conn\":2"), std::string::npos) << fresh;
}

}  // namespace
}  // namespace sandgate::log
