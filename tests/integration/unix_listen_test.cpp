// `--listen unix:PATH` through a real in-process sandgate: a client on the unix socket gets
// tunnels and plain HTTP like a TCP client, the socket is created with mode 0600 and removed
// when the gate stops, a stale socket left by a dead gate is replaced, a file that is not a
// socket is left alone, a live gate on the path makes a second one fail with a clear error
// (in-process and as the real executable), and the log names unix clients by user id.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "tests/fakes/http_origin.hpp"
#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_proxy.hpp"

namespace sandgate::testing {
namespace {

namespace fs = std::filesystem;
using fakes::HttpOrigin;
using fakes::TcpOrigin;
using clock = std::chrono::steady_clock;

const std::string kSandgate = std::string(SANDGATE_BINARY_DIR) + "/bin/sandgate";

// A short temporary folder (a unix socket path must fit in 107 bytes), removed afterwards.
class Folder {
 public:
  Folder() {
    char pattern[] = "/tmp/sandgate-unix-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) {
      throw std::runtime_error("mkdtemp failed");
    }
    path_ = pattern;
  }
  ~Folder() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string operator/(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.data(), path.size());
  return address;
}

// A blocking unix-socket client with a deadline on every read.
class UnixClient {
 public:
  explicit UnixClient(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_un address = unix_address(path);
    if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
      const std::string error = std::strerror(errno);
      ::close(fd_);
      throw std::runtime_error("connect to " + path + ": " + error);
    }
  }
  ~UnixClient() { ::close(fd_); }
  UnixClient(const UnixClient&) = delete;
  UnixClient& operator=(const UnixClient&) = delete;

  void send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        throw std::runtime_error("send failed");
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  // Reads until `delimiter` has arrived, the peer closes, or 5 s pass (empty delimiter: until
  // the peer closes).
  std::string read_until(std::string_view delimiter) {
    std::string out;
    const auto deadline = clock::now() + std::chrono::seconds(5);
    std::array<char, 4096> buffer;
    while (delimiter.empty() || out.find(delimiter) == std::string::npos) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now()).count();
      pollfd p{fd_, POLLIN, 0};
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) {
        break;
      }
      const ssize_t n = ::recv(fd_, buffer.data(), buffer.size(), 0);
      if (n <= 0) {
        break;
      }
      out.append(buffer.data(), static_cast<std::size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
};

void on_unix_socket(settings::Settings& s, const std::string& path) {
  s.listen = settings::ListenAddress{settings::UnixPath{path}};
  s.policy.block_loopback = false;  // the test origins are on loopback
}

TEST(UnixListen, TunnelsAndPlainHttpThroughTheSocket) {
  Folder folder;
  const std::string path = folder / "gate.sock";
  TcpOrigin echo;
  HttpOrigin web([](const HttpOrigin::Request& r) {
    return HttpOrigin::Reply::fixed(200, "saw " + r.target);
  });
  {
    TestProxy proxy("", [&path](settings::Settings& s) { on_unix_socket(s, path); });
    proxy.dns().set("origin.test", {"127.0.0.1"});
    EXPECT_EQ(proxy.server().listen_text(), "unix:" + path);

    // Only its owner may connect: srw-------.
    struct stat st {};
    ASSERT_EQ(::lstat(path.c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0600u);
    if (::geteuid() == 0) {
      // Another user, with the folder open to everyone so that only the socket's mode can
      // refuse: connect() fails with EACCES. (Needs root to become another user.)
      ASSERT_EQ(::chmod((folder / "").c_str(), 0711), 0);
      const pid_t child = ::fork();
      if (child == 0) {
        if (::setgid(65534) != 0 || ::setuid(65534) != 0) {
          ::_exit(3);
        }
        const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        const sockaddr_un address = unix_address(path);
        if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0) {
          ::_exit(0);
        }
        ::_exit(errno == EACCES ? 1 : 2);
      }
      int status = 0;
      ASSERT_EQ(::waitpid(child, &status, 0), child);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1)
          << "another user could connect (or failed otherwise): status " << status;
    }

    UnixClient tunnel(path);
    const std::string target = "origin.test:" + std::to_string(echo.port());
    tunnel.send("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n");
    EXPECT_EQ(tunnel.read_until("\r\n\r\n"), "HTTP/1.1 200 Connection Established\r\n\r\n");
    tunnel.send("ping");
    EXPECT_EQ(tunnel.read_until("ping"), "ping");

    UnixClient plain(path);
    plain.send("GET http://origin.test:" + std::to_string(web.port()) +
               "/x HTTP/1.1\r\nHost: origin.test\r\nConnection: close\r\n\r\n");
    const std::string reply = plain.read_until("");
    EXPECT_EQ(reply.rfind("HTTP/1.1 200 ", 0), 0u) << reply;
    EXPECT_NE(reply.find("saw /x"), std::string::npos) << reply;

    // The log names the client by the user id the kernel reports for it.
    const std::string client = "\"client\":\"uid:" + std::to_string(::getuid()) + "\"";
    EXPECT_TRUE(proxy.wait_for_log([&client](const std::string& log) {
      return log.find(client) != std::string::npos &&
             log.find("\"method\":\"GET\"") != std::string::npos &&
             log.find("\"method\":\"CONNECT\"") != std::string::npos;
    })) << proxy.log_text();
  }
  EXPECT_FALSE(fs::exists(fs::symlink_status(path))) << "the socket is removed on exit";
}

