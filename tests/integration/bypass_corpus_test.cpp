// The bypass corpus: every category of egress-gate bypass that peers have been caught by
// (../shared/reference/landscape.md, "Security pitfalls the peers hit"), driven through a real
// in-process gate against fake origins and a fake DNS server, each row asserting the outcome
// the README promises ("The decision", "What a client sees when it is denied"):
//
//   1. alternate IPv4 spellings of loopback, metadata and other non-public addresses
//   2. IPv6 forms, including those that carry an IPv4 address (mapped, compatible, NAT64, 6to4,
//      Teredo) and zones
//   3. names that resolve inward, and the names that are inward by definition
//   4. DNS rebinding: one lookup per connection, only checked addresses dialled
//   5. host spellings against a blocklist: case, dots, IDN and punycode, userinfo, paths, NULs,
//      ports with junk; and IP blocklist entries in other spellings
//   6. request-smuggling shapes in plain-HTTP forwarding (what http_forward_test's SmugglingTest
//      does not already cover)
//   7. protocol, not port: SSH, plain text or a foreign TLS server name on a TLS port
//
// plus a selection of 1, 2, 3 and 5 sent as absolute-form plain-HTTP requests (the other door).
// Each row checks the status and the reason code in Proxy-Status `details="REASON: ..."`, that
// nothing reached the origin when the gate refused, and whether the gate asked DNS at all.
// Every row asserts the correct behaviour; a gate bug this corpus found (a mapped IPv6 blocklist
// entry not blocking its IPv4 address) was fixed in rules/domain_set.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/fakes/http_origin.hpp"
#include "tests/fakes/tcp_origin.hpp"
#include "tests/integration/harness/test_client.hpp"
#include "tests/integration/harness/test_proxy.hpp"
#include "tests/support/client_hello.hpp"

namespace sandgate::testing {
namespace {

using fakes::HttpOrigin;
using fakes::TcpOrigin;
using namespace std::chrono_literals;

// The policy switches a row needs; everything else stays at the gate's defaults (loopback
// blocked, IP literals refused, private networks allowed, metadata blocked, SSH to git hosts).
struct Knobs {
  bool allow_ip = false;        // GOOSE_SANDBOX_ALLOW_IP
  bool allow_loopback = false;  // GOOSE_SANDBOX_BLOCK_LOOPBACK=false
  bool block_private = false;   // SANDGATE_BLOCK_PRIVATE
  bool allow_ssh = true;        // GOOSE_SANDBOX_ALLOW_SSH
};

constexpr Knobs kAllowIp{.allow_ip = true};
constexpr Knobs kAllowIpBlockPrivate{.allow_ip = true, .block_private = true};
constexpr Knobs kBlockPrivate{.block_private = true};
constexpr Knobs kAllowLoopback{.allow_loopback = true};
constexpr Knobs kAllowIpAndLoopback{.allow_ip = true, .allow_loopback = true};

void apply(const Knobs& knobs, settings::Settings& s) {
  s.policy.allow_ip = knobs.allow_ip;
  s.policy.block_loopback = !knobs.allow_loopback;
  s.policy.block_private = knobs.block_private;
  s.policy.allow_ssh = knobs.allow_ssh;
}

// `PORT` in a target stands for the fake origin's port, so that a gate that let the row through
// would visibly reach the origin (on 127.0.0.1) instead of failing somewhere out of sight.
std::string with_port(std::string text, std::uint16_t port) {
  for (std::size_t at = text.find("PORT"); at != std::string::npos; at = text.find("PORT")) {
    text.replace(at, 4, std::to_string(port));
  }
  return text;
}

// The Proxy-Status error type the README's table gives for a status and reason.
std::string error_type(int status, std::string_view reason) {
  if (status == 400) {
    return "http_request_error";
  }
  if (status == 403) {
    for (std::string_view address_reason :
         {"loopback", "ip-address", "metadata-address", "private-address", "reserved-address"}) {
      if (reason == address_reason) {
        return "destination_ip_prohibited";
      }
    }
    return "http_request_denied";
  }
  if (status == 502) {
    return "dns_error";
  }
  return "?";
}

// `CONNECT target HTTP/1.1`, with a Host field unless the target holds bytes that would break
// the field too (then the request line alone carries the attempt).
std::string connect_request(const std::string& target) {
  bool clean = true;
  for (const char c : target) {
    clean = clean && static_cast<unsigned char>(c) > 0x20 && c != 0x7f;
  }
  std::string request = "CONNECT " + target + " HTTP/1.1\r\n";
  if (clean) {
    request += "Host: " + target + "\r\n";
  }
  return request + "\r\n";
}

// Gives the origin's accept thread a moment, so that a gate which wrongly dialled before it
// answered is seen in the counters.
void settle() { std::this_thread::sleep_for(10ms); }

// ---------------------------------------------------------------------------------------------
// Categories 1, 2, 3 and 5: one CONNECT, one answer.

struct DnsRecord {
  std::string name;
  std::vector<std::string> addresses;
};

struct ConnectRow {
  std::string name;    // what the row tries
  std::string target;  // the CONNECT target, raw bytes; PORT: the origin's port
  int status = 0;      // 200: the tunnel reaches the origin
  std::string reason;  // the Proxy-Status details code (ignored for 200)
  Knobs knobs{};
  std::string blocklist;
  std::vector<DnsRecord> dns;
  // The name the gate must look up exactly once (A and AAAA); empty: no DNS query at all.
  std::string lookup;
  // The Proxy-Status error type when it is not the one error_type() derives from the reason.
  std::string error;
  // Sent as a plain-HTTP request (`GET target HTTP/1.1`) instead of a CONNECT.
  bool absolute_form = false;

