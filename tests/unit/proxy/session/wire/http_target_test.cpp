// Unit tests for parse_http_target (proxy/session/wire/http_target.hpp), the absolute-form target
// of a plain-HTTP proxy request: what is accepted and how it is normalised (scheme case, host
// normal form, default and explicit ports, IPv6 brackets, the path and query sent upstream,
// OPTIONS), what is refused and with which reason (origin-form, authority-form, https, other
// schemes, user information, fragments, control characters, bad hosts and ports), and the
// sentences.

#include "proxy/session/wire/http_target.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>

namespace sandgate::session {
namespace {

using rules::HostError;
using rules::HostKind;
using rules::Reason;
using ::testing::HasSubstr;

// ---- Accepted targets: one row each ----

struct GoodCase {
  std::string_view label;
  std::string_view target;
  bool is_options;
  HostKind kind;
  std::string_view host;  // normal form
  std::uint16_t port;
  std::string_view authority;  // the Host header sent upstream
  std::string_view origin_form;
};

void PrintTo(const GoodCase& c, std::ostream* os) { *os << c.label; }

class HttpTargetGood : public ::testing::TestWithParam<GoodCase> {};

TEST_P(HttpTargetGood, ParsesAndNormalises) {
  const GoodCase& c = GetParam();
  auto target = parse_http_target(c.target, c.is_options);
  ASSERT_TRUE(target.has_value()) << "refused: " << c.target;
  EXPECT_EQ(target->host.kind, c.kind);
  EXPECT_EQ(target->host.name, c.host);
  EXPECT_EQ(target->port, c.port);
  EXPECT_EQ(target->authority, c.authority);
  EXPECT_EQ(target->origin_form, c.origin_form);
}

const GoodCase kGoodCases[] = {
    {"plain", "http://example.com/", false, HostKind::dns_name, "example.com", 80, "example.com",
     "/"},
    {"path_and_query", "http://example.com/a/b?x=1&y=2", false, HostKind::dns_name, "example.com",
     80, "example.com", "/a/b?x=1&y=2"},
    {"empty_path", "http://example.com", false, HostKind::dns_name, "example.com", 80,
     "example.com", "/"},
    {"query_without_path", "http://example.com?q", false, HostKind::dns_name, "example.com", 80,
     "example.com", "/?q"},
    {"options_empty_path_is_star", "http://example.com", true, HostKind::dns_name, "example.com",
     80, "example.com", "*"},
    {"options_with_path", "http://example.com/x", true, HostKind::dns_name, "example.com", 80,
     "example.com", "/x"},
    {"scheme_any_case", "HtTp://example.com/", false, HostKind::dns_name, "example.com", 80,
     "example.com", "/"},
    {"host_normalised", "http://EXAMPLE.Com./", false, HostKind::dns_name, "example.com", 80,
     "example.com", "/"},
    {"idn_to_punycode", "http://\xC3\xA9vil.com/", false, HostKind::dns_name, "xn--vil-9la.com", 80,
     "xn--vil-9la.com", "/"},
    {"explicit_port", "http://example.com:8080/x", false, HostKind::dns_name, "example.com", 8080,
     "example.com:8080", "/x"},
    {"default_port_written", "http://example.com:80/", false, HostKind::dns_name, "example.com", 80,
     "example.com", "/"},
    {"highest_port", "http://example.com:65535/", false, HostKind::dns_name, "example.com", 65535,
     "example.com:65535", "/"},
    {"ipv4", "http://203.0.113.7/", false, HostKind::ipv4, "203.0.113.7", 80, "203.0.113.7", "/"},
    {"ipv4_other_spelling", "http://0xcb.0.113.7:81/", false, HostKind::ipv4, "203.0.113.7", 81,
     "203.0.113.7:81", "/"},
    {"ipv6", "http://[2001:DB8::1]/", false, HostKind::ipv6, "2001:db8::1", 80, "[2001:db8::1]",
     "/"},
    {"ipv6_port", "http://[2001:db8::1]:8080/p", false, HostKind::ipv6, "2001:db8::1", 8080,
     "[2001:db8::1]:8080", "/p"},
    {"ipv6_no_path", "http://[::1]", false, HostKind::ipv6, "::1", 80, "[::1]", "/"},
    // '@' after the authority is part of the path, not user information.
    {"at_in_path", "http://example.com/a@b", false, HostKind::dns_name, "example.com", 80,
     "example.com", "/a@b"},
    {"colon_in_query", "http://example.com?a=b:c", false, HostKind::dns_name, "example.com", 80,
     "example.com", "/?a=b:c"},
    {"percent_in_path_kept", "http://example.com/%2e%2e/", false, HostKind::dns_name, "example.com",
     80, "example.com", "/%2e%2e/"},
};
INSTANTIATE_TEST_SUITE_P(Targets, HttpTargetGood, ::testing::ValuesIn(kGoodCases),
                         [](const auto& info) { return std::string(info.param.label); });

// ---- Refused targets: the error, the host error when there is one, and the reason ----

struct BadCase {
  std::string_view label;
  std::string_view target;
  TargetError error;
  HostError host_error;  // checked when error == host
  Reason reason;
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.label; }

class HttpTargetBad : public ::testing::TestWithParam<BadCase> {};

TEST_P(HttpTargetBad, IsRefusedWithItsReason) {
  const BadCase& c = GetParam();
  auto target = parse_http_target(c.target);
  ASSERT_FALSE(target.has_value()) << "accepted: " << c.target;
  EXPECT_EQ(target.error().error, c.error);
  if (c.error == TargetError::host) {
    EXPECT_EQ(target.error().host_error, c.host_error)
        << rules::to_string(target.error().host_error);
  }
  EXPECT_EQ(target_error_reason(target.error()), c.reason);
  EXPECT_EQ(target_error_code(target.error()), rules::reason_code(c.reason));
}

constexpr HostError kAny = HostError::empty;  // not checked for non-host errors

const BadCase kBadCases[] = {
    {"origin_form", "/index.html", TargetError::origin_form, kAny, Reason::origin_form},
    {"origin_form_root", "/", TargetError::origin_form, kAny, Reason::origin_form},
    {"authority_form", "example.com:443", TargetError::unsupported_scheme, kAny,
     Reason::unsupported_scheme},
    {"asterisk_form", "*", TargetError::unsupported_scheme, kAny, Reason::unsupported_scheme},
    {"https", "https://example.com/", TargetError::https, kAny, Reason::https_absolute_form},
    {"https_any_case", "HTTPS://example.com/", TargetError::https, kAny,
     Reason::https_absolute_form},
    {"ftp", "ftp://example.com/", TargetError::unsupported_scheme, kAny,
     Reason::unsupported_scheme},
    {"one_slash", "http:/example.com/", TargetError::unsupported_scheme, kAny,
     Reason::unsupported_scheme},
    {"scheme_only", "http:", TargetError::unsupported_scheme, kAny, Reason::unsupported_scheme},
    {"empty", "", TargetError::unsupported_scheme, kAny, Reason::unsupported_scheme},
    {"space", "http://example.com/a b", TargetError::bad_character, kAny, Reason::bad_request},
    {"tab", "http://example.com/\t", TargetError::bad_character, kAny, Reason::bad_request},
    {"crlf", "http://example.com/\r\nX-Injected: 1", TargetError::bad_character, kAny,
     Reason::bad_request},
    {"nul", std::string_view("http://example.com/\0", 20), TargetError::bad_character, kAny,
     Reason::bad_request},
    {"del", "http://example.com/\x7f", TargetError::bad_character, kAny, Reason::bad_request},
    {"control_before_scheme_check", "/\x01", TargetError::bad_character, kAny, Reason::bad_request},
    {"fragment", "http://example.com/#top", TargetError::fragment, kAny, Reason::bad_request},
    {"fragment_in_authority", "http://example.com#x", TargetError::fragment, kAny,
     Reason::bad_request},
    {"userinfo", "http://user@example.com/", TargetError::host, HostError::userinfo,
     Reason::invalid_host},
    {"userinfo_with_password", "http://user:pw@example.com/", TargetError::host,
     HostError::userinfo, Reason::invalid_host},
    // Parsers disagree on which '@' ends the user information; any '@' is refused.
    {"userinfo_confusion", "http://allowed.com:80@evil.com/", TargetError::host,
     HostError::userinfo, Reason::invalid_host},
    {"backslash_userinfo", "http://allowed.com\\@evil.com/", TargetError::host, HostError::userinfo,
     Reason::invalid_host},
    {"empty_host", "http:///x", TargetError::host, HostError::empty, Reason::invalid_host},
    {"empty_host_with_port", "http://:80/", TargetError::host, HostError::empty,
     Reason::invalid_host},
    {"empty_port", "http://example.com:/", TargetError::host, HostError::missing_port,
     Reason::invalid_host},
    {"port_zero", "http://example.com:0/", TargetError::host, HostError::bad_port,
     Reason::invalid_host},
    {"port_leading_zero", "http://example.com:080/", TargetError::host, HostError::bad_port,
     Reason::invalid_host},
    {"port_too_big", "http://example.com:65536/", TargetError::host, HostError::bad_port,
     Reason::invalid_host},
    {"port_not_digits", "http://example.com:8o/", TargetError::host, HostError::bad_port,
     Reason::invalid_host},
    {"ipv6_unbracketed", "http://2001:db8::1/", TargetError::host, HostError::bad_character,
     Reason::invalid_host},
    {"ipv6_unbalanced", "http://[::1/", TargetError::host, HostError::unbalanced_bracket,
     Reason::invalid_host},
    {"ipv6_bad_literal", "http://[::g]/", TargetError::host, HostError::bad_ipv6,
     Reason::invalid_host},
    {"bad_ipv4", "http://1.2.3.256/", TargetError::host, HostError::bad_ipv4, Reason::invalid_host},
    {"empty_label", "http://a..com/", TargetError::host, HostError::empty_label,
     Reason::invalid_host},
    {"backslash_in_host", "http://evil.com\\.allowed.com/", TargetError::host, HostError::path,
     Reason::invalid_host},
    {"percent_in_host", "http://evil%2ecom/", TargetError::host, HostError::percent_escape,
     Reason::invalid_host},
};
INSTANTIATE_TEST_SUITE_P(Targets, HttpTargetBad, ::testing::ValuesIn(kBadCases),
                         [](const auto& info) { return std::string(info.param.label); });

TEST(HttpTarget, UnbracketedIpv6IsNeverDialledAsAHost) {
  // Whatever the error, `http://::1/` must not reach the policy as some host.
  for (const std::string_view t : {"http://::1/", "http://::1:80/", "http://::ffff:127.0.0.1/"}) {
    auto target = parse_http_target(t);
    ASSERT_FALSE(target.has_value()) << t;
    EXPECT_EQ(target.error().error, TargetError::host) << t;
  }
}

// ---- The sentences ----

TEST(HttpTargetText, EachErrorHasASentence) {
  for (const TargetError error :
       {TargetError::origin_form, TargetError::https, TargetError::unsupported_scheme,
        TargetError::bad_character, TargetError::fragment, TargetError::host}) {
    const std::string text = target_error_text(TargetFailure{error, HostError::userinfo}, "t");
    EXPECT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '.') << text;
  }
}

TEST(HttpTargetText, HostErrorQuotesTheTargetAndNamesWhatIsWrong) {
  auto target = parse_http_target("http://user@example.com/");
  ASSERT_FALSE(target.has_value());
  const std::string text = target_error_text(target.error(), "http://user@example.com/");
  EXPECT_THAT(text, HasSubstr("'http://user@example.com/'"));
  EXPECT_THAT(text, HasSubstr(std::string(rules::to_string(HostError::userinfo))));
}

TEST(HttpTargetText, OriginFormSaysWhatToSendInstead) {
  EXPECT_THAT(target_error_text(TargetFailure{TargetError::origin_form}, "/"),
              HasSubstr("CONNECT"));
  EXPECT_THAT(target_error_text(TargetFailure{TargetError::https}, "https://x/"),
              HasSubstr("CONNECT"));
}

}  // namespace
}  // namespace sandgate::session
