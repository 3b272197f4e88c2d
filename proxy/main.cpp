// The `sandgate` executable: parses the command line and hands over to a command.
//   sandgate [serve] [SETTINGS...]          run the gate (the default)
//   sandgate check HOST[:PORT] [SETTINGS...] print the decision for one destination (--resolve:
//                                            and what its name resolves to)
//   sandgate profile [SETTINGS...] [FLAGS...] print the macOS Seatbelt profile `run` uses
//   sandgate run [SETTINGS...] [FLAGS...] -- CMD [ARGS...]
//                                            run CMD confined: the gate is its only way out
//   sandgate ca [--rotate]                  the inspection CA and how to trust it
//   sandgate pending [--watch]               the questions a gate with --unknown=ask waits on
//   sandgate decide HOST[:PORT] ANSWER       answer one: once, session, always, deny, never
//   sandgate watch [PID]                    a terminal view of a run (or --admin ADDR:PORT: a
//   serve)
#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <optional>
#include <string>

#include "proxy/commands/ask_commands.hpp"
#include "proxy/commands/ca.hpp"
#include "proxy/commands/check.hpp"
#include "proxy/commands/run.hpp"
#include "proxy/commands/sandbox_view.hpp"
#include "proxy/commands/serve.hpp"
#include "proxy/commands/watch.hpp"
#include "proxy/secrets/process_strings.hpp"
#include "proxy/settings/load.hpp"
#include "proxy/settings/settings.hpp"
#include "sandbox-profile/macos/profile_command.hpp"
#include "sandbox-profile/process/run_support.hpp"
#include "sandbox-profile/run/run_confined.hpp"

namespace {

constexpr int kConfigError = 2;

// Every setting becomes a flag on the top-level command; subcommands fall through to it, so
// `sandgate check --allow-ip x` and `sandgate --allow-ip check x` both work.
void add_setting_flags(CLI::App& app, std::map<std::string, std::string>& values) {
  app.add_option("--config", values["--config"],
                 "TOML config file [SANDGATE_CONFIG, default none]; flags and variables "
                 "override it")
      ->type_name("PATH");
  for (const auto& info : sandgate::settings::all_settings()) {
    std::string help = std::string(info.help) + " [" + std::string(info.env) + ", default " +
                       std::string(info.default_text) + "]";
    std::string& value = values[std::string(info.flag)];
    if (info.boolean) {
      // `--allow-ip` means true; `--allow-ip=false` gives a value.
      app.add_flag(std::string(info.flag), value, help);
    } else {
      auto* option = app.add_option(std::string(info.flag), value, help)->type_name("VALUE");
      if (info.flag == "--allowlist") {
        // Repeatable: `--allowlist preset:dev --allowlist my.txt` is `preset:dev,my.txt`.
        option->multi_option_policy(CLI::MultiOptionPolicy::Join)->delimiter(',');
      }
      if (info.flag == "--secret") {
        // Repeatable, one entry per line (an entry's host list holds commas).
        option->multi_option_policy(CLI::MultiOptionPolicy::Join)->delimiter('\n');
      }
    }
  }
}

// The confinement flags that `profile` and `run` share.
void add_sandbox_flags(CLI::App& command, sandgate::sandbox::SandboxFlags& flags) {
  command
      .add_option("--allow-localhost-port", flags.allow_localhost_ports,
                  "also allow TCP to this port on localhost (repeatable)")
      ->type_name("N")
      ->allow_extra_args(false)
      ->check(CLI::Range(1, 65535));
  command
      .add_option("--allow-inbound-port", flags.allow_inbound_ports,
                  "let local clients connect to a server on this localhost port (repeatable)")
      ->type_name("N")
      ->allow_extra_args(false)
      ->check(CLI::Range(1, 65535));
  command
      .add_option("--allow-unix-socket", flags.allow_unix_sockets,
                  "allow connecting to this unix socket (repeatable)")
      ->type_name("PATH")
      ->allow_extra_args(false);
  command
      .add_option("--allow-unix-bind", flags.allow_unix_binds,
                  "Linux: let the command bind unix sockets below PATH, where the host's programs "
                  "can connect to them (repeatable; PATH must be writable inside)")
      ->type_name("PATH")
      ->allow_extra_args(false);
  command.add_flag("--strict-unix-sockets", flags.strict_unix_sockets,
                   "kept for compatibility: every unix socket is now denied unless listed with "
                   "--allow-unix-socket");
  command
      .add_option("--allow-write", flags.allow_writes,
                  "also let the command write below PATH (repeatable)")
      ->type_name("PATH")
      ->allow_extra_args(false);
  command
      .add_option("--allow-read", flags.allow_reads,
                  "let the command read this credential store, hidden by default (repeatable; "
                  "a folder opens every store inside it)")
      ->type_name("PATH")
      ->allow_extra_args(false);
  command.add_flag("--allow-local-bind", flags.allow_local_bind,
                   "macOS: let the command serve on and connect to any localhost port (this "
                   "reaches every local server)");
  command.add_flag("--allow-trustd", flags.allow_trustd,
                   "macOS: let the command ask trustd to check certificates (Security.framework: "
                   "Go, Swift, Rust's native-tls); trustd fetches the revocation and issuer URLs "
                   "a certificate names itself, outside the gate");
}

// Subcommands take every setting flag (they fall through to the top level); their --help lists
// those flags too, formatted as `sandgate --help` does, with variables and defaults.
void show_setting_flags(const CLI::App& app, CLI::App& command, const CLI::Option* version) {
  command.footer([&app, version]() -> std::string {
    const auto settings = app.get_options([&app, version](const CLI::Option* option) {
      return option != app.get_help_ptr() && option != version;
    });
    return CLI::Formatter().make_group("Settings", false, settings);
  });
}

}  // namespace

