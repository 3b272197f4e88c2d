// The masked secrets of one request, whatever its wire: which apply (those bound to the
// request's host, on an inspected connection), the SigV4 signature taken as the client made it,
// the real values filled in where the connection's facts allow, the response asked for whole
// and unencoded so that it can be cleaned of them, and a request signed with a sentinel signed
// again with the real key.
//
// Used in this order by a front: SecretsStage (before the head is rewritten: the signature is
// taken from it as the client sent it), fill() (on the head as the origin gets it), then, when
// the request is signed, refuse_unsignable() before any body is read, needs_body() and, with
// the body's hash when it needs one, sign().
#pragma once

#include <boost/beast/http/message.hpp>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/secrets/masked_secrets.hpp"
#include "proxy/secrets/request_secrets.hpp"
#include "proxy/session/connection_facts.hpp"

namespace sandgate::session::exchange {

// The most of a request body the gate reads before sending its head to sign it again (the
// signature covers the body's hash).
inline constexpr std::size_t kSignedBodyLimit = 8 * 1024 * 1024;

class SecretsStage {
 public:
  // `inspected`: the tunnel's facts when the request comes from an inspected connection (only
  // those are filled and cleaned), null otherwise.
  SecretsStage(const secrets::MaskedSecrets* secrets, std::string_view host,
               const ConnectionFacts* inspected, const boost::beast::http::request_header<>& head);

  // Fills the real values into `head` (the head as the origin will get it) where allowed, and
  // asks for a response the gate can search.
  void fill(boost::beast::http::request_header<>& head);

  // The request carries a SigV4 signature the gate must make again.
  bool signed_again() const { return signed_request_.has_value(); }
  // Why the gate will not sign it (checked before any body is read, so that a request it would
  // not sign costs no buffer); nothing when it may.
  std::optional<std::string> refuse_unsignable() const;
  // The signature covers a body hash the client did not send: the whole body is needed first.
  bool needs_body() const { return signed_request_ && signed_request_->needs_body_hash; }
  // Signs `head` again with the real key; `body`: the whole body, when needs_body(). The
  // refusal's sentence when it cannot.
  std::optional<std::string> sign(boost::beast::http::request_header<>& head,
                                  std::optional<std::string_view> body);

  // What the response must be cleaned of (null: nothing), and whether this request carried a
  // real value (then a response the gate cannot search is refused).
  const std::vector<secrets::Redaction>* redactions() const {
    return bound_ ? &secrets_->redactions() : nullptr;
  }
  bool carried_secret() const { return filled_; }

 private:
  const secrets::MaskedSecrets* secrets_;
  std::string host_;
  bool bound_ = false;     // secrets are bound to the host and the connection is inspected
  bool may_fill_ = false;  // and its facts allow filling them in
  bool filled_ = false;
  std::optional<secrets::SignedRequest> signed_request_;
};

}  // namespace sandgate::session::exchange
