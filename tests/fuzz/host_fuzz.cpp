// Fuzz target: host names and CONNECT authorities (rules/host.hpp), on arbitrary bytes.
//
// Invariants, beyond "no crash, no out-of-bounds read, no undefined behaviour":
//   - parse_host(): a parsed host is in normal form (see host_invariants.hpp): at most 253
//     octets, no upper case, no '@' '/' '%' (but in an IPv6 zone), and it re-parses to itself;
//   - parse_authority(): the same for its host; the port is 1..65535 and is what the text ends
//     with; splitting at the last ':' and parsing the host alone gives the same host; and the
//     printed `host:port` re-parses to the same authority;
//   - the two agree: a host parse_host() accepts (but an unbracketed IPv6 literal, which
//     CONNECT refuses) is accepted by parse_authority() with `:443` appended, unchanged.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rules/host.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/fuzz/host_invariants.hpp"

namespace {

using sandgate::fuzz::check_host_normal_form;
using sandgate::fuzz::describe;
using sandgate::fuzz::escaped;
namespace rules = sandgate::rules;

void check_authority(const rules::Authority& authority, std::string_view text) {
  const auto where = [&] {
    return "'" + escaped(text) + "' -> " + describe(authority.host) + " port " +
           std::to_string(authority.port);
  };
  check_host_normal_form(authority.host, text);
  FUZZ_CHECK(authority.port != 0, where());
  FUZZ_CHECK(text.ends_with(":" + std::to_string(authority.port)),
             "port is not the text's plain decimal suffix: " + where());

  // The host part on its own is the same host.
  const std::string_view host_text = text.substr(0, text.rfind(':'));
  const auto alone = rules::parse_host(host_text);
  FUZZ_CHECK(alone.has_value() && *alone == authority.host,
             "host part parsed alone differs: " + where());

  // The printed authority reads back the same.
  const std::string printed = authority.host.display() + ":" + std::to_string(authority.port);
  const auto again = rules::parse_authority(printed);
  FUZZ_CHECK(again.has_value() && again->host == authority.host && again->port == authority.port,
             "printed authority '" + printed + "' does not re-parse: " + where());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  if (const auto host = rules::parse_host(text)) {
    check_host_normal_form(*host, text);
    const bool bare_ipv6 = host->kind == rules::HostKind::ipv6 && !text.starts_with('[');
    if (!bare_ipv6) {
      const std::string with_port = std::string(text) + ":443";
      const auto authority = rules::parse_authority(with_port);
      FUZZ_CHECK(authority.has_value() && authority->host == *host && authority->port == 443,
                 "host '" + escaped(text) + "' accepted alone but not as '" + escaped(with_port) +
                     "'" +
                     (authority.has_value()
                          ? std::string()
                          : " (" + std::string(rules::to_string(authority.error())) + ")"));
    }
  }

  if (const auto authority = rules::parse_authority(text)) {
    check_authority(*authority, text);
  }
  return 0;
}
