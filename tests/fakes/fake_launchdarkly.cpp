#include "tests/fakes/fake_launchdarkly.hpp"

#include <unistd.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <list>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "proxy/asio/use_tuple.hpp"
#include "tests/support/test_certificates.hpp"

namespace sandgate::fakes {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

}  // namespace

struct FakeLaunchDarkly::Impl {
  using Stream = asio::ssl::stream<tcp::socket>;
  struct Failing {
    int count = 0;
    unsigned status = 0;
    std::string retry_after;
  };

  Impl(std::string id, std::string flag_key, const std::string& folder)
      : client_id(std::move(id)), flag(std::move(flag_key)), tls(asio::ssl::context::tls_server) {
    tls.use_certificate_chain_file(folder + "/server.pem");
    tls.use_private_key_file(folder + "/server.key", asio::ssl::context::pem);
  }

  void open_listener(std::uint16_t port) {
    acceptor.emplace(io);
    tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port);
    acceptor->open(endpoint.protocol());
    acceptor->set_option(tcp::acceptor::reuse_address(true));
    acceptor->bind(endpoint);
    acceptor->listen();
    asio::co_spawn(io, accept_loop(), asio::detached);
  }

  asio::awaitable<void> accept_loop() {
    while (acceptor && acceptor->is_open()) {
      auto [ec, socket] = co_await acceptor->async_accept(use_tuple);
      if (ec) {
        co_return;
      }
      asio::co_spawn(io, serve(std::make_shared<Stream>(std::move(socket), tls)), asio::detached);
    }
  }

  std::string answer_json(const std::string& key) {
    std::lock_guard lock(mutex);
    auto found = values.find(key);
    const std::string& value = found != values.end() ? found->second : default_value;
    return "{\"" + flag + "\":{\"value\":" + value +
           ",\"variation\":0,\"version\":" + std::to_string(version) +
           ",\"trackEvents\":false},\"other-flag\":{\"value\":1}}";
  }

  // Counts an open connection for as long as it lives in serve().
  struct OpenConnection {
    explicit OpenConnection(Impl& impl) : impl(impl) {
      std::lock_guard lock(impl.mutex);
      ++impl.connection_count;
      impl.max_open = std::max(impl.max_open, ++impl.open_now);
    }
    ~OpenConnection() {
      std::lock_guard lock(impl.mutex);
      --impl.open_now;
    }
    Impl& impl;
  };

  // Serves the requests of one connection, one after another while the client keeps it alive
  // (as LaunchDarkly's endpoints do).
  asio::awaitable<void> serve(std::shared_ptr<Stream> stream) {
    auto [handshake_error] =
        co_await stream->async_handshake(asio::ssl::stream_base::server, use_tuple);
    if (handshake_error) {
      co_return;
    }
    OpenConnection counted(*this);
    boost::beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.body_limit(1 << 20);
      auto [read_error, n] = co_await http::async_read(*stream, buffer, parser, use_tuple);
      if (read_error) {
        co_return;
      }
      if (!co_await handle(stream, parser.get())) {
        co_return;
      }
    }
  }

  // One request; true when the connection goes on to the next one.
  asio::awaitable<bool> handle(std::shared_ptr<Stream> stream,
                               const http::request<http::string_body>& request) {
    const std::string target(request.target());
    const bool keep_alive = request.keep_alive();
    Behaviour now;
    std::chrono::milliseconds wait{};
    Failing failing;
    const bool is_stream = request.method() == http::verb::get && target.starts_with("/eval/");
    {
      std::ostringstream head;
      head << request.base();
      std::lock_guard lock(mutex);
      heads.push_back(head.str());
      now = behaviour;
      wait = delay;
      Failing& next = is_stream ? fail_streams : fail_evaluations;
      if (next.count > 0) {
        --next.count;
        failing = next;
      }
      if (is_stream) {
        stream_times.push_back(std::chrono::steady_clock::now());
      }
    }
    if (wait.count() > 0) {
      asio::steady_timer timer(io, wait);
      co_await timer.async_wait(use_tuple);
    }
    const std::string evalx = "/sdk/evalx/" + client_id + "/context";
    const std::string stream_prefix = "/eval/" + client_id + "/";
    const bool is_evaluation =
        request.method() == http::verb::report && target.starts_with("/sdk/evalx/");
    std::string key;
    if (is_evaluation) {
      try {
        key = std::string(boost::json::parse(request.body()).as_object().at("key").as_string());
      } catch (const std::exception&) {
        key = "(unreadable context)";
      }
      std::lock_guard lock(mutex);
      ++evaluation_count;
      ++evaluations_by_key[key];
      bodies.push_back(request.body());
    }
    if (failing.status != 0) {
      co_return co_await reply(*stream, static_cast<http::status>(failing.status), "text/plain",
                               "refused", keep_alive && !is_stream, failing.retry_after);
    }
    if (is_evaluation) {
      if (target != evalx) {
        co_return co_await reply(*stream, http::status::not_found, "application/json", "{}",
                                 keep_alive);
      }
      switch (now) {
        case Behaviour::hang: {
          asio::steady_timer forever(io, std::chrono::hours(1));
          hanging.push_back(stream);
          co_await forever.async_wait(use_tuple);
          co_return false;
        }
        case Behaviour::status_404:
          co_return co_await reply(*stream, http::status::not_found, "application/json", "{}",
                                   keep_alive);
        case Behaviour::status_500:
          co_return co_await reply(*stream, http::status::internal_server_error, "text/plain",
                                   "oops", keep_alive);
        case Behaviour::bad_json:
          co_return co_await reply(*stream, http::status::ok, "application/json",
                                   "{\"" + flag + "\": {\"value\": tru", keep_alive);
        case Behaviour::wrong_content_type:
          co_return co_await reply(*stream, http::status::ok, "text/html", answer_json(key),
                                   keep_alive);
        case Behaviour::no_flag:
          co_return co_await reply(*stream, http::status::ok, "application/json",
                                   "{\"other-flag\":{\"value\":true}}", keep_alive);
        case Behaviour::normal:
        case Behaviour::refuse:
          if (std::size_t size = padded_size(); size > 0) {
            co_return co_await padded_reply(*stream, key, size, keep_alive);
          }
          co_return co_await reply(*stream, http::status::ok, "application/json; charset=utf-8",
                                   answer_json(key), keep_alive);
      }
    }
    if (request.method() == http::verb::get && target.starts_with(stream_prefix)) {
      // The stream: a head without a length, then events until closed.
      const std::string head =
          "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
          "Cache-Control: no-cache\r\nConnection: close\r\n\r\n";
      auto [write_error, written] =
          co_await asio::async_write(*stream, asio::buffer(head), use_tuple);
      if (write_error) {
        co_return false;
      }
      {
        std::lock_guard lock(mutex);
        ++stream_count;
      }
      auto events = std::make_shared<EventStream>();
      events->tls = stream;
      streams.push_back(events);
      // Sends a put with the current state, as LaunchDarkly does on connect.
      send_event(events, "put", answer_json("(any)"));
      co_return false;
    }
    co_return co_await reply(*stream, http::status::not_found, "text/plain", "no such endpoint",
                             false);
  }

  // Writes a response; true when the connection stays open for another request.
  asio::awaitable<bool> reply(Stream& stream, http::status status, std::string type,
                              std::string body, bool keep_alive, std::string retry_after = {}) {
    http::response<http::string_body> response{status, 11};
    response.set(http::field::content_type, type);
    if (!retry_after.empty()) {
      response.set(http::field::retry_after, retry_after);
    }
    response.body() = std::move(body);
    response.keep_alive(keep_alive);
    response.prepare_payload();
    auto [write_error, written] = co_await http::async_write(stream, response, use_tuple);
    if (write_error) {
      co_return false;
    }
    if (!keep_alive) {
      co_await stream.async_shutdown(use_tuple);
    }
    co_return keep_alive;
  }

  std::size_t padded_size() {
    std::lock_guard lock(mutex);
    return reply_size;
  }

  // A reply of `size` bytes: the flags and a padding field. Its head (and chunked, a first
  // chunk) goes at once; while holding, the rest waits for release_replies().
  asio::awaitable<bool> padded_reply(Stream& stream, const std::string& key, std::size_t size,
                                     bool keep_alive) {
    const std::string flags = answer_json(key);
    const std::string open = "{\"padding\":\"";
    const std::string close = "\"," + flags.substr(1);
    std::string body = open;
    body.append(size > open.size() + close.size() ? size - open.size() - close.size() : 0, 'x');
    body += close;
    bool chunked = false;
    bool hold = false;
    {
      std::lock_guard lock(mutex);
      chunked = reply_framing == Framing::chunked;
      hold = holding;
      held_count += hold ? 1 : 0;
    }
    std::string head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n";
    head += chunked ? "Transfer-Encoding: chunked\r\n"
                    : "Content-Length: " + std::to_string(body.size()) + "\r\n";
    head += keep_alive ? "\r\n" : "Connection: close\r\n\r\n";
    // The pieces on the wire, in order; `first` of them go before the hold.
    std::vector<std::string> pieces{head};
    if (chunked) {
      constexpr std::size_t kChunk = 16 * 1024;
      for (std::size_t at = 0; at < body.size(); at += kChunk) {
        const std::string part = body.substr(at, kChunk);
        std::ostringstream size_line;
        size_line << std::hex << part.size() << "\r\n";
        pieces.push_back(size_line.str() + part + "\r\n");
      }
      pieces.push_back("0\r\n\r\n");
    } else {
      pieces.push_back(body);
    }
    const std::size_t first = chunked ? 2 : 1;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
      if (i == first && hold) {
        auto timer = std::make_shared<asio::steady_timer>(io, std::chrono::hours(1));
        held_timers.push_back(timer);
        co_await timer->async_wait(use_tuple);
        if (!released) {
          co_return false;  // the fake is going away
        }
      }
      auto [write_error, written] =
          co_await asio::async_write(stream, asio::buffer(pieces[i]), use_tuple);
      if (write_error) {
        co_return false;
      }
    }
    co_return keep_alive;
  }

  // An open event stream and the events not yet written to it. A TLS stream takes one write at
  // a time (two in flight interleave their records and break the connection), so events pushed
  // back to back wait their turn.
  struct EventStream {
    std::shared_ptr<Stream> tls;
    std::deque<std::string> waiting;
    bool writing = false;
  };

  void send_event(const std::shared_ptr<EventStream>& stream, const std::string& type,
                  const std::string& data) {
    stream->waiting.push_back("event: " + type + "\r\ndata: " + data + "\r\n\r\n");
    if (!stream->writing) {
      write_next(stream);
    }
  }

  // The handler keeps the stream alive: close_streams() may drop the last other reference while
  // a write is pending, and its completion still touches the stream.
  void write_next(const std::shared_ptr<EventStream>& stream) {
    if (stream->waiting.empty()) {
      stream->writing = false;
      return;
    }
    stream->writing = true;
    asio::async_write(*stream->tls, asio::buffer(stream->waiting.front()),
                      [this, stream](boost::system::error_code error, std::size_t) {
                        stream->waiting.pop_front();
                        if (error) {
                          stream->waiting.clear();
                        }
                        write_next(stream);
                      });
  }

  asio::io_context io{1};
  std::optional<tcp::acceptor> acceptor;
  std::string client_id;
  std::string flag;
  asio::ssl::context tls;
  std::list<std::shared_ptr<EventStream>> streams;             // io thread only
  std::list<std::shared_ptr<Stream>> hanging;                  // io thread only
  std::list<std::shared_ptr<asio::steady_timer>> held_timers;  // io thread only
  bool released = false;                                       // io thread only

  mutable std::mutex mutex;
  std::map<std::string, std::string> values;
  std::string default_value = "false";
  std::uint64_t version = 1;
  Behaviour behaviour = Behaviour::normal;
  std::chrono::milliseconds delay{0};
  std::size_t reply_size = 0;
  Framing reply_framing = Framing::length;
  bool holding = false;
  int held_count = 0;
  int evaluation_count = 0;
  std::map<std::string, int> evaluations_by_key;
  int stream_count = 0;
  int connection_count = 0;
  int open_now = 0;
  int max_open = 0;
  Failing fail_streams;
  Failing fail_evaluations;
  std::vector<std::chrono::steady_clock::time_point> stream_times;
  std::vector<std::string> heads;
  std::vector<std::string> bodies;
  std::thread thread;
};

