// AWS Signature Version 4. See sigv4.hpp.
#include "proxy/secrets/sigv4.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <algorithm>
#include <array>

#include "rules/ascii.hpp"
#include "rules/percent_escape.hpp"

namespace sandgate::secrets {
namespace {

constexpr std::string_view kScheme = "AWS4-HMAC-SHA256";

std::string hex(const unsigned char* bytes, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    out += kDigits[bytes[i] >> 4];
    out += kDigits[bytes[i] & 15];
  }
  return out;
}

std::string hmac(std::string_view key, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
  unsigned int size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(), &size);
  return std::string(reinterpret_cast<const char*>(out.data()), size);
}

bool unreserved(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

std::string encode(std::string_view text, bool keep_slash) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    if (unreserved(c) || (keep_slash && c == '/')) {
      out += c;
    } else {
      out += '%';
      out += kHex[static_cast<unsigned char>(c) >> 4];
      out += kHex[static_cast<unsigned char>(c) & 15];
    }
  }
  return out;
}

// RFC 3986's remove_dot_segments, with empty segments dropped as AWS services want (botocore's
// normalize_url_path).
std::string without_dot_segments(std::string_view path) {
  if (path.empty()) {
    return "/";
  }
  std::vector<std::string_view> kept;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = std::min(path.find('/', start), path.size());
    const std::string_view segment = path.substr(start, slash - start);
    if (segment == "..") {
      if (!kept.empty()) {
        kept.pop_back();
      }
    } else if (!segment.empty() && segment != ".") {
      kept.push_back(segment);
    }
    start = slash + 1;
  }
  std::string out = path.front() == '/' ? "/" : "";
  for (std::size_t i = 0; i < kept.size(); ++i) {
    out += (i > 0 ? "/" : "") + std::string(kept[i]);
  }
  if (path.back() == '/' && !kept.empty()) {
    out += '/';
  }
  return out;
}

std::string canonical_query(std::string_view query, QueryForm form) {
  if (query.empty()) {
    return {};
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  std::size_t start = 0;
  while (start <= query.size()) {
    const std::size_t amp = std::min(query.find('&', start), query.size());
    const std::string_view pair = query.substr(start, amp - start);
    const std::size_t equals = pair.find('=');
    std::string key(pair.substr(0, equals));
    std::string value(equals == std::string_view::npos ? std::string_view()
                                                       : pair.substr(equals + 1));
    if (form == QueryForm::encoded_again) {
      if (!pair.empty()) {
        pairs.emplace_back(encode(rules::percent_decoded(key), false),
                           encode(rules::percent_decoded(value), false));
      }
    } else {
      pairs.emplace_back(std::move(key), std::move(value));
    }
    start = amp + 1;
  }
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    out += (i > 0 ? "&" : "") + pairs[i].first + "=" + pairs[i].second;
  }
  return out;
}

std::string collapse_spaces(std::string_view value) {
  std::string out;
  bool space = false;
  for (const char c : rules::trim_ows(value)) {
    if (c == ' ' || c == '\t') {
      space = true;
      continue;
    }
    if (space) {
      out += ' ';
      space = false;
    }
    out += c;
  }
  return out;
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest.data());
  return hex(digest.data(), digest.size());
}

std::optional<SigV4Authorization> parse_sigv4_authorization(std::string_view value) {
  value = rules::trim_ows(value);
  if (!value.starts_with(kScheme) || value.size() == kScheme.size() ||
      (value[kScheme.size()] != ' ' && value[kScheme.size()] != '\t')) {
    return std::nullopt;
  }
  value.remove_prefix(kScheme.size());
  SigV4Authorization out;
  bool credential = false;
  bool headers = false;
  bool signature = false;
  std::size_t start = 0;
  while (start <= value.size()) {
    const std::size_t comma = std::min(value.find(',', start), value.size());
    const std::string_view item = rules::trim_ows(value.substr(start, comma - start));
    start = comma + 1;
    const std::size_t equals = item.find('=');
    if (equals == std::string_view::npos) {
      return std::nullopt;
    }
    const std::string_view key = item.substr(0, equals);
    const std::string_view text = item.substr(equals + 1);
    if (key == "Credential" && !credential) {
      std::array<std::string_view, 5> parts;
      std::size_t from = 0;
      for (std::size_t i = 0; i < parts.size(); ++i) {
        const std::size_t slash = i + 1 < parts.size() ? text.find('/', from) : text.size();
        if (slash == std::string_view::npos) {
          return std::nullopt;
        }
        parts[i] = text.substr(from, slash - from);
        from = slash + 1;
      }
      if (parts[4] != "aws4_request" || parts[0].empty() || parts[1].size() != 8 ||
          parts[2].empty() || parts[3].empty()) {
        return std::nullopt;
      }
      out.access_key_id = parts[0];
      out.date = parts[1];
      out.region = parts[2];
      out.service = parts[3];
      credential = true;
    } else if (key == "SignedHeaders" && !headers) {
      std::size_t from = 0;
      while (from <= text.size()) {
        const std::size_t semicolon = std::min(text.find(';', from), text.size());
        const std::string_view name = text.substr(from, semicolon - from);
        if (name.empty()) {
          return std::nullopt;
        }
        out.signed_headers.push_back(rules::ascii_lower(name));
        from = semicolon + 1;
      }
      headers = true;
    } else if (key == "Signature" && !signature) {
      if (text.size() != 64 ||
          !std::all_of(text.begin(), text.end(), [](char c) { return rules::hex_value(c) >= 0; })) {
        return std::nullopt;
      }
      out.signature = rules::ascii_lower(text);
      signature = true;
    } else {
      return std::nullopt;
    }
  }
  if (!credential || !headers || !signature) {
    return std::nullopt;
  }
  return out;
}

