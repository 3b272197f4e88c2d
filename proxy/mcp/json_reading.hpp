// Strict reading of the JSON an MCP client or server sends through the gate: one parse with
// Boost.JSON's SAX parser (basic_parser) into a value (Boost.JSON: Debian's libboost1.81-dev,
// already the gate's JSON reader for LaunchDarkly, rather than a second library such as nlohmann
// or simdjson; its SAX handler sees every key, so a duplicate is caught while parsing), refusing
// what a server could read in another way than the gate:
//   - a key twice in one object (JSON.parse and Python keep the last, some parsers the first:
//     `{"name":"search","name":"delete_repo"}` would be judged as one tool and run as another),
//     keys compared as the laxest servers compare them (folded_key): Go's encoding/json (which
//     Go MCP servers have read requests with) and .NET's case-insensitive options match a
//     member to a field in any case, so `{"name":"search","NAME":"delete_repo"}` runs
//     delete_repo there (Go also takes `"param\u017f"`, with a long s, for `params`);
//   - text that is not UTF-8, a lone surrogate escape (`\ud800`), comments, trailing commas,
//     anything after the value;
//   - more than the size or nesting depth given.
// `\u` escapes are decoded as every server decodes them, so a name is judged as the server reads
// it (`"\u0064elete_repo"` is delete_repo).
//
// And views of the bytes of JSON read_json accepted: an array's elements and an object's members,
// as they were sent, so that what the gate forwards or passes on is the sender's own bytes
// (a smaller batch, a list without some entries), never a serialisation of its own.
//
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rules/expected.hpp"

namespace sandgate::mcp {

struct JsonLimits {
  std::size_t max_bytes = 1u << 20;
  std::size_t max_depth = 64;
};

// Why a text is no JSON the gate judges.
struct JsonProblem {
  enum class Kind : std::uint8_t {
    too_large,  // more bytes than max_bytes
    too_deep,   // nested deeper than max_depth
    duplicate,  // a key twice in one object
    invalid,    // not JSON (or not UTF-8, or something after the value)
  };
  Kind kind = Kind::invalid;
  std::string sentence;  // for the client and the log: "a key twice in one object ("name")"
};

Expected<boost::json::value, JsonProblem> read_json(std::string_view text,
                                                    const JsonLimits& limits);

// A key as servers that match member names in any case read it: ASCII letters in lower case,
// and the four letters outside ASCII whose simple case mappings reach ASCII letters in lower
// case too (U+0130 and U+0131 as `i`, U+017F as `s`, U+212A KELVIN SIGN as `k`: Go folds the
// last two, Java's equalsIgnoreCase and .NET's OrdinalIgnoreCase the first two or the middle
// one). Two keys of one object with one folded key are a duplicate.
std::string folded_key(std::string_view key);

// A key as a sentence quotes it: printable ASCII as is, other bytes as \xHH, at most 64 bytes.
std::string quoted_key(std::string_view key);

// The members of a JSON-RPC 2.0 message, for misspelled_member(): a server that spells one in
// another case is read differently by clients that match names in any case.
inline constexpr std::array<std::string_view, 6> kJsonRpcMembers = {"jsonrpc", "id",     "method",
                                                                    "params",  "result", "error"};

// The first member of `object` whose key folds to one of `names` but is spelled otherwise
// ("Method" for "method"): a server matching names in any case reads it as that member, where
// the gate, reading names as written, would not. Nothing when there is none.
std::optional<std::string> misspelled_member(const boost::json::object& object,
                                             std::span<const std::string_view> names);

// The text of one JSON value without the white space around it.
std::string_view trim_json(std::string_view text);

// The elements of an array's text ("[ 1, {\"a\":2} ]" -> "1", "{\"a\":2}"), for text that
// read_json accepted (anything else gives an unspecified split, never a read out of bounds).
std::vector<std::string_view> raw_elements(std::string_view array);

// The members of an object's text, each key decoded as read_json decodes it.
struct RawMember {
  std::string key;
  std::string_view value;
};
std::vector<RawMember> raw_members(std::string_view object);

}  // namespace sandgate::mcp
