// The WebSocket upgrade's checks. See websocket_handshake.hpp.
#include "proxy/session/exchange/websocket_handshake.hpp"

#include <openssl/evp.h>
#include <openssl/sha.h>

#include <boost/beast/core/string.hpp>
#include <string_view>

#include "rules/ascii.hpp"

namespace sandgate::session::exchange {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

// Whether `token` is one of the comma-separated items of `field` (its parameters, after `;`,
// left out), in any of the fields named `name`.
template <class Fields>
bool offered(const Fields& fields, http::field name, std::string_view token) {
  for (const auto& field : fields) {
    if (field.name() != name) {
      continue;
    }
    std::string_view rest = field.value();
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      item = rules::trim_ows(item.substr(0, item.find(';')));
      if (beast::iequals(item, token)) {
        return true;
      }
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  }
  return false;
}

}  // namespace

void offer_no_extensions(http::request_header<>& request) {
  request.erase(http::field::sec_websocket_extensions);
}

std::string accept_for(std::string_view key) {
  static constexpr std::string_view kGuid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
  std::string text(rules::trim_ows(key));
  text += kGuid;
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  unsigned char encoded[4 * ((SHA_DIGEST_LENGTH + 2) / 3) + 1];
  const int size = EVP_EncodeBlock(encoded, digest, SHA_DIGEST_LENGTH);
  return std::string(reinterpret_cast<const char*>(encoded), static_cast<std::size_t>(size));
}

std::optional<std::string> upgrade_problem(const http::request_header<>& request,
                                           const http::response_header<>& response) {
  if (request.count(http::field::sec_websocket_key) != 1) {
    return "the upgrade request did not carry one Sec-WebSocket-Key";
  }
  if (response.count(http::field::sec_websocket_accept) != 1 ||
      rules::trim_ows(response[http::field::sec_websocket_accept]) !=
          accept_for(request[http::field::sec_websocket_key])) {
    return "its Sec-WebSocket-Accept does not answer the request's key";
  }
  return choice_problem(request, response);
}

std::optional<std::string> choice_problem(const http::request_header<>& request,
                                          const http::response_header<>& response) {
  for (const auto& field : response) {
    if (field.name() != http::field::sec_websocket_extensions) {
      continue;
    }
    std::string_view rest = field.value();
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      item = rules::trim_ows(item.substr(0, item.find(';')));
      if (!item.empty() && !offered(request, http::field::sec_websocket_extensions, item)) {
        return "it chose the extension " + std::string(item) + ", which was not offered";
      }
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
  }
  if (response.count(http::field::sec_websocket_protocol) > 1) {
    return "it chose more than one subprotocol";
  }
  const std::string_view protocol = rules::trim_ows(response[http::field::sec_websocket_protocol]);
  if (!protocol.empty() && !offered(request, http::field::sec_websocket_protocol, protocol)) {
    return "it chose a subprotocol the client did not offer";
  }
  return std::nullopt;
}

}  // namespace sandgate::session::exchange
