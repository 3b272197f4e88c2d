// The settings of the policy (the lists, the request rules, the budgets, inspection, the
// masked secrets, the policy options) and of report-only and ask modes: their rows of the
// settings' table (setting_table.hpp).
#include <algorithm>
#include <string>
#include <utility>

#include "config/embedded_defaults.hpp"
#include "proxy/settings/setting_table.hpp"
#include "rules/ascii.hpp"
#include "rules/host.hpp"
#include "rules/rule_line.hpp"

namespace sandgate::settings::detail {
namespace {

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

}  // namespace

std::vector<Setting> policy_rows() {
  return {
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
  };
}

}  // namespace sandgate::settings::detail
