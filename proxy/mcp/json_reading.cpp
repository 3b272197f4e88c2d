// Strict JSON reading (see json_reading.hpp): Boost.JSON's basic_parser with a handler that
// builds the value as boost::json::parser does (a value_stack) and keeps the folded keys of every
// open object to refuse a second one.
#include "proxy/mcp/json_reading.hpp"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/value_stack.hpp>
#include <unordered_set>

#include "rules/ascii.hpp"

namespace sandgate::mcp {
namespace {

namespace json = boost::json;
using boost::system::error_code;

// Builds the value; refuses a key seen twice in one object.
struct StrictHandler {
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);

  json::value_stack stack;
  std::vector<std::unordered_set<std::string>> keys;  // of each open object, folded
  std::string key;                                    // the key being read, in parts
  std::string duplicate;                              // the key seen twice, when one was

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_array_begin(error_code&) { return true; }
  bool on_array_end(std::size_t n, error_code&) {
    stack.push_array(n);
    return true;
  }
  bool on_object_begin(error_code&) {
    keys.emplace_back();
    return true;
  }
  bool on_object_end(std::size_t n, error_code&) {
    keys.pop_back();
    stack.push_object(n);
    return true;
  }
  bool on_string_part(json::string_view part, std::size_t, error_code&) {
    stack.push_chars(part);
    return true;
  }
  bool on_string(json::string_view part, std::size_t, error_code&) {
    stack.push_string(part);
    return true;
  }
  bool on_key_part(json::string_view part, std::size_t, error_code&) {
    key.append(part.data(), part.size());
    return true;
  }
  bool on_key(json::string_view part, std::size_t, error_code& ec) {
    key.append(part.data(), part.size());
    if (!keys.back().insert(folded_key(key)).second) {
      duplicate = std::move(key);
      key.clear();
      ec = json::error::syntax;  // stops the parse; `duplicate` says why
      return false;
    }
    stack.push_key(key);
    key.clear();
    return true;
  }
  bool on_number_part(json::string_view, error_code&) { return true; }
  bool on_int64(std::int64_t i, json::string_view, error_code&) {
    stack.push_int64(i);
    return true;
  }
  bool on_uint64(std::uint64_t u, json::string_view, error_code&) {
    stack.push_uint64(u);
    return true;
  }
  bool on_double(double d, json::string_view, error_code&) {
    stack.push_double(d);
    return true;
  }
  bool on_bool(bool b, error_code&) {
    stack.push_bool(b);
    return true;
  }
  bool on_null(error_code&) {
    stack.push_null();
    return true;
  }
  bool on_comment_part(json::string_view, error_code&) { return true; }
  bool on_comment(json::string_view, error_code&) { return true; }
};

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::size_t skip_space(std::string_view text, std::size_t at) {
  while (at < text.size() && is_space(text[at])) {
    ++at;
  }
  return at;
}

// The index just past the string that starts at `at` (a '"').
std::size_t string_end(std::string_view text, std::size_t at) {
  for (++at; at < text.size(); ++at) {
    if (text[at] == '\\') {
      ++at;
    } else if (text[at] == '"') {
      return at + 1;
    }
  }
  return text.size();
}

// The index just past the value that starts at `at`.
std::size_t value_end(std::string_view text, std::size_t at) {
  if (at >= text.size()) {
    return text.size();
  }
  if (text[at] == '"') {
    return string_end(text, at);
  }
  if (text[at] == '[' || text[at] == '{') {
    std::size_t depth = 0;
    while (at < text.size()) {
      const char c = text[at];
      if (c == '"') {
        at = string_end(text, at);
        continue;
      }
      if (c == '[' || c == '{') {
        ++depth;
      } else if ((c == ']' || c == '}') && --depth == 0) {
        return at + 1;
      }
      ++at;
    }
    return text.size();
  }
  while (at < text.size() && text[at] != ',' && text[at] != ']' && text[at] != '}' &&
         !is_space(text[at])) {
    ++at;
  }
  return at;
}

}  // namespace

std::string quoted_key(std::string_view key) {
  static constexpr std::string_view kHex = "0123456789ABCDEF";
  std::string out = "\"";
  for (std::size_t i = 0; i < key.size() && i < 64; ++i) {
    const auto byte = static_cast<unsigned char>(key[i]);
    if (byte >= 0x20 && byte < 0x7f && byte != '"' && byte != '\\') {
      out += key[i];
    } else {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    }
  }
  return out + (key.size() > 64 ? "...\"" : "\"");
}

