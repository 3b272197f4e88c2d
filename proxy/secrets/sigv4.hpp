// AWS Signature Version 4, as far as the gate needs it to put a real secret key in place of a
// sentinel: the client signed its request with the sentinel as its secret access key; the gate
// checks that signature (so it knows which canonical form the client's SDK used, and that the
// sentinel signed it), then signs the request as it leaves with the real key.
//
// Two parts of the canonical request differ between SDKs and services, and the gate cannot know
// the service's rules: S3 takes the path as sent, every other service encodes it once more; some
// SDKs take the query as sent, others decode and encode it again. The gate tries each way with
// the sentinel and re-signs the way that matched.
//
// Pure functions on values; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sandgate::secrets {

// `AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/sts/aws4_request,
// SignedHeaders=host;x-amz-date, Signature=hex`.
struct SigV4Authorization {
  std::string access_key_id;
  std::string date;  // yyyymmdd
  std::string region;
  std::string service;
  std::vector<std::string> signed_headers;  // lower case, as listed
  std::string signature;                    // lower-case hex
};
std::optional<SigV4Authorization> parse_sigv4_authorization(std::string_view value);
std::string render_sigv4_authorization(const SigV4Authorization& authorization);

// What a request's signature covers.
struct SigV4Request {
  std::string method;
  std::string target;  // origin form: path and query, as sent
  // Every header field (name as sent, value); those SignedHeaders lists are taken from here.
  std::vector<std::pair<std::string, std::string>> fields;
  std::string payload_hash;  // x-amz-content-sha256's value, or the hex SHA-256 of the body
};

enum class PathForm : unsigned char { as_sent, encoded_again };
enum class QueryForm : unsigned char { as_sent, encoded_again };
struct CanonicalForm {
  PathForm path = PathForm::as_sent;
  QueryForm query = QueryForm::as_sent;
};

// The signature of `request` under `authorization`'s scope and signed headers, with
// `secret_key`; nullopt when the request lacks what the signature needs (X-Amz-Date or Date, a
// signed header that is missing).
std::optional<std::string> sigv4_signature(const SigV4Request& request,
                                           const SigV4Authorization& authorization,
                                           std::string_view secret_key, CanonicalForm form);

// The form under which `secret_key` gives `authorization.signature`, if one does.
std::optional<CanonicalForm> sigv4_signed_with(const SigV4Request& request,
                                               const SigV4Authorization& authorization,
                                               std::string_view secret_key);

// The hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace sandgate::secrets
