// The masked secrets of one request (secrets_stage.hpp).
#include "proxy/session/exchange/secrets_stage.hpp"

#include <chrono>

#include "proxy/secrets/sigv4.hpp"

namespace sandgate::session::exchange {

namespace http = boost::beast::http;

SecretsStage::SecretsStage(const secrets::MaskedSecrets* secrets, std::string_view host,
                           const ConnectionFacts* inspected, const http::request_header<>& head)
    : secrets_(secrets), host_(host) {
  // Masked secrets bound to this host: what comes back is cleaned of them whenever the gate sees
  // it (an inspected connection), and they are filled in only where the connection's facts allow
  // (not to an address the client chose; anywhere else a sentinel was refused by the admission
  // stage). A SigV4 signature is taken as the client made it, before the head is rewritten.
  bound_ = secrets_ != nullptr && inspected != nullptr && secrets_->any_bound_to(host_);
  may_fill_ = bound_ && inspected->may_fill_secrets();
  if (may_fill_) {
    signed_request_ = secrets::signed_request(head);
  }
}

void SecretsStage::fill(http::request_header<>& head) {
  if (!bound_) {
    return;
  }
  filled_ = may_fill_ && secrets::fill_secrets(*secrets_, head);
  // What comes back is searched for the real values (redaction.hpp): not compressed, and whole
  // (unless a key the gate does not hold signed the request: taking its ranges out would break
  // the signature, and it carries no secret of the gate's).
  head.set(http::field::accept_encoding, "identity");
  if (!signed_request_ || secrets::signed_by_a_sentinel(*secrets_, host_, *signed_request_)) {
    secrets::without_ranges(head);
  }
}

std::optional<std::string> SecretsStage::refuse_unsignable() const {
  if (!signed_request_) {
    return std::nullopt;
  }
  return secrets::unsignable(*signed_request_, std::chrono::system_clock::now());
}

std::optional<std::string> SecretsStage::sign(http::request_header<>& head,
                                              std::optional<std::string_view> body) {
  if (!signed_request_) {
    return std::nullopt;
  }
  if (needs_body() && body) {
    signed_request_->as_sent.payload_hash = secrets::sha256_hex(*body);
  }
  return secrets::sign_again(*secrets_, host_, *signed_request_, head);
}

}  // namespace sandgate::session::exchange
