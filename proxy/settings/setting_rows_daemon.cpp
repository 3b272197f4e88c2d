// The settings of the sandbox profile, the daemon (listeners, tokens, workers, timeouts, the
// log, the admin endpoint) and the parent proxy: their rows of the settings' table
// (setting_table.hpp).
#include <algorithm>
#include <string>
#include <utility>

#include "proxy/settings/endpoint.hpp"
#include "proxy/settings/setting_table.hpp"
#include "proxy/settings/token_file.hpp"
#include "rules/ascii.hpp"

namespace sandgate::settings::detail {
namespace {

// The token is a secret: these messages never quote it, nor say how long it is. Reading it from
// a file is token_file.cpp.
constexpr std::size_t kMinTokenLength = 16;
constexpr std::size_t kMaxTokenLength = 1024;

ApplyResult check_token(std::string_view token, std::string_view what) {
  if (token.size() < kMinTokenLength) {
    return std::string(what) + " is shorter than " + std::to_string(kMinTokenLength) +
           " characters; use a long random one (for example `openssl rand -hex 32`)";
  }
  if (token.size() > kMaxTokenLength) {
    return std::string(what) + " is longer than " + std::to_string(kMaxTokenLength) + " characters";
  }
  if (!std::all_of(token.begin(), token.end(),
                   [](unsigned char c) { return c > 0x20 && c < 0x7f; })) {
    return std::string(what) +
           " may hold only visible ASCII characters (no spaces or control characters)";
  }
  return std::nullopt;
}

// The proxy token and the admin token are read and checked alike; this names which one a
// setting fills and what its messages call it.
struct TokenKind {
  std::string Settings::*token;
  std::string Settings::*file;  // where `token` was read from
  std::string_view noun;        // "token", "admin token"
  // A token given twice (directly and as a file, from any sources) is refused: which one
  // applies would otherwise depend on rules nobody remembers.
  std::string_view given_twice;
};

constexpr TokenKind kProxyToken{
    &Settings::token, &Settings::token_file, "token",
    "a token is given both directly (--token, SANDGATE_TOKEN or token) and as a file "
    "(--token-file, SANDGATE_TOKEN_FILE or token_file); give one of them"};

constexpr TokenKind kAdminToken{
    &Settings::admin_token, &Settings::admin_token_file, "admin token",
    "an admin token is given both directly (--admin-token, SANDGATE_ADMIN_TOKEN or admin_token) "
    "and as a file (--admin-token-file, SANDGATE_ADMIN_TOKEN_FILE or admin_token_file); give "
    "one of them"};

// The token given directly.
ApplyResult set_token(Settings& s, std::string_view value, const TokenKind& kind) {
  if (auto error = check_token(value, "the " + std::string(kind.noun))) {
    return error;
  }
  s.*kind.token = std::string(value);
  return std::nullopt;
}

// Reads the token from the first line of `path`. The file must be a regular file that other
// users can neither read nor write (as ssh requires of private keys).
ApplyResult read_token_file(Settings& s, std::string_view value, const std::string& home,
                            const TokenKind& kind) {
  if (auto error = set_path(s.*kind.file, value, home)) {
    return error;
  }
  if (!(s.*kind.token).empty()) {
    return std::string(kind.given_twice);
  }
  const std::string noun(kind.noun);
  auto line = read_token_line(s.*kind.file, noun, kMaxTokenLength);
  if (!line) {
    return line.error();
  }
  if (auto error = check_token(*line, "the " + noun + " in the file")) {
    return error;
  }
  s.*kind.token = std::move(*line);
  return std::nullopt;
}

const char* log_level_text(LogLevel level) {
  switch (level) {
    case LogLevel::error:
      return "error";
    case LogLevel::warning:
      return "warning";
    case LogLevel::info:
      return "info";
  }
  return "info";
}

}  // namespace

std::vector<Setting> daemon_rows() {
  return {
      // --- sandbox profile ---
      {{"protect_files",
        "--protect-files",
        "GOOSE_SANDBOX_PROTECT_FILES",
        {},
        "sandbox: write-protect ~/.ssh, shell start-up files and config folders",
        true},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.sandbox.protect_files, v);
       },
       [](const Settings& s) { return bool_text(s.sandbox.protect_files); }},
      {{"block_raw_sockets",
        "--block-raw-sockets",
        "GOOSE_SANDBOX_BLOCK_RAW_SOCKETS",
        {},
        "sandbox: deny raw IPv4/IPv6 sockets",
        true},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.sandbox.block_raw_sockets, v);
       },
       [](const Settings& s) { return bool_text(s.sandbox.block_raw_sockets); }},
      {{"block_tunneling",
        "--block-tunneling",
        "GOOSE_SANDBOX_BLOCK_TUNNELING",
        {},
        "sandbox: deny tunnelling tools (nc, ncat, netcat, socat, telnet)",
        true},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.sandbox.block_tunneling, v);
       },
       [](const Settings& s) { return bool_text(s.sandbox.block_tunneling); }},
      {{"capture",
        "--capture",
        "SANDGATE_CAPTURE",
        {},
        "run (Linux): send every TCP connection and DNS query of the command to the gate, not "
        "only those of tools that honour the proxy variables (on/off)",
        true},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.sandbox.capture, v);
       },
       [](const Settings& s) { return bool_text(s.sandbox.capture); }},
      // --- the daemon ---
      {{"listen",
        "--listen",
        "SANDGATE_LISTEN",
        {},
        "address and port to listen on (port 0 picks a free one), or unix:/PATH for a unix "
        "socket only its owner can use (mode 0600)",
        false},
       [](Settings& s, std::string_view v, const std::string& home) -> ApplyResult {
         const std::string text =
             v.starts_with("unix:") ? "unix:" + expand_home(v.substr(5), home) : std::string(v);
         auto parsed = parse_listen_address(text);
         if (!parsed) {
           return parsed.error();
         }
         s.listen = std::move(*parsed);
         return std::nullopt;
       },
       [](const Settings& s) { return s.listen.text(); }},
      {{"allow_remote_clients",
        "--allow-remote-clients",
        "SANDGATE_ALLOW_REMOTE_CLIENTS",
        {},
        "allow listening on a non-loopback address",
        true},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.allow_remote_clients, v);
       },
       [](const Settings& s) { return bool_text(s.allow_remote_clients); }},
      {{"port_file",
        "--port-file",
        "SANDGATE_PORT_FILE",
        {},
        "write the listening port to this file once ready (atomically)",
        false},
       [](Settings& s, std::string_view v, const std::string& home) {
         return set_path(s.port_file, v, home);
       },
       [](const Settings& s) { return or_text(s.port_file, "(none)"); }},
      {{"token",
        "--token",
        "SANDGATE_TOKEN",
        {},
        "require every request to carry Proxy-Authorization: Basic with any user name and this "
        "token as the password (16+ characters; prefer token_file)",
        false},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_token(s, v, kProxyToken);
       },
       [](const Settings& s) { return secret_text(s.token); }},
      {{"token_file",
        "--token-file",
        "SANDGATE_TOKEN_FILE",
        {},
        "read the token from the first line of this file (which other users must not be able "
        "to read), so that it appears in no process list or environment",
        false},
       [](Settings& s, std::string_view v, const std::string& home) {
         return read_token_file(s, v, home, kProxyToken);
       },
       [](const Settings& s) { return or_text(s.token_file, "(none)"); }},
      // The admin token: the person's, for answering questions, which the agent asked (holding
      // the proxy token in its proxy variables) must not hold. After token and token_file, so
      // that load() can compare the two.
      {{"admin_token",
        "--admin-token",
        "SANDGATE_ADMIN_TOKEN",
        {},
        "require this token (16+ characters, not the proxy token) as Authorization: Bearer on "
        "the admin endpoint's /pending and /decide instead of the proxy token, so that an agent "
        "holding the proxy token cannot answer its own questions (prefer admin_token_file)",
        false},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_token(s, v, kAdminToken);
       },
       [](const Settings& s) { return secret_text(s.admin_token); }},
      {{"admin_token_file",
        "--admin-token-file",
        "SANDGATE_ADMIN_TOKEN_FILE",
        {},
        "read the admin token from the first line of this file (which other users must not be "
        "able to read)",
        false},
       [](Settings& s, std::string_view v, const std::string& home) {
         return read_token_file(s, v, home, kAdminToken);
       },
       [](const Settings& s) { return or_text(s.admin_token_file, "(none)"); }},
      {{"threads",
        "--threads",
        "SANDGATE_THREADS",
        {},
        "worker threads, each with its own event loop",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto n = parse_number(v, 1, 256);
         if (!n) {
           return std::string("expected a number of threads, 1..256");
         }
         s.threads = static_cast<unsigned>(*n);
         return std::nullopt;
       },
       [](const Settings& s) {
         return s.threads == 0 ? std::string("(number of cores)") : std::to_string(s.threads);
       }},
      {{"drain_seconds",
        "--drain-seconds",
        "SANDGATE_DRAIN_SECONDS",
        {},
        "on SIGTERM/SIGINT, how long open tunnels may finish before they are closed",
        false},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_seconds(s.drain, v, 3600);
       },
       [](const Settings& s) { return std::to_string(s.drain.count()); }},
      {{"dns_servers",
        "--dns-server",
        "SANDGATE_DNS_SERVERS",
        {},
        "comma-separated name servers, ADDR:PORT or [V6]:PORT, instead of the system's",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto items = split_list(v);
         if (!items) {
           return items.error();
         }
         s.dns_servers.clear();
         for (auto item : *items) {
           auto server = parse_tcp_endpoint(item, false, 1, 53);
           if (!server) {
             return server.error();
           }
           s.dns_servers.push_back(std::move(*server));
         }
         return std::nullopt;
       },
       [](const Settings& s) {
         std::vector<std::string> items;
         for (const auto& server : s.dns_servers) {
           items.push_back(server.text());
         }
         return items.empty() ? std::string("(the system's)") : join(items);
       }},
      {{"dns_timeout",
        "--dns-timeout",
        "SANDGATE_DNS_TIMEOUT",
        {},
        "seconds to wait for a DNS answer (all servers and retries)",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         if (auto error = set_seconds(s.dns_timeout, v, 60); error || s.dns_timeout.count() == 0) {
           return std::string("expected a whole number of seconds, 1..60");
         }
         return std::nullopt;
       },
       [](const Settings& s) { return std::to_string(s.dns_timeout.count()); }},
      {{"dns_cache_size",
        "--dns-cache-size",
        "SANDGATE_DNS_CACHE_SIZE",
        {},
        "names each worker keeps DNS answers for (least recently used out first); 0: no cache",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto n = parse_number(v, 0, 10'000'000);
         if (!n) {
           return std::string("expected a number of names, 0..10000000");
         }
         s.dns_cache_size = static_cast<std::uint32_t>(*n);
         return std::nullopt;
       },
       [](const Settings& s) { return std::to_string(s.dns_cache_size); }},
      {{"dns_max_ttl",
        "--dns-max-ttl",
        "SANDGATE_DNS_MAX_TTL",
        {},
        "seconds a DNS answer is kept at most, whatever its TTL",
        false},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_seconds(s.dns_max_ttl, v, 86400);
       },
       [](const Settings& s) { return std::to_string(s.dns_max_ttl.count()); }},
      {{"dns_negative_ttl",
        "--dns-negative-ttl",
        "SANDGATE_DNS_NEGATIVE_TTL",
        {},
        "seconds a 'no such name' answer is kept at most (its SOA may say less)",
        false},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_seconds(s.dns_negative_ttl, v, 3600);
       },
       [](const Settings& s) { return std::to_string(s.dns_negative_ttl.count()); }},
      {{"head_timeout",
        "--head-timeout",
        "SANDGATE_HEAD_TIMEOUT",
        {},
        "seconds a client has to send its request head",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         if (auto error = set_seconds(s.head_timeout, v, 600);
             error || s.head_timeout.count() == 0) {
           return std::string("expected a whole number of seconds, 1..600");
         }
         return std::nullopt;
       },
       [](const Settings& s) { return std::to_string(s.head_timeout.count()); }},
      {{"connect_timeout",
        "--connect-timeout",
        "SANDGATE_CONNECT_TIMEOUT",
        {},
        "seconds to wait for an upstream connection",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         if (auto error = set_seconds(s.connect_timeout, v, 600)) {
           return error;
         }
         if (s.connect_timeout.count() == 0) {
           return std::string("expected a whole number of seconds, 1..600");
         }
         return std::nullopt;
       },
       [](const Settings& s) { return std::to_string(s.connect_timeout.count()); }},
      {{"idle_timeout",
        "--idle-timeout",
        "SANDGATE_IDLE_TIMEOUT",
        {},
        "seconds a tunnel may carry no bytes before it is closed; 0: never",
        false},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_seconds(s.idle_timeout, v, 86400);
       },
       [](const Settings& s) {
         return s.idle_timeout.count() == 0 ? std::string("0 (off)")
                                            : std::to_string(s.idle_timeout.count());
       }},
      {{"max_connections",
        "--max-connections",
        "SANDGATE_MAX_CONNECTIONS",
        {},
        "client connections served at once; beyond it new clients get 503",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto n = parse_number(v, 1, 1'000'000);
         if (!n) {
           return std::string("expected a number of connections, 1..1000000");
         }
         s.max_connections = static_cast<std::uint32_t>(*n);
         return std::nullopt;
       },
       [](const Settings& s) { return std::to_string(s.max_connections); }},
      {{"log_format",
        "--log-format",
        "SANDGATE_LOG_FORMAT",
        {},
        "decision log format: text or json (one object a line)",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto format = rules::ascii_lower(v);
         if (format == "text") {
           s.log_format = LogFormat::text;
         } else if (format == "json") {
           s.log_format = LogFormat::json;
         } else {
           return std::string("expected text or json");
         }
         return std::nullopt;
       },
       [](const Settings& s) {
         return std::string(s.log_format == LogFormat::text ? "text" : "json");
       }},
      {{"log_level",
        "--log-level",
        "SANDGATE_LOG_LEVEL",
        {},
        "what the log keeps: error; warning (and denials); info (and allows, tunnel ends)",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto level = rules::ascii_lower(v);
         if (level == "error") {
           s.log_level = LogLevel::error;
         } else if (level == "warning" || level == "warn") {
           s.log_level = LogLevel::warning;
         } else if (level == "info") {
           s.log_level = LogLevel::info;
         } else {
           return std::string("expected error, warning or info");
         }
         return std::nullopt;
       },
       [](const Settings& s) { return std::string(log_level_text(s.log_level)); }},
      {{"log_mcp_arguments",
        "--log-mcp-arguments",
        "SANDGATE_LOG_MCP_ARGUMENTS",
        {},
        "an MCP call's decision line also carries the call's arguments as sent (at most 1 KiB); "
        "off, it names the tool only",
        false},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.log_mcp_arguments, v);
       },
       [](const Settings& s) { return bool_text(s.log_mcp_arguments); }},
      {{"log_websocket_messages",
        "--log-websocket-messages",
        "SANDGATE_LOG_WEBSOCKET_MESSAGES",
        {},
        "each message of an inspected WebSocket gets a log line with its first 1 KiB, cleaned of "
        "masked secrets' real values; off, the end line counts messages and bytes only",
        false},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.log_websocket_messages, v);
       },
       [](const Settings& s) { return bool_text(s.log_websocket_messages); }},
      {{"admin",
        "--admin",
        "SANDGATE_ADMIN",
        {},
        "admin listener ADDR:PORT (loopback only): /metrics, /healthz, /readyz, /denials",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto endpoint = parse_tcp_endpoint(v, true, 0);
         if (!endpoint) {
           return endpoint.error();
         }
         s.admin = std::move(*endpoint);
         return std::nullopt;
       },
       [](const Settings& s) { return s.admin ? s.admin->text() : std::string("(off)"); }},
      {{"log_file",
        "--log-file",
        "SANDGATE_LOG_FILE",
        {},
        "write the log to this file (reopened on SIGHUP)",
        false},
       [](Settings& s, std::string_view v, const std::string& home) {
         return set_path(s.log_file, v, home);
       },
       [](const Settings& s) { return or_text(s.log_file, "(standard error)"); }},
      // --- the parent proxy ---
      {{"parent_proxy",
        "--parent-proxy",
        "SANDGATE_PARENT_PROXY",
        {},
        "http://HOST:PORT of a corporate proxy to reach destinations through (CONNECT, and "
        "absolute-form for plain http); the gate still decides every request first",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto parsed = parent::parse_parent_url(v);
         if (!parsed) {
           return parsed.error();
         }
         s.parent_proxy = std::move(*parsed);
         s.parent_proxy_url = std::string(v);
         return std::nullopt;
       },
       [](const Settings& s) { return or_text(s.parent_proxy_url, "(none: direct)"); }},
      {{"parent_proxy_credentials",
        "--parent-proxy-credentials",
        "SANDGATE_PARENT_PROXY_CREDENTIALS",
        {},
        "file whose first line is user:password for the parent proxy (Basic; mode 0600)",
        false},
       [](Settings& s, std::string_view v, const std::string& home) -> ApplyResult {
         if (auto error = set_path(s.parent_credentials_file, v, home)) {
           return error;
         }
         auto read = parent::read_credentials_file(s.parent_credentials_file);
         if (!read) {
           return read.error();
         }
         s.parent_credentials = std::move(*read);
         return std::nullopt;
       },
       [](const Settings& s) { return or_text(s.parent_credentials_file, "(none)"); }},
      {{"parent_proxy_exclude",
        "--parent-proxy-exclude",
        "SANDGATE_PARENT_PROXY_EXCLUDE",
        {},
        "destinations dialled directly, not through the parent proxy (NO_PROXY syntax: names, "
        "addresses, CIDR blocks, :PORT)",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto parsed = parent::ExcludeList::parse(v);
         if (!parsed) {
           return parsed.error();
         }
         s.parent_exclude = std::move(*parsed);
         s.parent_exclude_text = std::string(v);
         return std::nullopt;
       },
       [](const Settings& s) { return or_text(s.parent_exclude_text, "(none)"); }},
  };
}

}  // namespace sandgate::settings::detail