std::string render_sigv4_authorization(const SigV4Authorization& a) {
  std::string headers;
  for (std::size_t i = 0; i < a.signed_headers.size(); ++i) {
    headers += (i > 0 ? ";" : "") + a.signed_headers[i];
  }
  return std::string(kScheme) + " Credential=" + a.access_key_id + "/" + a.date + "/" + a.region +
         "/" + a.service + "/aws4_request, SignedHeaders=" + headers + ", Signature=" + a.signature;
}

std::optional<std::string> sigv4_signature(const SigV4Request& request,
                                           const SigV4Authorization& authorization,
                                           std::string_view secret_key, CanonicalForm form) {
  const std::string_view target = request.target;
  const std::size_t question = target.find('?');
  const std::string_view path = target.substr(0, question);
  const std::string_view query =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);

  std::string timestamp;
  std::vector<std::string> names = authorization.signed_headers;
  std::sort(names.begin(), names.end());
  std::string headers;
  for (const auto& name : names) {
    std::string value;
    bool found = false;
    for (const auto& [field, text] : request.fields) {
      if (rules::ascii_lower(field) == name) {
        value += (found ? "," : "") + collapse_spaces(text);
        found = true;
      }
    }
    if (!found) {
      return std::nullopt;
    }
    headers += name + ":" + value + "\n";
  }
  for (const auto& [field, text] : request.fields) {
    if (rules::ascii_lower(field) == "x-amz-date") {
      timestamp = rules::trim_ows(text);
    }
  }
  if (timestamp.size() != 16 || !timestamp.starts_with(authorization.date)) {
    return std::nullopt;
  }
  std::string signed_list;
  for (std::size_t i = 0; i < authorization.signed_headers.size(); ++i) {
    signed_list += (i > 0 ? ";" : "") + authorization.signed_headers[i];
  }
  const std::string uri = form.path == PathForm::as_sent
                              ? (path.empty() ? std::string("/") : std::string(path))
                              : encode(without_dot_segments(path), true);
  const std::string canonical = request.method + "\n" + uri + "\n" +
                                canonical_query(query, form.query) + "\n" + headers + "\n" +
                                signed_list + "\n" + request.payload_hash;
  const std::string scope = authorization.date + "/" + authorization.region + "/" +
                            authorization.service + "/aws4_request";
  const std::string to_sign =
      std::string(kScheme) + "\n" + timestamp + "\n" + scope + "\n" + sha256_hex(canonical);
  std::string key = hmac("AWS4" + std::string(secret_key), authorization.date);
  key = hmac(key, authorization.region);
  key = hmac(key, authorization.service);
  key = hmac(key, "aws4_request");
  const std::string signature = hmac(key, to_sign);
  return hex(reinterpret_cast<const unsigned char*>(signature.data()), signature.size());
}

std::optional<CanonicalForm> sigv4_signed_with(const SigV4Request& request,
                                               const SigV4Authorization& authorization,
                                               std::string_view secret_key) {
  for (const PathForm path : {PathForm::encoded_again, PathForm::as_sent}) {
    for (const QueryForm query : {QueryForm::as_sent, QueryForm::encoded_again}) {
      const CanonicalForm form{path, query};
      const auto signature = sigv4_signature(request, authorization, secret_key, form);
      if (!signature) {
        return std::nullopt;
      }
      if (CRYPTO_memcmp(signature->data(), authorization.signature.data(), 64) == 0) {
        return form;
      }
    }
  }
  return std::nullopt;
}

}  // namespace sandgate::secrets
