// The HTTP/2 I/O loop and helpers (see h2_wire.hpp).
#include "bench/load/h2_wire.hpp"

#include <array>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "proxy/asio/use_tuple.hpp"

namespace sandgate::load {

namespace asio = boost::asio;

nghttp2_nv h2_field(std::string_view name, std::string_view value) {
  // nghttp2 takes non-const pointers but, without NGHTTP2_NV_FLAG_NO_COPY_*, only copies them.
  return nghttp2_nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                    reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
                    value.size(), NGHTTP2_NV_FLAG_NONE};
}

namespace {

// Appends everything the session has to send now to `out`; false on a fatal nghttp2 error.
bool take_output(nghttp2_session* session, std::string& out) {
  while (true) {
    const std::uint8_t* data = nullptr;
    const ssize_t n = nghttp2_session_mem_send(session, &data);
    if (n < 0) {
      return false;
    }
    if (n == 0) {
      return true;
    }
    out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
  }
}

}  // namespace

asio::awaitable<h2_io_end> run_h2_io(tls_stream& stream, nghttp2_session* session,
                                     std::function<bool()> after_read) {
  std::string output;
  std::array<char, 16 * 1024> input;
  bool stop = false;
  while (true) {
    // Whatever the last read (or the owner's submissions) made the session want to send.
    output.clear();
    if (!take_output(session, output)) {
      co_return h2_io_end::protocol_error;
    }
    if (!output.empty()) {
      auto [error, written] = co_await asio::async_write(stream, asio::buffer(output), use_tuple);
      if (error) {
        co_return h2_io_end::write_failed;
      }
    }
    if (stop) {
      co_return h2_io_end::stopped;
    }
    if (nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0) {
      co_return h2_io_end::finished;
    }
    auto [error, n] = co_await stream.async_read_some(asio::buffer(input), use_tuple);
    if (error) {
      co_return h2_io_end::read_failed;
    }
    if (nghttp2_session_mem_recv(session, reinterpret_cast<const std::uint8_t*>(input.data()), n) <
        0) {
      // nghttp2 has queued its GOAWAY saying why; send it before giving up, as a peer would.
      output.clear();
      if (take_output(session, output) && !output.empty()) {
        co_await asio::async_write(stream, asio::buffer(output), use_tuple);
      }
      co_return h2_io_end::protocol_error;
    }
    stop = !after_read();
  }
}

}  // namespace sandgate::load
