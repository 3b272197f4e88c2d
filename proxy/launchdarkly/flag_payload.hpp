// LaunchDarkly's JSON, read strictly: the evaluation reply (all flags for one context), the
// streaming `patch` and `delete` events, and a list flag's value compiled into a rules::DomainSet.
//
// Every byte here comes from the network (or from whoever can answer in LaunchDarkly's place), so
// nothing is trusted: sizes and nesting are bounded, every field's type is checked, and anything
// unexpected is an error that leaves the last good data in force. Fuzzed in tests/fuzz.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/domain_set.hpp"
#include "rules/expected.hpp"

namespace sandgate::launchdarkly {

// The largest reply or event body accepted by default (SANDGATE_LD_MAX_PAYLOAD). An evaluation
// reply and a stream's `put` carry every client-side flag of the environment, not only the one
// asked for, so the bound is sized for a large environment, not for one flag.
inline constexpr std::size_t kMaxPayloadBytes = 32u << 20;
// The deepest JSON nesting accepted. A JSON flag's value may itself be nested, inside the
// reply's own three levels; beyond this the document is refused rather than recursed into.
inline constexpr unsigned kMaxJsonDepth = 256;

// One flag's state as LaunchDarkly sent it. The value is kept as JSON text; `version` orders
// updates (a missing version counts as 0).
struct FlagState {
  std::string value_json = "null";
  std::uint64_t version = 0;
};

// The reply of the evaluation endpoint (`{"flag-key": {"value": ..., "version": N, ...}, ...}`)
// or a stream's `put` data: the named flag's state, nothing if the flag is absent, or an error if
// the document is not such an object.
// `max_bytes` bounds the document (the error names the limit).
Expected<std::optional<FlagState>, std::string> read_flag(std::string_view all_flags_json,
                                                          std::string_view flag,
                                                          std::size_t max_bytes = kMaxPayloadBytes);

// A stream `patch` (`{"key": ..., "value": ..., "version": N}`) or `delete`
// (`{"key": ..., "version": N}`).
struct FlagUpdate {
  std::string key;
  FlagState state;  // for delete, value_json is "null"
};
Expected<FlagUpdate, std::string> read_patch(std::string_view json,
                                             std::size_t max_bytes = kMaxPayloadBytes);
Expected<FlagUpdate, std::string> read_delete(std::string_view json,
                                              std::size_t max_bytes = kMaxPayloadBytes);

// Per-domain mode: only a JSON `true` allows; false, null, strings and everything else deny.
bool allows(const FlagState& state);

// List mode: the value must be an array of strings, each one entry in the blocklist file syntax.
// Entries that are not strings or not valid rules are reported in `issues` and skipped; a value
// that is not an array is an error.
struct CompiledList {
  std::shared_ptr<const rules::DomainSet> rules;
  std::size_t entries = 0;
  std::vector<rules::LoadIssue> issues;
};
Expected<CompiledList, std::string> compile_list(const FlagState& state, std::string_view source);

// The evaluation context, as JSON: {"kind":"user","key":KEY} plus the `username` attribute when
// given. Strings are escaped by proxy/json/json_writer.hpp, never pasted.
std::string context_json(std::string_view key, std::string_view username);

// base64url without padding, for the streaming endpoint's path.
std::string base64url(std::string_view bytes);

}  // namespace sandgate::launchdarkly