  ConnectRow with_error(std::string type) const {
    ConnectRow row = *this;
    row.error = std::move(type);
    return row;
  }
  ConnectRow as_http_request() const {
    ConnectRow row = *this;
    row.absolute_form = true;
    return row;
  }
  ConnectRow with_blocklist(std::string text) const {
    ConnectRow row = *this;
    row.blocklist = std::move(text);
    return row;
  }
  // `name` resolves to `addresses`, and the gate must look it up once.
  ConnectRow resolving(std::string name, std::vector<std::string> addresses) const {
    ConnectRow row = *this;
    row.dns.push_back({name, std::move(addresses)});
    row.lookup = std::move(name);
    return row;
  }
  // The gate must look `name` up once (it has no records: NXDOMAIN).
  ConnectRow looking_up(std::string name) const {
    ConnectRow row = *this;
    row.lookup = std::move(name);
    return row;
  }
};

ConnectRow make_row(std::string name, std::string target, int status, std::string reason,
                    Knobs knobs = {}) {
  ConnectRow row;
  row.name = std::move(name);
  row.target = std::move(target);
  row.status = status;
  row.reason = std::move(reason);
  row.knobs = knobs;
  return row;
}

ConnectRow denied(std::string name, std::string target, std::string reason, Knobs knobs = {}) {
  return make_row(std::move(name), std::move(target), 403, std::move(reason), knobs);
}

ConnectRow invalid(std::string name, std::string target, Knobs knobs = {}) {
  return make_row(std::move(name), std::move(target), 400, "invalid-host", knobs);
}

ConnectRow allowed(std::string name, std::string target, Knobs knobs) {
  return make_row(std::move(name), std::move(target), 200, "", knobs);
}

void run_connect_row(const ConnectRow& row) {
  TcpOrigin origin;
  TestProxy proxy(row.blocklist, [&row](settings::Settings& s) { apply(row.knobs, s); });
  for (const auto& record : row.dns) {
    proxy.dns().set(record.name, record.addresses);
  }
  const std::string target = with_port(row.target, origin.port());

  TestClient client(proxy.port());
  client.send(row.absolute_form ? "GET " + target + " HTTP/1.1\r\nHost: client.invalid\r\n\r\n"
                                : connect_request(target));
  ResponseHead head = read_response_head(client);
  ASSERT_EQ(head.status, row.status) << head.head;
  client.pending = head.body_after;
  if (row.status == 200) {
    client.send("ping");
    EXPECT_EQ(client.read_exact(4), "ping");
    EXPECT_EQ(origin.connections(), 1u);
  } else {
    const std::string error = row.error.empty() ? error_type(row.status, row.reason) : row.error;
    EXPECT_NE(head.proxy_status.find("error=" + error + ";"), std::string::npos)
        << head.proxy_status;
    EXPECT_NE(head.proxy_status.find("details=\"" + row.reason + ": "), std::string::npos)
        << head.proxy_status;
    // The body repeats the reason; then the gate closes the connection.
    EXPECT_NE(client.read_to_end().find("(" + row.reason + "): "), std::string::npos);
    settle();
    EXPECT_EQ(origin.connections(), 0u) << "a refused target is never dialled";
  }
  if (row.lookup.empty()) {
    EXPECT_EQ(proxy.dns().total_queries(), 0u) << "decided without asking DNS";
  } else {
    EXPECT_EQ(proxy.dns().query_count(row.lookup), 2u) << "one lookup: one A and one AAAA query";
  }
}

// gtest prints a failing row's parameter: its name and target, not its bytes.
void PrintTo(const ConnectRow& row, std::ostream* out) { *out << row.name << " " << row.target; }

class ConnectCorpus : public ::testing::TestWithParam<ConnectRow> {};

TEST_P(ConnectCorpus, Outcome) { run_connect_row(GetParam()); }

std::string row_name(const ::testing::TestParamInfo<ConnectRow>& info) { return info.param.name; }

// 1. Alternate IPv4 spellings (WHATWG URL host parser: 1-4 parts, each decimal, octal after a
// leading 0, or hex after 0x; the last part fills the remaining bytes). The decision order: a
// loopback destination is refused as `loopback` first (check 1), whether or not IP literals are
// allowed; any other literal is `ip-address` (check 2) unless GOOSE_SANDBOX_ALLOW_IP, and then
// meets the address rules (2a-2c).
std::vector<ConnectRow> ipv4_rows() {
  return {
      // Loopback, every spelling.
      denied("dotted_quad_127_0_0_1", "127.0.0.1:PORT", "loopback"),
      denied("short_127_1", "127.1:PORT", "loopback"),
      denied("short_127_0_1", "127.0.1:PORT", "loopback"),
      denied("integer_2130706433", "2130706433:PORT", "loopback"),
      denied("hex_integer_0x7f000001", "0x7f000001:PORT", "loopback"),
      denied("hex_integer_upper_0X7F000001", "0X7F000001:PORT", "loopback"),
      denied("hex_short_0x7f_1", "0x7f.1:PORT", "loopback"),
      denied("octal_0177_0_0_1", "0177.0.0.1:PORT", "loopback"),
      denied("octal_integer_017700000001", "017700000001:PORT", "loopback"),
      denied("hex_upper_0x7F_0_0_1", "0x7F.0.0.1:PORT", "loopback"),
      // WHATWG: "000" is octal 0 and "001" octal 1, so this is 127.0.0.1.
      denied("zero_padded_127_000_000_001", "127.000.000.001:PORT", "loopback"),
      denied("all_hex_parts", "0x7f.0x0.0x0.0x1:PORT", "loopback"),
      denied("mixed_radix_parts", "0x7f.00.0.01:PORT", "loopback"),
      denied("many_leading_zeros_octal", "0000000000000000177.0.0.1:PORT", "loopback"),
      denied("trailing_dot", "127.0.0.1.:PORT", "loopback"),
      denied("other_127_8_address", "127.255.255.254:PORT", "loopback"),
      denied("other_127_8_short", "127.16777214:PORT", "loopback"),
      // 0.0.0.0 as a destination reaches this machine.
      denied("zero", "0:PORT", "loopback"),
      denied("zero_dotted", "0.0.0.0:PORT", "loopback"),
      denied("zero_hex", "0x0:PORT", "loopback"),
      denied("zero_hex_empty", "0x:PORT", "loopback"),  // WHATWG: `0x` alone is zero
      denied("zero_octal", "00:PORT", "loopback"),
      denied("zero_short", "0.0:PORT", "loopback"),
      denied("zero_net_other_host", "0.1.2.3:PORT", "loopback"),
      // Check 1 comes before check 2: allowing IP literals does not open loopback.
      denied("allow_ip_short_127_1", "127.1:PORT", "loopback", kAllowIp),
      denied("allow_ip_hex_integer", "0x7f000001:PORT", "loopback", kAllowIp),
      denied("allow_ip_zero", "0:PORT", "loopback", kAllowIp),
      // Metadata: without GOOSE allow_ip the literal is refused as a literal (check 2)...
      denied("metadata_dotted", "169.254.169.254:80", "ip-address"),
      denied("metadata_integer", "2852039166:80", "ip-address"),
      denied("metadata_hex", "0xa9fea9fe:80", "ip-address"),
      // ...with it, as a metadata address (check 2a).
      denied("allow_ip_metadata_dotted", "169.254.169.254:80", "metadata-address", kAllowIp),
      denied("allow_ip_metadata_integer", "2852039166:80", "metadata-address", kAllowIp),
      denied("allow_ip_metadata_hex", "0xa9fea9fe:80", "metadata-address", kAllowIp),
      denied("allow_ip_metadata_hex_upper", "0XA9FEA9FE:80", "metadata-address", kAllowIp),
      denied("allow_ip_metadata_octal", "0251.0376.0251.0376:80", "metadata-address", kAllowIp),
      denied("allow_ip_metadata_hex_parts", "0xa9.0xfe.0xa9.0xfe:80", "metadata-address", kAllowIp),
      denied("allow_ip_metadata_three_parts", "169.254.43518:80", "metadata-address", kAllowIp),
      denied("allow_ip_metadata_two_parts", "169.16689662:80", "metadata-address", kAllowIp),
      denied("allow_ip_link_local", "169.254.1.1:80", "metadata-address", kAllowIp),
      denied("allow_ip_ecs_credentials", "169.254.170.2:80", "metadata-address", kAllowIp),
      denied("allow_ip_alibaba_metadata_integer", "1684301000:80", "metadata-address",
             kAllowIp),  // 100.100.100.200
      denied("allow_ip_azure_wireserver", "168.63.129.16:80", "metadata-address", kAllowIp),
      // Private networks (check 2b, when SANDGATE_BLOCK_PRIVATE).
      denied("private_integer", "167772161:80", "ip-address"),
      denied("allow_ip_private_dotted", "10.0.0.1:80", "private-address", kAllowIpBlockPrivate),
      denied("allow_ip_private_integer", "167772161:80", "private-address", kAllowIpBlockPrivate),
      denied("allow_ip_private_hex", "0xa000001:80", "private-address", kAllowIpBlockPrivate),
      denied("allow_ip_private_octal_short", "012.1:80", "private-address",
             kAllowIpBlockPrivate),  // 10.0.0.1
      denied("allow_ip_private_192_168_integer", "3232235777:80", "private-address",
             kAllowIpBlockPrivate),
      denied("allow_ip_private_172_16_hex", "0xac100001:80", "private-address",
             kAllowIpBlockPrivate),
      denied("allow_ip_cgnat_short", "100.64.1:80", "private-address", kAllowIpBlockPrivate),
      // Never routable (check 2c), whatever the switches.
      denied("allow_ip_broadcast_integer", "4294967295:80", "reserved-address", kAllowIp),
      denied("allow_ip_broadcast_hex", "0xffffffff:80", "reserved-address", kAllowIp),
      denied("allow_ip_multicast_hex", "0xe0000001:80", "reserved-address", kAllowIp),
      denied("allow_ip_documentation", "192.0.2.1:80", "reserved-address", kAllowIp),
      denied("allow_ip_class_e_short", "240.1:80", "reserved-address", kAllowIp),
      // Ends in a number but is no IPv4 spelling: refused, never read as a name.
      invalid("integer_over_32_bits", "4294967296:80"),
      invalid("hex_over_32_bits", "0x100000000:80"),
      invalid("part_over_255", "127.0.0.256:80"),
      invalid("middle_part_over_255", "127.256.1:80"),
      invalid("five_parts", "127.0.0.0.1:80"),
      invalid("bad_octal_digit", "08.0.0.1:80"),
      invalid("bad_hex_digit", "0x7g.1:80"),
      invalid("two_trailing_dots", "127.0.0.1..:80"),
      invalid("name_ending_in_number", "example.123:80"),
      invalid("empty_leading_part", ".127.0.0.1:80"),
      // Controls: with loopback and literals allowed, the strange spellings reach 127.0.0.1,
      // so the rows above are refusing a real destination.
      allowed("allowed_hex_short_reaches_127_0_0_1", "0x7f.1:PORT", kAllowIpAndLoopback),
      allowed("allowed_integer_reaches_127_0_0_1", "2130706433:PORT", kAllowIpAndLoopback),
      allowed("allowed_octal_reaches_127_0_0_1", "0177.0.0.01:PORT", kAllowIpAndLoopback),
  };
}

INSTANTIATE_TEST_SUITE_P(Ipv4Spellings, ConnectCorpus, ::testing::ValuesIn(ipv4_rows()), row_name);

// 2. IPv6 forms. An address that carries an IPv4 one takes that address's class, so every
// wrapper around 127.0.0.1 is loopback and every wrapper around 169.254.169.254 is metadata.
// Teredo (2001::/32) stores the client's IPv4 address XOR 0xffffffff in its last 32 bits:
// 127.0.0.1 is 80ff:fffe, 169.254.169.254 is 5601:5601, 10.0.0.1 is f5ff:fffe (the server
// 65.54.227.120 = 4136:e378, flags 8000, obfuscated port 63bf are decoration).
std::vector<ConnectRow> ipv6_rows() {
  return {
      denied("loopback", "[::1]:PORT", "loopback"),
      denied("loopback_uncompressed", "[0:0:0:0:0:0:0:1]:PORT", "loopback"),
      denied("loopback_zero_padded", "[0000:0000:0000:0000:0000:0000:0000:0001]:PORT", "loopback"),
      denied("loopback_partly_compressed", "[0:0::0:1]:PORT", "loopback"),
      denied("loopback_with_zone", "[::1%25lo]:PORT", "loopback"),
      denied("loopback_with_raw_zone", "[::1%lo]:PORT", "loopback"),
      denied("mapped_dotted", "[::ffff:127.0.0.1]:PORT", "loopback"),
      denied("mapped_dotted_upper", "[::FFFF:127.0.0.1]:PORT", "loopback"),
      denied("mapped_with_zone", "[::ffff:127.0.0.1%25lo]:PORT", "loopback"),
      denied("mapped_hex", "[::ffff:7f00:1]:PORT", "loopback"),
      denied("mapped_uncompressed", "[0:0:0:0:0:ffff:7f00:1]:PORT", "loopback"),
      denied("mapped_other_127_8", "[::ffff:127.1.2.3]:PORT", "loopback"),
      denied("compatible_dotted", "[::127.0.0.1]:PORT", "loopback"),
      denied("compatible_hex", "[::7f00:1]:PORT", "loopback"),
      denied("nat64", "[64:ff9b::7f00:1]:PORT", "loopback"),
      denied("nat64_dotted", "[64:ff9b::127.0.0.1]:PORT", "loopback"),
      denied("nat64_local_use", "[64:ff9b:1::7f00:1]:PORT", "loopback"),
      denied("six_to_four", "[2002:7f00:0001::]:PORT", "loopback"),
      denied("six_to_four_with_host_part", "[2002:7f00:1:1234::1]:PORT", "loopback"),
      denied("teredo_client_127_0_0_1", "[2001:0:4136:e378:8000:63bf:80ff:fffe]:PORT", "loopback"),
      denied("unspecified", "[::]:PORT", "loopback"),
      denied("unspecified_uncompressed", "[0:0:0:0:0:0:0:0]:PORT", "loopback"),
      denied("mapped_unspecified", "[::ffff:0.0.0.0]:PORT", "loopback"),
      denied("allow_ip_loopback", "[::1]:PORT", "loopback", kAllowIp),
      denied("allow_ip_nat64_loopback", "[64:ff9b::7f00:1]:PORT", "loopback", kAllowIp),
      denied("allow_ip_teredo_loopback", "[2001:0:4136:e378:8000:63bf:80ff:fffe]:PORT", "loopback",
             kAllowIp),
      // Metadata and link-local: a literal (check 2), or with literals allowed, metadata (2a).
      denied("mapped_metadata", "[::ffff:169.254.169.254]:80", "ip-address"),
      denied("aws_imds_v6", "[fd00:ec2::254]:80", "ip-address"),
      denied("link_local_zone", "[fe80::1%25eth0]:80", "ip-address"),
      denied("allow_ip_mapped_metadata", "[::ffff:169.254.169.254]:80", "metadata-address",
             kAllowIp),
      denied("allow_ip_mapped_metadata_hex", "[::ffff:a9fe:a9fe]:80", "metadata-address", kAllowIp),
      denied("allow_ip_aws_imds_v6", "[fd00:ec2::254]:80", "metadata-address", kAllowIp),
      denied("allow_ip_aws_imds_v6_uncompressed", "[FD00:0EC2:0:0:0:0:0:254]:80",
             "metadata-address", kAllowIp),
      denied("allow_ip_gcp_metadata_v6", "[fd20:ce::254]:80", "metadata-address", kAllowIp),
      denied("allow_ip_nat64_metadata", "[64:ff9b::a9fe:a9fe]:80", "metadata-address", kAllowIp),
      denied("allow_ip_six_to_four_metadata", "[2002:a9fe:a9fe::]:80", "metadata-address",
             kAllowIp),
      denied("allow_ip_teredo_metadata", "[2001:0:4136:e378:8000:63bf:5601:5601]:80",
             "metadata-address", kAllowIp),
      denied("allow_ip_link_local", "[fe80::1]:80", "metadata-address", kAllowIp),
      denied("allow_ip_link_local_uri_zone", "[fe80::1%25eth0]:80", "metadata-address", kAllowIp),
      denied("allow_ip_link_local_raw_zone", "[fe80::1%eth0]:80", "metadata-address", kAllowIp),
      denied("allow_ip_link_local_numeric_zone", "[fe80::1%251]:80", "metadata-address", kAllowIp),
      // Private (check 2b).
      denied("allow_ip_unique_local", "[fd12:3456::1]:80", "private-address", kAllowIpBlockPrivate),
      denied("allow_ip_mapped_private", "[::ffff:10.0.0.1]:80", "private-address",
             kAllowIpBlockPrivate),
      denied("allow_ip_nat64_private", "[64:ff9b::a00:1]:80", "private-address",
             kAllowIpBlockPrivate),
      denied("allow_ip_six_to_four_private", "[2002:0a00:0001::]:80", "private-address",
             kAllowIpBlockPrivate),
      denied("allow_ip_teredo_private", "[2001:0:4136:e378:8000:63bf:f5ff:fffe]:80",
             "private-address", kAllowIpBlockPrivate),
      // Never routable (check 2c).
      denied("allow_ip_multicast", "[ff02::1]:80", "reserved-address", kAllowIp),
      denied("allow_ip_documentation", "[2001:db8::1]:80", "reserved-address", kAllowIp),
      denied("allow_ip_compatible_public", "[::8.8.8.8]:80", "reserved-address", kAllowIp),
      denied("allow_ip_siit_form", "[::ffff:0:7f00:1]:80", "reserved-address", kAllowIp),
      denied("allow_ip_mapped_broadcast", "[::ffff:255.255.255.255]:80", "reserved-address",
             kAllowIp),
      denied("allow_ip_discard_only", "[100::1]:80", "reserved-address", kAllowIp),
      // Malformed literals.
      invalid("unbracketed", "::1:PORT"),
      invalid("no_port", "[::1]"),
      invalid("unclosed_bracket", "[::1:PORT"),
      invalid("extra_bracket", "[::1]]:PORT"),
      invalid("mapped_leading_zero", "[::ffff:127.0.0.01]:PORT"),
      invalid("mapped_hex_ipv4", "[::ffff:0x7f.1]:PORT"),
      invalid("mapped_integer_ipv4", "[::ffff:2130706433]:PORT"),
      invalid("nine_pieces", "[1:2:3:4:5:6:7:8:9]:PORT"),
      invalid("two_compressions", "[::1::]:PORT"),
      invalid("five_digit_piece", "[12345::1]:PORT"),
      invalid("empty_zone", "[fe80::1%]:80"),
      invalid("double_escaped_zone", "[::1%2525lo]:PORT"),
      invalid("escape_inside_zone", "[fe80::1%25%30]:80"),
      invalid("path_in_zone", "[fe80::1%25eth0/x]:80"),
      invalid("ipvfuture", "[v1.x]:80"),
      invalid("name_in_brackets", "[localhost]:PORT"),
      // Control: with loopback and literals allowed, the mapped form reaches 127.0.0.1.
      allowed("allowed_mapped_reaches_127_0_0_1", "[::ffff:127.0.0.1]:PORT", kAllowIpAndLoopback),
  };
}

INSTANTIATE_TEST_SUITE_P(Ipv6Forms, ConnectCorpus, ::testing::ValuesIn(ipv6_rows()), row_name);

// 3. Names that resolve inward (check 7: every answer is classified; one bad answer denies the
// name; nothing is dialled), and the names that are inward by definition, refused before any
// DNS query leaves the machine.
// A resolved answer that the blocklist names is refused with reason `blocklist` but Proxy-Status
// `destination_ip_prohibited` (the README table lists `blocklist` under `http_request_denied`,
// and a blocklisted *literal* gets that): what is prohibited here is an address the name
// resolved to, which is the table's other row and RFC 9209's meaning of the type.
constexpr const char* kResolvedAddressError = "destination_ip_prohibited";

std::vector<ConnectRow> resolved_rows() {
  const ConnectRow to_inward = denied("", "inward.test:PORT", "");
  auto resolves = [&to_inward](std::string name, std::vector<std::string> addresses,
                               std::string reason, Knobs knobs = {}) {
    ConnectRow row = to_inward.resolving("inward.test", std::move(addresses));
    row.name = std::move(name);
    row.reason = std::move(reason);
    row.knobs = knobs;
    return row;
  };
  return {
      resolves("to_127_0_0_1", {"127.0.0.1"}, "loopback"),
      resolves("to_other_127_8", {"127.5.5.5"}, "loopback"),
      resolves("to_ipv6_loopback", {"::1"}, "loopback"),
      resolves("to_mapped_loopback", {"::ffff:127.0.0.1"}, "loopback"),
      resolves("to_nat64_loopback", {"64:ff9b::7f00:1"}, "loopback"),
      resolves("to_six_to_four_loopback", {"2002:7f00:1::"}, "loopback"),
      resolves("to_unspecified", {"0.0.0.0"}, "loopback"),
      resolves("to_ipv6_unspecified", {"::"}, "loopback"),
      resolves("to_metadata", {"169.254.169.254"}, "metadata-address"),
      resolves("to_aws_imds_v6", {"fd00:ec2::254"}, "metadata-address"),
      resolves("to_mapped_metadata", {"::ffff:169.254.169.254"}, "metadata-address"),
      resolves("to_teredo_metadata", {"2001:0:4136:e378:8000:63bf:5601:5601"}, "metadata-address"),
      resolves("to_link_local", {"169.254.7.7"}, "metadata-address"),
      resolves("to_ipv6_link_local", {"fe80::1"}, "metadata-address"),
      resolves("to_private_when_blocked", {"10.0.0.1"}, "private-address", kBlockPrivate),
      resolves("to_unique_local_when_blocked", {"fd12::1"}, "private-address", kBlockPrivate),
      resolves("to_cgnat_when_blocked", {"100.64.1.1"}, "private-address", kBlockPrivate),
      resolves("to_multicast", {"224.0.0.1"}, "reserved-address"),
      resolves("to_broadcast", {"255.255.255.255"}, "reserved-address"),
      resolves("to_documentation", {"192.0.2.10"}, "reserved-address"),
      // One bad answer denies the name, wherever it is in the answer.
      resolves("public_then_loopback", {"93.184.216.34", "127.0.0.1"}, "loopback"),
      resolves("loopback_then_public", {"127.0.0.1", "93.184.216.34"}, "loopback"),
      resolves("public_v6_and_loopback_v6", {"2606:2800:220:1:248:1893:25c8:1946", "::1"},
               "loopback"),
      resolves("public_v4_v6_and_metadata",
               {"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "169.254.169.254"},
               "metadata-address"),
      resolves("public_and_private_when_blocked", {"93.184.216.34", "10.0.0.1"}, "private-address",
               kBlockPrivate),
      // Without SANDGATE_BLOCK_PRIVATE a private answer passes the address rules: the next
      // check, the blocklist naming that address, is what refuses it here (so the test proves
      // the private rule let it through without dialling 10.0.0.1 on a real network).
      resolves("to_private_allowed_without_block_private", {"10.0.0.1"}, "blocklist")
          .with_blocklist("10.0.0.1\n")
          .with_error(kResolvedAddressError),
      // An address on the blocklist is blocked whatever name leads to it, in any spelling.
      resolves("to_blocklisted_address", {"93.184.216.34"}, "blocklist")
          .with_blocklist("93.184.216.34\n")
          .with_error(kResolvedAddressError),
      resolves("to_mapped_blocklisted_address", {"::ffff:93.184.216.34"}, "blocklist")
          .with_blocklist("93.184.216.34\n")
          .with_error(kResolvedAddressError),
      // A public-looking name made of a loopback address (nip.io style).
      denied("ip_shaped_name_to_loopback", "127.0.0.1.nip.test:PORT", "loopback")
          .resolving("127.0.0.1.nip.test", {"127.0.0.1"}),
      // A subdomain of a metadata name is no metadata name, but its answer is checked.
      denied("metadata_subdomain_to_metadata", "x.metadata.google.internal:80", "metadata-address")
          .resolving("x.metadata.google.internal", {"169.254.169.254"}),
      // Inward by definition: never looked up.
      denied("localhost", "localhost:PORT", "loopback"),
      denied("localhost_upper_trailing_dot", "LOCALHOST.:PORT", "loopback"),
      denied("localhost_mixed_case", "LocalHost:PORT", "loopback"),
      denied("localhost_subdomain", "x.localhost:PORT", "loopback"),
      denied("localhost_deep_subdomain", "a.b.c.localhost.:PORT", "loopback"),
      denied("localhost_allow_ip", "localhost:PORT", "loopback", kAllowIp),
      // UTS #46 maps full-width letters and ideographic full stops before the check.
      denied("localhost_fullwidth",
             "\xEF\xBD\x8C\xEF\xBD\x8F\xEF\xBD\x83\xEF\xBD\x81\xEF\xBD\x8C\xEF\xBD\x88"
             "\xEF\xBD\x8F\xEF\xBD\x93\xEF\xBD\x94:PORT",
             "loopback"),
      denied("localhost_ideographic_full_stops", "x\xE3\x80\x82localhost\xE3\x80\x82:PORT",
             "loopback"),
      denied("metadata_name_ideographic_full_stop", "metadata\xE3\x80\x82google.internal:80",
             "metadata-address"),
      denied("gcp_metadata_name", "metadata.google.internal:80", "metadata-address"),
      denied("gcp_metadata_name_upper_dot", "METADATA.GOOGLE.INTERNAL.:80", "metadata-address"),
      denied("gcp_metadata_short_name", "metadata.goog:80", "metadata-address"),
      denied("bare_metadata_name", "metadata:80", "metadata-address"),
      denied("aws_instance_data_name", "instance-data.ec2.internal:80", "metadata-address"),
      // Controls: with loopback allowed the same name tunnels; a name is not denied for
      // resembling a blocked one.
      allowed("allowed_when_loopback_allowed", "inward.test:PORT", kAllowLoopback)
          .resolving("inward.test", {"127.0.0.1"}),
  };
}

INSTANTIATE_TEST_SUITE_P(ResolvedInward, ConnectCorpus, ::testing::ValuesIn(resolved_rows()),
                         row_name);

// A name the resolver answers from /etc/hosts (this machine's own name, typically) is checked
// like a DNS answer. Skipped where /etc/hosts maps no such name to a loopback address.
TEST(ResolvedInwardHostsFile, ThisMachinesOwnNameIsLoopback) {
  std::ifstream hosts("/etc/hosts");
  std::string line;
  std::string name;
  while (name.empty() && std::getline(hosts, line)) {
    std::istringstream fields(line.substr(0, line.find('#')));
    std::string address;
    fields >> address;
    if (!address.starts_with("127.") && address != "::1") {
      continue;
    }
    for (std::string alias; fields >> alias;) {
      if (alias != "localhost" && !alias.ends_with(".localhost") && !alias.ends_with(".") &&
          alias.find_first_of(":%@/") == std::string::npos) {
        name = alias;
        break;
      }
    }
  }
  if (name.empty()) {
    GTEST_SKIP() << "/etc/hosts maps no name but localhost to a loopback address";
  }
  TcpOrigin origin;
  TestProxy proxy;
  TestClient client(proxy.port());
  client.send(connect_request(name + ":" + std::to_string(origin.port())));
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 403) << name << "\n" << head.head;
  EXPECT_NE(head.proxy_status.find("details=\"loopback: " + name + " resolves to "),
            std::string::npos)
      << head.proxy_status;
  settle();
  EXPECT_EQ(origin.connections(), 0u);
}

// 5. Host spellings against the blocklist entry `evil.test`: every spelling of the same host
// is the same host (lower case, one trailing dot removed, UTS #46 to punycode), and every
// spelling that a second parser could read as another host is refused with 400 invalid-host.
std::vector<ConnectRow> spelling_rows() {
  const std::string evil = "evil.test\n";
  const std::string unicode_entry = "\xC3\x89VIL.test\n";  // "ÉVIL.test" in UTF-8
  const std::string punycode_entry = "xn--vil-9la.test\n";
  const std::string blocked_ip = "93.184.216.34\n";
  std::vector<ConnectRow> rows = {
      denied("upper_case", "EVIL.TEST:443", "blocklist"),
      denied("trailing_dot", "evil.test.:443", "blocklist"),
      denied("subdomain", "sub.evil.test:443", "blocklist"),
      denied("mixed_case_trailing_dot", "Evil.Test.:443", "blocklist"),
      denied("deep_subdomain_mixed_case", "a.b.SUB.Evil.TEST.:443", "blocklist"),
      denied("other_port", "evil.test:PORT", "blocklist"),
      denied("git_host_lookalike_subdomain", "github.com.evil.test:22", "blocklist"),
      // UTS #46 maps full-width letters and the ideographic full stop to ASCII.
      denied("fullwidth_letters", "\xEF\xBD\x85\xEF\xBD\x96\xEF\xBD\x89\xEF\xBD\x8C.test:443",
             "blocklist"),
      denied("ideographic_full_stop", "evil\xE3\x80\x82test:443", "blocklist"),
      denied("fullwidth_full_stop", "evil\xEF\xBC\x8Etest:443", "blocklist"),
      // A Unicode entry matches its punycode, and the other way round.
      denied("punycode_vs_unicode_entry", "xn--vil-9la.test:443", "blocklist")
          .with_blocklist(unicode_entry),
      denied("punycode_upper_vs_unicode_entry", "XN--VIL-9LA.TEST.:443", "blocklist")
          .with_blocklist(unicode_entry),
      denied("punycode_subdomain_vs_unicode_entry", "api.xn--vil-9la.test:443", "blocklist")
          .with_blocklist(unicode_entry),
      denied("unicode_vs_unicode_entry", "\xC3\xA9vil.test:443", "blocklist")
          .with_blocklist(unicode_entry),
      denied("unicode_vs_punycode_entry", "\xC3\x89VIL.test:443", "blocklist")
          .with_blocklist(punycode_entry),
      denied("lower_unicode_vs_punycode_entry", "\xC3\xA9vil.test:443", "blocklist")
          .with_blocklist(punycode_entry),
      denied("decomposed_unicode_vs_punycode_entry", "e\xCC\x81vil.test:443", "blocklist")
          .with_blocklist(punycode_entry),
      // Controls: the entry matches on label boundaries only, so these are looked up (and do
      // not exist).
      make_row("suffix_without_label_boundary", "notevil.test:443", 502, "dns-not-found")
          .looking_up("notevil.test"),
      make_row("entry_as_a_prefix", "evil.test.example:443", 502, "dns-not-found")
          .looking_up("evil.test.example"),
      // Malformed: refused before any rule or lookup.
      invalid("empty_label_before_port", "evil.test..:443"),
      invalid("empty_label_inside", "evil..test:443"),
      invalid("leading_dot", ".evil.test:443"),
      invalid("userinfo", "a@evil.test:443"),
      invalid("userinfo_git_host", "github.com@evil.test:443"),
      invalid("userinfo_blocked_first", "evil.test@github.com:443"),
      invalid("userinfo_with_password", "user:pw@evil.test:443"),
      invalid("path", "evil.test/x:443"),
      invalid("path_dot_git_host", "github.com/.evil.test:443"),
      invalid("backslash", "evil.test\\x:443"),
      invalid("query", "evil.test?x:443"),
      invalid("fragment", "evil.test#x:443"),
      invalid("percent_escaped_dot", "evil.test%2ehack:443"),
      invalid("percent_escaped_dot_inside", "evil%2etest:443"),
      invalid("percent_escaped_nul", "evil.test%00.github.com:443"),
      invalid("brackets_around_name", "[evil.test]:443"),
      invalid("leading_hyphen", "-evil.test:443"),
      invalid("underscore_in_tld", "evil.te_st:443"),
      invalid("bad_punycode", "xn--zz.test:443"),
      invalid("punycode_of_ascii", "xn--evil-.test:443"),
      invalid("fullwidth_commercial_at",
              "github.com\xEF\xBC\xA0"
              "evil.test:443"),
      invalid("fullwidth_solidus", "evil.test\xEF\xBC\x8Fx:443"),
      invalid("fullwidth_colon_port",
              "evil.test\xEF\xBC\x9A"
              "443"),
      invalid("port_leading_zero", "evil.test:0443"),
      invalid("port_trailing_junk", "evil.test:443x"),
      invalid("port_too_big", "evil.test:99999"),
      invalid("port_65536", "evil.test:65536"),
      invalid("port_zero", "evil.test:0"),
      invalid("port_empty", "evil.test:"),
      invalid("port_negative", "evil.test:-1"),
      invalid("port_plus_sign", "evil.test:+443"),
      invalid("port_hex", "evil.test:0x1bb"),
      invalid("port_twice", "evil.test:443:443"),
      invalid("no_port", "evil.test"),
      // IP blocklist entries hold for every spelling of the address (literals allowed).
      denied("ip_entry_dotted", "93.184.216.34:443", "blocklist", kAllowIp)
          .with_blocklist(blocked_ip),
      denied("ip_entry_integer", "1572395042:443", "blocklist", kAllowIp)
          .with_blocklist(blocked_ip),
      denied("ip_entry_hex", "0x5db8d822:443", "blocklist", kAllowIp).with_blocklist(blocked_ip),
      denied("ip_entry_octal", "0135.0270.0330.042:443", "blocklist", kAllowIp)
          .with_blocklist(blocked_ip),
      denied("ip_entry_three_parts", "93.184.55330:443", "blocklist", kAllowIp)
          .with_blocklist(blocked_ip),
      denied("ip_entry_mapped", "[::ffff:93.184.216.34]:443", "blocklist", kAllowIp)
          .with_blocklist(blocked_ip),
      denied("ip_entry_mapped_hex", "[::ffff:5db8:d822]:443", "blocklist", kAllowIp)
          .with_blocklist(blocked_ip),
      denied("ip_entry_nat64", "[64:ff9b::5db8:d822]:443", "blocklist", kAllowIp)
          .with_blocklist(blocked_ip),
      denied("ip_entry_six_to_four", "[2002:5db8:d822::]:443", "blocklist", kAllowIp)
          .with_blocklist(blocked_ip),
      denied("ip_entry_teredo", "[2001:0:4136:e378:8000:63bf:a247:27dd]:443", "blocklist", kAllowIp)
          .with_blocklist(blocked_ip),
      denied("ipv6_entry_uncompressed_upper_case", "[2606:2800:0220:0001:0248:1893:25C8:1946]:443",
             "blocklist", kAllowIp)
          .with_blocklist("2606:2800:220:1:248:1893:25c8:1946\n"),
      // An entry written in IPv4-mapped form (as the gate's own log prints a mapped answer)
      // names the IPv4 address it maps (RFC 4291 section 2.5.5.2), so it must block that
      // address in every spelling, as an IPv4 entry blocks the mapped form. Loopback and
      // literals are allowed here so that a gate that let it through reaches the fake origin.
      denied("mapped_entry_vs_mapped_target", "[::ffff:127.0.0.1]:PORT", "blocklist",
             kAllowIpAndLoopback)
          .with_blocklist("::ffff:127.0.0.1\n"),
      // The mapped entry is stored as the IPv4 address it names, so the plain IPv4 address is
      // blocked too (it once passed: the entry was kept as IPv6 text).
      denied("mapped_entry_vs_ipv4_target", "127.0.0.1:PORT", "blocklist", kAllowIpAndLoopback)
          .with_blocklist("::ffff:127.0.0.1\n"),
      // And so is a name resolving to that IPv4 address.
      denied("mapped_entry_vs_name_resolving_to_ipv4", "origin.test:PORT", "blocklist",
             kAllowLoopback)
          .resolving("origin.test", {"127.0.0.1"})
          .with_blocklist("::ffff:127.0.0.1\n")
          .with_error(kResolvedAddressError),
  };
  // Bytes that cannot be in a request-target at all (RFC 9112 section 3: the request line is
  // `method SP request-target SP HTTP-version`, and a target holds no NUL, space, tab, CR or
  // DEL) make the request line itself malformed. The HTTP parser refuses it before any host
  // is read: 400 `bad-request` ("malformed request" in the README's table). That is the right
  // code: the README's sentence that lists NULs and spaces among the `invalid-host` cases is
  // about the host parser, which such a request never reaches; either way nothing is looked up
  // or dialled.
  for (ConnectRow row : {
           invalid("raw_nul_before_git_host", std::string("evil.test\0.github.com:443", 25)),
           invalid("raw_nul_before_port", std::string("evil.test\0:443", 14)),
           invalid("leading_space", " evil.test:443"),
           invalid("space_before_port", "evil.test :443"),
           invalid("space_inside_host", "evil .test:443"),
           invalid("tab_after_port", "evil.test:443\t"),
           invalid("tab_before_port", "evil.test\t:443"),
           invalid("raw_cr_in_host", "evil.test\r.github.com:443"),
           invalid("raw_del_in_host", "evil.test\x7f.github.com:443"),
       }) {
    row.reason = "bad-request";
    rows.push_back(row);
  }
  for (ConnectRow& row : rows) {
    if (row.blocklist.empty()) {
      row.blocklist = evil;
    }
  }
  return rows;
}

INSTANTIATE_TEST_SUITE_P(HostSpellings, ConnectCorpus, ::testing::ValuesIn(spelling_rows()),
                         row_name);

// The same attempts through the other door: plain-HTTP forwarding reads its host from an
// absolute-form URL, with the same parser and the same decision, so none of the spellings above
// gets through by being sent as `GET http://...` instead of CONNECT.
std::vector<ConnectRow> absolute_form_rows() {
  std::vector<ConnectRow> rows = {
      denied("ipv4_short_loopback", "http://127.1:PORT/", "loopback"),
      denied("ipv4_hex_integer_loopback", "http://0x7f000001:PORT/", "loopback"),
      denied("ipv4_octal_loopback", "http://0177.0.0.1:PORT/x", "loopback"),
      denied("ipv4_zero", "http://0:PORT/", "loopback"),
      denied("ipv4_metadata_integer", "http://2852039166/latest/meta-data/", "ip-address"),
      denied("allow_ip_ipv4_metadata_hex", "http://0xa9fea9fe/latest/meta-data/",
             "metadata-address", kAllowIp),
      denied("ipv6_mapped_loopback", "http://[::ffff:127.0.0.1]:PORT/", "loopback"),
      denied("ipv6_nat64_loopback", "http://[64:ff9b::7f00:1]:PORT/", "loopback"),
      denied("ipv6_teredo_loopback", "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]:PORT/",
             "loopback"),
      denied("ipv6_unspecified", "http://[::]:PORT/", "loopback"),
      denied("allow_ip_ipv6_link_local_zone", "http://[fe80::1%25eth0]/", "metadata-address",
             kAllowIp),
      denied("localhost", "http://LOCALHOST.:PORT/", "loopback"),
      denied("localhost_subdomain", "http://x.localhost:PORT/", "loopback"),
      denied("metadata_name", "http://metadata.google.internal/computeMetadata/v1/",
             "metadata-address"),
      denied("name_to_loopback", "http://inward.test:PORT/", "loopback")
          .resolving("inward.test", {"127.0.0.1"}),
      denied("name_to_metadata_among_public", "http://inward.test/", "metadata-address")
          .resolving("inward.test", {"93.184.216.34", "169.254.169.254"}),
      denied("blocked_upper_case_trailing_dot", "http://EVIL.TEST./", "blocklist"),
      denied("blocked_subdomain", "http://sub.evil.test:PORT/", "blocklist"),
      denied("blocked_fullwidth", "http://\xEF\xBD\x85\xEF\xBD\x96\xEF\xBD\x89\xEF\xBD\x8C.test/",
             "blocklist"),
      denied("blocked_punycode_vs_unicode_entry", "http://xn--vil-9la.test/", "blocklist")
          .with_blocklist("\xC3\x89VIL.test\n"),
      denied("blocked_scheme_upper_case", "HTTP://Evil.Test/", "blocklist"),
      invalid("userinfo", "http://github.com@evil.test/"),
      invalid("userinfo_with_port_trick", "http://github.com:80@evil.test/"),
      invalid("percent_escaped_dot", "http://evil%2etest/"),
      invalid("backslash", "http://github.com\\@evil.test/"),
      invalid("empty_label", "http://evil.test../"),
      invalid("port_leading_zero", "http://evil.test:0443/"),
      invalid("port_trailing_junk", "http://evil.test:443x/"),
      invalid("port_empty", "http://evil.test:/"),
      invalid("ipv4_part_over_255", "http://127.0.0.256/"),
  };
  for (ConnectRow& row : rows) {
    row = row.as_http_request();
    if (row.blocklist.empty()) {
      row.blocklist = "evil.test\n";
    }
  }
  return rows;
}

INSTANTIATE_TEST_SUITE_P(AbsoluteForm, ConnectCorpus, ::testing::ValuesIn(absolute_form_rows()),
                         row_name);

// ---------------------------------------------------------------------------------------------
// 4. DNS rebinding. The gate looks a name up once per connection, checks every answer, and
// dials only those checked addresses; a record that changes between connections is checked
// afresh on the next one. The fake DNS answers with TTL 0, which the gate does not cache.

class DnsRebinding : public ::testing::Test {
 protected:
  DnsRebinding() : proxy_("", [](settings::Settings& s) { apply(kAllowLoopback, s); }) {}