TEST(UnixListen, CurlThroughTheSocket) {
  if (std::system("command -v curl >/dev/null 2>&1") != 0) {
    FAIL() << "curl is required (scripts/install-deps.sh installs it)";
  }
  Folder folder;
  const std::string path = folder / "gate.sock";
  HttpOrigin web([](const HttpOrigin::Request& r) {
    return HttpOrigin::Reply::fixed(200, "curl saw " + r.target);
  });
  TestProxy proxy("", [&path](settings::Settings& s) { on_unix_socket(s, path); });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  // curl (7.88) drops the proxy when --unix-socket is given: it connects to the socket and
  // speaks to it as to the origin. --request-target makes that request absolute-form, which is
  // what a proxy client sends, so this is a real curl doing plain HTTP through the socket. (For
  // CONNECT through a unix socket, see the gtest client above.)
  const std::string url = "http://origin.test:" + std::to_string(web.port()) + "/c";
  FILE* pipe = ::popen(("curl -sS --max-time 10 --noproxy '' --unix-socket " + path +
                        " --request-target " + url + " " + url + " 2>&1")
                           .c_str(),
                       "r");
  ASSERT_NE(pipe, nullptr);
  std::array<char, 4096> buffer;
  std::string output;
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    output.append(buffer.data(), n);
  }
  const int status = ::pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << output;
  EXPECT_EQ(output, "curl saw /c");
  ASSERT_TRUE(web.wait_for_requests(1));
  EXPECT_EQ(web.requests().at(0).target, "/c");
}

// A socket file left by a gate that died (nobody accepts on it) is replaced.
TEST(UnixListen, StaleSocketIsReplaced) {
  Folder folder;
  const std::string path = folder / "gate.sock";
  {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_un address = unix_address(path);
    ASSERT_EQ(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address), 0);
    ::close(fd);  // the file stays, with nobody behind it
    ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
  }
  struct stat before {};
  ASSERT_EQ(::lstat(path.c_str(), &before), 0);
  ASSERT_TRUE(S_ISSOCK(before.st_mode));

  TcpOrigin echo;
  TestProxy proxy("", [&path](settings::Settings& s) { on_unix_socket(s, path); });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  // (The new socket may get the old one's inode number back, so only its mode tells.)
  struct stat after {};
  ASSERT_EQ(::lstat(path.c_str(), &after), 0);
  EXPECT_EQ(after.st_mode & 07777, 0600u);
  UnixClient client(path);
  const std::string target = "origin.test:" + std::to_string(echo.port());
  client.send("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n");
  EXPECT_EQ(client.read_until("\r\n\r\n"), "HTTP/1.1 200 Connection Established\r\n\r\n");
  EXPECT_TRUE(proxy.wait_for_log([](const std::string& log) {
    return log.find("removed the stale socket") != std::string::npos;
  })) << proxy.log_text();
}

TEST(UnixListen, AFileThatIsNotASocketIsLeftAlone) {
  Folder folder;
  const std::string path = folder / "gate.sock";
  std::ofstream(path) << "precious\n";
  try {
    TestProxy proxy("", [&path](settings::Settings& s) { on_unix_socket(s, path); });
    ADD_FAILURE() << "the gate started on a regular file";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()), "cannot listen on unix:" + path +
                                             ": it exists and is not a socket; refusing to "
                                             "replace it");
  }
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  EXPECT_EQ(text, "precious");
}

TEST(UnixListen, ALiveGateOnThePathStopsASecondOne) {
  Folder folder;
  const std::string path = folder / "gate.sock";
  TcpOrigin echo;
  TestProxy first("", [&path](settings::Settings& s) { on_unix_socket(s, path); });
  first.dns().set("origin.test", {"127.0.0.1"});
  struct stat original {};
  ASSERT_EQ(::lstat(path.c_str(), &original), 0);

  // In-process.
  try {
    TestProxy second("", [&path](settings::Settings& s) { on_unix_socket(s, path); });
    ADD_FAILURE() << "a second gate started on a live socket";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()), "cannot listen on unix:" + path +
                                             ": another program (another sandgate?) is "
                                             "serving on it; stop it or choose another path");
  }

  // The real executable: exit status 2 and one clear line.
  ASSERT_TRUE(fs::exists(kSandgate)) << kSandgate;
  const std::string command = "env -i HOME=" + (folder / "") + " PATH=/usr/bin:/bin " + kSandgate +
                              " --listen unix:" + path + " --blocklist " + first.folder() +
                              "/blocked.txt --log-format text 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::array<char, 4096> buffer;
  std::string output;
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) {
    output.append(buffer.data(), n);
  }
  const int status = ::pclose(pipe);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << output;
  EXPECT_NE(output.find("cannot listen on unix:" + path +
                        ": another program (another sandgate?) is serving on it"),
            std::string::npos)
      << output;

  // The first gate still owns its socket and still serves.
  struct stat now {};
  ASSERT_EQ(::lstat(path.c_str(), &now), 0);
  EXPECT_EQ(now.st_ino, original.st_ino);
  UnixClient client(path);
  const std::string target = "origin.test:" + std::to_string(echo.port());
  client.send("CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n");
  EXPECT_EQ(client.read_until("\r\n\r\n"), "HTTP/1.1 200 Connection Established\r\n\r\n");
}

}  // namespace
}  // namespace sandgate::testing
