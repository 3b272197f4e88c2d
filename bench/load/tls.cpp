// TLS contexts of the origin and the clients (see tls.hpp).
#include "bench/load/tls.hpp"

#include <openssl/ssl.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>

#include "proxy/asio/use_tuple.hpp"

namespace sandgate::load {

namespace asio = boost::asio;

namespace {

// Loads a file into the context, or throws with the file's name in the message.
template <typename Load>
void load_or_throw(const std::string& file, Load load) {
  boost::system::error_code error;
  load(error);
  if (error) {
    throw boost::system::system_error(error, file);
  }
}

// Where the client's ALPN list (wire form) names `protocol`: the name's offset in the list, or
// npos. A malformed list names nothing past its fault.
std::size_t offer_of(std::string_view list, std::string_view protocol) {
  std::size_t at = 0;
  while (at < list.size()) {
    const std::size_t length = static_cast<unsigned char>(list[at]);
    if (length == 0 || at + 1 + length > list.size()) {
      break;
    }
    if (list.substr(at + 1, length) == protocol) {
      return at + 1;
    }
    at += 1 + length;
  }
  return std::string_view::npos;
}

// The origin's ALPN choice: h2 before http/1.1, whatever order the client gave them in.
int select_protocol(SSL*, const unsigned char** out, unsigned char* out_length,
                    const unsigned char* in, unsigned int in_length, void*) {
  const std::string_view list(reinterpret_cast<const char*>(in), in_length);
  for (const std::string_view protocol : {std::string_view("h2"), std::string_view("http/1.1")}) {
    if (const std::size_t at = offer_of(list, protocol); at != std::string_view::npos) {
      // The answer points into the client's list, which outlives the callback.
      *out = in + at;
      *out_length = static_cast<unsigned char>(protocol.size());
      return SSL_TLSEXT_ERR_OK;
    }
  }
  return SSL_TLSEXT_ERR_NOACK;
}

}  // namespace

std::shared_ptr<asio::ssl::context> make_server_tls_context(const std::string& certificate_file,
                                                            const std::string& key_file) {
  auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
  load_or_throw(certificate_file, [&](boost::system::error_code& error) {
    context->use_certificate_chain_file(certificate_file, error);
  });
  load_or_throw(key_file, [&](boost::system::error_code& error) {
    context->use_private_key_file(key_file, asio::ssl::context::pem, error);
  });
  SSL_CTX_set_alpn_select_cb(context->native_handle(), select_protocol, nullptr);
  return context;
}

std::shared_ptr<asio::ssl::context> make_client_tls_context(const std::string& ca_file) {
  auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION);
  // Every connection is a new client with no session to resume: a full handshake each time,
  // which is what the https-setups workload counts.
  SSL_CTX_set_session_cache_mode(context->native_handle(), SSL_SESS_CACHE_OFF);
  load_or_throw(ca_file, [&](boost::system::error_code& error) {
    context->load_verify_file(ca_file, error);
  });
  context->set_verify_mode(asio::ssl::verify_peer);
  return context;
}

bool prepare_client_tls(tls_stream& stream, const std::string& host) {
  boost::system::error_code not_an_address;
  asio::ip::make_address(host, not_an_address);
  if (not_an_address && SSL_set_tlsext_host_name(stream.native_handle(), host.c_str()) != 1) {
    return false;
  }
  stream.set_verify_mode(asio::ssl::verify_peer);
  stream.set_verify_callback(asio::ssl::host_name_verification(host));
  return true;
}

asio::awaitable<error_kind> client_tls_handshake(client_slot& slot, tls_stream& stream,
                                                 const std::string& host, std::string_view alpn) {
  if (!prepare_client_tls(stream, host)) {
    co_return error_kind::tls;
  }
  if (!alpn.empty() && SSL_set_alpn_protos(stream.native_handle(),
                                           reinterpret_cast<const unsigned char*>(alpn.data()),
                                           static_cast<unsigned int>(alpn.size())) != 0) {
    co_return error_kind::tls;
  }
  auto [error] = co_await stream.async_handshake(asio::ssl::stream_base::client, use_tuple);
  if (error) {
    co_return slot.take_timed_out() ? error_kind::timeout : error_kind::tls;
  }
  co_return error_kind::none;
}

std::string_view chosen_protocol(SSL* ssl) {
  const unsigned char* chosen = nullptr;
  unsigned int length = 0;
  SSL_get0_alpn_selected(ssl, &chosen, &length);
  return chosen == nullptr ? std::string_view()
                           : std::string_view(reinterpret_cast<const char*>(chosen), length);
}

}  // namespace sandgate::load
