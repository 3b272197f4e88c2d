// The fake DNS server (see fake_dns_server.hpp): one thread, one poll() loop over a UDP socket,
// a TCP listener and its connections, plus a queue of delayed replies. Parsing is strict and
// bounds-checked: garbage is counted and answered with FORMERR (or ignored), never trusted.
#include "tests/fakes/fake_dns_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

namespace sandgate::fakes {
namespace {

using steady_clock = std::chrono::steady_clock;

constexpr std::size_t header_size = 12;
constexpr std::size_t max_udp_reply = 512;  // RFC 1035 without EDNS: larger replies are truncated
constexpr std::size_t max_connections = 64;
constexpr std::size_t max_label = 63;
constexpr std::size_t max_name = 253;

// Header flag bits and response codes (RFC 1035 section 4.1.1).
constexpr std::uint16_t flag_qr = 0x8000;
constexpr std::uint16_t flag_aa = 0x0400;
constexpr std::uint16_t flag_tc = 0x0200;
constexpr std::uint16_t flag_rd = 0x0100;
constexpr std::uint16_t flag_ra = 0x0080;
constexpr std::uint16_t rcode_formerr = 1;
constexpr std::uint16_t rcode_servfail = 2;
constexpr std::uint16_t rcode_nxdomain = 3;
constexpr std::uint16_t rcode_notimp = 4;
constexpr std::uint16_t class_in = 1;

#ifdef MSG_NOSIGNAL
constexpr int send_flags = MSG_NOSIGNAL;  // a client hanging up must not kill the test
#else
constexpr int send_flags = 0;
#endif

std::string normalise(std::string_view name) {
  std::string out(name);
  if (!out.empty() && out.back() == '.') {
    out.pop_back();
  }
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  });
  return out;
}

std::uint16_t read16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>((p[0] << 8) | p[1]);
}

void put16(std::vector<std::uint8_t>& out, std::uint16_t value) {
  out.push_back(static_cast<std::uint8_t>(value >> 8));
  out.push_back(static_cast<std::uint8_t>(value & 0xff));
}

void put32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  put16(out, static_cast<std::uint16_t>(value >> 16));
  put16(out, static_cast<std::uint16_t>(value & 0xffff));
}

struct Question {
  std::string name;  // lower case, labels joined with '.'
  std::uint16_t type;
  std::uint16_t klass;
  std::size_t end;  // offset just past the question in the query
};

// The single question of a query, or nothing if it is malformed. Compression pointers (label
// lengths of 64 and above) are refused: they have no place in a question.
std::optional<Question> parse_question(const std::uint8_t* msg, std::size_t size) {
  Question question{};
  std::size_t pos = header_size;
  for (;;) {
    if (pos >= size) {
      return std::nullopt;
    }
    const std::size_t length = msg[pos++];
    if (length == 0) {
      break;
    }
    if (length > max_label || pos + length > size) {
      return std::nullopt;
    }
    if (!question.name.empty()) {
      question.name += '.';
    }
    if (question.name.size() + length > max_name) {
      return std::nullopt;
    }
    question.name.append(reinterpret_cast<const char*>(msg + pos), length);
    pos += length;
  }
  if (pos + 4 > size) {
    return std::nullopt;
  }
  question.name = normalise(question.name);
  question.type = read16(msg + pos);
  question.klass = read16(msg + pos + 2);
  question.end = pos + 4;
  return question;
}

void set_non_blocking(int fd) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

void close_fd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

}  // namespace

