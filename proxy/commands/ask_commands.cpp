// `sandgate pending` and `sandgate decide`. See ask_commands.hpp.
#include "proxy/commands/ask_commands.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "proxy/ask/question_board.hpp"
#include "rules/expected.hpp"
#include "rules/host.hpp"

namespace sandgate::commands {
namespace {

constexpr std::size_t kMaxResponse = 1u << 20;  // the endpoint's answers are small
constexpr int kTimeoutMs = 10'000;

struct HttpAnswer {
  unsigned status = 0;
  std::string body;
};

// Closes on every path out.
struct Socket {
  int fd = -1;
  ~Socket() {
    if (fd >= 0) {
      ::close(fd);
    }
  }
};

// Waits for `events` on `fd` up to the command's timeout; false when it did not come.
bool wait_for(int fd, short events) {
  pollfd p{fd, events, 0};
  int n;
  do {
    n = ::poll(&p, 1, kTimeoutMs);
  } while (n < 0 && errno == EINTR);
  return n > 0;
}

// One request to the admin endpoint (which answers one request per connection and closes):
// connect, send, read to the end. Blocking with a timeout on each step; loopback only.
Expected<HttpAnswer, std::string> exchange(const settings::TcpEndpoint& admin,
                                           const std::string& request) {
  sockaddr_storage storage{};
  socklen_t length = 0;
  int family = AF_INET;
  if (auto* v4 = reinterpret_cast<sockaddr_in*>(&storage);
      ::inet_pton(AF_INET, admin.address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(admin.port);
    length = sizeof(sockaddr_in);
  } else if (auto* v6 = reinterpret_cast<sockaddr_in6*>(&storage);
             ::inet_pton(AF_INET6, admin.address.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(admin.port);
    length = sizeof(sockaddr_in6);
    family = AF_INET6;
  } else {
    return Unexpected{"the admin address " + admin.text() + " is not an IP address"};
  }
  const std::string where = "the gate's admin endpoint at " + admin.text();
  Socket s{::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (s.fd < 0 || ::connect(s.fd, reinterpret_cast<sockaddr*>(&storage), length) != 0) {
    return Unexpected{"cannot reach " + where + ": " + std::strerror(errno) +
                      " (is the gate running with --admin?)"};
  }
  std::string_view rest = request;
  while (!rest.empty()) {
    if (!wait_for(s.fd, POLLOUT)) {
      return Unexpected{where + " did not take the request in time"};
    }
    const ssize_t n = ::send(s.fd, rest.data(), rest.size(), MSG_NOSIGNAL);
    if (n < 0 && errno != EINTR && errno != EAGAIN) {
      return Unexpected{"sending to " + where + " failed: " + std::strerror(errno)};
    }
    if (n > 0) {
      rest.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  std::string response;
  char chunk[4096];
  for (;;) {
    if (!wait_for(s.fd, POLLIN)) {
      return Unexpected{where + " did not answer in time"};
    }
    const ssize_t n = ::recv(s.fd, chunk, sizeof chunk, 0);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      return Unexpected{"reading from " + where + " failed: " + std::strerror(errno)};
    }
    if (n == 0) {
      break;
    }
    response.append(chunk, static_cast<std::size_t>(n));
    if (response.size() > kMaxResponse) {
      return Unexpected{where + " sent more than 1 MiB"};
    }
  }
  // "HTTP/1.1 200 OK\r\n...\r\n\r\nBODY": the endpoint always sends Content-Length and closes.
  const auto head_end = response.find("\r\n\r\n");
  if (!response.starts_with("HTTP/1.1 ") || response.size() < 12 || head_end == std::string::npos) {
    return Unexpected{where + " sent no HTTP response"};
  }
  HttpAnswer answer;
  answer.status = static_cast<unsigned>(std::atoi(response.substr(9, 3).c_str()));
  answer.body = response.substr(head_end + 4);
  return answer;
}

// The admin token when one is set (the gate then takes no other on /pending and /decide), else
// the proxy token when one is set.
std::string authorization(const settings::Settings& settings) {
  const std::string& token = settings.admin_token.empty() ? settings.token : settings.admin_token;
  return token.empty() ? std::string() : "Authorization: Bearer " + token + "\r\n";
}

// Percent-encodes a form value.
std::string form_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || c == ':' || c == '[' ||
        c == ']') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// The admin address, or why there is none.
const settings::TcpEndpoint* admin_of(const settings::Settings& settings, std::ostream& err) {
  if (!settings.admin) {
    err << "sandgate: no admin endpoint is configured: give the gate's --admin ADDR:PORT "
           "(or SANDGATE_ADMIN)\n";
    return nullptr;
  }
  return &*settings.admin;
}

}  // namespace

int run_pending(const settings::Settings& settings, bool watch, std::ostream& out,
                std::ostream& err) {
  const settings::TcpEndpoint* admin = admin_of(settings, err);
  if (admin == nullptr) {
    return kAskUsageError;
  }
  const std::string request = "GET /pending?format=text HTTP/1.1\r\nHost: " + admin->text() +
                              "\r\n" + authorization(settings) + "Connection: close\r\n\r\n";
  for (;;) {
    auto answer = exchange(*admin, request);
    if (!answer) {
      err << "sandgate: " << answer.error() << "\n";
      return kAskUsageError;
    }
    if (answer->status != 200) {
      err << "sandgate: the gate answered " << answer->status << ": " << answer->body;
      return kAskUsageError;
    }
    if (watch) {
      out << "\x1b[H\x1b[2J";  // a fresh screen each second, as watch(1) does
    }
    out << answer->body << std::flush;
    if (!watch) {
      return kAskOk;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

int run_decide(const settings::Settings& settings, std::string_view target,
               std::string_view answer_text, std::string_view asked_request, std::ostream& out,
               std::ostream& err) {
  const auto answer = ask::parse_answer(answer_text);
  if (!answer) {
    err << "sandgate: '" << answer_text
        << "' is no answer: expected once, session, always, deny or never\n";
    return kAskUsageError;
  }
  // HOST[:PORT]: a bare host means port 443, as `sandgate check` reads it.
  auto authority = rules::parse_authority(target);
  std::string host;
  std::uint16_t port = 443;
  if (authority) {
    host = authority->host.display();
    port = authority->port;
  } else if (auto bare = rules::parse_host(target)) {
    host = bare->display();
  } else {
    err << "sandgate: '" << target << "' is not HOST[:PORT]\n";
    return kAskUsageError;
  }
  const settings::TcpEndpoint* admin = admin_of(settings, err);
  if (admin == nullptr) {
    return kAskUsageError;
  }
  const std::string body =
      "host=" + form_encode(host) + "&port=" + std::to_string(port) +
      "&answer=" + std::string(ask::to_string(*answer)) + "&who=" + form_encode(answering_user()) +
      (asked_request.empty() ? std::string()
                             : "&request=" + form_encode(std::string(asked_request)));
  const std::string request = "POST /decide HTTP/1.1\r\nHost: " + admin->text() + "\r\n" +
                              authorization(settings) +
                              "Content-Type: application/x-www-form-urlencoded\r\n"
                              "Content-Length: " +
                              std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  auto reply = exchange(*admin, request);
  if (!reply) {
    err << "sandgate: " << reply.error() << "\n";
    return kAskUsageError;
  }
  if (reply->status == 200) {
    out << reply->body;
    return kAskOk;
  }
  err << "sandgate: " << reply->body;
  return reply->status == 401 || reply->status == 400 ? kAskUsageError : kAskRefused;
}

std::string answering_user() {
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') {
    return user;
  }
  if (const passwd* entry = ::getpwuid(::getuid()); entry != nullptr && entry->pw_name != nullptr) {
    return entry->pw_name;
  }
  return "uid " + std::to_string(::getuid());
}

}  // namespace sandgate::commands
