// The table of settings: every setting's names in each source, help, how its value is shown
// (the --help defaults are a default-built Settings shown through it, so no default is written
// twice) and how a value is applied. See setting_table.hpp. Over 600 lines because it is one
// table, a row per setting, kept in one place so that --help, the README and the reload table
// can be checked against it.
#include "proxy/settings/setting_table.hpp"
#include "proxy/settings/token_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "config/embedded_defaults.hpp"
#include "proxy/settings/endpoint.hpp"
#include "rules/ascii.hpp"
#include "rules/host.hpp"
#include "rules/rule_line.hpp"

namespace sandgate::settings::detail {
namespace {

// Sets `target` to the path `value`, a leading `~` expanded to `home`.
ApplyResult set_path(std::string& target, std::string_view value, const std::string& home) {
  if (value.find('\0') != std::string_view::npos) {
    return std::string("a path cannot contain a NUL byte");
  }
  target = expand_home(value, home);
  return std::nullopt;
}

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

std::string bool_text(bool value) { return value ? "true" : "false"; }

std::string or_text(const std::string& value, const char* unset) {
  return value.empty() ? std::string(unset) : value;
}

// A secret is shown as set or not, never itself.
std::string secret_text(const std::string& value) { return value.empty() ? "(off)" : "(set)"; }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) {
    out += (out.empty() ? "" : ",") + item;
  }
  return out;
}

std::string ports_text(const std::vector<std::uint16_t>& ports, const char* none) {
  std::vector<std::string> items;
  for (auto port : ports) {
    items.push_back(std::to_string(port));
  }
  return items.empty() ? std::string(none) : join(items);
}

// Seconds, with up to three decimals when not whole ("5", "0.5", "1.25"), as the setting is
// written.
std::string seconds_text(std::chrono::milliseconds value) {
  const auto ms = value.count();
  std::string text = std::to_string(ms / 1000);
  if (ms % 1000 != 0) {
    char fraction[8];
    std::snprintf(fraction, sizeof fraction, ".%03d", static_cast<int>(ms % 1000));
    text += fraction;
    while (text.back() == '0') {
      text.pop_back();
    }
  }
  return text;
}

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

// `--allowlist FILE`, `preset:NAME`, or a comma list of both (at most one file): the presets
// are embedded in the executable (config/presets), the file is the user's own. A later source
// replaces an earlier one's whole value, as for every setting.
ApplyResult set_allowlist(Settings& s, std::string_view value, const std::string& home) {
  auto items = split_list(value);
  if (!items) {
    return items.error();
  }
  s.allowlist_path.clear();
  s.allowlist_presets.clear();
  constexpr std::string_view kPrefix = "preset:";
  for (std::string_view item : *items) {
    if (item.substr(0, kPrefix.size()) == kPrefix) {
      const std::string_view name = item.substr(kPrefix.size());
      if (!defaults::find_preset(name)) {
        return "no preset " + describe_value(name) +
               "; the bundled presets are: " + defaults::preset_names();
      }
      if (std::find(s.allowlist_presets.begin(), s.allowlist_presets.end(), name) ==
          s.allowlist_presets.end()) {
        s.allowlist_presets.emplace_back(name);
      }
      continue;
    }
    if (!s.allowlist_path.empty()) {
      return std::string("at most one allowlist file may be given (with any number of presets)");
    }
    if (auto error = set_path(s.allowlist_path, item, home)) {
      return error;
    }
  }
  return std::nullopt;
}

std::string show_allowlist(const Settings& s) {
  std::string text;
  for (const std::string& name : s.allowlist_presets) {
    text += text.empty() ? "" : ",";
    text += defaults::preset_source(name);
  }
  if (!s.allowlist_path.empty()) {
    text += text.empty() ? "" : ",";
    text += s.allowlist_path;
  }
  return or_text(text, "(none)");
}