  // A CONNECT to `name` on the origin's port: its status, and the Proxy-Status details.
  ResponseHead connect_to(TestClient& client, const std::string& name) {
    client.send(connect_request(name + ":" + std::to_string(origin_.port())));
    ResponseHead head = read_response_head(client);
    client.pending = head.body_after;
    return head;
  }

  // One tunnel through `name` that echoes.
  void expect_tunnel(const std::string& name) {
    TestClient client(proxy_.port());
    ResponseHead head = connect_to(client, name);
    ASSERT_EQ(head.status, 200) << head.head;
    client.send("hello");
    EXPECT_EQ(client.read_exact(5), "hello");
  }

  void expect_denied(const std::string& name, const std::string& reason) {
    TestClient client(proxy_.port());
    ResponseHead head = connect_to(client, name);
    EXPECT_EQ(head.status, 403) << head.head;
    EXPECT_NE(head.proxy_status.find("error=destination_ip_prohibited;"), std::string::npos)
        << head.proxy_status;
    EXPECT_NE(head.proxy_status.find("details=\"" + reason + ": "), std::string::npos)
        << head.proxy_status;
    EXPECT_NE(client.read_to_end().find("refused (" + reason + "): "), std::string::npos)
        << "the reply's body, then the close";
  }

  TcpOrigin origin_;
  TestProxy proxy_;
};

TEST_F(DnsRebinding, RecordChangedToMetadataIsCheckedOnTheNextConnection) {
  proxy_.dns().set("rebind.test", {"127.0.0.1"}, 0s);
  expect_tunnel("rebind.test");
  EXPECT_EQ(proxy_.dns().query_count("rebind.test"), 2u) << "one lookup: A and AAAA";
  EXPECT_EQ(origin_.connections(), 1u);

  proxy_.dns().set("rebind.test", {"169.254.169.254"}, 0s);
  expect_denied("rebind.test", "metadata-address");
  EXPECT_EQ(proxy_.dns().query_count("rebind.test"), 4u) << "exactly one more lookup";
  settle();
  EXPECT_EQ(origin_.connections(), 1u) << "the denied connection dialled nothing";
  EXPECT_TRUE(proxy_.wait_for_log([](const std::string& log) {
    return log.find("\"reason\":\"metadata-address\"") != std::string::npos &&
           log.find("resolves to 169.254.169.254") != std::string::npos;
  })) << proxy_.log_text();
}

TEST_F(DnsRebinding, EveryConnectionLooksUpOnceAndFollowsTheRecordBothWays) {
  proxy_.dns().set("flip.test", {"127.0.0.1"}, 0s);
  for (int round = 1; round <= 3; ++round) {
    expect_tunnel("flip.test");
    EXPECT_EQ(proxy_.dns().query_count("flip.test"), 2u * static_cast<unsigned>(round));
  }
  // Rebound to an answer that mixes the checked origin with the metadata service: one bad
  // answer denies the name, so the good one cannot be used to smuggle the bad one in.
  proxy_.dns().set("flip.test", {"127.0.0.1", "169.254.169.254"}, 0s);
  expect_denied("flip.test", "metadata-address");
  proxy_.dns().set("flip.test", {"::ffff:169.254.169.254"}, 0s);
  expect_denied("flip.test", "metadata-address");
  EXPECT_EQ(proxy_.dns().query_count("flip.test"), 10u);
  settle();
  EXPECT_EQ(origin_.connections(), 3u);
  // And back: the name is judged by what it resolves to now, not by its history.
  proxy_.dns().set("flip.test", {"127.0.0.1"}, 0s);
  expect_tunnel("flip.test");
  EXPECT_EQ(origin_.connections(), 4u);
}

TEST_F(DnsRebinding, ACachedAnswerIsTheCheckedAnswer) {
  // With a TTL the gate reuses its answer, so a record rebound within the TTL is not seen:
  // the next connection dials the address that was checked (and is checked again), never the
  // new one, and asks DNS nothing.
  proxy_.dns().set("cached.test", {"127.0.0.1"}, 60s);
  expect_tunnel("cached.test");
  EXPECT_EQ(proxy_.dns().query_count("cached.test"), 2u);
  proxy_.dns().set("cached.test", {"169.254.169.254"}, 60s);
  expect_tunnel("cached.test");
  EXPECT_EQ(proxy_.dns().query_count("cached.test"), 2u) << "served from the cache";
  EXPECT_EQ(origin_.connections(), 2u) << "both tunnels reached the checked 127.0.0.1";
}

TEST_F(DnsRebinding, ConcurrentConnectionsDuringASlowLookupShareOneCheckedAnswer) {
  proxy_.dns().set("slow.test", {"127.0.0.1"}, 0s);
  proxy_.dns().set_delay("slow.test", 200ms);
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<TestClient>(proxy_.port()));
    clients.back()->send(connect_request("slow.test:" + std::to_string(origin_.port())));
  }
  std::this_thread::sleep_for(50ms);
  // Rebound while the lookup is in flight. Whichever record the answer came from, the three
  // connections share that one answer, and what was checked is what is dialled: a tunnel
  // reaches the origin, a refusal says metadata-address; a gate that checked one answer and
  // dialled another would fail to connect instead (502/504).
  proxy_.dns().set("slow.test", {"169.254.169.254"}, 0s);
  std::vector<int> statuses;
  for (auto& client : clients) {
    ResponseHead head = read_response_head(*client);
    statuses.push_back(head.status);
    if (head.status == 200) {
      client->pending = head.body_after;
      client->send("x");
      EXPECT_EQ(client->read_exact(1), "x");
    } else {
      EXPECT_EQ(head.status, 403) << head.head;
      EXPECT_NE(head.proxy_status.find("details=\"metadata-address: "), std::string::npos)
          << head.proxy_status;
    }
  }
  EXPECT_EQ(proxy_.dns().query_count("slow.test"), 2u) << "one shared lookup";
  EXPECT_EQ(statuses, std::vector<int>(3, statuses.front()));
  EXPECT_EQ(origin_.connections(), statuses.front() == 200 ? 3u : 0u);
}

