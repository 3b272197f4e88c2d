// The secrets in a request head: where its sentinels are, whether the gate may put the real
// values there, and putting them there (the gate's side of masked_secrets.hpp).
//
// A sentinel is filled in only
//   - in a field that carries credentials, from an allow-list: Authorization (a Basic one
//     decoded and encoded again) and the credential fields APIs use (X-Api-Key, Api-Key,
//     X-Goog-Api-Key, X-Amz-Security-Token, Private-Token, ...; carries_credentials()), never the
//     target, Host or any other field a server may echo, log or store (S3's x-amz-meta-*-token
//     is stored and served back);
//   - on a request to a host the secret is bound to;
//   - inside a TLS connection the gate inspects, to an origin whose certificate it verified for
//     that name (not over plain HTTP, not through a tunnel it cannot see into, not to a
//     destination the client named by address).
// A sentinel anywhere else refuses the request, with a sentence naming the secret (never its
// value) and what was wrong.
#pragma once

#include <boost/beast/http/message.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "proxy/secrets/masked_secrets.hpp"
#include "proxy/secrets/sigv4.hpp"

namespace sandgate::secrets {

// Whether the gate fills secrets in a field of this name.
bool carries_credentials(std::string_view field_name);

// Why a request carrying a sentinel is refused.
std::optional<std::string> misplaced_secret(const MaskedSecrets& secrets,
                                            const boost::beast::http::request_header<>& head,
                                            std::string_view host, bool verified_tls);

// Puts the real values where the sentinels are (a head misplaced_secret() passed). Returns
// whether it filled any.
bool fill_secrets(const MaskedSecrets& secrets, boost::beast::http::request_header<>& head);

// A request signed with SigV4 whose signature the gate may have to make again: what it covered
// as the client sent it. Nothing when the head carries no SigV4 Authorization.
struct SignedRequest {
  SigV4Authorization authorization;
  SigV4Request as_sent;
  // The body's hash is needed and not in the head (no x-amz-content-sha256): the gate reads
  // the body first.
  bool needs_body_hash = false;
};
std::optional<SignedRequest> signed_request(const boost::beast::http::request_header<>& head);

// Why the gate will not sign `signed_request` again, whoever signed it: its X-Amz-Date is not
// signed, or is more than 15 minutes from `now` (AWS refuses such a request anyway; a signature
// made for a date the command picks could be kept for later), or its query carries presigned-URL
// parameters (X-Amz-Algorithm, -Credential, -Date, -Expires, -SignedHeaders, -Signature: AWS
// refuses two ways of authenticating at once, and the gate's signature must never double as a
// presigned URL's). Nothing when it may.
std::optional<std::string> unsignable(const SignedRequest& signed_request,
                                      std::chrono::system_clock::time_point now);

// The client signed `signed_request` with the sentinel of one of the secrets bound to `host`:
// signs `head` (filled, as it leaves) with that secret's real value instead. Returns the
// refusal's sentence when it cannot (a streaming payload signed chunk by chunk); nothing
// otherwise, also when no sentinel signed it (the client's own key: left as it is).
std::optional<std::string> sign_again(
    const MaskedSecrets& secrets, std::string_view host, const SignedRequest& signed_request,
    boost::beast::http::request_header<>& head,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// Whether a sentinel of a secret bound to `host` made `signed_request`'s signature (the gate
// will sign it again with the real key).
bool signed_by_a_sentinel(const MaskedSecrets& secrets, std::string_view host,
                          const SignedRequest& signed_request);

// A response the gate cleans must hold an echo whole: pieces of one (a Range of 7 bytes, and the
// next 7 in another request) are each too short to be recognised. So a request to a host secrets
// are bound to goes without Range and If-Range (a server may always answer such a request whole;
// the gate's signature of a request it signs again leaves them out) ...
void without_ranges(boost::beast::http::request_header<>& head);
// ... and a partial response to a request that carried a secret is refused: why, when it is one
// (status 206, or parts of a resource as multipart/byteranges).
std::optional<std::string> partial_response_problem(unsigned status, std::string_view content_type);
// ... and so is a compressed one: the first coding of a coding field's value (a list, as
// Content-Encoding and Transfer-Encoding are) other than `plain` ("identity", "chunked"), at most
// 32 bytes of it; empty when there is none. Every field of the name is read, not the first.
std::string coding_other_than(std::string_view list, std::string_view plain);

}  // namespace sandgate::secrets
