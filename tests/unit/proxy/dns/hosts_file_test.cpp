// The in-memory hosts file on its own: one parsed table per file for the whole process, however
// many workers' resolvers read it. Real files in the temporary folder; several threads read one
// file at once, as the gate's workers do.
#include "proxy/dns/hosts_file.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace sandgate::dns {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock = HostsFile::clock;

class TempFile {
 public:
  TempFile() {
    path_ =
        std::filesystem::temp_directory_path() /
        ("sandgate-hosts-unit-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
  }
  ~TempFile() { std::filesystem::remove(path_); }
  // Written beside and renamed into place, as editors and package managers save.
  void replace(const std::string& text) const {
    const std::filesystem::path next = path_.string() + ".next";
    std::ofstream(next, std::ios::trunc) << text;
    std::filesystem::rename(next, path_);
  }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

asio::ip::address ip(const char* text) { return asio::ip::make_address(text); }

// A large file is held once: before, every worker parsed and kept its own copy (a 64 MiB file
// cost about 450 MB and a 3-4 s stall per worker).
TEST(HostsFile, WorkersReadingOneFileShareOneParse) {
  TempFile file;
  file.replace("10.0.0.1 shared.test\n");
  HostsFile first(file.path(), 0ms);
  HostsFile second(file.path(), 0ms);
  const auto parses = HostsFile::parses();
  EXPECT_EQ(first.lookup("shared.test", clock::now()), std::vector{ip("10.0.0.1")});
  EXPECT_EQ(second.lookup("shared.test", clock::now()), std::vector{ip("10.0.0.1")});
  EXPECT_EQ(HostsFile::parses(), parses + 1);

  // A change is parsed by the first to see it and adopted by the other.
  file.replace("10.0.0.2 shared.test\n");
  EXPECT_EQ(first.lookup("shared.test", clock::now()), std::vector{ip("10.0.0.2")});
  EXPECT_EQ(second.lookup("shared.test", clock::now()), std::vector{ip("10.0.0.2")});
  EXPECT_EQ(HostsFile::parses(), parses + 2);
  EXPECT_EQ(first.generation(), 2u);
  EXPECT_EQ(second.generation(), 2u);
}

TEST(HostsFile, TableOutlivesNoReaderAndDifferentFilesStayApart) {
  TempFile one;
  TempFile two;
  one.replace("10.0.0.1 name.test\n");
  two.replace("10.0.0.2 name.test\n");
  {
    HostsFile reader(one.path(), 0ms);
    EXPECT_EQ(reader.lookup("name.test", clock::now()), std::vector{ip("10.0.0.1")});
  }
  HostsFile other(two.path(), 0ms);
  EXPECT_EQ(other.lookup("name.test", clock::now()), std::vector{ip("10.0.0.2")});
  // Nobody holds the first table any more: a new reader parses it again, and sees it right.
  const auto parses = HostsFile::parses();
  HostsFile again(one.path(), 0ms);
  EXPECT_EQ(again.lookup("name.test", clock::now()), std::vector{ip("10.0.0.1")});
  EXPECT_EQ(HostsFile::parses(), parses + 1);
}

// Workers on their own threads while the file keeps changing: each always answers from a
// complete table (one of the versions written), never from a half-built one.
TEST(HostsFile, ConcurrentReadersDuringChangesSeeWholeTables) {
  TempFile file;
  file.replace("10.0.0.1 moving.test\n10.0.0.1 fixed.test\n");
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      HostsFile reader(file.path(), 0ms);
      while (!stop.load()) {
        const auto moving = reader.lookup("moving.test", clock::now());
        const auto fixed = reader.lookup("fixed.test", clock::now());
        if (moving.size() != 1 || fixed.size() != 1) {
          bad.fetch_add(1);
        }
      }
    });
  }
  for (int i = 0; i < 200; ++i) {
    const std::string address = "10.0.0." + std::to_string(1 + i % 200);
    file.replace(address + " moving.test\n" + address + " fixed.test\n");
  }
  stop.store(true);
  for (auto& reader : readers) {
    reader.join();
  }
  EXPECT_EQ(bad.load(), 0);
  HostsFile last(file.path(), 0ms);
  EXPECT_EQ(last.lookup("moving.test", clock::now()), std::vector{ip("10.0.0.200")});
}

TEST(HostsFile, MissingFileThenCreated) {
  TempFile file;
  HostsFile reader(file.path(), 0ms);
  EXPECT_TRUE(reader.lookup("late.test", clock::now()).empty());
  EXPECT_EQ(reader.lookup("localhost", clock::now()).size(), 2u);
  file.replace("10.0.0.9 late.test\n");
  EXPECT_EQ(reader.lookup("late.test", clock::now()), std::vector{ip("10.0.0.9")});
}

}  // namespace
}  // namespace sandgate::dns
