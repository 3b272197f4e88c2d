// sandgate's configuration: every setting, where it comes from, and how it is checked.
//
// Each setting can be given four ways; the first that is present wins:
//   1. a command-line flag            --allow-ip=true
//   2. an environment variable        GOOSE_SANDBOX_ALLOW_IP=true (goose's name where goose had
//   one)
//   3. the TOML config file           allow_ip = true      (--config / SANDGATE_CONFIG)
//   4. the built-in default
// A bad value is a start-up error whose message names the flag, variable or file and line, and
// the value. Booleans accept true/false, 1/0, yes/no, on/off in any case.
//
// Loading is pure computation over the inputs given (plus reading the config file), so tests can
// drive it with a fake environment. The result is a plain value, typed: addresses are parsed
// into endpoint types once, here. Each default is written once, in the struct below; --help
// shows a default-built Settings (setting_table.cpp).
//
// The files: settings.cpp (load(): the sources in precedence order, checks across settings),
// setting_table.cpp (the table: names, help, show, apply; its rows in setting_rows_*.cpp, by
// subject), value_parsers.cpp (values and endpoints), config_file.cpp (the TOML file),
// usable_cpus.cpp (the default thread count).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/parent/parent_proxy.hpp"
#include "proxy/secrets/secret_spec.hpp"
#include "proxy/settings/endpoint.hpp"
#include "rules/expected.hpp"
#include "rules/policy.hpp"
#include "sandbox-profile/plan/sandbox_options.hpp"

namespace sandgate::settings {

enum class LogFormat : std::uint8_t { text, json };
// What the log keeps: errors only; + warnings and denials; + allows, tunnel ends and notes.
enum class LogLevel : std::uint8_t { error, warning, info };
enum class LdFailover : std::uint8_t { allow, deny, blocklist };
enum class LdMode : std::uint8_t { domain, list };

// Where an HTTP service lives: `https://host[:port][/prefix]`, or `http://` for loopback only.
struct ServiceUri {
  bool tls = true;
  std::string host;  // a name, dotted IPv4, or IPv6 without brackets
  std::uint16_t port = 443;
  std::string prefix;        // path before the endpoint's own path, no trailing '/'; often empty
  std::string text() const;  // as given, normalised
};

// Parses and checks a service URI (the LaunchDarkly endpoints). Plain http is accepted only for
// a loopback host: LaunchDarkly's answers decide what may leave the machine.
Expected<ServiceUri, std::string> parse_service_uri(std::string_view text);

inline constexpr std::uint16_t kDefaultPort = 9877;

struct Settings {
  // Policy (rules/).
  rules::PolicyOptions policy;
  std::string blocklist_path = "~/.config/goose/sandbox/blocked.txt";  // load(): `~` expanded
  bool blocklist_is_default = true;  // the default path: created from the template if absent
  std::string allowlist_path;        // the allowlist file; empty: none
  // Bundled allowlists (`preset:NAME`, config/presets), applied with the file. Allowlist mode
  // is on when either is given.
  std::vector<std::string> allowlist_presets;
  // The request-rules file (rules/request_rules.hpp); empty: none. Watched and reloaded like
  // the lists.
  std::string request_rules_path;
  // The budgets file (rules/budgets.hpp): how much may leave per destination; empty: none.
  // Watched and reloaded like the lists; what was spent is kept across reloads.
  std::string budgets_path;
  // Hosts whose TLS connections are inspected without request rules of their own (rules-file
  // entries: `github.com`, `*.example.org`, `pypi.org:443`).
  std::vector<std::string> inspect;
  // The inspection CA's folder; empty: $XDG_DATA_HOME/sandgate/ca (~/.local/share/sandgate/ca).
  std::string ca_dir;
  // PEM files of CAs an inspected origin may chain to, besides the system's roots.
  std::vector<std::string> inspect_extra_ca;
  bool sni_check = true;  // inspect the ClientHello of tunnels to TLS ports
  // Masked credentials (proxy/secrets/): what each is, where it may go, where its value comes
  // from. Their hosts are inspected. The values are read once, when the gate starts.
  std::vector<secrets::SecretSpec> secrets;
  // `run`: every well-known credential variable (known_credentials.hpp) set in the caller's
  // environment and not named by `secrets` is masked too, bound to its API's hosts. Off: they
  // pass in the clear, each named in a warning.
  bool mask_known_secrets = true;
  // Sentinels made from a key of the user's (stable_sentinel.hpp) instead of at random: the same
  // secret with the same value has the same sentinel in every run, so an agent that remembers a
  // key by its value does not ask again.
  bool stable_sentinels = false;
  // Where `serve` writes each secret's sentinel (NAME=SENTINEL lines, private to the user) for
  // the launcher that starts the sandboxed command; empty: the log only.
  std::string sentinels_file;
  std::vector<std::uint16_t> tls_ports = {443};
  // On reload, close open tunnels and kept-alive connections whose destination the new rules
  // deny (logged with outcome `revoked`). Off: what is open keeps going; new requests still
  // follow the new rules.
  bool revoke_on_reload = true;
  // Report-only mode when false: every policy denial is logged as `would-deny` and the
  // connection proceeds (rules/reason.hpp, kReportableReasons; address rules stay enforced).
  bool enforce = true;
  // --unknown=ask: how long a request waits for an answer, and what it gets without one.
  std::chrono::seconds ask_timeout{60};
  bool ask_default_allow = false;  // --ask-default=allow; deny by default

