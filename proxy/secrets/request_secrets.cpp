// Sentinels in request heads. See request_secrets.hpp.
#include "proxy/secrets/request_secrets.hpp"

#include <algorithm>
#include <array>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>

#include <ctime>
#include "rules/ascii.hpp"
#include "rules/base64.hpp"
#include "rules/percent_escape.hpp"

namespace sandgate::secrets {
namespace {

namespace http = boost::beast::http;

// "Basic <base64>": its credentials decoded, or nothing.
std::optional<std::string> basic_credentials(std::string_view value) {
  if (value.size() < 7 || !boost::beast::iequals(value.substr(0, 6), "Basic ")) {
    return std::nullopt;
  }
  std::string_view encoded = value.substr(6);
  while (!encoded.empty() && encoded.front() == ' ') {
    encoded.remove_prefix(1);
  }
  while (!encoded.empty() && encoded.back() == ' ') {
    encoded.remove_suffix(1);
  }
  if (encoded.size() > 8192) {
    return std::nullopt;
  }
  return rules::base64_decoded(encoded);
}

// The first sentinel a header field carries: in its value, or inside the Basic credentials of an
// Authorization field, decoded (what misplaced_secret() and sign_again() both look at).
const MaskedSecret* sentinel_in_field(const MaskedSecrets& secrets, std::string_view name,
                                      std::string_view value) {
  const MaskedSecret* secret = secrets.sentinel_in(value);
  if (secret == nullptr && boost::beast::iequals(name, "authorization")) {
    if (const auto decoded = basic_credentials(value)) {
      secret = secrets.sentinel_in(*decoded);
    }
  }
  return secret;
}

std::string basic_value(std::string_view credentials) {
  return "Basic " + rules::base64_encoded(credentials);
}

// Replaces every sentinel in `text` with its value; returns whether any was.
bool replace_sentinels(const MaskedSecrets& secrets, std::string& text) {
  bool any = false;
  for (const auto& secret : secrets.all()) {
    std::size_t at = 0;
    while ((at = text.find(secret.sentinel, at)) != std::string::npos) {
      text.replace(at, secret.sentinel.size(), secret.value);
      at += secret.value.size();
      any = true;
    }
  }
  return any;
}

std::string host_list(const SecretSpec& spec) {
  std::string out;
  for (std::size_t i = 0; i < spec.hosts.size(); ++i) {
    out += (i > 0 ? ", " : "") + spec.hosts[i];
  }
  return out;
}

std::string refusal(const MaskedSecret& secret, const std::string& where) {
  return "the request carries the masked secret " + secret.spec.name + " " + where +
         "; the gate fills it in only in Authorization or a credential field APIs use (X-Api-Key, "
         "Api-Key, X-Goog-Api-Key, X-Amz-Security-Token, Private-Token, ...: docs/secrets.md lists "
         "them), on requests to " +
         host_list(secret.spec) + " inside TLS it inspects.";
}

}  // namespace

bool carries_credentials(std::string_view field_name) {
  // An allow-list of the fields APIs take credentials in. Not every field whose name ends in
  // -Key or -Token: servers store and serve back many such (S3's x-amz-meta-*-token, GCS's and
  // Azure's metadata, Idempotency-Key), and a real value filled there would be published.
  static constexpr std::array<std::string_view, 23> kCredentialFields = {
      "authorization",         // Bearer, token, Basic (user:password decoded), SigV4, ...
      "x-api-key",             // Anthropic, Exa, Serper, many others
      "api-key",               // Azure OpenAI, Pinecone
      "apikey",                // Supabase
      "x-goog-api-key",        // Google (Gemini)
      "x-amz-security-token",  // AWS session tokens
      "private-token",         // GitLab
      "job-token",             // GitLab CI
      "x-auth-token",          // OpenStack, many others
      "x-access-token",
      "x-auth-key",                 // Cloudflare's global key
      "ocp-apim-subscription-key",  // Azure API Management
      "x-vault-token",              // HashiCorp Vault
      "x-figma-token",
      "circle-token",  // CircleCI
      "x-shopify-access-token",
      "x-rapidapi-key",
      "x-subscription-token",  // Brave Search
      "x-functions-key",       // Azure Functions
      "dd-api-key",            // Datadog
      "dd-application-key",
      "x-honeycomb-team",
      "x-algolia-api-key",
  };
  const std::string name = rules::ascii_lower(field_name);
  return std::find(kCredentialFields.begin(), kCredentialFields.end(), name) !=
         kCredentialFields.end();
}

std::optional<std::string> misplaced_secret(const MaskedSecrets& secrets,
                                            const http::request_header<>& head,
                                            std::string_view host, bool verified_tls) {
  if (secrets.empty()) {
    return std::nullopt;
  }
  const std::string_view target = head.target();
  const MaskedSecret* in_target = secrets.sentinel_in(target);
  if (in_target == nullptr) {
    in_target = secrets.sentinel_in(rules::percent_decoded(target));
  }
  if (in_target == nullptr) {
    in_target = secrets.sentinel_in(head.method_string());
  }
  if (in_target != nullptr) {
    return refusal(*in_target, "in its target (the URL: servers log and echo it)");
  }
  for (const auto& field : head) {
    const std::string_view name = field.name_string();
    const std::string_view value = field.value();
    if (const MaskedSecret* secret = secrets.sentinel_in(name)) {
      return refusal(*secret, "in the name of a header field");
    }
    const MaskedSecret* secret = sentinel_in_field(secrets, name, value);
    if (secret == nullptr) {
      continue;
    }
    if (!carries_credentials(name)) {
      return refusal(*secret, "in its " + std::string(name.substr(0, 64)) + " field");
    }
    // Basic credentials are base64 of user:password: a sentinel stands inside them, never as the
    // encoded text itself (filled there, a server that decodes it would echo the value's bytes
    // transformed).
    if (boost::beast::iequals(name, "authorization") && value.size() > 6 &&
        boost::beast::iequals(value.substr(0, 6), "Basic ") &&
        secrets.sentinel_in(value) != nullptr) {
      return refusal(*secret,
                     "as the text of a Basic credential (a sentinel goes inside its base64 "
                     "user:password, where the gate decodes and encodes it again)");
    }
    if (!secret_bound_to(secret->spec, host)) {
      return refusal(*secret, "to " + std::string(host) + ", a host it is not bound to");
    }
    if (!verified_tls) {
      return refusal(*secret,
                     "over a connection the gate did not verify (plain HTTP, or a destination "
                     "named by its address)");
    }
    // Every sentinel in the field must be one bound to this host.
    for (const auto& other : secrets.all()) {
      if (&other != secret && !secret_bound_to(other.spec, host) &&
          (value.find(other.sentinel) != std::string_view::npos)) {
        return refusal(other, "to " + std::string(host) + ", a host it is not bound to");
      }
    }
    if (boost::beast::iequals(name, "authorization")) {
      if (const auto decoded = basic_credentials(value)) {
        for (const auto& other : secrets.all()) {
          if (!secret_bound_to(other.spec, host) &&
              decoded->find(other.sentinel) != std::string::npos) {
            return refusal(other, "to " + std::string(host) + ", a host it is not bound to");
          }
        }
      }
    }
  }
  return std::nullopt;
}

bool fill_secrets(const MaskedSecrets& secrets, http::request_header<>& head) {
  if (secrets.empty()) {
    return false;
  }
  std::vector<std::pair<std::string, std::string>> fields;
  bool any = false;
  for (const auto& field : head) {
    std::string value(field.value());
    const std::string_view name = field.name_string();
    if (carries_credentials(name)) {
      auto decoded = boost::beast::iequals(name, "authorization") ? basic_credentials(value)
                                                                  : std::optional<std::string>();
      if (decoded && replace_sentinels(secrets, *decoded)) {
        value = basic_value(*decoded);
        any = true;
      } else if (replace_sentinels(secrets, value)) {
        any = true;
      }
    }
    fields.emplace_back(std::string(name), std::move(value));
  }
  if (!any) {
    return false;
  }
  // Rebuilt in the same order: Beast cannot change a field's value in place.
  head.clear();
  for (const auto& [name, value] : fields) {
    head.insert(name, value);
  }
  return true;
}

std::optional<SignedRequest> signed_request(const http::request_header<>& head) {
  const auto authorization = head.find(http::field::authorization);
  if (authorization == head.end()) {
    return std::nullopt;
  }
  auto parsed = parse_sigv4_authorization(authorization->value());
  if (!parsed) {
    return std::nullopt;
  }
  SignedRequest out;
  out.authorization = std::move(*parsed);
  out.as_sent.method = std::string(head.method_string());
  out.as_sent.target = std::string(head.target());
  for (const auto& field : head) {
    out.as_sent.fields.emplace_back(std::string(field.name_string()), std::string(field.value()));
    if (boost::beast::iequals(field.name_string(), "x-amz-content-sha256")) {
      out.as_sent.payload_hash = std::string(field.value());
    }
  }
  out.needs_body_hash = out.as_sent.payload_hash.empty();
  return out;
}

std::optional<std::string> unsignable(const SignedRequest& signed_request,
                                      std::chrono::system_clock::time_point now) {
  const auto& signed_headers = signed_request.authorization.signed_headers;
  if (std::find(signed_headers.begin(), signed_headers.end(), "x-amz-date") ==
      signed_headers.end()) {
    return std::string(
        "the request's SigV4 signature does not cover X-Amz-Date; the gate signs again only "
        "requests whose date is signed.");
  }
  std::string stamp;
  for (const auto& [name, value] : signed_request.as_sent.fields) {
    if (boost::beast::iequals(name, "x-amz-date")) {
      stamp = value;
    }
  }
  std::tm parts{};
  const char* end =
      stamp.size() == 16 ? ::strptime(stamp.c_str(), "%Y%m%dT%H%M%SZ", &parts) : nullptr;
  if (end == nullptr || *end != '\0') {
    return std::string("the request's X-Amz-Date is not a SigV4 time (YYYYMMDDTHHMMSSZ).");
  }
  const auto when = std::chrono::system_clock::from_time_t(::timegm(&parts));
  const auto skew = when > now ? when - now : now - when;
  if (skew > std::chrono::minutes(15)) {
    return std::string(
        "the request's X-Amz-Date is more than 15 minutes from the gate's clock; the gate signs "
        "again only requests made now (as AWS accepts them).");
  }
  const std::string_view target = signed_request.as_sent.target;
  const std::size_t question = target.find('?');
  if (question != std::string_view::npos) {
    const std::string query =
        rules::ascii_lower(rules::percent_decoded(target.substr(question + 1)));
    for (const char* presign : {"x-amz-algorithm", "x-amz-credential", "x-amz-date",
                                "x-amz-expires", "x-amz-signedheaders", "x-amz-signature"}) {
      for (std::size_t at = query.find(presign); at != std::string::npos;
           at = query.find(presign, at + 1)) {
        if (at == 0 || query[at - 1] == '&') {
          return std::string(
              "the request carries presigned-URL parameters (X-Amz-*) besides its SigV4 "
              "Authorization; the gate does not sign such a request again.");
        }
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> sign_again(const MaskedSecrets& secrets, std::string_view host,
                                      const SignedRequest& signed_request,
                                      http::request_header<>& head,
                                      std::chrono::system_clock::time_point now) {
  if (auto refused = unsignable(signed_request, now)) {
    return refused;
  }
  const MaskedSecret* key = nullptr;
  std::optional<CanonicalForm> form;
  for (const auto& secret : secrets.all()) {
    if (!secret_bound_to(secret.spec, host)) {
      continue;
    }
    form = sigv4_signed_with(signed_request.as_sent, signed_request.authorization, secret.sentinel);
    if (form) {
      key = &secret;
      break;
    }
  }
  if (key == nullptr) {
    // Signed with a key the gate does not hold: filling a sentinel into it would send the real
    // value in a request whose signature the origin will refuse, and its error echoes the request
    // back (S3's CanonicalRequestBytes spells it in hexadecimal). Nothing is filled into it.
    for (const auto& [name, value] : signed_request.as_sent.fields) {
      if (const MaskedSecret* secret = sentinel_in_field(secrets, name, value)) {
        return "the request carries the masked secret " + secret->spec.name +
               " but its SigV4 signature was not made with a masked key; the gate fills a "
               "secret into a signed request only when it signs it again (sign it with the "
               "masked key the command holds).";
      }
    }
    return std::nullopt;
  }
  const std::string& payload = signed_request.as_sent.payload_hash;
  if (payload.starts_with("STREAMING-") && !payload.starts_with("STREAMING-UNSIGNED-")) {
    return "the request is signed with the masked secret " + key->spec.name + " chunk by chunk (" +
           payload.substr(0, 64) +
           "), which the gate cannot sign again; have the client send an unsigned payload "
           "(UNSIGNED-PAYLOAD, or STREAMING-UNSIGNED-PAYLOAD-TRAILER) or its hash.";
  }
  auto authorization = parse_sigv4_authorization(head[http::field::authorization]);
  if (!authorization) {
    return "the request's SigV4 Authorization could not be read again after its secrets were "
           "filled in.";
  }
  // The gate's signature covers what leaves: not the range fields it took out (without_ranges).
  std::erase_if(authorization->signed_headers, [&](const std::string& name) {
    return (name == "range" || name == "if-range") && head.find(name) == head.end();
  });
  SigV4Request leaving;
  leaving.method = std::string(head.method_string());
  leaving.target = std::string(head.target());
  for (const auto& field : head) {
    leaving.fields.emplace_back(std::string(field.name_string()), std::string(field.value()));
  }
  leaving.payload_hash = payload;
  auto signature = sigv4_signature(leaving, *authorization, key->value, *form);
  if (!signature) {
    return "the request as it leaves lacks a field its SigV4 signature covers.";
  }
  authorization->signature = std::move(*signature);
  head.set(http::field::authorization, render_sigv4_authorization(*authorization));
  return std::nullopt;
}

bool signed_by_a_sentinel(const MaskedSecrets& secrets, std::string_view host,
                          const SignedRequest& signed_request) {
  return std::any_of(secrets.all().begin(), secrets.all().end(), [&](const MaskedSecret& secret) {
    return secret_bound_to(secret.spec, host) &&
           sigv4_signed_with(signed_request.as_sent, signed_request.authorization, secret.sentinel)
               .has_value();
  });
}

void without_ranges(http::request_header<>& head) {
  head.erase(http::field::range);
  head.erase(http::field::if_range);
}

std::string coding_other_than(std::string_view list, std::string_view plain) {
  while (!list.empty()) {
    const std::size_t comma = std::min(list.find(','), list.size());
    std::string_view coding = list.substr(0, comma);
    list.remove_prefix(std::min(comma + 1, list.size()));
    coding = coding.substr(0, coding.find(';'));
    coding = rules::trim_ows(coding);
    if (!coding.empty() && !boost::beast::iequals(coding, plain)) {
      return std::string(coding.substr(0, 32));
    }
  }
  return {};
}

std::optional<std::string> partial_response_problem(unsigned status,
                                                    std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  type = rules::trim_ows(type);
  if (status == 206) {
    return std::string("sent a partial response (206) to a request that carried a masked secret");
  }
  if (boost::beast::iequals(type, "multipart/byteranges")) {
    return std::string(
        "sent parts of a resource (multipart/byteranges) to a request that carried a masked "
        "secret");
  }
  return std::nullopt;
}

}  // namespace sandgate::secrets
