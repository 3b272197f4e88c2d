// The HTTP/2 codecs (proxy/session/exchange/h2/) on real loopback sockets with peers nobody here
// wrote: ServerCodec with nghttp (nghttp2's client), curl --http2-prior-knowledge and h2load;
// ClientCodec with nghttpd (nghttp2's server). Plain TCP with prior knowledge (:scheme http): TLS
// and ALPN are the inspected connection's, not the codecs'.
//
// The server in this file is the codec's owner at its simplest: one thread, poll(2), non-blocking
// sockets; each request is answered with what it was (method, path, body length), or with a body
// of the size its path asks (/big/N), sent as the client's window allows; /trailers ends with
// trailers, /reset is reset.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "proxy/session/exchange/h2/client_codec.hpp"
#include "proxy/session/exchange/h2/server_codec.hpp"
#include "tests/support/child_server.hpp"
#include "tests/support/loopback_ports.hpp"
#include "tests/support/shell_command.hpp"

namespace sandgate::session::exchange::h2 {
namespace {

using sandgate::testing::run_shell;

// One request and the response the server makes of it.
struct Exchange {
  RequestHead head;
  std::size_t received = 0;
  std::string body_out;   // what is still to go
  bool trailers = false;  // end with trailers
  bool answered = false;
};

struct Client {
  explicit Client(int descriptor) : fd(descriptor), codec(options()) {}
  static ServerOptions options() {
    ServerOptions options;
    options.scheme = "http";
    return options;
  }
  int fd;
  ServerCodec codec;
  std::map<StreamId, Exchange> exchanges;
  bool read_closed = false;
};

class LoopbackH2Server {
 public:
  LoopbackH2Server() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    ::listen(listener_, 64);
    socklen_t length = sizeof address;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { run(); });
  }
  ~LoopbackH2Server() {
    stop_ = true;
    thread_.join();
    for (auto& client : clients_) {
      ::close(client->fd);
    }
    ::close(listener_);
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  // What the server saw, read after the clients are done.
  std::atomic<int> requests{0};
  std::atomic<int> connection_errors{0};

 private:
  void run() {
    while (!stop_) {
      std::vector<pollfd> fds{{listener_, POLLIN, 0}};
      for (auto& client : clients_) {
        short events = client->read_closed ? 0 : POLLIN;
        if (!client->codec.pending_output().empty()) {
          events |= POLLOUT;
        }
        fds.push_back({client->fd, events, 0});
      }
      ::poll(fds.data(), fds.size(), 20);
      if (fds[0].revents & POLLIN) {
        for (int fd;
             (fd = ::accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
          clients_.push_back(std::make_unique<Client>(fd));
        }
      }
      for (std::size_t i = 0; i < clients_.size(); ++i) {
        serve(*clients_[i]);
      }
      std::erase_if(clients_, [](const std::unique_ptr<Client>& client) {
        if (client->codec.finished() ||
            (client->read_closed && client->codec.pending_output().empty())) {
          ::close(client->fd);
          return true;
        }
        return false;
      });
    }
  }

  // One turn of a connection: read what came, take the events, write what is ready.
  void serve(Client& client) {
    char buffer[16384];
    for (;;) {
      const ssize_t n = ::recv(client.fd, buffer, sizeof buffer, 0);
      if (n > 0) {
        if (client.codec.receive(std::string_view(buffer, static_cast<std::size_t>(n))) !=
            ConnectionError::none) {
          ++connection_errors;
        }
        take_events(client);
        continue;
      }
      if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        client.read_closed = true;
      }
      break;
    }
    for (;;) {
      take_events(client);
      const std::string_view out = client.codec.pending_output();
      if (out.empty()) {
        break;
      }
      const ssize_t n = ::send(client.fd, out.data(), out.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        break;
      }
      client.codec.consume_output(static_cast<std::size_t>(n));
    }
    take_events(client);
  }

  void take_events(Client& client) {
    while (auto event = client.codec.next_event()) {
      if (const auto* head = std::get_if<RequestHeadEvent>(&*event)) {
        ++requests;
        client.exchanges[head->stream].head = head->head;
      } else if (const auto* data = std::get_if<DataEvent>(&*event)) {
        client.exchanges[data->stream].received += data->bytes.size();
        client.codec.consume(data->stream, data->bytes.size());
      } else if (const auto* end = std::get_if<EndEvent>(&*event)) {
        answer(client, end->stream);
      } else if (const auto* ready = std::get_if<SendReadyEvent>(&*event)) {
        push(client, ready->stream);
      } else if (const auto* closed = std::get_if<StreamClosedEvent>(&*event)) {
        client.exchanges.erase(closed->stream);
      }
    }
  }

  void answer(Client& client, StreamId stream) {
    Exchange& exchange = client.exchanges[stream];
    const std::string& path = exchange.head.path;
    if (path == "/reset") {
      client.codec.reset_stream(stream, ErrorCode::cancel);
      return;
    }
    if (path.rfind("/big/", 0) == 0) {
      exchange.body_out = std::string(std::stoul(path.substr(5)), 'b');
    } else {
      exchange.body_out = exchange.head.method + " " + path + " " + exchange.head.authority + " " +
                          std::to_string(exchange.received) + "\n";
    }
    exchange.trailers = path == "/trailers";
    ResponseHead head{200, {{"content-type", "text/plain"}}, {}};
    if (!exchange.trailers) {
      head.fields.push_back({"content-length", std::to_string(exchange.body_out.size())});
    }
    client.codec.submit_response(stream, head, false);
    exchange.answered = true;
    push(client, stream);
  }

  // As much of the body as the codec takes; the rest on its SendReadyEvent.
  void push(Client& client, StreamId stream) {
    const auto found = client.exchanges.find(stream);
    if (found == client.exchanges.end() || !found->second.answered) {
      return;
    }
    Exchange& exchange = found->second;
    while (!exchange.body_out.empty()) {
      const auto taken = client.codec.send_data(stream, exchange.body_out);
      if (!taken || *taken == 0) {
        return;
      }
      exchange.body_out.erase(0, *taken);
    }
    if (exchange.trailers) {
      client.codec.submit_trailers(stream, {{"x-checksum", "done"}});
    } else {
      client.codec.end_stream(stream);
    }
    exchange.answered = false;
  }

  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::vector<std::unique_ptr<Client>> clients_;
  std::thread thread_;
};

TEST(H2ServerCodecClients, NghttpGetsItsAnswers) {
  LoopbackH2Server server;
  const auto result = run_shell("nghttp " + server.url("/hello") + " " + server.url("/second") +
                                " " + server.url("/third"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("GET /hello 127.0.0.1:"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("GET /second 127.0.0.1:"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("GET /third 127.0.0.1:"), std::string::npos) << result.output;
  EXPECT_EQ(server.connection_errors, 0);
}

TEST(H2ServerCodecClients, NghttpUploadsWithFlowControlAndReadsTrailers) {
  LoopbackH2Server server;
  // 3 MiB up (three stream windows), 5 MB down on a client window of 64 KiB (-w 16).
  const auto up = run_shell("head -c 3145728 /dev/zero | nghttp -d - " + server.url("/upload"));
  ASSERT_EQ(up.exit_code, 0) << up.output;
  EXPECT_NE(up.output.find("POST /upload 127.0.0.1:"), std::string::npos) << up.output;
  EXPECT_NE(up.output.find(" 3145728\n"), std::string::npos) << up.output;
  const auto down = run_shell("nghttp -w 16 " + server.url("/big/5000000") + " | wc -c");
  ASSERT_EQ(down.exit_code, 0) << down.output;
  EXPECT_EQ(std::stoul(down.output), 5000000U) << down.output;
  const auto trailers = run_shell("nghttp -v " + server.url("/trailers") + " 2>&1");
  ASSERT_EQ(trailers.exit_code, 0) << trailers.output;
  EXPECT_NE(trailers.output.find("x-checksum: done"), std::string::npos) << trailers.output;
}

TEST(H2ServerCodecClients, CurlWithPriorKnowledge) {
  LoopbackH2Server server;
  const auto get =
      run_shell("curl -sS --http2-prior-knowledge -w ' %{http_version}' " + server.url("/curl"));
  ASSERT_EQ(get.exit_code, 0) << get.output;
  EXPECT_NE(get.output.find("GET /curl 127.0.0.1:"), std::string::npos) << get.output;
  EXPECT_TRUE(get.output.ends_with("\n 2")) << get.output;  // the HTTP version curl used
  const auto post = run_shell(
      "head -c 1000000 /dev/zero | curl -sS --http2-prior-knowledge "
      "--data-binary @- " +
      server.url("/posted"));
  ASSERT_EQ(post.exit_code, 0) << post.output;
  EXPECT_NE(post.output.find("POST /posted 127.0.0.1:"), std::string::npos) << post.output;
  EXPECT_NE(post.output.find(" 1000000\n"), std::string::npos) << post.output;
}

TEST(H2ServerCodecClients, CurlParallelStreamsOneResetTheOthersFinish) {
  LoopbackH2Server server;
  const auto result = run_shell(
      "curl -sS --http2-prior-knowledge -Z --parallel-immediate -o /dev/null -w "
      "'%{url_effective} %{http_code} %{size_download}\\n' " +
      server.url("/big/300000") + " " + server.url("/reset") + " " + server.url("/big/200000") +
      " " + server.url("/a") + " 2>&1; echo exit=$?");
  EXPECT_NE(result.output.find("/big/300000 200 300000"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("/big/200000 200 200000"), std::string::npos) << result.output;
  EXPECT_NE(result.output.find("/a 200 "), std::string::npos) << result.output;
  // The reset stream fails alone (curl: "stream ... was not closed cleanly: CANCEL").
  EXPECT_NE(result.output.find("CANCEL"), std::string::npos) << result.output;
  EXPECT_EQ(server.connection_errors, 0);
}

TEST(H2ServerCodecClients, H2loadManyStreamsOnFewConnections) {
  LoopbackH2Server server;
  const auto result = run_shell("h2load -n 2000 -c 4 -m 64 " + server.url("/load") + " 2>&1");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_NE(result.output.find("2000 succeeded, 0 failed, 0 errored"), std::string::npos)
      << result.output;
  EXPECT_EQ(server.requests, 2000);
  EXPECT_EQ(server.connection_errors, 0);
}

// ClientCodec's owner at its simplest: one connection to 127.0.0.1:port, blocking reads with a
// timeout, each request's body kept.
class OriginConnection {
 public:
  explicit OriginConnection(std::uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
  }
  ~OriginConnection() { ::close(fd_); }
  bool connected() const { return connected_; }

  // Moves bytes until every stream opened is closed (or nothing comes for 5 s).
  void run() {
    while (!open_.empty() || !settings_) {
      write();
      pollfd fd{fd_, POLLIN, 0};
      if (::poll(&fd, 1, 5000) <= 0) {
        ADD_FAILURE() << "nghttpd went quiet with " << open_.size() << " streams open";
        return;
      }
      char buffer[16384];
      const ssize_t n = ::recv(fd_, buffer, sizeof buffer, 0);
      if (n <= 0) {
        ADD_FAILURE() << "nghttpd closed the connection";
        return;
      }
      codec.receive(std::string_view(buffer, static_cast<std::size_t>(n)));
      take_events();
    }
    write();
  }

  StreamId get(const std::string& path) {
    const auto id =
        codec.submit_request(RequestHead{"GET", "http", "127.0.0.1", path, {}, {}, {}}, true);
    EXPECT_TRUE(id) << describe(id.error());
    open_.insert(*id);
    return *id;
  }

  ClientCodec codec;
  std::map<StreamId, unsigned> status;
  std::map<StreamId, std::string> body;
  std::map<StreamId, StreamClosedEvent> closed;
  std::uint32_t peer_max_streams = 0;

 private:
  void write() {
    for (std::string_view out = codec.pending_output(); !out.empty();
         out = codec.pending_output()) {
      const ssize_t n = ::send(fd_, out.data(), out.size(), MSG_NOSIGNAL);
      if (n <= 0) {
        return;
      }
      codec.consume_output(static_cast<std::size_t>(n));
      take_events();
    }
  }
  void take_events() {
    while (auto event = codec.next_event()) {
      if (const auto* settings = std::get_if<PeerSettingsEvent>(&*event)) {
        settings_ = true;
        peer_max_streams = settings->max_concurrent_streams;
      } else if (const auto* head = std::get_if<ResponseHeadEvent>(&*event)) {
        status[head->stream] = head->head.status;
      } else if (const auto* data = std::get_if<DataEvent>(&*event)) {
        body[data->stream] += data->bytes;
        codec.consume(data->stream, data->bytes.size());
      } else if (const auto* end = std::get_if<StreamClosedEvent>(&*event)) {
        closed[end->stream] = *end;
        open_.erase(end->stream);
      }
    }
  }

  int fd_ = -1;
  bool connected_ = false;
  bool settings_ = false;
  std::set<StreamId> open_;
};

TEST(H2ClientCodecOrigins, NghttpdServesManyStreamsWithinItsLimit) {
  char folder[] = "/tmp/sandgate-h2-htdocs-XXXXXX";
  ASSERT_NE(::mkdtemp(folder), nullptr);
  const std::string big(3 << 20, 'n');
  std::ofstream(std::string(folder) + "/big.bin", std::ios::binary) << big;
  std::ofstream(std::string(folder) + "/small.txt") << "small file\n";
  const std::uint16_t port = sandgate::testing::free_port();
  // nghttpd allows 8 streams at once; its stream window 2^16 - 1 (the default).
  sandgate::testing::ChildServer nghttpd(
      port, "nghttpd --no-tls -m 8 -d " + std::string(folder) + " " + std::to_string(port));
  OriginConnection origin(port);
  ASSERT_TRUE(origin.connected());
  origin.run();  // the SETTINGS
  EXPECT_EQ(origin.peer_max_streams, 8U);
  EXPECT_EQ(origin.codec.available_streams(), 8U);
  std::vector<StreamId> ids;
  for (int i = 0; i < 8; ++i) {
    ids.push_back(origin.get(i == 0 ? "/big.bin" : "/small.txt"));
  }
  // The ninth waits for a stream to close: refused now, not queued.
  EXPECT_EQ(
      origin.codec
          .submit_request(RequestHead{"GET", "http", "127.0.0.1", "/small.txt", {}, {}, {}}, true)
          .error(),
      SubmitError::stream_limit_reached);
  origin.run();
  EXPECT_EQ(origin.body[ids[0]], big);
  for (std::size_t i = 1; i < ids.size(); ++i) {
    EXPECT_EQ(origin.status[ids[i]], 200U);
    EXPECT_EQ(origin.body[ids[i]], "small file\n");
    EXPECT_EQ(origin.closed[ids[i]].by, Closer::finished);
  }
  EXPECT_EQ(origin.codec.available_streams(), 8U);
  const StreamId not_found = origin.get("/nothing-here");
  origin.run();
  EXPECT_EQ(origin.status[not_found], 404U);
  EXPECT_EQ(origin.codec.error(), ConnectionError::none);
  std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace sandgate::session::exchange::h2