struct FakeDnsServer::State {
  struct Records {
    std::vector<std::array<std::uint8_t, 4>> v4;
    std::vector<std::array<std::uint8_t, 16>> v6;
    std::uint32_t ttl = 60;
  };
  struct NameConfig {
    std::optional<Records> records;  // nullopt: NXDOMAIN
    std::chrono::milliseconds delay{0};
    bool drop = false;
    bool servfail = false;
    bool truncate = false;
  };
  struct Counts {
    std::size_t a = 0;
    std::size_t aaaa = 0;
    std::size_t other = 0;
  };
  // Where a reply goes: a UDP peer, or a TCP connection (which may be gone by then).
  struct Reply {
    std::vector<std::uint8_t> bytes;
    bool tcp = false;
    std::uint64_t connection = 0;
    sockaddr_storage peer{};
    socklen_t peer_length = 0;
  };
  struct Connection {
    int fd = -1;
    std::vector<std::uint8_t> in;
    std::vector<std::uint8_t> out;
  };

  explicit State(Family f) : family(f) {}

  void open_sockets();
  void run();
  void serve_udp();
  void accept_connections();
  bool serve_connection(Connection& connection, std::uint64_t id, short revents);
  bool flush(Connection& connection);
  void dispatch(const std::uint8_t* msg, std::size_t size, Reply reply);
  std::optional<std::pair<std::chrono::milliseconds, std::vector<std::uint8_t>>> answer(
      const std::uint8_t* msg, std::size_t size, bool tcp);
  void send_now(Reply reply);
  void send_due();

  // Shared with the test's threads, under `mutex`.
  mutable std::mutex mutex;
  std::map<std::string, NameConfig, std::less<>> names;
  std::map<std::string, Counts, std::less<>> counts;
  std::size_t total = 0;
  std::size_t malformed = 0;
  std::optional<std::uint32_t> soa_minimum = 60;
  std::uint32_t soa_ttl = 3600;

  // Fixed once the constructor returns.
  Family family;
  std::uint16_t port = 0;
  int udp = -1;
  int listener = -1;
  int wake_read = -1;  // a byte here wakes the loop to stop
  int wake_write = -1;
  std::atomic<bool> stopping{false};
  std::thread thread;

  // The server thread's own.
  std::map<std::uint64_t, Connection> connections;
  std::uint64_t next_connection = 1;
  std::multimap<steady_clock::time_point, Reply> delayed;
};

void FakeDnsServer::State::open_sockets() {
  const int domain = family == Family::v4 ? AF_INET : AF_INET6;
  sockaddr_storage address{};
  socklen_t length = 0;
  if (family == Family::v4) {
    auto* in = reinterpret_cast<sockaddr_in*>(&address);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    length = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&address);
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = in6addr_loopback;
    length = sizeof(sockaddr_in6);
  }

  // UDP takes any free port; TCP must then get the same one (DNS falls back to TCP on the
  // server's port). Another process may hold it for TCP: try again with a new port.
  for (int attempt = 0; attempt < 50; ++attempt) {
    udp = ::socket(domain, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    listener = ::socket(domain, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (udp < 0 || listener < 0) {
      break;
    }
    set_non_blocking(udp);
    set_non_blocking(listener);
    const int yes = 1;
    ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (family == Family::v6) {
      ::setsockopt(udp, IPPROTO_IPV6, IPV6_V6ONLY, &yes, sizeof(yes));
      ::setsockopt(listener, IPPROTO_IPV6, IPV6_V6ONLY, &yes, sizeof(yes));
    }
    sockaddr_storage bound = address;
    if (::bind(udp, reinterpret_cast<sockaddr*>(&bound), length) == 0) {
      socklen_t bound_length = sizeof(bound);
      ::getsockname(udp, reinterpret_cast<sockaddr*>(&bound), &bound_length);
      if (::bind(listener, reinterpret_cast<sockaddr*>(&bound), length) == 0 &&
          ::listen(listener, 16) == 0) {
        port = ntohs(family == Family::v4 ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                          : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
        break;
      }
    }
    close_fd(udp);
    close_fd(listener);
  }
  if (port == 0) {
    close_fd(udp);
    close_fd(listener);
    throw std::runtime_error(std::string("fake dns: cannot bind loopback UDP+TCP: ") +
                             std::strerror(errno));
  }

  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) {
    close_fd(udp);
    close_fd(listener);
    throw std::runtime_error("fake dns: cannot create wake-up pipe");
  }
  wake_read = pipe_fds[0];
  wake_write = pipe_fds[1];
  set_non_blocking(wake_read);
  set_non_blocking(wake_write);
}

void FakeDnsServer::State::run() {
  std::vector<pollfd> fds;
  std::vector<std::uint64_t> ids;
  while (!stopping.load()) {
    fds.clear();
    ids.clear();
    fds.push_back({wake_read, POLLIN, 0});
    fds.push_back({udp, POLLIN, 0});
    fds.push_back({listener, POLLIN, 0});
    for (const auto& [id, connection] : connections) {
      const short events = static_cast<short>(POLLIN | (connection.out.empty() ? 0 : POLLOUT));
      fds.push_back({connection.fd, events, 0});
      ids.push_back(id);
    }

    // Sleep until a socket has work or the next delayed reply is due.
    int timeout_ms = -1;
    if (!delayed.empty()) {
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(delayed.begin()->first -
                                                                     steady_clock::now());
      timeout_ms = static_cast<int>(std::max<std::chrono::milliseconds::rep>(wait.count(), 0));
    }
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      return;
    }
    if (stopping.load()) {
      return;
    }
    if (fds[1].revents != 0) {
      serve_udp();
    }
    if (fds[2].revents != 0) {
      accept_connections();
    }
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const short revents = fds[3 + i].revents;
      const auto found = connections.find(ids[i]);
      if (revents == 0 || found == connections.end()) {
        continue;
      }
      if (!serve_connection(found->second, ids[i], revents)) {
        close_fd(found->second.fd);
        connections.erase(found);
      }
    }
    send_due();
  }
}