std::vector<Setting> make_table() {
  std::vector<Setting> settings = {
      // --- policy ---
      {{"blocklist",
        "--blocklist",
        "SANDGATE_BLOCKLIST",
        {},
        "blocklist file (created from the bundled template on first run at the default path)",
        false},
       [](Settings& s, std::string_view v, const std::string& home) -> ApplyResult {
         if (auto error = set_path(s.blocklist_path, v, home)) {
           return error;
         }
         s.blocklist_is_default = false;
         return std::nullopt;
       },
       [](const Settings& s) { return s.blocklist_path; }},
      {{"allowlist",
        "--allowlist",
        "SANDGATE_ALLOWLIST",
        {},
        "allowlist: a file and/or bundled presets (preset:dev), comma-separated; when set, only "
        "hosts it matches are allowed",
        false},
       set_allowlist,
       show_allowlist},
      {{"request_rules",
        "--request-rules",
        "SANDGATE_REQUEST_RULES",
        {},
        "request-rules file: which methods and paths (and git fetch or push) each host may be "
        "sent; "
        "its hosts' TLS connections are inspected",
        false},
       [](Settings& s, std::string_view v, const std::string& home) {
         return set_path(s.request_rules_path, v, home);
       },
       [](const Settings& s) { return or_text(s.request_rules_path, "(none)"); }},
      {{"budgets",
        "--budgets",
        "SANDGATE_BUDGETS",
        {},
        "budgets file: how many bytes may go up and down, and how many connections and requests "
        "may be made, per destination or in all, per run, minute, hour or day",
        false},
       [](Settings& s, std::string_view v, const std::string& home) {
         return set_path(s.budgets_path, v, home);
       },
       [](const Settings& s) { return or_text(s.budgets_path, "(none)"); }},
      {{"inspect",
        "--inspect",
        "SANDGATE_INSPECT",
        {},
        "comma-separated hosts (rules-file entries) whose TLS connections are inspected: the gate "
        "terminates them with its own certificate authority to see each request",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         auto items = split_list(v);
         if (!items) {
           return items.error();
         }
         s.inspect.clear();
         std::vector<std::uint16_t> ports;
         for (auto item : *items) {
           if (auto entry = rules::parse_entry(item, ports); !entry) {
             return "'" + std::string(item) + "': " + entry.error();
           }
           s.inspect.emplace_back(item);
         }
         return std::nullopt;
       },
       [](const Settings& s) { return or_text(join(s.inspect), "(none)"); }},
      {{"secrets",
        "--secret",
        "SANDGATE_SECRETS",
        {},
        "a masked credential, NAME=HOST[,HOST...][=SOURCE] (repeatable; one per line in the "
        "variable): the command sees a sentinel in $NAME, the gate puts the real value (from "
        "$NAME, or SOURCE: @FILE, !COMMAND, $VARIABLE) in requests to HOSTS over TLS it inspects; "
        "a well-known credential (ANTHROPIC_API_KEY, OPENAI_API_KEY, GITHUB_TOKEN, ...) may leave "
        "its hosts out (NAME, or NAME==SOURCE) for its API's",
        false},
       [](Settings& s, std::string_view v, const std::string& home) -> ApplyResult {
         s.secrets.clear();
         std::size_t start = 0;
         while (start < v.size()) {
           const std::size_t end = std::min(v.find('\n', start), v.size());
           const std::string_view line = rules::trim_ascii_space(v.substr(start, end - start));
           start = end + 1;
           if (line.empty()) {
             continue;
           }
           auto spec = secrets::parse_secret_spec(line);
           if (!spec) {
             return spec.error();
           }
           if (spec->source == secrets::SecretSource::file) {
             spec->from = expand_home(spec->from, home);
           }
           s.secrets.push_back(std::move(*spec));
         }
         return std::nullopt;
       },
       [](const Settings& s) {
         std::string text;
         for (const auto& spec : s.secrets) {
           text += (text.empty() ? "" : " ") + secrets::secret_spec_text(spec);
         }
         return or_text(text, "(none)");
       }},
      {{"mask_known_secrets",
        "--mask-known-secrets",
        "SANDGATE_MASK_KNOWN_SECRETS",
        {},
        "run: mask every well-known credential variable set in the environment (ANTHROPIC_API_KEY, "
        "GITHUB_TOKEN, ...) as if --secret NAME named it; false passes them in the clear, each "
        "named in a warning",
        true},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.mask_known_secrets, v);
       },
       [](const Settings& s) { return bool_text(s.mask_known_secrets); }},
      {{"stable_sentinels",
        "--stable-sentinels",
        "SANDGATE_STABLE_SENTINELS",
        {},
        "give each masked secret the same sentinel in every run while its value stays the same "
        "(made from a key of yours kept beside the inspection CA), for agents that remember a key "
        "by its value",
        true},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.stable_sentinels, v);
       },
       [](const Settings& s) { return bool_text(s.stable_sentinels); }},
      {{"sentinels_file",
        "--sentinels-file",
        "SANDGATE_SENTINELS_FILE",
        {},
        "serve: write each secret's sentinel here (NAME=SENTINEL lines, mode 0600) for the "
        "launcher that starts the sandboxed command",
        false},
       [](Settings& s, std::string_view v, const std::string& home) {
         return set_path(s.sentinels_file, v, home);
       },
       [](const Settings& s) { return or_text(s.sentinels_file, "(none)"); }},
      {{"ca_dir",
        "--ca-dir",
        "SANDGATE_CA_DIR",
        {},
        "the inspection CA's folder (made on first use; `sandgate ca` prints it)",
        false},
       [](Settings& s, std::string_view v, const std::string& home) {
         return set_path(s.ca_dir, v, home);
       },
       [](const Settings& s) {
         return or_text(s.ca_dir, "$XDG_DATA_HOME/sandgate/ca (~/.local/share/sandgate/ca)");
       }},
      {{"inspect_extra_ca",
        "--inspect-extra-ca",
        "SANDGATE_INSPECT_EXTRA_CA",
        {},
        "comma-separated PEM files of CAs that inspected origins may chain to, besides the "
        "system's roots",
        false},
       [](Settings& s, std::string_view v, const std::string& home) -> ApplyResult {
         auto items = split_list(v);
         if (!items) {
           return items.error();
         }
         s.inspect_extra_ca.clear();
         for (auto item : *items) {
           std::string path;
           if (auto error = set_path(path, item, home)) {
             return error;
           }
           s.inspect_extra_ca.push_back(std::move(path));
         }
         return std::nullopt;
       },
       [](const Settings& s) { return or_text(join(s.inspect_extra_ca), "(none)"); }},
      {{"block_loopback",
        "--block-loopback",
        "GOOSE_SANDBOX_BLOCK_LOOPBACK",
        {},
        "deny connections back into this machine (localhost, 127/8, ::1, 0.0.0.0)",
        true},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.policy.block_loopback, v);
       },
       [](const Settings& s) { return bool_text(s.policy.block_loopback); }},
      {{"allow_ip",
        "--allow-ip",
        "GOOSE_SANDBOX_ALLOW_IP",
        {},
        "allow raw IP literals as destinations",
        true},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.policy.allow_ip, v);
       },
       [](const Settings& s) { return bool_text(s.policy.allow_ip); }},
      {{"allow_ssh",
        "--allow-ssh",
        "GOOSE_SANDBOX_ALLOW_SSH",
        {},
        "allow SSH ports at all (to git hosts only, unless ssh_all_hosts)",
        true},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.policy.allow_ssh, v);
       },
       [](const Settings& s) { return bool_text(s.policy.allow_ssh); }},
      {{"ssh_all_hosts",
        "--ssh-all-hosts",
        "GOOSE_SANDBOX_SSH_ALL_HOSTS",
        {},
        "allow SSH ports to any host, not only git hosts",
        true},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.policy.ssh_all_hosts, v);
       },
       [](const Settings& s) { return bool_text(s.policy.ssh_all_hosts); }},
      {{"git_hosts",
        "--git-hosts",
        "GOOSE_SANDBOX_GIT_HOSTS",
        {},
        "comma-separated git hosts reachable on SSH ports (replaces the default list)",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
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
       },
       [](const Settings& s) { return join(s.policy.git_hosts); }},
      {{"ssh_ports",
        "--ssh-ports",
        "SANDGATE_SSH_PORTS",
        {},
        "ports treated as SSH (reachable only for git hosts)",
        false},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_ports(s.policy.ssh_ports, v);
       },
       [](const Settings& s) { return ports_text(s.policy.ssh_ports, "(none)"); }},
      {{"allowed_ports",
        "--allowed-ports",
        "SANDGATE_ALLOWED_PORTS",
        {},
        "comma-separated ports that may be reached; unset: every port",
        false},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_ports(s.policy.allowed_ports, v);
       },
       [](const Settings& s) { return ports_text(s.policy.allowed_ports, "(any)"); }},
      {{"block_private",
        "--block-private",
        "SANDGATE_BLOCK_PRIVATE",
        {},
        "deny private networks (RFC 1918, CGNAT, IPv6 unique-local)",
        true},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.policy.block_private, v);
       },
       [](const Settings& s) { return bool_text(s.policy.block_private); }},
      {{"allow_metadata",
        "--allow-metadata",
        "SANDGATE_ALLOW_METADATA",
        {},
        "allow cloud metadata and link-local addresses (denied by default)",
        true},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.policy.allow_metadata, v);
       },
       [](const Settings& s) { return bool_text(s.policy.allow_metadata); }},
      {{"sni_check",
        "--sni-check",
        "SANDGATE_SNI_CHECK",
        {},
        "on TLS ports, require TLS and a ClientHello server name equal to the CONNECT host",
        true},
       [](Settings& s, std::string_view v, const std::string&) { return set_bool(s.sni_check, v); },
       [](const Settings& s) { return bool_text(s.sni_check); }},
      {{"tls_ports",
        "--tls-ports",
        "SANDGATE_TLS_PORTS",
        {},
        "ports whose tunnels must carry TLS (checked when sni_check is on)",
        false},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_ports(s.tls_ports, v);
       },
       [](const Settings& s) { return ports_text(s.tls_ports, "(none)"); }},
      {{"revoke_on_reload",
        "--revoke-on-reload",
        "SANDGATE_REVOKE_ON_RELOAD",
        {},
        "on reload, close open tunnels and kept-alive connections the new rules deny",
        true},
       [](Settings& s, std::string_view v, const std::string&) {
         return set_bool(s.revoke_on_reload, v);
       },
       [](const Settings& s) { return bool_text(s.revoke_on_reload); }},
      // --- report-only and ask modes ---
      {{"enforce",
        "--enforce",
        "SANDGATE_ENFORCE",
        {},
        "false: report-only; policy denials are logged as would-deny and the connection "
        "proceeds (loopback, metadata and reserved addresses stay denied)",
        true},
       [](Settings& s, std::string_view v, const std::string&) { return set_bool(s.enforce, v); },
       [](const Settings& s) { return bool_text(s.enforce); }},
      {{"unknown",
        "--unknown",
        "SANDGATE_UNKNOWN",
        {},
        "destinations no rule decides: deny, ask (hold the request on a question) or allow; "
        "default: allow with a blocklist only, deny in allowlist mode",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         const auto mode = rules::ascii_lower(v);
         if (mode == "deny") {
           s.policy.unknown = rules::UnknownMode::deny;
         } else if (mode == "ask") {
           s.policy.unknown = rules::UnknownMode::ask;
         } else if (mode == "allow") {
           s.policy.unknown = rules::UnknownMode::allow;
         } else if (mode == "default") {
           s.policy.unknown = rules::UnknownMode::usual;
         } else {
           return std::string("expected deny, ask, allow or default");
         }
         return std::nullopt;
       },
       [](const Settings& s) { return std::string(rules::to_string(s.policy.unknown)); }},
      {{"ask_timeout",
        "--ask-timeout",
        "SANDGATE_ASK_TIMEOUT",
        {},
        "--unknown=ask: seconds a request waits for an answer before the ask default applies",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         if (auto error = set_seconds(s.ask_timeout, v, 3600);
             error || s.ask_timeout.count() == 0) {
           return std::string("expected a whole number of seconds, 1..3600");
         }
         return std::nullopt;
       },
       [](const Settings& s) { return std::to_string(s.ask_timeout.count()); }},
      {{"ask_default",
        "--ask-default",
        "SANDGATE_ASK_DEFAULT",
        {},
        "--unknown=ask: deny or allow, when nobody answers in time or nobody can be asked",
        false},
       [](Settings& s, std::string_view v, const std::string&) -> ApplyResult {
         const auto answer = rules::ascii_lower(v);
         if (answer != "deny" && answer != "allow") {
           return std::string("expected deny or allow");
         }
         s.ask_default_allow = answer == "allow";
         return std::nullopt;
       },
       [](const Settings& s) { return std::string(s.ask_default_allow ? "allow" : "deny"); }},
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
  // The defaults --help shows: a default-built Settings, shown through each row.
  static std::vector<std::string> defaults;
  const Settings built;
  defaults.reserve(settings.size());
  for (auto& setting : settings) {
    defaults.push_back(setting.show(built));
    setting.info.default_text = defaults.back();
  }
  return settings;
}

}  // namespace

const std::vector<Setting>& table() {
  static const std::vector<Setting> settings = make_table();
  return settings;
}

}  // namespace sandgate::settings::detail