TEST(DnsRebindingHttp, AKeptAliveClientIsCheckedAgainWhenTheUpstreamIsRedialled) {
  HttpOrigin origin([](const HttpOrigin::Request&) {
    HttpOrigin::Reply reply = HttpOrigin::Reply::fixed(200, "ok");
    reply.close = true;  // so the gate must dial (and resolve) again for the next request
    return reply;
  });
  TestProxy proxy("", [](settings::Settings& s) { apply(kAllowLoopback, s); });
  proxy.dns().set("rebind.test", {"127.0.0.1"}, 0s);
  const std::string url = "http://rebind.test:" + std::to_string(origin.port());

  TestClient client(proxy.port());
  client.send("GET " + url + "/one HTTP/1.1\r\nHost: rebind.test\r\n\r\n");
  ResponseHead first = read_response_head(client);
  ASSERT_EQ(first.status, 200) << first.head;
  client.pending = first.body_after;
  EXPECT_EQ(client.read_exact(2), "ok");
  EXPECT_EQ(proxy.dns().query_count("rebind.test"), 2u);
  std::this_thread::sleep_for(100ms);  // the origin's close reaches the gate

  proxy.dns().set("rebind.test", {"169.254.169.254"}, 0s);
  client.send("GET " + url + "/two HTTP/1.1\r\nHost: rebind.test\r\n\r\n");
  ResponseHead second = read_response_head(client);
  EXPECT_EQ(second.status, 403) << second.head;
  EXPECT_NE(second.proxy_status.find("details=\"metadata-address: "), std::string::npos)
      << second.proxy_status;
  EXPECT_EQ(proxy.dns().query_count("rebind.test"), 4u);
  EXPECT_EQ(origin.requests().size(), 1u);
  EXPECT_EQ(origin.connections(), 1u);
}