void FakeDnsServer::State::serve_udp() {
  std::vector<std::uint8_t> buffer(65536);
  // Bounded so one flood cannot starve TCP clients and delayed replies.
  for (int i = 0; i < 64; ++i) {
    Reply reply;
    reply.peer_length = sizeof(reply.peer);
    const ssize_t received =
        ::recvfrom(udp, buffer.data(), buffer.size(), 0, reinterpret_cast<sockaddr*>(&reply.peer),
                   &reply.peer_length);
    if (received < 0) {
      return;
    }
    dispatch(buffer.data(), static_cast<std::size_t>(received), std::move(reply));
  }
}

void FakeDnsServer::State::accept_connections() {
  for (;;) {
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      return;
    }
    if (connections.size() >= max_connections) {
      ::close(fd);
      continue;
    }
    set_non_blocking(fd);
    connections.emplace(next_connection++, Connection{fd, {}, {}});
  }
}

// Reads what the peer sent and answers each complete message (2-byte length prefix, RFC 1035
// 4.2.2). False: close the connection.
bool FakeDnsServer::State::serve_connection(Connection& connection, std::uint64_t id,
                                            short revents) {
  if ((revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
    std::array<std::uint8_t, 4096> buffer;
    for (;;) {
      const ssize_t received = ::recv(connection.fd, buffer.data(), buffer.size(), 0);
      if (received == 0) {
        return false;
      }
      if (received < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          break;
        }
        return false;
      }
      connection.in.insert(connection.in.end(), buffer.begin(), buffer.begin() + received);
    }
    while (connection.in.size() >= 2) {
      const std::size_t length = read16(connection.in.data());
      if (length == 0) {
        std::lock_guard lock(mutex);
        ++malformed;
        return false;
      }
      if (connection.in.size() < 2 + length) {
        break;
      }
      Reply reply;
      reply.tcp = true;
      reply.connection = id;
      dispatch(connection.in.data() + 2, length, std::move(reply));
      connection.in.erase(connection.in.begin(),
                          connection.in.begin() + static_cast<std::ptrdiff_t>(2 + length));
    }
  }
  return flush(connection);
}