  // The sandbox (sandgate run / profile): its own settings, in its own type.
  sandbox::SandboxSettings sandbox;

  // LaunchDarkly remote allowlist.
  std::string launchdarkly_client_id;  // empty: off
  LdFailover ld_failover = LdFailover::allow;
  bool ld_failover_given = false;  // unset means allow, with a warning that it fails open
  LdMode ld_mode = LdMode::domain;
  std::string ld_flag = "egress-allowlist";
  std::chrono::seconds ld_cache_ttl{3600};
  std::uint32_t ld_cache_size = 100'000;
  std::chrono::milliseconds ld_timeout{5000};
  std::string ld_context_key;  // list mode's context key; empty: the OS user name
  ServiceUri ld_base_uri{true, "clientsdk.launchdarkly.com", 443, {}};
  ServiceUri ld_stream_uri{true, "clientstream.launchdarkly.com", 443, {}};
  std::size_t ld_max_payload = 32u << 20;  // largest reply, stream line or event, in bytes
  std::uint32_t ld_max_lookups = 8;        // per-domain requests to LaunchDarkly at once

  // The daemon.
  // `ADDR:PORT`, `[V6]:PORT`, or `unix:/absolute/path` (a unix stream socket, mode 0600).
  ListenAddress listen{TcpEndpoint{"127.0.0.1", kDefaultPort}};
  bool allow_remote_clients = false;
  std::string port_file;
  // Client authentication for shared machines: when non-empty, every request must carry
  // `Proxy-Authorization: Basic base64(any-user:token)`. A secret: never logged or echoed.
  std::string token;
  std::string token_file;  // where `token` was read from (its first line), if from a file
  // The admin endpoint's /pending and /decide: when non-empty, they require
  // `Authorization: Bearer admin_token` and no longer accept `token`, which the agent being asked
  // holds. Never equal to `token` (load() refuses it). A secret: never logged or echoed.
  std::string admin_token;
  std::string admin_token_file;  // where `admin_token` was read from, if from a file
  unsigned threads = 0;          // 0: one per CPU this process may use (usable_cpus())
  std::string threads_note;      // why `threads` is what it is, for the start-up log
  std::chrono::seconds drain{10};
  std::vector<TcpEndpoint> dns_servers;  // empty: the system's (a bare address means port 53)
  std::chrono::seconds dns_timeout{5};
  std::uint32_t dns_cache_size = 4096;        // names per worker; 0: no DNS cache
  std::chrono::seconds dns_max_ttl{300};      // cap on a positive answer's TTL
  std::chrono::seconds dns_negative_ttl{30};  // cap on a negative answer's (SOA) TTL
  std::chrono::seconds head_timeout{10};
  std::chrono::seconds connect_timeout{10};
  std::chrono::seconds idle_timeout{0};  // 0: off
  std::uint32_t max_connections = 4096;
  LogFormat log_format = LogFormat::text;
  LogLevel log_level = LogLevel::info;
  // An MCP call's decision line carries its arguments as sent (at most 1 KiB of them): off,
  // since they may hold what the agent read or was told (proxy/mcp/mcp_stage.hpp).
  bool log_mcp_arguments = false;
  // Each message of an inspected WebSocket gets a log line with its first 1 KiB, cleaned of
  // secrets' real values: off, since a message holds what the agent sends and is told; the end
  // line counts messages and bytes either way (proxy/session/exchange/websocket_message_tap.hpp).
  bool log_websocket_messages = false;
  std::string log_file;
  std::optional<TcpEndpoint> admin;  // the admin listener; none: off

  // The parent proxy (proxy/parent/): tunnels and plain requests to destinations not excluded
  // go through it, after every local decision. Restart-only.
  std::optional<parent::ParentAddress> parent_proxy;      // none: dial destinations directly
  std::string parent_proxy_url;                           // as given, for --help
  std::optional<parent::Credentials> parent_credentials;  // a secret: never logged or shown
  std::string parent_credentials_file;                    // where they were read from
  parent::ExcludeList parent_exclude;  // destinations dialled directly all the same
  std::string parent_exclude_text;     // as given

  std::string config_path;  // the TOML file read, if any
};

// One setting's description, for --help, the README and error messages.
struct SettingInfo {
  std::string_view key;           // TOML key, e.g. "allow_ip"
  std::string_view flag;          // "--allow-ip"
  std::string_view env;           // "GOOSE_SANDBOX_ALLOW_IP"
  std::string_view default_text;  // "false": a default-built Settings, shown
  std::string_view help;          // one line
  bool boolean;                   // a flag without a value means true
};

// The CPUs this process may run on: the affinity mask, capped by a cgroup v2 CPU quota (as Go's
// runtime counts them); at least 1. `why` says which limit decided, for the log.
struct UsableCpus {
  unsigned count = 1;
  std::string why;
};
UsableCpus usable_cpus();

// Helpers, exposed for tests.
std::optional<bool> parse_bool(std::string_view text);
std::string home_directory();

}  // namespace sandgate::settings
