// TLS contexts of the origin and the clients (see tls.hpp).
#include "bench/load/tls.hpp"

#include <openssl/ssl.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/system/system_error.hpp>

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

}  // namespace sandgate::load