std::string folded_key(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (std::size_t i = 0; i < key.size(); ++i) {
    const std::string_view rest = key.substr(i);
    if (rest.starts_with("\xC4\xB0") || rest.starts_with("\xC4\xB1")) {  // U+0130, U+0131
      out += 'i';
      ++i;
    } else if (rest.starts_with("\xC5\xBF")) {  // U+017F LATIN SMALL LETTER LONG S
      out += 's';
      ++i;
    } else if (rest.starts_with("\xE2\x84\xAA")) {  // U+212A KELVIN SIGN
      out += 'k';
      i += 2;
    } else {
      out += rules::ascii_lower(key[i]);
    }
  }
  return out;
}

std::optional<std::string> misspelled_member(const json::object& object,
                                             std::span<const std::string_view> names) {
  for (const auto& member : object) {
    const std::string_view key(member.key());
    const std::string folded = folded_key(key);
    for (const std::string_view name : names) {
      if (folded == name && key != name) {
        return std::string(key);
      }
    }
  }
  return std::nullopt;
}

Expected<json::value, JsonProblem> read_json(std::string_view text, const JsonLimits& limits) {
  using Kind = JsonProblem::Kind;
  if (text.size() > limits.max_bytes) {
    return Unexpected{JsonProblem{Kind::too_large, "it is larger than " +
                                                       std::to_string(limits.max_bytes) +
                                                       " bytes, the most the gate reads"}};
  }
  json::parse_options options;
  options.max_depth = limits.max_depth;
  options.allow_comments = false;
  options.allow_trailing_commas = false;
  options.allow_invalid_utf8 = false;
  json::basic_parser<StrictHandler> parser(options);
  parser.handler().stack.reset();
  error_code ec;
  const std::size_t used = parser.write_some(false, text.data(), text.size(), ec);
  if (!parser.handler().duplicate.empty()) {
    return Unexpected{JsonProblem{Kind::duplicate, "it has a key twice in one object (" +
                                                       quoted_key(parser.handler().duplicate) +
                                                       "), which servers read in different ways"}};
  }
  if (ec == json::error::too_deep) {
    return Unexpected{JsonProblem{Kind::too_deep, "it is nested deeper than " +
                                                      std::to_string(limits.max_depth) +
                                                      " levels, the most the gate reads"}};
  }
  if (ec || used != text.size() || !parser.done()) {
    return Unexpected{JsonProblem{
        Kind::invalid, "it is not valid JSON (" +
                           (ec ? ec.message() : std::string("something after the value")) +
                           " at byte " + std::to_string(used) + ")"}};
  }
  return parser.handler().stack.release();
}

std::string_view trim_json(std::string_view text) {
  const std::size_t first = skip_space(text, 0);
  std::size_t last = text.size();
  while (last > first && is_space(text[last - 1])) {
    --last;
  }
  return text.substr(first, last - first);
}

std::vector<std::string_view> raw_elements(std::string_view array) {
  std::vector<std::string_view> elements;
  array = trim_json(array);
  if (array.size() < 2 || array.front() != '[') {
    return elements;
  }
  std::size_t at = skip_space(array, 1);
  while (at < array.size() && array[at] != ']') {
    const std::size_t end = value_end(array, at);
    if (end == at) {
      break;  // not what read_json accepts
    }
    elements.push_back(array.substr(at, end - at));
    at = skip_space(array, end);
    if (at < array.size() && array[at] == ',') {
      at = skip_space(array, at + 1);
    }
  }
  return elements;
}

std::vector<RawMember> raw_members(std::string_view object) {
  std::vector<RawMember> members;
  object = trim_json(object);
  if (object.size() < 2 || object.front() != '{') {
    return members;
  }
  std::size_t at = skip_space(object, 1);
  while (at < object.size() && object[at] == '"') {
    const std::size_t key_end = string_end(object, at);
    error_code ec;
    const json::value key = json::parse(object.substr(at, key_end - at), ec);
    at = skip_space(object, key_end);
    if (at < object.size() && object[at] == ':') {
      at = skip_space(object, at + 1);
    }
    const std::size_t end = value_end(object, at);
    if (end == at) {
      break;  // not what read_json accepts
    }
    members.push_back(RawMember{key.is_string() ? std::string(key.as_string()) : std::string(),
                                object.substr(at, end - at)});
    at = skip_space(object, end);
    if (at < object.size() && object[at] == ',') {
      at = skip_space(object, at + 1);
    }
  }
  return members;
}

}  // namespace sandgate::mcp