FakeLaunchDarkly::FakeLaunchDarkly(std::string client_id, std::string flag) {
  char pattern[] = "/tmp/sandgate-fake-ld-XXXXXX";
  if (::mkdtemp(pattern) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  folder_ = pattern;
  testing::make_test_certificates(folder_, {"DNS:localhost", "IP:127.0.0.1"});
  ca_file_ = folder_ + "/ca.pem";
  impl_ = std::make_unique<Impl>(std::move(client_id), std::move(flag), folder_);
  impl_->open_listener(0);
  port_ = impl_->acceptor->local_endpoint().port();
  impl_->thread = std::thread([this] {
    auto guard = asio::make_work_guard(impl_->io);
    impl_->io.run();
  });
}

FakeLaunchDarkly::~FakeLaunchDarkly() {
  impl_->io.stop();
  impl_->thread.join();
  std::error_code ignored;
  std::filesystem::remove_all(folder_, ignored);
}

std::string FakeLaunchDarkly::base_uri() const {
  return "https://localhost:" + std::to_string(port_);
}

void FakeLaunchDarkly::set_value(const std::string& key, const std::string& value_json) {
  std::lock_guard lock(impl_->mutex);
  impl_->values[key] = value_json;
}

void FakeLaunchDarkly::set_default_value(const std::string& value_json) {
  std::lock_guard lock(impl_->mutex);
  impl_->default_value = value_json;
}

void FakeLaunchDarkly::set_version(std::uint64_t version) {
  std::lock_guard lock(impl_->mutex);
  impl_->version = version;
}

void FakeLaunchDarkly::set_behaviour(Behaviour behaviour) {
  Behaviour before;
  {
    std::lock_guard lock(impl_->mutex);
    before = impl_->behaviour;
    impl_->behaviour = behaviour;
  }
  // Refusing means no listener at all; coming back means listening on the same port again.
  std::promise<void> done;
  asio::post(impl_->io, [this, before, behaviour, &done] {
    if (behaviour == Behaviour::refuse && before != Behaviour::refuse) {
      impl_->acceptor->close();
      impl_->acceptor.reset();
    } else if (behaviour != Behaviour::refuse && before == Behaviour::refuse) {
      impl_->open_listener(port_);
    }
    if (behaviour != Behaviour::hang) {
      for (auto& stream : impl_->hanging) {
        boost::system::error_code ignored;
        stream->next_layer().close(ignored);
      }
      impl_->hanging.clear();
    }
    done.set_value();
  });
  done.get_future().wait();
}

void FakeLaunchDarkly::set_delay(std::chrono::milliseconds delay) {
  std::lock_guard lock(impl_->mutex);
  impl_->delay = delay;
}

void FakeLaunchDarkly::set_reply_size(std::size_t body_size, Framing framing) {
  std::lock_guard lock(impl_->mutex);
  impl_->reply_size = body_size;
  impl_->reply_framing = framing;
}

void FakeLaunchDarkly::hold_replies(bool hold) {
  std::lock_guard lock(impl_->mutex);
  impl_->holding = hold;
}

void FakeLaunchDarkly::release_replies() {
  {
    std::lock_guard lock(impl_->mutex);
    impl_->holding = false;
  }
  std::promise<void> done;
  asio::post(impl_->io, [this, &done] {
    impl_->released = true;
    for (auto& timer : impl_->held_timers) {
      timer->cancel();
    }
    impl_->held_timers.clear();
    done.set_value();
  });
  done.get_future().wait();
}

int FakeLaunchDarkly::held_replies() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->held_count;
}