// ---------------------------------------------------------------------------------------------
// 6. Request smuggling in plain-HTTP forwarding: shapes that http_forward_test's SmugglingTest
// does not cover. Each is refused with 400 `bad-request` before a byte reaches the origin, on
// a connection's first request and on a later one.

struct SmugglingRow {
  std::string name;
  std::string head;  // what follows the request line, up to and including the empty line
};

void PrintTo(const SmugglingRow& row, std::ostream* out) { *out << row.name; }

class SmugglingCorpus : public ::testing::TestWithParam<std::tuple<SmugglingRow, bool>> {};

TEST_P(SmugglingCorpus, RefusedBeforeTheOrigin) {
  const auto& [row, later_request] = GetParam();
  HttpOrigin origin([](const HttpOrigin::Request&) { return HttpOrigin::Reply::fixed(200, "ok"); });
  TestProxy proxy("", [](settings::Settings& s) {
    apply(kAllowLoopback, s);
    s.head_timeout = 2s;  // a head the gate never sees the end of is answered 408 in time
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string url = "http://origin.test:" + std::to_string(origin.port());

  TestClient client(proxy.port());
  std::uint64_t first_bytes = 0;
  if (later_request) {
    client.send("GET " + url + "/first HTTP/1.1\r\nHost: origin.test\r\n\r\n");
    ResponseHead first = read_response_head(client);
    ASSERT_EQ(first.status, 200) << first.head;
    client.pending = first.body_after;
    ASSERT_EQ(client.read_exact(2), "ok");
    ASSERT_TRUE(origin.wait_for_requests(1));
    first_bytes = origin.bytes_received();
  }
  client.send("POST " + url + "/x HTTP/1.1\r\nHost: origin.test\r\n" + row.head +
              "5\r\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: origin.test\r\n\r\n");
  ResponseHead head = read_response_head(client);
  EXPECT_EQ(head.status, 400) << head.head;
  EXPECT_NE(head.proxy_status.find("error=http_request_error;"), std::string::npos)
      << head.proxy_status;
  EXPECT_NE(head.proxy_status.find("details=\"bad-request: "), std::string::npos)
      << head.proxy_status;
  settle();
  EXPECT_EQ(origin.requests().size(), later_request ? 1u : 0u);
  EXPECT_EQ(origin.bytes_received(), first_bytes) << "not a byte of the refused request";
  EXPECT_EQ(origin.connections(), later_request ? 1u : 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, SmugglingCorpus,
    ::testing::Combine(
        ::testing::Values(
            // Transfer-Encoding spellings.
            SmugglingRow{"te_space_before_colon", "Transfer-Encoding : chunked\r\n\r\n"},
            SmugglingRow{"te_space_before_colon_with_length",
                         "Content-Length: 5\r\nTransfer-Encoding : chunked\r\n\r\n"},
            SmugglingRow{"te_upper_case_with_length",
                         "Transfer-Encoding: CHUNKED\r\nContent-Length: 5\r\n\r\n"},
            SmugglingRow{"length_with_te_upper_case",
                         "Content-Length: 5\r\nTransfer-Encoding: CHUNKED\r\n\r\n"},
            SmugglingRow{"te_chunked_identity", "Transfer-Encoding: chunked, identity\r\n\r\n"},
            SmugglingRow{"te_identity_chunked", "Transfer-Encoding: identity, chunked\r\n\r\n"},
            SmugglingRow{"te_identity_alone", "Transfer-Encoding: identity\r\n\r\n"},
            SmugglingRow{"te_chunked_listed_twice", "Transfer-Encoding: chunked, chunked\r\n\r\n"},
            SmugglingRow{"te_trailing_comma", "Transfer-Encoding: chunked,\r\n\r\n"},
            SmugglingRow{"te_quoted", "Transfer-Encoding: \"chunked\"\r\n\r\n"},
            SmugglingRow{"te_with_parameter", "Transfer-Encoding: chunked;q=1\r\n\r\n"},
            SmugglingRow{"te_lookalike", "Transfer-Encoding: xchunked\r\n\r\n"},
            SmugglingRow{"te_empty_with_length",
                         "Transfer-Encoding: \r\nContent-Length: 5\r\n\r\n"},
            SmugglingRow{"te_twice_different_case",
                         "Transfer-Encoding: chunked\r\ntransfer-encoding: CHUNKED\r\n\r\n"},
            SmugglingRow{"te_vertical_tab_before_colon", "Transfer-Encoding\x0b: chunked\r\n\r\n"},
            // Content-Length spellings.
            SmugglingRow{"length_twice_different_case",
                         "Content-Length: 5\r\ncontent-LENGTH: 6\r\n\r\n"},
            SmugglingRow{"length_plus_sign", "Content-Length: +5\r\n\r\n"},
            SmugglingRow{"length_minus_sign", "Content-Length: -5\r\n\r\n"},
            SmugglingRow{"length_hex", "Content-Length: 0x5\r\n\r\n"},
            SmugglingRow{"length_two_numbers", "Content-Length: 5 5\r\n\r\n"},
            SmugglingRow{"length_decimal_point", "Content-Length: 5.0\r\n\r\n"},
            SmugglingRow{"length_empty", "Content-Length: \r\n\r\n"},
            SmugglingRow{"length_overflow", "Content-Length: 99999999999999999999999\r\n\r\n"},
            // Obsolete line folding, on the fields that frame the body.
            SmugglingRow{"fold_te_value", "Transfer-Encoding:\r\n chunked\r\n\r\n"},
            SmugglingRow{"fold_length_value", "Content-Length:\r\n 5\r\n\r\n"},
            SmugglingRow{"fold_with_tab", "X-A: a\r\n\tTransfer-Encoding: chunked\r\n\r\n"},
            SmugglingRow{"fold_hiding_te_after_length",
                         "Content-Length: 5\r\nX-A: a\r\n Transfer-Encoding: chunked\r\n\r\n"},
            // Bare LF line ends: one parser's two fields are another's one.
            SmugglingRow{"bare_lf_hiding_te",
                         "X-A: a\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n"},
            SmugglingRow{"bare_lf_hiding_length",
                         "X-A: a\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"},
            SmugglingRow{"bare_lf_after_te", "Transfer-Encoding: chunked\n\r\n"}),
        ::testing::Bool()),
    [](const auto& info) {
      return std::get<0>(info.param).name + (std::get<1>(info.param) ? "_later" : "_first");
    });

// Not a refusal: `chunked` in another case is chunked (RFC 9112 section 7: coding names are
// case-insensitive), and the gate frames the body as chunked, so what follows the last chunk
// is a request of its own that the gate itself reads and judges, not one hidden in the body.
TEST(SmugglingControl, UpperCaseChunkedAloneIsReadAsChunked) {
  HttpOrigin origin([](const HttpOrigin::Request& r) {
    return HttpOrigin::Reply::fixed(200, "got " + r.target + " " + r.body);
  });
  TestProxy proxy("blocked.test\n", [](settings::Settings& s) { apply(kAllowLoopback, s); });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  const std::string url = "http://origin.test:" + std::to_string(origin.port());

  TestClient client(proxy.port());
  client.send("POST " + url +
              "/x HTTP/1.1\r\nHost: origin.test\r\nTransfer-Encoding: CHUNKED\r\n"
              "\r\n5\r\nhello\r\n0\r\n\r\n"
              "GET http://blocked.test/ HTTP/1.1\r\nHost: blocked.test\r\n\r\n");
  ResponseHead first = read_response_head(client);
  ASSERT_EQ(first.status, 200) << first.head;
  client.pending = first.body_after;
  EXPECT_EQ(client.read_exact(12), "got /x hello");
  ResponseHead second = read_response_head(client);
  EXPECT_EQ(second.status, 403) << second.head;
  EXPECT_NE(second.proxy_status.find("details=\"blocklist: "), std::string::npos);
  ASSERT_TRUE(origin.wait_for_requests(1));
  EXPECT_EQ(origin.requests().size(), 1u);
  EXPECT_EQ(origin.requests()[0].body, "hello");
}

// ---------------------------------------------------------------------------------------------
// 7. Protocol, not port. The origin's port is declared the TLS port (standing in for 443, which
// a test cannot listen on), so the gate reads the client's first bytes after its 200 and cuts
// the tunnel off, before a byte reaches the origin, unless they are a TLS ClientHello naming
// the CONNECT host (or SSH to a git host). After the 200 no HTTP reply can reach the client:
// the outcome is the close, and the reason is in the decision log.

struct ProtocolRow {
  std::string name;
  std::string host;         // CONNECT host (the port is the origin's)
  std::string first_bytes;  // what the client sends into the tunnel
  std::string reason;       // empty: passes (the echo origin returns the bytes)
  Knobs knobs = kAllowIpAndLoopback;
  // Send the first bytes in the same write as the CONNECT head, before the 200 (as clients that
  // do not wait for it do), rather than after it.
  bool with_head = false;
};

void PrintTo(const ProtocolRow& row, std::ostream* out) { *out << row.name << " " << row.host; }

class ProtocolCorpus : public ::testing::TestWithParam<ProtocolRow> {};

TEST_P(ProtocolCorpus, Outcome) {
  const ProtocolRow& row = GetParam();
  TcpOrigin origin;
  TestProxy proxy("blocked.test\n", [&row, &origin](settings::Settings& s) {
    apply(row.knobs, s);
    s.tls_ports = {origin.port()};
    s.head_timeout = 2s;
  });
  proxy.dns().set("origin.test", {"127.0.0.1"});
  proxy.dns().set("github.com", {"127.0.0.1"});

  TestClient client(proxy.port());
  const std::string request = connect_request(row.host + ":" + std::to_string(origin.port()));
  client.send(row.with_head ? request + row.first_bytes : request);
  ResponseHead head = read_response_head(client);
  ASSERT_EQ(head.status, 200) << head.head;
  client.pending = head.body_after;
  if (!row.with_head) {
    client.send(row.first_bytes);
  }
  if (row.reason.empty()) {
    EXPECT_EQ(client.read_exact(row.first_bytes.size()), row.first_bytes);
    return;
  }
  EXPECT_EQ(client.read_to_end(nullptr, 3s), "") << "cut off without a byte of the gate's own";
  settle();
  EXPECT_EQ(origin.bytes_received(), 0u) << "nothing reached the origin";
  EXPECT_TRUE(proxy.wait_for_log([&row](const std::string& log) {
    return log.find("\"verdict\":\"deny\"") != std::string::npos &&
           log.find("\"reason\":\"" + row.reason + "\"") != std::string::npos;
  })) << proxy.log_text();
}

const std::string kSshBanner = "SSH-2.0-OpenSSH_9.6\r\n";

INSTANTIATE_TEST_SUITE_P(
    TlsPort, ProtocolCorpus,
    ::testing::Values(
        // SSH on the TLS port meets the SSH rules.
        ProtocolRow{"ssh_banner_to_non_git_host", "origin.test", kSshBanner, "ssh-non-git-host"},
        ProtocolRow{"ssh_banner_to_ip_literal", "127.0.0.1", kSshBanner, "ssh-non-git-host"},
        ProtocolRow{"ssh_banner_without_line_end", "origin.test", "SSH-2.0-x", "ssh-non-git-host"},
        ProtocolRow{"ssh_banner_to_git_host_when_ssh_disabled", "github.com", kSshBanner,
                    "ssh-disabled",
                    Knobs{.allow_ip = true, .allow_loopback = true, .allow_ssh = false}},
        // TLS whose server name is not the CONNECT host (domain fronting).
        ProtocolRow{"client_hello_other_host", "origin.test", client_hello_records("evil.example"),
                    "sni-mismatch"},
        ProtocolRow{"client_hello_subdomain", "origin.test",
                    client_hello_records("www.origin.test"), "sni-mismatch"},
        ProtocolRow{"client_hello_host_as_prefix", "origin.test",
                    client_hello_records("origin.test.evil.example"), "sni-mismatch"},
        ProtocolRow{"client_hello_ip_for_a_name", "origin.test", client_hello_records("127.0.0.1"),
                    "sni-mismatch"},
        ProtocolRow{"client_hello_nul_in_name", "origin.test",
                    client_hello_records(std::string("origin.test\0.evil.example", 25)),
                    "sni-mismatch"},
        ProtocolRow{"client_hello_in_tiny_records", "origin.test",
                    client_hello_records("evil.example", true, 7), "sni-mismatch"},
        ProtocolRow{"client_hello_blocked_name_in_ip_tunnel", "127.0.0.1",
                    client_hello_records("www.blocked.test"), "blocklist"},
        // The same, sent before the gate's 200 in one write with the CONNECT head.
        ProtocolRow{"client_hello_other_host_with_the_head", "origin.test",
                    client_hello_records("evil.example"), "sni-mismatch", kAllowIpAndLoopback,
                    true},
        ProtocolRow{"ssh_banner_with_the_head", "origin.test", kSshBanner, "ssh-non-git-host",
                    kAllowIpAndLoopback, true},
        ProtocolRow{"plain_http_with_the_head", "origin.test",
                    "GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n", "protocol-mismatch",
                    kAllowIpAndLoopback, true},
        // Not TLS at all.
        ProtocolRow{"plain_http", "origin.test", "GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n",
                    "protocol-mismatch"},
        ProtocolRow{"http2_preface", "origin.test", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
                    "protocol-mismatch"},
        ProtocolRow{"plain_text", "origin.test", "hello, world\n", "protocol-mismatch"},
        ProtocolRow{"tls_alert_record", "origin.test",
                    std::string("\x15\x03\x01\x00\x02\x02\x28", 7), "protocol-mismatch"},
        // Controls: what the check lets through.
        ProtocolRow{"ssh_banner_to_git_host_passes", "github.com", kSshBanner, ""},
        ProtocolRow{"client_hello_same_host_passes", "origin.test",
                    client_hello_records("Origin.Test."), ""},
        ProtocolRow{"client_hello_split_records_same_host_passes", "origin.test",
                    client_hello_records("origin.test", true, 7), ""}),
    [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace sandgate::testing