bool FakeDnsServer::State::flush(Connection& connection) {
  while (!connection.out.empty()) {
    const ssize_t sent =
        ::send(connection.fd, connection.out.data(), connection.out.size(), send_flags);
    if (sent < 0) {
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    connection.out.erase(connection.out.begin(), connection.out.begin() + sent);
  }
  return true;
}

// Answers one message now, later, or never, as the knobs for its name say.
void FakeDnsServer::State::dispatch(const std::uint8_t* msg, std::size_t size, Reply reply) {
  auto decided = answer(msg, size, reply.tcp);
  if (!decided) {
    return;
  }
  reply.bytes = std::move(decided->second);
  if (decided->first > std::chrono::milliseconds::zero()) {
    delayed.emplace(steady_clock::now() + decided->first, std::move(reply));
  } else {
    send_now(std::move(reply));
  }
}

// The reply to one message and how long to hold it, or nothing to send.
std::optional<std::pair<std::chrono::milliseconds, std::vector<std::uint8_t>>>
FakeDnsServer::State::answer(const std::uint8_t* msg, std::size_t size, bool tcp) {
  if (size < header_size) {
    std::lock_guard lock(mutex);
    ++malformed;
    return std::nullopt;  // not even an ID to answer to
  }
  const std::uint16_t flags = read16(msg + 2);
  if ((flags & flag_qr) != 0) {
    std::lock_guard lock(mutex);
    ++malformed;
    return std::nullopt;  // a response: answering could start a loop between two servers
  }
  const std::uint16_t opcode = (flags >> 11) & 0xf;
  const std::optional<Question> question =
      read16(msg + 4) == 1 ? parse_question(msg, size) : std::nullopt;

  std::vector<std::uint8_t> out;
  const auto header = [&](std::uint16_t extra_flags, std::uint16_t rcode, std::uint16_t answers,
                          std::uint16_t authority = 0) {
    out.clear();
    put16(out, read16(msg));  // the client's ID
    put16(out, static_cast<std::uint16_t>(flag_qr | (opcode << 11) | flag_aa | (flags & flag_rd) |
                                          flag_ra | extra_flags | rcode));
    put16(out, question ? 1 : 0);
    put16(out, answers);
    put16(out, authority);
    put16(out, 0);
    if (question) {
      // The question exactly as asked: resolvers compare it with what they sent.
      out.insert(out.end(), msg + header_size, msg + question->end);
    }
  };

  if (!question) {
    std::lock_guard lock(mutex);
    ++malformed;
    header(0, rcode_formerr, 0);
    return std::pair{std::chrono::milliseconds::zero(), std::move(out)};
  }
  if (opcode != 0) {
    header(0, rcode_notimp, 0);
    return std::pair{std::chrono::milliseconds::zero(), std::move(out)};
  }

  // Count, and copy what this query needs, under the lock; build the reply outside it.
  NameConfig config;
  std::optional<std::uint32_t> soa_minimum;
  std::uint32_t soa_ttl = 0;
  {
    std::lock_guard lock(mutex);
    ++total;
    Counts& count = counts[question->name];
    if (question->type == static_cast<std::uint16_t>(DnsType::a)) {
      ++count.a;
    } else if (question->type == static_cast<std::uint16_t>(DnsType::aaaa)) {
      ++count.aaaa;
    } else {
      ++count.other;
    }
    if (const auto found = names.find(question->name); found != names.end()) {
      config = found->second;
    }
    soa_minimum = this->soa_minimum;
    soa_ttl = this->soa_ttl;
  }
  // A negative answer: the header, then (if configured) an SOA for the name in the authority
  // section, owned by the question's name (a pointer to it).
  const auto negative = [&](std::uint16_t rcode) {
    header(0, rcode, 0, soa_minimum ? 1 : 0);
    if (!soa_minimum) {
      return;
    }
    static const std::uint8_t names_rdata[] = {2,   'n', 's', 4,   't', 'e', 's', 't', 0,   4,
                                               'h', 'o', 's', 't', 4,   't', 'e', 's', 't', 0};
    put16(out, 0xc000 | header_size);
    put16(out, 6);  // SOA
    put16(out, class_in);
    put32(out, soa_ttl);
    put16(out, static_cast<std::uint16_t>(sizeof names_rdata + 20));
    out.insert(out.end(), std::begin(names_rdata), std::end(names_rdata));
    for (const std::uint32_t field : {1u, 3600u, 600u, 86400u, *soa_minimum}) {
      put32(out, field);  // SERIAL REFRESH RETRY EXPIRE MINIMUM
    }
  };
  if (config.drop) {
    return std::nullopt;
  }
  if (config.servfail) {
    header(0, rcode_servfail, 0);
    return std::pair{config.delay, std::move(out)};
  }
  if (config.truncate && !tcp) {
    header(flag_tc, 0, 0);
    return std::pair{config.delay, std::move(out)};
  }
  if (!config.records) {
    negative(rcode_nxdomain);
    return std::pair{config.delay, std::move(out)};
  }

  const Records& records = *config.records;
  std::vector<std::vector<std::uint8_t>> rdata;
  if (question->klass == class_in && question->type == static_cast<std::uint16_t>(DnsType::a)) {
    for (const auto& v4 : records.v4) {
      rdata.emplace_back(v4.begin(), v4.end());
    }
  } else if (question->klass == class_in &&
             question->type == static_cast<std::uint16_t>(DnsType::aaaa)) {
    for (const auto& v6 : records.v6) {
      rdata.emplace_back(v6.begin(), v6.end());
    }
  }
  if (rdata.empty()) {
    negative(0);  // NODATA: the name exists, without records of this type
    return std::pair{config.delay, std::move(out)};
  }
  header(0, 0, static_cast<std::uint16_t>(rdata.size()));
  for (const auto& data : rdata) {
    put16(out, 0xc000 | header_size);  // the owner name: a pointer to the question's
    put16(out, question->type);
    put16(out, class_in);
    put32(out, records.ttl);
    put16(out, static_cast<std::uint16_t>(data.size()));
    out.insert(out.end(), data.begin(), data.end());
  }
  if (!tcp && out.size() > max_udp_reply) {
    header(flag_tc, 0, 0);  // too big for plain UDP: the client must ask again over TCP
  }
  return std::pair{config.delay, std::move(out)};
}

void FakeDnsServer::State::send_now(Reply reply) {
  if (!reply.tcp) {
    ::sendto(udp, reply.bytes.data(), reply.bytes.size(), 0,
             reinterpret_cast<const sockaddr*>(&reply.peer), reply.peer_length);
    return;
  }
  const auto found = connections.find(reply.connection);
  if (found == connections.end()) {
    return;  // the client hung up before its delayed answer
  }
  // Queued only: the loop flushes it (POLLOUT) and is the one place connections are closed.
  Connection& connection = found->second;
  put16(connection.out, static_cast<std::uint16_t>(reply.bytes.size()));
  connection.out.insert(connection.out.end(), reply.bytes.begin(), reply.bytes.end());
}

void FakeDnsServer::State::send_due() {
  const steady_clock::time_point now = steady_clock::now();
  while (!delayed.empty() && delayed.begin()->first <= now) {
    Reply reply = std::move(delayed.begin()->second);
    delayed.erase(delayed.begin());
    send_now(std::move(reply));
  }
}

FakeDnsServer::FakeDnsServer(Family family) : state_(std::make_unique<State>(family)) {
  state_->open_sockets();
  state_->thread = std::thread(&State::run, state_.get());
}

FakeDnsServer::~FakeDnsServer() {
  state_->stopping.store(true);
  const char wake = 1;
  [[maybe_unused]] const ssize_t written = ::write(state_->wake_write, &wake, 1);
  state_->thread.join();
  for (auto& [id, connection] : state_->connections) {
    close_fd(connection.fd);
  }
  close_fd(state_->udp);
  close_fd(state_->listener);
  close_fd(state_->wake_read);
  close_fd(state_->wake_write);
}

void FakeDnsServer::set(std::string_view name, const std::vector<std::string>& addresses,
                        std::chrono::seconds ttl) {
  State::Records records;
  records.ttl = static_cast<std::uint32_t>(std::clamp<std::chrono::seconds::rep>(
      ttl.count(), 0, std::numeric_limits<std::int32_t>::max()));
  for (const std::string& address : addresses) {
    std::array<std::uint8_t, 4> v4;
    std::array<std::uint8_t, 16> v6;
    if (::inet_pton(AF_INET, address.c_str(), v4.data()) == 1) {
      records.v4.push_back(v4);
    } else if (::inet_pton(AF_INET6, address.c_str(), v6.data()) == 1) {
      records.v6.push_back(v6);
    } else {
      throw std::invalid_argument("fake dns: bad address '" + address + "'");
    }
  }
  std::lock_guard lock(state_->mutex);
  state_->names[normalise(name)].records = std::move(records);
}

void FakeDnsServer::remove(std::string_view name) {
  std::lock_guard lock(state_->mutex);
  state_->names[normalise(name)].records.reset();
}

void FakeDnsServer::set_negative_soa(std::optional<std::chrono::seconds> minimum,
                                     std::chrono::seconds ttl) {
  const auto clamp = [](std::chrono::seconds value) {
    return static_cast<std::uint32_t>(std::clamp<std::chrono::seconds::rep>(
        value.count(), 0, std::numeric_limits<std::int32_t>::max()));
  };
  std::lock_guard lock(state_->mutex);
  state_->soa_minimum = minimum ? std::optional<std::uint32_t>(clamp(*minimum)) : std::nullopt;
  state_->soa_ttl = clamp(ttl);
}

void FakeDnsServer::set_delay(std::string_view name, std::chrono::milliseconds delay) {
  std::lock_guard lock(state_->mutex);
  state_->names[normalise(name)].delay = delay;
}

void FakeDnsServer::set_drop(std::string_view name, bool drop) {
  std::lock_guard lock(state_->mutex);
  state_->names[normalise(name)].drop = drop;
}

void FakeDnsServer::set_servfail(std::string_view name, bool servfail) {
  std::lock_guard lock(state_->mutex);
  state_->names[normalise(name)].servfail = servfail;
}

void FakeDnsServer::set_truncate(std::string_view name, bool truncate) {
  std::lock_guard lock(state_->mutex);
  state_->names[normalise(name)].truncate = truncate;
}

std::string FakeDnsServer::endpoint() const {
  const std::string host = state_->family == Family::v4 ? "127.0.0.1" : "[::1]";
  return host + ":" + std::to_string(state_->port);
}

std::uint16_t FakeDnsServer::port() const { return state_->port; }

std::size_t FakeDnsServer::query_count(std::string_view name) const {
  std::lock_guard lock(state_->mutex);
  const auto found = state_->counts.find(normalise(name));
  if (found == state_->counts.end()) {
    return 0;
  }
  return found->second.a + found->second.aaaa + found->second.other;
}

std::size_t FakeDnsServer::query_count(std::string_view name, DnsType type) const {
  std::lock_guard lock(state_->mutex);
  const auto found = state_->counts.find(normalise(name));
  if (found == state_->counts.end()) {
    return 0;
  }
  return type == DnsType::a ? found->second.a : found->second.aaaa;
}

std::size_t FakeDnsServer::total_queries() const {
  std::lock_guard lock(state_->mutex);
  return state_->total;
}

std::size_t FakeDnsServer::malformed_queries() const {
  std::lock_guard lock(state_->mutex);
  return state_->malformed;
}

void FakeDnsServer::reset_counts() {
  std::lock_guard lock(state_->mutex);
  state_->counts.clear();
  state_->total = 0;
  state_->malformed = 0;
}

}  // namespace sandgate::fakes