void FakeLaunchDarkly::push_event(const std::string& type, const std::string& data) {
  std::promise<void> done;
  asio::post(impl_->io, [this, type, data, &done] {
    for (auto& stream : impl_->streams) {
      impl_->send_event(stream, type, data);
    }
    done.set_value();
  });
  done.get_future().wait();
}

void FakeLaunchDarkly::close_streams() {
  std::promise<void> done;
  asio::post(impl_->io, [this, &done] {
    for (auto& stream : impl_->streams) {
      boost::system::error_code ignored;
      stream->tls->next_layer().close(ignored);
    }
    impl_->streams.clear();
    done.set_value();
  });
  done.get_future().wait();
}

bool FakeLaunchDarkly::wait_for_streams(int count, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (streams_opened() >= count) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return streams_opened() >= count;
}

int FakeLaunchDarkly::evaluations() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->evaluation_count;
}

int FakeLaunchDarkly::evaluations_for(const std::string& key) const {
  std::lock_guard lock(impl_->mutex);
  auto found = impl_->evaluations_by_key.find(key);
  return found == impl_->evaluations_by_key.end() ? 0 : found->second;
}

int FakeLaunchDarkly::streams_opened() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stream_count;
}

std::vector<std::string> FakeLaunchDarkly::request_heads() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->heads;
}

void FakeLaunchDarkly::fail_next_streams(int count, unsigned status,
                                         const std::string& retry_after) {
  std::lock_guard lock(impl_->mutex);
  impl_->fail_streams = {count, status, retry_after};
}

void FakeLaunchDarkly::fail_next_evaluations(int count, unsigned status,
                                             const std::string& retry_after) {
  std::lock_guard lock(impl_->mutex);
  impl_->fail_evaluations = {count, status, retry_after};
}

int FakeLaunchDarkly::connections() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->connection_count;
}

int FakeLaunchDarkly::max_open_connections() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->max_open;
}

std::vector<std::chrono::steady_clock::time_point> FakeLaunchDarkly::stream_requests() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->stream_times;
}

std::vector<std::string> FakeLaunchDarkly::contexts() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->bodies;
}

}  // namespace sandgate::fakes
