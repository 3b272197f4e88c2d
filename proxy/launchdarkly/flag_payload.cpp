#include "proxy/launchdarkly/flag_payload.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <cmath>
#include <limits>
#include <vector>

#include "proxy/json/json_writer.hpp"

namespace sandgate::launchdarkly {
namespace {

namespace json = boost::json;

// Boost.JSON reads a number too large for a double (`1e999`) as infinity and would write it back
// as `Infinity`, which is not JSON: such documents are refused. (Iterative: depth is bounded by
// the parser, but a wide document should not cost stack either.)
bool has_non_finite_number(const json::value& root) {
  std::vector<const json::value*> pending{&root};
  while (!pending.empty()) {
    const json::value* value = pending.back();
    pending.pop_back();
    if (value->is_double() && !std::isfinite(value->get_double())) {
      return true;
    }
    if (const json::array* array = value->if_array()) {
      for (const json::value& item : *array) {
        pending.push_back(&item);
      }
    } else if (const json::object* object = value->if_object()) {
      for (const auto& member : *object) {
        pending.push_back(&member.value());
      }
    }
  }
  return false;
}

Expected<json::value, std::string> parse_json(std::string_view text, std::size_t max_bytes) {
  if (text.size() > max_bytes) {
    return Unexpected{"larger than " + std::to_string(max_bytes) +
                      " bytes (the size limit, SANDGATE_LD_MAX_PAYLOAD)"};
  }
  json::parse_options options;
  options.max_depth = kMaxJsonDepth;
  std::error_code ec;
  json::value value =
      json::parse(json::string_view(text.data(), text.size()), ec, json::storage_ptr(), options);
  if (ec == json::error::too_deep) {
    return Unexpected{"nested deeper than " + std::to_string(kMaxJsonDepth) +
                      " levels (the JSON nesting limit)"};
  }
  if (ec) {
    return Unexpected{"not valid JSON (" + ec.message() + ")"};
  }
  if (has_non_finite_number(value)) {
    return Unexpected{std::string("not valid JSON (a number out of range)")};
  }
  return value;
}

// A version number: a non-negative integer (LaunchDarkly sends integers; a float is refused).
Expected<std::uint64_t, std::string> read_version(const json::object& object, bool required) {
  const json::value* version = object.if_contains("version");
  if (version == nullptr) {
    if (required) {
      return Unexpected{std::string("no \"version\"")};
    }
    return std::uint64_t{0};
  }
  if (version->is_uint64()) {
    return version->as_uint64();
  }
  if (version->is_int64() && version->as_int64() >= 0) {
    return static_cast<std::uint64_t>(version->as_int64());
  }
  return Unexpected{std::string("\"version\" is not a non-negative integer")};
}

Expected<FlagState, std::string> read_state(const json::object& object, bool version_required) {
  auto version = read_version(object, version_required);
  if (!version) {
    return Unexpected{version.error()};
  }
  FlagState state;
  state.version = *version;
  if (const json::value* value = object.if_contains("value")) {
    state.value_json = json::serialize(*value);
  }
  return state;
}

Expected<FlagUpdate, std::string> read_update(std::string_view text, bool with_value,
                                              std::size_t max_bytes) {
  auto parsed = parse_json(text, max_bytes);
  if (!parsed) {
    return Unexpected{parsed.error()};
  }
  const json::object* object = parsed->if_object();
  if (object == nullptr) {
    return Unexpected{std::string("not a JSON object")};
  }
  const json::value* key = object->if_contains("key");
  if (key == nullptr || !key->is_string() || key->as_string().empty()) {
    return Unexpected{std::string("no \"key\" string")};
  }
  auto state = read_state(*object, /*version_required=*/true);
  if (!state) {
    return Unexpected{state.error()};
  }
  FlagUpdate update;
  update.key = std::string(key->as_string());
  update.state = std::move(*state);
  if (!with_value) {
    update.state.value_json = "null";
  }
  return update;
}

}  // namespace

Expected<std::optional<FlagState>, std::string> read_flag(std::string_view all_flags_json,
                                                          std::string_view flag,
                                                          std::size_t max_bytes) {
  auto parsed = parse_json(all_flags_json, max_bytes);
  if (!parsed) {
    return Unexpected{parsed.error()};
  }
  const json::object* flags = parsed->if_object();
  if (flags == nullptr) {
    return Unexpected{std::string("not a JSON object of flags")};
  }
  const json::value* entry = flags->if_contains(json::string_view(flag.data(), flag.size()));
  if (entry == nullptr) {
    return std::optional<FlagState>{};
  }
  const json::object* object = entry->if_object();
  if (object == nullptr) {
    return Unexpected{"flag \"" + std::string(flag) + "\" is not a JSON object"};
  }
  auto state = read_state(*object, /*version_required=*/false);
  if (!state) {
    return Unexpected{"flag \"" + std::string(flag) + "\": " + state.error()};
  }
  return std::optional<FlagState>{std::move(*state)};
}

Expected<FlagUpdate, std::string> read_patch(std::string_view json_text, std::size_t max_bytes) {
  return read_update(json_text, /*with_value=*/true, max_bytes);
}

Expected<FlagUpdate, std::string> read_delete(std::string_view json_text, std::size_t max_bytes) {
  return read_update(json_text, /*with_value=*/false, max_bytes);
}

bool allows(const FlagState& state) { return state.value_json == "true"; }

Expected<CompiledList, std::string> compile_list(const FlagState& state, std::string_view source) {
  // The value was read from a document already bounded in size and depth.
  auto parsed = parse_json(state.value_json, std::numeric_limits<std::size_t>::max());
  if (!parsed) {
    return Unexpected{parsed.error()};
  }
  const json::array* entries = parsed->if_array();
  if (entries == nullptr) {
    return Unexpected{std::string("the flag's value is not a JSON array of rules")};
  }
  CompiledList list;
  rules::DomainSet::Builder builder;
  std::uint32_t number = 0;
  for (const json::value& entry : *entries) {
    ++number;
    const json::string* text = entry.if_string();
    if (text == nullptr) {
      list.issues.push_back(
          {std::string(source), number, json::serialize(entry).substr(0, 200), "not a string"});
      continue;
    }
    const std::string_view line(text->data(), text->size());
    // One array item is one rule: a line break inside would smuggle in a second one.
    if (line.find_first_of("\r\n") != std::string_view::npos) {
      list.issues.push_back({std::string(source), number, std::string(line.substr(0, 200)),
                             "a line break inside an entry"});
      continue;
    }
    if (auto error = builder.add_line(line, source, number)) {
      list.issues.push_back(
          {std::string(source), number, std::string(line.substr(0, 200)), *error});
      continue;
    }
    ++list.entries;
  }
  list.rules = std::make_shared<const rules::DomainSet>(std::move(builder).build());
  return list;
}

std::string context_json(std::string_view key, std::string_view username) {
  // Written with the gate's one JSON writer: Boost.JSON's serializer copies bytes that are not
  // UTF-8 (a user name is whatever the system holds) into the body as they are.
  std::string out;
  json_writer::ObjectWriter context(out);
  context.string("kind", "user").string("key", key);
  if (!username.empty()) {
    context.string("username", username);
  }
  context.close();
  return out;
}

std::string base64url(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const auto n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                   static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                   static_cast<unsigned char>(bytes[i + 2]);
    out += kAlphabet[n >> 18 & 63];
    out += kAlphabet[n >> 12 & 63];
    out += kAlphabet[n >> 6 & 63];
    out += kAlphabet[n & 63];
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    std::uint32_t n = static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    if (rest == 2) {
      n |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    }
    out += kAlphabet[n >> 18 & 63];
    out += kAlphabet[n >> 12 & 63];
    if (rest == 2) {
      out += kAlphabet[n >> 6 & 63];
    }
  }
  return out;
}

}  // namespace sandgate::launchdarkly
