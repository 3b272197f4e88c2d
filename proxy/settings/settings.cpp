// Loading sandgate's settings: one table describes every setting (names in each source, default,
// help, and how to apply a value); the loader walks it once per source in precedence order.
#include "proxy/settings/settings.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <toml++/toml.h>

#include "rules/host.hpp"

namespace sandgate::settings {
namespace {

using ApplyResult = std::optional<std::string>;  // an error sentence, or nothing when fine
using Apply = ApplyResult (*)(Settings&, std::string_view);

struct Setting {
  SettingInfo info;
  Apply apply;
};

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view trim(std::string_view text) {
  const auto* ws = " \t\r\n";
  auto first = text.find_first_not_of(ws);
  if (first == std::string_view::npos) {
    return {};
  }
  auto last = text.find_last_not_of(ws);
  return text.substr(first, last - first + 1);
}

// Splits on commas, trimming each item; empty items are errors (a doubled comma is a typo).
Expected<std::vector<std::string_view>, std::string> split_list(std::string_view text) {
  std::vector<std::string_view> items;
  if (trim(text).empty()) {
    return items;
  }
  std::size_t start = 0;
  while (true) {
    auto comma = text.find(',', start);
    auto item = trim(text.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (item.empty()) {
      return Unexpected{std::string("empty item in a comma-separated list")};
    }
    items.push_back(item);
    if (comma == std::string_view::npos) {
      return items;
    }
    start = comma + 1;
  }
}

template <typename Int>
std::optional<Int> parse_uint(std::string_view text, Int min, Int max) {
  if (text.empty() || text.size() > 10 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);
  if (value < min || value > max) {
    return std::nullopt;
  }
  return static_cast<Int>(value);
}

// "5", "0.5", "1.25": seconds with up to three decimals, as milliseconds.
std::optional<std::uint64_t> parse_decimal_seconds_ms(std::string_view text) {
  auto dot = text.find('.');
  auto whole = text.substr(0, dot);
  std::string_view fraction = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  if (whole.empty() || (dot != std::string_view::npos && (fraction.empty() || fraction.size() > 3))) {
    return std::nullopt;
  }
  auto seconds = parse_uint<std::uint64_t>(whole, 0, 1'000'000);
  if (!seconds) {
    return std::nullopt;
  }
  std::uint64_t ms = *seconds * 1000;
  if (!fraction.empty()) {
    auto digits = parse_uint<std::uint64_t>(fraction, 0, 999);
    if (!digits) {
      return std::nullopt;
    }
    ms += *digits * (fraction.size() == 1 ? 100 : fraction.size() == 2 ? 10 : 1);
  }
  return ms;
}

constexpr std::string_view kBoolHelp = "expected a boolean (true/false, 1/0, yes/no, on/off)";

ApplyResult set_bool(bool& target, std::string_view value) {
  auto parsed = parse_bool(value);
  if (!parsed) {
    return std::string(kBoolHelp);
  }
  target = *parsed;
  return std::nullopt;
}

ApplyResult set_ports(std::vector<std::uint16_t>& target, std::string_view value) {
  auto items = split_list(value);
  if (!items) {
    return items.error();
  }
  target.clear();
  for (auto item : *items) {
    auto port = parse_uint<std::uint16_t>(item, 1, 65535);
    if (!port || (item.size() > 1 && item[0] == '0')) {
      return "'" + std::string(item) + "' is not a port (1..65535)";
    }
    target.push_back(*port);
  }
  return std::nullopt;
}

ApplyResult set_seconds(std::chrono::seconds& target, std::string_view value, unsigned max) {
  auto seconds = parse_uint<unsigned>(value, 0, max);
  if (!seconds) {
    return "expected a whole number of seconds, 0.." + std::to_string(max);
  }
  target = std::chrono::seconds(*seconds);
  return std::nullopt;
}

std::string expand_home(std::string_view path, const std::string& home) {
  if (path == "~") {
    return home;
  }
  if (path.starts_with("~/")) {
    return home + std::string(path.substr(1));
  }
  return std::string(path);
}

// The home directory used while applying values (set by load(); single-threaded start-up).
thread_local const std::string* g_home = nullptr;

ApplyResult set_path(std::string& target, std::string_view value) {
  if (value.find('\0') != std::string_view::npos) {
    return std::string("a path cannot contain a NUL byte");
  }
  target = expand_home(value, *g_home);
  return std::nullopt;
}

// `ADDR:PORT` or `[V6]:PORT` with a numeric address; `port_required` false allows a bare address.
ApplyResult check_socket_address(std::string_view text, bool port_required,
                                 std::uint16_t min_port) {
  std::string_view address = text;
  std::string_view port;
  if (text.starts_with('[')) {
    auto close = text.find(']');
    if (close == std::string_view::npos) {
      return "'" + std::string(text) + "': '[' without ']'";
    }
    address = text.substr(1, close - 1);
    auto rest = text.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') {
        return "'" + std::string(text) + "': expected ':PORT' after ']'";
      }
      port = rest.substr(1);
    }
    in6_addr v6{};
    if (inet_pton(AF_INET6, std::string(address).c_str(), &v6) != 1) {
      return "'" + std::string(address) + "' is not an IPv6 address";
    }
  } else {
    auto colon = text.rfind(':');
    if (colon != std::string_view::npos) {
      address = text.substr(0, colon);
      port = text.substr(colon + 1);
    }
    in_addr v4{};
    if (inet_pton(AF_INET, std::string(address).c_str(), &v4) != 1) {
      return "'" + std::string(address) +
             "' is not an IPv4 address in dotted form (write IPv6 as [ADDR]:PORT)";
    }
  }
  if (port.empty() && (port_required || text.ends_with(':'))) {
    return "'" + std::string(text) + "' needs a port (ADDR:PORT)";
  }
  if (!port.empty() && (!parse_uint<std::uint16_t>(port, min_port, 65535) ||
                        (port.size() > 1 && port[0] == '0'))) {
    return "'" + std::string(port) + "' is not a port (" + std::to_string(min_port) + "..65535)";
  }
  return std::nullopt;
}

// `unix:PATH`: an absolute path (after `~`) that fits in sockaddr_un.
ApplyResult check_unix_listen(std::string_view path) {
  if (path.empty()) {
    return std::string("'unix:' needs a socket path, e.g. unix:/run/user/1000/sandgate.sock");
  }
  if (path.find('\0') != std::string_view::npos) {
    return std::string("a path cannot contain a NUL byte");
  }
  if (!path.starts_with('/')) {
    return "'unix:" + std::string(path) + "' needs an absolute socket path";
  }
  constexpr std::size_t max = sizeof(sockaddr_un::sun_path) - 1;
  if (path.size() > max) {
    return "'unix:" + std::string(path) + "' is too long for a unix socket (at most " +
           std::to_string(max) + " bytes)";
  }
  return std::nullopt;
}

// The token is a secret: these messages never quote it, nor say how long it is.
constexpr std::size_t kMinTokenLength = 16;
constexpr std::size_t kMaxTokenLength = 1024;

ApplyResult check_token(std::string_view token, std::string_view what) {
  if (token.size() < kMinTokenLength) {
    return std::string(what) + " is shorter than " + std::to_string(kMinTokenLength) +
           " characters; use a long random one (for example `openssl rand -hex 32`)";
  }
  if (token.size() > kMaxTokenLength) {
    return std::string(what) + " is longer than " + std::to_string(kMaxTokenLength) +
           " characters";
  }
  if (!std::all_of(token.begin(), token.end(),
                   [](unsigned char c) { return c > 0x20 && c < 0x7f; })) {
    return std::string(what) +
           " may hold only visible ASCII characters (no spaces or control characters)";
  }
  return std::nullopt;
}

// A token given twice (token and token_file, from any sources) is refused: which one applies
// would otherwise depend on rules nobody remembers.
constexpr std::string_view kTokenTwice =
    "a token is given both directly (--token, SANDGATE_TOKEN or token) and as a file "
    "(--token-file, SANDGATE_TOKEN_FILE or token_file); give one of them";

// Reads the token from the first line of `path`. The file must be a regular file that other
// users can neither read nor write (as ssh requires of private keys).
ApplyResult read_token_file(Settings& s, std::string_view value) {
  if (auto error = set_path(s.token_file, value)) {
    return error;
  }
  if (!s.token.empty()) {
    return std::string(kTokenTwice);
  }
  const std::string& path = s.token_file;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    return "cannot read the token file: " + std::string(std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return std::string("the token file is not a regular file");
  }
  if ((st.st_mode & (S_IROTH | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return "other users can read or write the token file (mode " + std::string(mode) +
           "); chmod 600 " + path;
  }
  std::string text(kMaxTokenLength + 2, '\0');
  ssize_t got = 0;
  std::size_t used = 0;
  while (used < text.size() &&
         (got = ::read(fd, text.data() + used, text.size() - used)) != 0) {
    if (got < 0) {
      if (errno == EINTR) {
        continue;
      }
      return "cannot read the token file: " + std::string(std::strerror(errno));
    }
    used += static_cast<std::size_t>(got);
  }
  text.resize(used);
  std::string_view line = text;
  line = line.substr(0, line.find('\n'));
  if (line.ends_with('\r')) {
    line.remove_suffix(1);
  }
  if (line.empty()) {
    return std::string("the first line of the token file is empty; it should hold the token");
  }
  if (auto error = check_token(line, "the token in the file")) {
    return error;
  }
  s.token = std::string(line);
  return std::nullopt;
}

// The table. Keep it in --help order; the README's settings reference follows it.
const std::vector<Setting>& table() {
  static const std::vector<Setting> settings = {
      // --- policy ---
      {{"blocklist", "--blocklist", "SANDGATE_BLOCKLIST", "~/.config/goose/sandbox/blocked.txt",
        "blocklist file (created from the bundled template on first run at the default path)",
        false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         if (auto error = set_path(s.blocklist_path, v)) {
           return error;
         }
         s.blocklist_is_default = false;
         return std::nullopt;
       }},
      {{"allowlist", "--allowlist", "SANDGATE_ALLOWLIST", "(none)",
        "allowlist file: when set, only hosts it matches are allowed", false},
       [](Settings& s, std::string_view v) { return set_path(s.allowlist_path, v); }},
      {{"block_loopback", "--block-loopback", "GOOSE_SANDBOX_BLOCK_LOOPBACK", "true",
        "deny connections back into this machine (localhost, 127/8, ::1, 0.0.0.0)", true},
       [](Settings& s, std::string_view v) { return set_bool(s.policy.block_loopback, v); }},
      {{"allow_ip", "--allow-ip", "GOOSE_SANDBOX_ALLOW_IP", "false",
        "allow raw IP literals as destinations", true},
       [](Settings& s, std::string_view v) { return set_bool(s.policy.allow_ip, v); }},
      {{"allow_ssh", "--allow-ssh", "GOOSE_SANDBOX_ALLOW_SSH", "true",
        "allow SSH ports at all (to git hosts only, unless ssh_all_hosts)", true},
       [](Settings& s, std::string_view v) { return set_bool(s.policy.allow_ssh, v); }},
      {{"ssh_all_hosts", "--ssh-all-hosts", "GOOSE_SANDBOX_SSH_ALL_HOSTS", "false",
        "allow SSH ports to any host, not only git hosts", true},
       [](Settings& s, std::string_view v) { return set_bool(s.policy.ssh_all_hosts, v); }},
      {{"git_hosts", "--git-hosts", "GOOSE_SANDBOX_GIT_HOSTS",
        "github.com,gitlab.com,bitbucket.org,ssh.dev.azure.com",
        "comma-separated git hosts reachable on SSH ports (replaces the default list)", false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         auto items = split_list(v);
         if (!items) {
           return items.error();
         }
         s.policy.git_hosts.clear();
         for (auto item : *items) {
           auto host = rules::parse_host(item);
           if (!host) {
             return "'" + std::string(item) + "': " + std::string(rules::to_string(host.error()));
           }
           s.policy.git_hosts.push_back(host->name);
         }
         return std::nullopt;
       }},
      {{"ssh_ports", "--ssh-ports", "SANDGATE_SSH_PORTS", "22,2222,7999",
        "ports treated as SSH (reachable only for git hosts)", false},
       [](Settings& s, std::string_view v) { return set_ports(s.policy.ssh_ports, v); }},
      {{"allowed_ports", "--allowed-ports", "SANDGATE_ALLOWED_PORTS", "(any)",
        "comma-separated ports that may be reached; unset: every port", false},
       [](Settings& s, std::string_view v) { return set_ports(s.policy.allowed_ports, v); }},
      {{"block_private", "--block-private", "SANDGATE_BLOCK_PRIVATE", "false",
        "deny private networks (RFC 1918, CGNAT, IPv6 unique-local)", true},
       [](Settings& s, std::string_view v) { return set_bool(s.policy.block_private, v); }},
      {{"allow_metadata", "--allow-metadata", "SANDGATE_ALLOW_METADATA", "false",
        "allow cloud metadata and link-local addresses (denied by default)", true},
       [](Settings& s, std::string_view v) { return set_bool(s.policy.allow_metadata, v); }},
      {{"sni_check", "--sni-check", "SANDGATE_SNI_CHECK", "true",
        "on TLS ports, require TLS and a ClientHello server name equal to the CONNECT host",
        true},
       [](Settings& s, std::string_view v) { return set_bool(s.sni_check, v); }},
      {{"tls_ports", "--tls-ports", "SANDGATE_TLS_PORTS", "443",
        "ports whose tunnels must carry TLS (checked when sni_check is on)", false},
       [](Settings& s, std::string_view v) { return set_ports(s.tls_ports, v); }},
      {{"revoke_on_reload", "--revoke-on-reload", "SANDGATE_REVOKE_ON_RELOAD", "true",
        "on reload, close open tunnels and kept-alive connections the new rules deny", true},
       [](Settings& s, std::string_view v) { return set_bool(s.revoke_on_reload, v); }},
      // --- LaunchDarkly ---
      {{"launchdarkly_client_id", "--launchdarkly-client-id", "LAUNCHDARKLY_CLIENT_ID", "(off)",
        "LaunchDarkly client-side ID (24 hex characters): enables the remote allowlist", false},
       [](Settings& s, std::string_view v) -> ApplyResult {
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
       }},
      {{"ld_failover", "--ld-failover", "GOOSE_SANDBOX_LD_FAILOVER", "allow",
        "when LaunchDarkly gives no answer: allow, deny, or blocklist (local rules alone)",
        false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         auto mode = lower(v);
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
       }},
      {{"ld_mode", "--ld-mode", "SANDGATE_LD_MODE", "domain",
        "domain: ask LaunchDarkly per destination (goose); list: one flag holds the allowlist",
        false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         auto mode = lower(v);
         if (mode == "domain") {
           s.ld_mode = LdMode::domain;
         } else if (mode == "list") {
           s.ld_mode = LdMode::list;
         } else {
           return std::string("expected domain or list");
         }
         return std::nullopt;
       }},
      {{"ld_flag", "--ld-flag", "SANDGATE_LD_FLAG", "egress-allowlist",
        "the LaunchDarkly flag key: a boolean per domain, or in list mode an array of rules",
        false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         // LaunchDarkly flag keys: letters, digits, '.', '_' and '-'.
         if (v.empty() || v.size() > 256 || !std::all_of(v.begin(), v.end(), [](unsigned char c) {
               return std::isalnum(c) != 0 || c == '.' || c == '_' || c == '-';
             })) {
           return std::string("expected a flag key (letters, digits, '.', '_', '-')");
         }
         s.ld_flag = std::string(v);
         return std::nullopt;
       }},
      {{"ld_cache_ttl", "--ld-cache-ttl", "SANDGATE_LD_CACHE_TTL", "3600",
        "seconds a per-domain LaunchDarkly answer is reused before it is asked again", false},
       [](Settings& s, std::string_view v) { return set_seconds(s.ld_cache_ttl, v, 604800); }},
      {{"ld_cache_size", "--ld-cache-size", "SANDGATE_LD_CACHE_SIZE", "100000",
        "domains whose LaunchDarkly answer is kept (least recently used go first)", false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         auto n = parse_uint<std::uint32_t>(v, 1, 10'000'000);
         if (!n) {
           return std::string("expected a number of domains, 1..10000000");
         }
         s.ld_cache_size = *n;
         return std::nullopt;
       }},
      {{"ld_timeout", "--ld-timeout", "SANDGATE_LD_TIMEOUT", "5",
        "seconds (decimals allowed) to wait for a LaunchDarkly answer before failing over", false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         auto ms = parse_decimal_seconds_ms(v);
         if (!ms || *ms < 10 || *ms > 120'000) {
           return std::string("expected seconds, 0.01..120 (for example 5 or 0.5)");
         }
         s.ld_timeout = std::chrono::milliseconds(*ms);
         return std::nullopt;
       }},
      {{"ld_context_key", "--ld-context-key", "SANDGATE_LD_CONTEXT_KEY", "(the OS user name)",
        "list mode: the key of the one context the list flag is evaluated for", false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         if (v.empty() || v.size() > 256 ||
             std::any_of(v.begin(), v.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; })) {
           return std::string("expected a non-empty key without control characters");
         }
         s.ld_context_key = std::string(v);
         return std::nullopt;
       }},
      {{"ld_base_uri", "--ld-base-uri", "LAUNCHDARKLY_BASE_URI", "https://clientsdk.launchdarkly.com",
        "LaunchDarkly evaluation endpoint (a Relay Proxy, a test server); http only on loopback",
        false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         auto uri = parse_service_uri(v);
         if (!uri) {
           return uri.error();
         }
         s.ld_base_uri = *uri;
         return std::nullopt;
       }},
      {{"ld_stream_uri", "--ld-stream-uri", "LAUNCHDARKLY_STREAM_URI",
        "https://clientstream.launchdarkly.com",
        "LaunchDarkly streaming endpoint (list mode); http only on loopback", false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         auto uri = parse_service_uri(v);
         if (!uri) {
           return uri.error();
         }
         s.ld_stream_uri = *uri;
         return std::nullopt;
       }},
      // --- sandbox profile ---
      {{"protect_files", "--protect-files", "GOOSE_SANDBOX_PROTECT_FILES", "true",
        "sandbox: write-protect ~/.ssh, shell start-up files and config folders", true},
       [](Settings& s, std::string_view v) { return set_bool(s.sandbox.protect_files, v); }},
      {{"block_raw_sockets", "--block-raw-sockets", "GOOSE_SANDBOX_BLOCK_RAW_SOCKETS", "true",
        "sandbox: deny raw IPv4/IPv6 sockets", true},
       [](Settings& s, std::string_view v) { return set_bool(s.sandbox.block_raw_sockets, v); }},
      {{"block_tunneling", "--block-tunneling", "GOOSE_SANDBOX_BLOCK_TUNNELING", "true",
        "sandbox: deny tunnelling tools (nc, ncat, netcat, socat, telnet)", true},
       [](Settings& s, std::string_view v) { return set_bool(s.sandbox.block_tunneling, v); }},
      // --- the daemon ---
      {{"listen", "--listen", "SANDGATE_LISTEN", "127.0.0.1:9877",
        "address and port to listen on (port 0 picks a free one), or unix:/PATH for a unix "
        "socket only its owner can use (mode 0600)",
        false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         if (v.starts_with("unix:")) {
           const std::string path = expand_home(v.substr(5), *g_home);
           if (auto error = check_unix_listen(path)) {
             return error;
           }
           s.listen = "unix:" + path;
           return std::nullopt;
         }
         if (auto error = check_socket_address(v, true, 0)) {
           return error;
         }
         s.listen = std::string(v);
         return std::nullopt;
       }},
      {{"allow_remote_clients", "--allow-remote-clients", "SANDGATE_ALLOW_REMOTE_CLIENTS",
        "false", "allow listening on a non-loopback address", true},
       [](Settings& s, std::string_view v) { return set_bool(s.allow_remote_clients, v); }},
      {{"port_file", "--port-file", "SANDGATE_PORT_FILE", "(none)",
        "write the listening port to this file once ready (atomically)", false},
       [](Settings& s, std::string_view v) { return set_path(s.port_file, v); }},
      {{"token", "--token", "SANDGATE_TOKEN", "(off)",
        "require every request to carry Proxy-Authorization: Basic with any user name and this "
        "token as the password (16+ characters; prefer token_file)",
        false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         if (auto error = check_token(v, "the token")) {
           return error;
         }
         s.token = std::string(v);
         return std::nullopt;
       }},
      {{"token_file", "--token-file", "SANDGATE_TOKEN_FILE", "(none)",
        "read the token from the first line of this file (which other users must not be able "
        "to read), so that it appears in no process list or environment",
        false},
       [](Settings& s, std::string_view v) { return read_token_file(s, v); }},
      {{"threads", "--threads", "SANDGATE_THREADS", "(number of cores)",
        "worker threads, each with its own event loop", false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         auto n = parse_uint<unsigned>(v, 1, 256);
         if (!n) {
           return std::string("expected a number of threads, 1..256");
         }
         s.threads = *n;
         return std::nullopt;
       }},
      {{"drain_seconds", "--drain-seconds", "SANDGATE_DRAIN_SECONDS", "10",
        "on SIGTERM/SIGINT, how long open tunnels may finish before they are closed", false},
       [](Settings& s, std::string_view v) { return set_seconds(s.drain, v, 3600); }},
      {{"dns_servers", "--dns-server", "SANDGATE_DNS_SERVERS", "(the system's)",
        "comma-separated name servers, ADDR:PORT or [V6]:PORT, instead of the system's", false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         auto items = split_list(v);
         if (!items) {
           return items.error();
         }
         s.dns_servers.clear();
         for (auto item : *items) {
           if (auto error = check_socket_address(item, false, 1)) {
             return error;
           }
           s.dns_servers.emplace_back(item);
         }
         return std::nullopt;
       }},
      {{"dns_timeout", "--dns-timeout", "SANDGATE_DNS_TIMEOUT", "5",
        "seconds to wait for a DNS answer (all servers and retries)", false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         if (auto error = set_seconds(s.dns_timeout, v, 60); error || s.dns_timeout.count() == 0) {
           return std::string("expected a whole number of seconds, 1..60");
         }
         return std::nullopt;
       }},
      {{"head_timeout", "--head-timeout", "SANDGATE_HEAD_TIMEOUT", "10",
        "seconds a client has to send its request head", false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         if (auto error = set_seconds(s.head_timeout, v, 600); error || s.head_timeout.count() == 0) {
           return std::string("expected a whole number of seconds, 1..600");
         }
         return std::nullopt;
       }},
      {{"connect_timeout", "--connect-timeout", "SANDGATE_CONNECT_TIMEOUT", "10",
        "seconds to wait for an upstream connection", false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         if (auto error = set_seconds(s.connect_timeout, v, 600)) {
           return error;
         }
         if (s.connect_timeout.count() == 0) {
           return std::string("expected a whole number of seconds, 1..600");
         }
         return std::nullopt;
       }},
      {{"idle_timeout", "--idle-timeout", "SANDGATE_IDLE_TIMEOUT", "0 (off)",
        "seconds a tunnel may carry no bytes before it is closed; 0: never", false},
       [](Settings& s, std::string_view v) { return set_seconds(s.idle_timeout, v, 86400); }},
      {{"max_connections", "--max-connections", "SANDGATE_MAX_CONNECTIONS", "4096",
        "client connections served at once; beyond it new clients get 503", false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         auto n = parse_uint<std::uint32_t>(v, 1, 1'000'000);
         if (!n) {
           return std::string("expected a number of connections, 1..1000000");
         }
         s.max_connections = *n;
         return std::nullopt;
       }},
      {{"log_format", "--log-format", "SANDGATE_LOG_FORMAT", "text",
        "decision log format: text or json (one object a line)", false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         auto format = lower(v);
         if (format == "text") {
           s.log_format = LogFormat::text;
         } else if (format == "json") {
           s.log_format = LogFormat::json;
         } else {
           return std::string("expected text or json");
         }
         return std::nullopt;
       }},
      {{"log_level", "--log-level", "SANDGATE_LOG_LEVEL", "info",
        "what the log keeps: error; warning (and denials); info (and allows, tunnel ends)", false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         auto level = lower(v);
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
       }},
      {{"admin", "--admin", "SANDGATE_ADMIN", "(off)",
        "admin listener ADDR:PORT (loopback only): /metrics, /healthz, /readyz, /denials", false},
       [](Settings& s, std::string_view v) -> ApplyResult {
         if (auto error = check_socket_address(v, true, 0)) {
           return error;
         }
         s.admin = std::string(v);
         return std::nullopt;
       }},
      {{"log_file", "--log-file", "SANDGATE_LOG_FILE", "(standard error)",
        "write the log to this file (reopened on SIGHUP)", false},
       [](Settings& s, std::string_view v) { return set_path(s.log_file, v); }},
  };
  return settings;
}

// Converts a TOML value to the text form every source shares; arrays become comma lists.
std::optional<std::string> toml_to_text(const toml::node& node) {
  if (auto v = node.as_string()) {
    return v->get();
  }
  if (auto v = node.as_boolean()) {
    return v->get() ? "true" : "false";
  }
  if (auto v = node.as_integer()) {
    return std::to_string(v->get());
  }
  if (auto array = node.as_array()) {
    std::string joined;
    for (const auto& item : *array) {
      auto text = toml_to_text(item);
      if (!text || item.is_array()) {
        return std::nullopt;
      }
      if (!joined.empty()) {
        joined += ',';
      }
      joined += *text;
    }
    return joined;
  }
  return std::nullopt;
}

std::string describe_value(std::string_view value, bool secret = false) {
  if (secret && value.size() > 8) {
    // A LaunchDarkly SDK or mobile key given by mistake is a credential: show only its start.
    return "'" + std::string(value.substr(0, 8)) + "...'";
  }
  std::string out = "'";
  for (char c : value) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += '?';
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace

std::string ServiceUri::text() const {
  std::string out = tls ? "https://" : "http://";
  out += host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if (port != (tls ? 443 : 80)) {
    out += ":" + std::to_string(port);
  }
  return out + prefix;
}

Expected<ServiceUri, std::string> parse_service_uri(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  ServiceUri uri;
  std::string_view rest;
  if (text.starts_with("https://")) {
    rest = text.substr(8);
  } else if (text.starts_with("http://")) {
    uri.tls = false;
    uri.port = 80;
    rest = text.substr(7);
  } else {
    return Unexpected{quoted + " is not an https:// (or loopback http://) address"};
  }
  auto slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) {
    return Unexpected{quoted + ": user information in the address is not supported"};
  }
  if (path.find_first_of("?#") != std::string_view::npos ||
      std::any_of(path.begin(), path.end(),
                  [](unsigned char c) { return c <= 0x20 || c >= 0x7f || c == '%'; })) {
    return Unexpected{quoted + ": the path may hold only plain characters (no query, fragment, "
                               "escapes or spaces)"};
  }
  while (path.ends_with('/')) {
    path.remove_suffix(1);
  }
  uri.prefix = std::string(path);
  auto parsed = rules::parse_authority(authority.find(':') == std::string_view::npos &&
                                               !authority.starts_with('[')
                                           ? std::string(authority) + ":" + std::to_string(uri.port)
                                           : std::string(authority));
  if (!parsed) {
    return Unexpected{quoted + ": " + std::string(rules::to_string(parsed.error()))};
  }
  uri.port = parsed->port;
  uri.host = parsed->host.name;
  if (!uri.tls) {
    const bool loopback = uri.host == "localhost" || uri.host.ends_with(".localhost") ||
                          (parsed->host.is_ip() &&
                           rules::classify(parsed->host.address) == rules::AddressClass::loopback);
    if (!loopback) {
      return Unexpected{quoted + ": plain http is allowed only to a loopback address; use https"};
    }
  }
  return uri;
}

std::optional<std::string_view> unix_listen_path(std::string_view listen) {
  if (!listen.starts_with("unix:")) {
    return std::nullopt;
  }
  return listen.substr(5);
}

std::optional<bool> parse_bool(std::string_view text) {
  auto value = lower(trim(text));
  if (value == "true" || value == "1" || value == "yes" || value == "on") {
    return true;
  }
  if (value == "false" || value == "0" || value == "no" || value == "off") {
    return false;
  }
  return std::nullopt;
}

std::string home_directory() {
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return home;
  }
  if (const passwd* entry = getpwuid(getuid()); entry != nullptr && entry->pw_dir != nullptr) {
    return entry->pw_dir;
  }
  return "/";
}

std::optional<std::string> process_env(std::string_view name) {
  const char* value = std::getenv(std::string(name).c_str());
  if (value == nullptr) {
    return std::nullopt;
  }
  return std::string(value);
}

const std::vector<SettingInfo>& all_settings() {
  static const std::vector<SettingInfo> infos = [] {
    std::vector<SettingInfo> out;
    for (const auto& setting : table()) {
      out.push_back(setting.info);
    }
    return out;
  }();
  return infos;
}

Expected<Settings, std::string> load(const Sources& sources) {
  const std::string home = sources.home.empty() ? home_directory() : sources.home;
  g_home = &home;
  struct ResetHome {
    ~ResetHome() { g_home = nullptr; }
  } reset_home;

  auto env = [&sources](std::string_view name) -> std::optional<std::string> {
    if (!sources.env) {
      return std::nullopt;
    }
    auto value = sources.env(name);
    // An empty variable counts as unset, as most tools treat `VAR= cmd`.
    if (value && value->empty()) {
      return std::nullopt;
    }
    return value;
  };

  Settings settings;
  settings.blocklist_path = home + "/.config/goose/sandbox/blocked.txt";

  // The config file: --config, else SANDGATE_CONFIG.
  std::string config_path;
  if (auto flag = sources.flags.find("--config"); flag != sources.flags.end()) {
    config_path = expand_home(flag->second, home);
  } else if (auto var = env("SANDGATE_CONFIG")) {
    config_path = expand_home(*var, home);
  }
  toml::table file;
  if (!config_path.empty()) {
    std::error_code ec;
    if (std::filesystem::is_directory(config_path, ec)) {
      return Unexpected{config_path + ": is a folder, not a config file"};
    }
    if (!std::filesystem::exists(config_path, ec)) {
      return Unexpected{config_path + ": no such config file"};
    }
    try {
      file = toml::parse_file(config_path);
    } catch (const toml::parse_error& error) {
      std::ostringstream message;
      message << config_path;
      if (error.source().begin) {
        message << ":" << error.source().begin.line << ":" << error.source().begin.column;
      }
      message << ": " << error.description();
      return Unexpected{message.str()};
    }
    settings.config_path = config_path;
    // Unknown keys are errors: a misspelt setting silently ignored is a policy not applied.
    for (const auto& [key, node] : file) {
      const bool known = std::any_of(table().begin(), table().end(), [&key](const Setting& s) {
        return s.info.key == key.str();
      });
      if (!known) {
        return Unexpected{config_path + ":" + std::to_string(node.source().begin.line) +
                          ": unknown setting '" + std::string(key.str()) + "'"};
      }
    }
  }

  for (const auto& setting : table()) {
    const auto& info = setting.info;
    std::string value;
    std::string origin;
    // A LaunchDarkly server-side or mobile key given by mistake is a credential: never echo it.
    auto is_secret = [&info](std::string_view v) {
      return info.key == "launchdarkly_client_id" && (v.starts_with("sdk-") || v.starts_with("mob-"));
    };
    // The client token is a secret whatever it looks like: errors name its source only.
    auto shown = [&info, &is_secret](std::string_view separator, std::string_view v) {
      return info.key == "token" ? std::string()
                                 : std::string(separator) + describe_value(v, is_secret(v));
    };
    if (auto flag = sources.flags.find(info.flag); flag != sources.flags.end()) {
      value = flag->second;
      origin = std::string(info.flag) + shown("=", value);
    } else if (auto var = env(info.env)) {
      value = *var;
      origin = std::string(info.env) + shown("=", value);
    } else if (const toml::node* node = file.get(info.key)) {
      auto text = toml_to_text(*node);
      origin = config_path + ":" + std::to_string(node->source().begin.line) + ": " +
               std::string(info.key);
      if (!text) {
        return Unexpected{origin + ": expected a string, number, boolean or array of them"};
      }
      value = *text;
      origin += shown(" = ", value);
    } else {
      continue;  // the built-in default stands
    }
    if (auto error = setting.apply(settings, value)) {
      return Unexpected{origin + ": " + *error};
    }
  }

  // Naming the default path explicitly (as the example config does) keeps its first-run
  // behaviour: created from the template when absent.
  settings.blocklist_is_default =
      settings.blocklist_path == home + "/.config/goose/sandbox/blocked.txt";

  // Checks across settings.
  if (unix_listen_path(settings.listen) && !settings.port_file.empty()) {
    // The port file's content is a port number by contract; a unix socket has none, and its
    // address is the path the caller chose.
    return Unexpected{"the port file (--port-file, SANDGATE_PORT_FILE or port_file) holds a TCP "
                      "port, and the gate listens on " +
                      settings.listen + ", which has none; drop the port file"};
  }
  if (!settings.allow_remote_clients && !unix_listen_path(settings.listen)) {
    std::string_view listen = settings.listen;
    std::string address(listen.starts_with('[') ? listen.substr(1, listen.find(']') - 1)
                                                : listen.substr(0, listen.rfind(':')));
    in_addr v4{};
    in6_addr v6{};
    const bool loopback =
        (inet_pton(AF_INET, address.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127) ||
        (inet_pton(AF_INET6, address.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6));
    if (!loopback) {
      return Unexpected{"listen address " + settings.listen +
                        " is not loopback: anyone who can reach it could use the gate; give "
                        "--allow-remote-clients (SANDGATE_ALLOW_REMOTE_CLIENTS=true) to allow it"};
    }
  }
  if (settings.threads == 0) {
    const UsableCpus cpus = usable_cpus();
    settings.threads = cpus.count;
    settings.threads_note = cpus.why;
  } else {
    settings.threads_note = "as set";
  }
  return settings;
}

namespace {

// The cgroup v2 CPU quota of this process, in CPUs rounded up; nothing when unlimited or unknown.
std::optional<unsigned> cgroup_cpu_quota() {
  std::ifstream cgroup("/proc/self/cgroup");
  std::string line;
  std::string path;
  while (std::getline(cgroup, line)) {
    if (line.starts_with("0::")) {
      path = line.substr(3);
    }
  }
  if (path.empty()) {
    return std::nullopt;
  }
  // The quota of any ancestor limits us too: take the smallest along the way up.
  std::optional<unsigned> smallest;
  for (std::string at = path;; at = at.substr(0, at.rfind('/'))) {
    std::ifstream max_file("/sys/fs/cgroup" + at + "/cpu.max");
    std::string quota;
    std::uint64_t period = 0;
    if (max_file >> quota >> period && quota != "max" && period > 0) {
      try {
        const std::uint64_t q = std::stoull(quota);
        const auto cpus =
            static_cast<unsigned>(std::max<std::uint64_t>(1, (q + period - 1) / period));
        smallest = smallest ? std::min(*smallest, cpus) : cpus;
      } catch (const std::exception&) {
        // An unreadable quota is no quota.
      }
    }
    if (at.empty() || at == "/") {
      break;
    }
  }
  return smallest;
}

}  // namespace

UsableCpus usable_cpus() {
  UsableCpus result;
  result.count = std::max(1u, std::thread::hardware_concurrency());
  result.why = "one per CPU of the machine";
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    const auto allowed = static_cast<unsigned>(CPU_COUNT(&set));
    if (allowed > 0 && allowed != result.count) {
      result.count = allowed;
      result.why = "one per CPU this process may run on (affinity mask)";
    } else if (allowed > 0) {
      result.why = "one per CPU this process may run on";
    }
  }
  if (const auto quota = cgroup_cpu_quota(); quota && *quota < result.count) {
    result.count = *quota;
    result.why = "the cgroup's CPU quota (cpu.max)";
  }
#endif
  return result;
}

}  // namespace sandgate::settings
