// The settings of the LaunchDarkly allowlist: their rows of the settings' table
// (setting_table.hpp).
#include <cctype>
#include <string>
#include <utility>

#include "proxy/settings/setting_table.hpp"
#include "rules/ascii.hpp"

namespace sandgate::settings::detail {
namespace {

const char* ld_failover_text(LdFailover mode) {
  switch (mode) {
    case LdFailover::allow:
      return "allow";
    case LdFailover::deny:
      return "deny";
    case LdFailover::blocklist:
      return "blocklist";
  }
  return "allow";
}

}  // namespace

std::vector<Setting> launchdarkly_rows() {
  return {
      // --- LaunchDarkly ---
      {{"launchdarkly_client_id",
        "--launchdarkly-client-id",
        "LAUNCHDARKLY_CLIENT_ID",
        {},
        "LaunchDarkly client-side ID (24 hex characters): enables the remote allowlist",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         if (v.starts_with("sdk-")) {
           return std::string(
               "this is a server-side SDK key; the remote allowlist needs the environment's "
               "client-side ID (24 hex characters)");
         }
         if (v.starts_with("mob-")) {
           return std::string(
               "this is a mobile key; the remote allowlist needs the environment's client-side "
               "ID (24 hex characters)");
         }
         if (v.size() != 24 || !std::all_of(v.begin(), v.end(), [](unsigned char c) {
               return std::isxdigit(c) != 0;
             })) {
           return std::string("expected a client-side ID: 24 hex characters");
         }
         s.launchdarkly_client_id = std::string(v);
         return std::nullopt;
       },
       [](const Settings& s) { return secret_text(s.launchdarkly_client_id); }},
      {{"ld_failover",
        "--ld-failover",
        "GOOSE_SANDBOX_LD_FAILOVER",
        {},
        "when LaunchDarkly gives no answer: allow, deny, or blocklist (local rules alone)",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto mode = rules::ascii_lower(v);
         if (mode == "allow") {
           s.ld_failover = LdFailover::allow;
         } else if (mode == "deny") {
           s.ld_failover = LdFailover::deny;
         } else if (mode == "blocklist") {
           s.ld_failover = LdFailover::blocklist;
         } else {
           return std::string("expected allow, deny or blocklist");
         }
         s.ld_failover_given = true;
         return std::nullopt;
       },
       [](const Settings& s) { return std::string(ld_failover_text(s.ld_failover)); }},
      {{"ld_mode",
        "--ld-mode",
        "SANDGATE_LD_MODE",
        {},
        "domain: ask LaunchDarkly per destination (goose); list: one flag holds the allowlist",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto mode = rules::ascii_lower(v);
         if (mode == "domain") {
           s.ld_mode = LdMode::domain;
         } else if (mode == "list") {
           s.ld_mode = LdMode::list;
         } else {
           return std::string("expected domain or list");
         }
         return std::nullopt;
       },
       [](const Settings& s) {
         return std::string(s.ld_mode == LdMode::domain ? "domain" : "list");
       }},
      {{"ld_flag",
        "--ld-flag",
        "SANDGATE_LD_FLAG",
        {},
        "the LaunchDarkly flag key: a boolean per domain, or in list mode an array of rules",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         // LaunchDarkly flag keys: letters, digits, '.', '_' and '-'.
         if (v.empty() || v.size() > 256 || !std::all_of(v.begin(), v.end(), [](unsigned char c) {
               return std::isalnum(c) != 0 || c == '.' || c == '_' || c == '-';
             })) {
           return std::string("expected a flag key (letters, digits, '.', '_', '-')");
         }
         s.ld_flag = std::string(v);
         return std::nullopt;
       },
       [](const Settings& s) { return s.ld_flag; }},
      {{"ld_cache_ttl",
        "--ld-cache-ttl",
        "SANDGATE_LD_CACHE_TTL",
        {},
        "seconds a per-domain LaunchDarkly answer is reused before it is asked again",
        false},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_seconds(s.ld_cache_ttl, v, 604800);
       },
       [](const Settings& s) { return std::to_string(s.ld_cache_ttl.count()); }},
      {{"ld_cache_size",
        "--ld-cache-size",
        "SANDGATE_LD_CACHE_SIZE",
        {},
        "domains whose LaunchDarkly answer is kept (least recently used go first)",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto n = parse_number(v, 1, 10'000'000);
         if (!n) {
           return std::string("expected a number of domains, 1..10000000");
         }
         s.ld_cache_size = static_cast<std::uint32_t>(*n);
         return std::nullopt;
       },
       [](const Settings& s) { return std::to_string(s.ld_cache_size); }},
      {{"ld_timeout",
        "--ld-timeout",
        "SANDGATE_LD_TIMEOUT",
        {},
        "seconds (decimals allowed) to wait for a LaunchDarkly answer before failing over",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto ms = parse_decimal_seconds_ms(v);
         if (!ms || *ms < 10 || *ms > 120'000) {
           return std::string("expected seconds, 0.01..120 (for example 5 or 0.5)");
         }
         s.ld_timeout = std::chrono::milliseconds(*ms);
         return std::nullopt;
       },
       [](const Settings& s) { return seconds_text(s.ld_timeout); }},
      {{"ld_context_key",
        "--ld-context-key",
        "SANDGATE_LD_CONTEXT_KEY",
        {},
        "list mode: the key of the one context the list flag is evaluated for",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         if (v.empty() || v.size() > 256 || std::any_of(v.begin(), v.end(), [](unsigned char c) {
               return c < 0x20 || c == 0x7f;
             })) {
           return std::string("expected a non-empty key without control characters");
         }
         s.ld_context_key = std::string(v);
         return std::nullopt;
       },
       [](const Settings& s) { return or_text(s.ld_context_key, "(the OS user name)"); }},
      {{"ld_base_uri",
        "--ld-base-uri",
        "LAUNCHDARKLY_BASE_URI",
        {},
        "LaunchDarkly evaluation endpoint (a Relay Proxy, a test server); http only on loopback",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto uri = parse_service_uri(v);
         if (!uri) {
           return uri.error();
         }
         s.ld_base_uri = *uri;
         return std::nullopt;
       },
       [](const Settings& s) { return s.ld_base_uri.text(); }},
      {{"ld_stream_uri",
        "--ld-stream-uri",
        "LAUNCHDARKLY_STREAM_URI",
        {},
        "LaunchDarkly streaming endpoint (list mode); http only on loopback",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto uri = parse_service_uri(v);
         if (!uri) {
           return uri.error();
         }
         s.ld_stream_uri = *uri;
         return std::nullopt;
       },
       [](const Settings& s) { return s.ld_stream_uri.text(); }},
      {{"ld_max_payload",
        "--ld-max-payload",
        "SANDGATE_LD_MAX_PAYLOAD",
        {},
        "MiB: the largest LaunchDarkly reply, stream line or event (they carry every flag)",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto mib = parse_number(v, 1, 1024);
         if (!mib) {
           return std::string("expected MiB, 1..1024");
         }
         s.ld_max_payload = static_cast<std::size_t>(*mib) << 20;
         return std::nullopt;
       },
       [](const Settings& s) { return std::to_string(s.ld_max_payload >> 20); }},
      {{"ld_max_lookups",
        "--ld-max-lookups",
        "SANDGATE_LD_MAX_LOOKUPS",
        {},
        "per-domain mode: requests to LaunchDarkly at once; more new domains wait their turn",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto n = parse_number(v, 1, 256);
         if (!n) {
           return std::string("expected a number of requests, 1..256");
         }
         s.ld_max_lookups = static_cast<std::uint32_t>(*n);
         return std::nullopt;
       },
       [](const Settings& s) { return std::to_string(s.ld_max_lookups); }},
  };
}

}  // namespace sandgate::settings::detail
