// Fuzz target: LaunchDarkly's JSON as the gate reads it (proxy/launchdarkly/flag_payload.hpp):
// evaluation replies and `put` data, `patch` and `delete` events, and a list flag's value
// compiled into a domain set, on arbitrary bytes.
//
// Invariants, beyond "no out-of-bounds access, no undefined behaviour, no unbounded recursion"
// (ASan, UBSan; the JSON parser's depth limit):
//   - only a JSON `true` allows in per-domain mode: whatever the reply, allows() holds exactly
//     when the flag's value re-serialises to "true";
//   - a value read back is valid JSON that reads back with the same meaning (a round trip
//     through read_flag: the same verdict, the same list) and the same version;
//   - a compiled list never has more entries than the array has items, and looking hosts up in
//     it is safe.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/launchdarkly/flag_payload.hpp"
#include "rules/host.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

namespace ld = sandgate::launchdarkly;
namespace rules = sandgate::rules;
using sandgate::fuzz::escaped;

constexpr std::string_view kFlag = "egress-allowlist";

void check_state(const ld::FlagState& state, std::string_view input) {
  // Round trip: wrap the value again and read it back.
  const std::string wrapped = "{\"" + std::string(kFlag) + "\":{\"value\":" + state.value_json +
                              ",\"version\":" + std::to_string(state.version) + "}}";
  auto again = ld::read_flag(wrapped, kFlag);
  FUZZ_CHECK(again.has_value() && again->has_value(),
             "value does not read back: " + escaped(state.value_json));
  FUZZ_CHECK((**again).version == state.version, escaped(input));
  // The text itself need not be a fixed point: this Boost.JSON does not round-trip every large
  // number exactly (a regression input has one). What must hold is the meaning: the same verdict
  // and the same list.
  FUZZ_CHECK(ld::allows(**again) == ld::allows(state), escaped(input));
  FUZZ_CHECK(ld::allows(state) == (state.value_json == "true"), escaped(input));

  auto list = ld::compile_list(state, "fuzz");
  auto list_again = ld::compile_list(**again, "fuzz");
  FUZZ_CHECK(list.has_value() == list_again.has_value(), escaped(input));
  if (list) {
    FUZZ_CHECK(list->entries == list_again->entries, escaped(input));
    FUZZ_CHECK(list->issues.size() == list_again->issues.size(), escaped(input));
  }
  if (list) {
    FUZZ_CHECK(list->rules != nullptr, escaped(input));
    for (std::string_view name :
         {"example.com", "a.b.example.org", "xn--vil-9la.com", "localhost"}) {
      auto host = rules::parse_host(name);
      if (host) {
        (void)list->rules->match(*host, 443);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (auto flag = ld::read_flag(input, kFlag); flag && *flag) {
    check_state(**flag, input);
  }
  if (auto patch = ld::read_patch(input)) {
    FUZZ_CHECK(!patch->key.empty(), escaped(input));
    check_state(patch->state, input);
  }
  if (auto deleted = ld::read_delete(input)) {
    FUZZ_CHECK(deleted->state.value_json == "null", escaped(input));
  }
  // The input as a list value itself.
  ld::FlagState raw;
  raw.value_json = std::string(input);
  (void)ld::compile_list(raw, "fuzz");
  return 0;
}
