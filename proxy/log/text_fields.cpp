// The text log's values: writing and reading them back. See text_fields.hpp.
#include "proxy/log/text_fields.hpp"

#include <charconv>

namespace sandgate::log {
namespace {

bool plain_byte(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte > 0x20 && byte < 0x7f && c != '=' && c != '"' && c != '\\';
}

constexpr char kHex[] = "0123456789abcdef";

// A value read back from `text` at `at`: quoted (escapes undone) or up to the next space.
// Nothing when a quoted value is not closed or holds an escape the writer never writes.
std::optional<std::string> read_value(std::string_view text, std::size_t& at) {
  std::string value;
  if (at < text.size() && text[at] == '"') {
    ++at;
    while (at < text.size()) {
      const char c = text[at++];
      if (c == '"') {
        return value;
      }
      if (c != '\\') {
        value += c;
        continue;
      }
      if (at >= text.size()) {
        return std::nullopt;
      }
      const char escaped = text[at++];
      if (escaped == '"' || escaped == '\\') {
        value += escaped;
      } else if (escaped == 'x' && at + 2 <= text.size()) {
        unsigned byte = 0;
        const auto [end, error] = std::from_chars(text.data() + at, text.data() + at + 2, byte, 16);
        if (error != std::errc{} || end != text.data() + at + 2) {
          return std::nullopt;
        }
        value += static_cast<char>(byte);
        at += 2;
      } else {
        return std::nullopt;
      }
    }
    return std::nullopt;
  }
  const std::size_t end = std::min(text.find(' ', at), text.size());
  value = std::string(text.substr(at, end - at));
  at = end;
  if (value.empty()) {
    return std::nullopt;
  }
  return value;
}

// The port at the end of a bare host token ("name:443"), as the writer appends it: 1..65535,
// without leading zeros. Nothing when the token does not end in one.
std::optional<std::uint16_t> trailing_port(std::string_view token, std::size_t& colon) {
  colon = token.rfind(':');
  if (colon == std::string_view::npos || colon + 1 >= token.size() || token.size() - colon > 6 ||
      token[colon + 1] == '0') {
    return std::nullopt;
  }
  unsigned port = 0;
  const auto [end, error] =
      std::from_chars(token.data() + colon + 1, token.data() + token.size(), port);
  if (error != std::errc{} || end != token.data() + token.size() || port == 0 || port > 65535) {
    return std::nullopt;
  }
  return static_cast<std::uint16_t>(port);
}

bool expect(std::string_view text, std::size_t& at, std::string_view what) {
  if (text.substr(at, what.size()) != what) {
    return false;
  }
  at += what.size();
  return true;
}

}  // namespace

bool needs_quotes(std::string_view value) {
  if (value.empty()) {
    return true;
  }
  for (char c : value) {
    if (!plain_byte(c)) {
      return true;
    }
  }
  return false;
}

void append_text_value(std::string& out, std::string_view value) {
  if (!needs_quotes(value)) {
    out += value;
    return;
  }
  append_quoted_value(out, value);
}

void append_quoted_value(std::string& out, std::string_view value) {
  out += '"';
  for (char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte >= 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;  // a space or '=' is safe inside the quotes
    }
  }
  out += '"';
}

const std::string* TextLine::field(std::string_view key) const {
  for (const auto& [name, value] : fields) {
    if (name == key) {
      return &value;
    }
  }
  return nullptr;
}

std::optional<TextLine> parse_text_line(std::string_view line) {
  TextLine parsed;
  std::size_t at = line.find(' ');
  if (at == std::string_view::npos) {
    return std::nullopt;
  }
  parsed.timestamp = std::string(line.substr(0, at));
  if (!expect(line, at, " conn=")) {
    return std::nullopt;
  }
  const auto [id_end, id_error] =
      std::from_chars(line.data() + at, line.data() + line.size(), parsed.connection_id);
  if (id_error != std::errc{}) {
    return std::nullopt;
  }
  at = static_cast<std::size_t>(id_end - line.data());
  if (!expect(line, at, " ")) {
    return std::nullopt;
  }
  const std::size_t word_end = std::min(line.find(' ', at), line.size());
  parsed.word = std::string(line.substr(at, word_end - at));
  at = word_end;
  if (!expect(line, at, " ")) {
    return std::nullopt;
  }
  auto method = read_value(line, at);
  if (!method || !expect(line, at, " ")) {
    return std::nullopt;
  }
  parsed.method = std::move(*method);
  // The host, then ":port" when the line has one.
  const bool quoted_host = at < line.size() && line[at] == '"';
  auto host = read_value(line, at);
  if (!host) {
    return std::nullopt;
  }
  if (quoted_host) {
    if (at < line.size() && line[at] == ':') {
      const std::size_t end = std::min(line.find(' ', at), line.size());
      std::size_t colon = 0;
      const auto port = trailing_port(line.substr(at, end - at), colon);
      if (!port || colon != 0) {
        return std::nullopt;
      }
      parsed.port = *port;
      at = end;
    }
    parsed.host = std::move(*host);
  } else {
    std::size_t colon = 0;
    if (const auto port = trailing_port(*host, colon)) {
      parsed.port = *port;
      host->resize(colon);
    }
    parsed.host = std::move(*host);
  }
  // " (reason)" on a denial line.
  if (line.substr(at, 2) == " (") {
    at += 2;
    if (at < line.size() && line[at] == '"') {
      auto reason = read_value(line, at);
      if (!reason || !expect(line, at, ")")) {
        return std::nullopt;
      }
      parsed.reason = std::move(*reason);
    } else {
      auto token = read_value(line, at);
      if (!token || token->size() < 2 || token->back() != ')') {
        return std::nullopt;
      }
      token->pop_back();
      parsed.reason = std::move(*token);
    }
  }
  // key=value fields to the end.
  while (at < line.size()) {
    if (!expect(line, at, " ")) {
      return std::nullopt;
    }
    const std::size_t equals = line.find('=', at);
    if (equals == std::string_view::npos || equals == at) {
      return std::nullopt;
    }
    std::string key(line.substr(at, equals - at));
    if (needs_quotes(key)) {
      return std::nullopt;
    }
    at = equals + 1;
    auto value = read_value(line, at);
    if (!value) {
      return std::nullopt;
    }
    if (key == "reason" && parsed.word == "END") {
      parsed.reason = *value;
    }
    parsed.fields.emplace_back(std::move(key), std::move(*value));
  }
  return parsed;
}

}  // namespace sandgate::log