int main(int argc, char** argv) {
  // Kept to be blanked in the confined command's view (`run`: tokens and --secret entries).
  sandgate::sandbox::keep_process_arguments(argc, argv);
  // Kept to mask the secrets in once they are read (`ps -E`, /proc/PID/environ show them).
  sandgate::secrets::note_process_strings(argc, argv);
  CLI::App app{"sandgate: the network gate for sandboxed AI agents", "sandgate"};
  const CLI::Option* version =
      app.set_version_flag("--version", std::string("sandgate ") + SANDGATE_VERSION);
  app.require_subcommand(0, 1);

  std::map<std::string, std::string> flag_values;
  add_setting_flags(app, flag_values);

  auto* serve = app.add_subcommand("serve", "run the gate (what `sandgate` alone does)");
  serve->fallthrough();
  auto* check = app.add_subcommand(
      "check",
      "print the decision for HOST[:PORT] (port 443 by default), or for a request to a URL; exit 0 "
      "allowed, 1 denied");
  check->fallthrough();
  std::string target;
  check->add_option("target", target, "HOST, HOST:PORT, [IPV6]:PORT, or http(s)://HOST/PATH")
      ->required();
  std::string check_method = "GET";
  check->add_option("--method", check_method,
                    "with a URL: the request's method (GET by default); git-fetch and git-push "
                    "stand for a git clone or push of the repository at the URL");
  std::string check_mcp_tool;
  std::string check_mcp_prompt;
  std::string check_mcp_resource;
  auto* mcp_tool = check->add_option("--mcp-tool", check_mcp_tool,
                                     "with a URL: an MCP tools/call of this tool posted there");
  auto* mcp_prompt = check->add_option("--mcp-prompt", check_mcp_prompt,
                                       "with a URL: an MCP prompts/get of this prompt");
  auto* mcp_resource = check->add_option("--mcp-resource", check_mcp_resource,
                                         "with a URL: an MCP resources/read of this URI");
  mcp_tool->excludes(mcp_prompt)->excludes(mcp_resource);
  mcp_prompt->excludes(mcp_resource);
  bool resolve = false;
  check->add_flag("--resolve", resolve,
                  "also look the name up as the gate would: hosts file, DNS, cache, each address");

  auto* profile = app.add_subcommand(
      "profile", "print the macOS Seatbelt (SBPL) profile that `run` confines a command with");
  profile->fallthrough();
  sandgate::sandbox::SandboxFlags profile_flags;
  add_sandbox_flags(*profile, profile_flags);
  std::uint16_t proxy_port = 0;
  auto* proxy_port_option =
      profile
          ->add_option("--proxy-port", proxy_port,
                       "the gate's port the profile allows (default: the listen setting's)")
          ->type_name("N")
          ->check(CLI::Range(1, 65535));

  auto* run = app.add_subcommand(
      "run", "run CMD confined so that the gate, started on a free port, is its only way out");
  run->fallthrough();
  sandgate::sandbox::RunOptions run_options;
  add_sandbox_flags(*run, run_options.flags);
  run->add_flag("--no-isolation", run_options.no_isolation,
                "do not confine CMD: set the proxy variables only (says so loudly)");
  run->add_flag("--verbose", run_options.verbose,
                "say in full how CMD is confined before it starts (the run's log always has it)");
  run->add_option("command", run_options.command, "CMD [ARGS...], after --")->required();

  auto* ca = app.add_subcommand(
      "ca", "print the inspection CA's certificate and how to trust it (made if there is none)");
  ca->fallthrough();
  bool rotate_ca = false;
  ca->add_flag("--rotate", rotate_ca,
               "replace the CA's key and certificate with new ones (restart running gates)");
  auto* pending = app.add_subcommand(
      "pending", "list the questions a gate with --unknown=ask waits on (via its admin endpoint)");
  pending->fallthrough();
  bool watch_pending = false;
  pending->add_flag("--watch", watch_pending, "list them again every second");
  auto* decide = app.add_subcommand(
      "decide", "answer the question about HOST[:PORT]: once, session, always, deny or never");
  decide->fallthrough();
  std::string decide_target;
  std::string decide_answer;
  decide->add_option("target", decide_target, "HOST, HOST:PORT, [IPV6]:PORT (port 443 if none)")
      ->required();
  decide->add_option("answer", decide_answer, "once, session, always, deny or never")->required();
  std::string decide_request;
  decide->add_option("--request", decide_request,
                     "a request's question, as `sandgate pending` lists it (\"POST /x\")");

  auto* watch = app.add_subcommand(
      "watch",
      "a terminal view of a run (or, with --admin, a serve): its connections, questions to "
      "answer, budgets and bytes per destination");
  watch->fallthrough();
  pid_t watch_pid = 0;
  watch->add_option("pid", watch_pid, "the run to watch (default: every run of this user)")
      ->check(CLI::PositiveNumber);

  for (CLI::App* command : {serve, check, profile, run, ca, pending, decide, watch}) {
    show_setting_flags(app, *command, version);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int status = app.exit(error);
    return status == 0 ? 0 : (*run ? sandgate::sandbox::kRunFailed : kConfigError);
  }

  sandgate::settings::Sources sources;
  sources.env = sandgate::settings::process_env;
  for (const auto& [flag, value] : flag_values) {
    if (!value.empty() || app.count(flag) > 0) {
      sources.flags.emplace(flag, value);
    }
  }
  auto settings = sandgate::settings::load(sources);
  if (!settings) {
    std::cerr << "sandgate: " << settings.error() << "\n";
    return *run ? sandgate::sandbox::kRunFailed : kConfigError;
  }

  if (*check) {
    std::optional<sandgate::commands::McpCall> mcp;
    if (*mcp_tool) {
      mcp = sandgate::commands::McpCall{sandgate::rules::McpKind::tool, check_mcp_tool};
    } else if (*mcp_prompt) {
      mcp = sandgate::commands::McpCall{sandgate::rules::McpKind::prompt, check_mcp_prompt};
    } else if (*mcp_resource) {
      mcp = sandgate::commands::McpCall{sandgate::rules::McpKind::resource, check_mcp_resource};
    }
    return sandgate::commands::run_check(*settings, target, std::cout, std::cerr, resolve,
                                         check_method, mcp ? &*mcp : nullptr);
  }
  if (*ca) {
    return sandgate::commands::run_ca(*settings, rotate_ca, std::cout, std::cerr);
  }
  if (*pending) {
    return sandgate::commands::run_pending(*settings, watch_pending, std::cout, std::cerr);
  }
  if (*decide) {
    return sandgate::commands::run_decide(*settings, decide_target, decide_answer, decide_request,
                                          std::cout, std::cerr);
  }
  if (*watch) {
    return sandgate::commands::run_watch(
        *settings, watch_pid > 0 ? std::optional<pid_t>(watch_pid) : std::nullopt, std::cerr);
  }
  if (*profile) {
    sandgate::sandbox::ProfileRequest request;
    request.sandbox = settings->sandbox;
    request.gate = sandgate::commands::gate_view(*settings);
    request.flags = profile_flags;
    request.proxy_port =
        proxy_port_option->count() > 0 ? proxy_port : sandgate::commands::listen_port(*settings);
    request.listen_text = settings->listen.text();
    request.home = sandgate::settings::home_directory();
    return sandgate::sandbox::run_profile(request, std::cout, std::cerr);
  }
  if (*run) {
    // `run` starts a gate of its own whose only client is CMD (on Linux it listens inside CMD's
    // private network namespace). A token (SANDGATE_TOKEN for a shared gate, say) would have to
    // be handed to CMD, the very process the gate confines, and would protect nothing: it is
    // not used there (gate::GateOptions::without_token, also across reloads).
    settings->token.clear();
    return sandgate::commands::run_run(*settings, sources, run_options);
  }
  return sandgate::commands::run_serve(*settings, sources);
}
