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

// What each command was asked on the command line: the subcommand (set when it was named) and
// the options bound to it. CLI11 writes into these members while it parses, so a Commands
// stays where main made it.
struct CheckCommand {
  CLI::App* app = nullptr;
  std::string target;
  std::string method = "GET";
  std::string mcp_tool;
  std::string mcp_prompt;
  std::string mcp_resource;
  CLI::Option* mcp_tool_option = nullptr;
  CLI::Option* mcp_prompt_option = nullptr;
  CLI::Option* mcp_resource_option = nullptr;
  bool resolve = false;
};
struct ProfileCommand {
  CLI::App* app = nullptr;
  sandgate::sandbox::SandboxFlags flags;
  std::uint16_t proxy_port = 0;
  CLI::Option* proxy_port_option = nullptr;
};
struct RunCommand {
  CLI::App* app = nullptr;
  sandgate::sandbox::RunOptions options;
};
struct CaCommand {
  CLI::App* app = nullptr;
  bool rotate = false;
};
struct PendingCommand {
  CLI::App* app = nullptr;
  bool watch = false;
};
struct DecideCommand {
  CLI::App* app = nullptr;
  std::string target;
  std::string answer;
  std::string request;
};
struct WatchCommand {
  CLI::App* app = nullptr;
  pid_t pid = 0;
};
struct Commands {
  CLI::App* serve = nullptr;
  CheckCommand check;
  ProfileCommand profile;
  RunCommand run;
  CaCommand ca;
  PendingCommand pending;
  DecideCommand decide;
  WatchCommand watch;
};

void add_check_command(CLI::App& app, CheckCommand& check) {
  check.app = app.add_subcommand(
      "check",
      "print the decision for HOST[:PORT] (port 443 by default), or for a request to a URL; exit 0 "
      "allowed, 1 denied");
  CLI::App& command = *check.app;
  command.fallthrough();
  command
      .add_option("target", check.target, "HOST, HOST:PORT, [IPV6]:PORT, or http(s)://HOST/PATH")
      ->required();
  command.add_option("--method", check.method,
                     "with a URL: the request's method (GET by default); git-fetch and git-push "
                     "stand for a git clone or push of the repository at the URL");
  check.mcp_tool_option = command.add_option(
      "--mcp-tool", check.mcp_tool, "with a URL: an MCP tools/call of this tool posted there");
  check.mcp_prompt_option = command.add_option("--mcp-prompt", check.mcp_prompt,
                                               "with a URL: an MCP prompts/get of this prompt");
  check.mcp_resource_option = command.add_option("--mcp-resource", check.mcp_resource,
                                                 "with a URL: an MCP resources/read of this URI");
  check.mcp_tool_option->excludes(check.mcp_prompt_option)->excludes(check.mcp_resource_option);
  check.mcp_prompt_option->excludes(check.mcp_resource_option);
  command.add_flag("--resolve", check.resolve,
                   "also look the name up as the gate would: hosts file, DNS, cache, each address");
}

void add_profile_command(CLI::App& app, ProfileCommand& profile) {
  profile.app = app.add_subcommand(
      "profile", "print the macOS Seatbelt (SBPL) profile that `run` confines a command with");
  profile.app->fallthrough();
  add_sandbox_flags(*profile.app, profile.flags);
  profile.proxy_port_option =
      profile.app
          ->add_option("--proxy-port", profile.proxy_port,
                       "the gate's port the profile allows (default: the listen setting's)")
          ->type_name("N")
          ->check(CLI::Range(1, 65535));
}

void add_run_command(CLI::App& app, RunCommand& run) {
  run.app = app.add_subcommand(
      "run", "run CMD confined so that the gate, started on a free port, is its only way out");
  run.app->fallthrough();
  add_sandbox_flags(*run.app, run.options.flags);
  run.app->add_flag("--no-isolation", run.options.no_isolation,
                    "do not confine CMD: set the proxy variables only (says so loudly)");
  run.app->add_flag(
      "--verbose", run.options.verbose,
      "say in full how CMD is confined before it starts (the run's log always has it)");
  run.app->add_option("command", run.options.command, "CMD [ARGS...], after --")->required();
}

// ca, pending, decide and watch: the commands that talk to a CA folder or a running gate.
void add_operator_commands(CLI::App& app, Commands& commands) {
  CaCommand& ca = commands.ca;
  ca.app = app.add_subcommand(
      "ca", "print the inspection CA's certificate and how to trust it (made if there is none)");
  ca.app->fallthrough();
  ca.app->add_flag("--rotate", ca.rotate,
                   "replace the CA's key and certificate with new ones (restart running gates)");

  PendingCommand& pending = commands.pending;
  pending.app = app.add_subcommand(
      "pending", "list the questions a gate with --unknown=ask waits on (via its admin endpoint)");
  pending.app->fallthrough();
  pending.app->add_flag("--watch", pending.watch, "list them again every second");

  DecideCommand& decide = commands.decide;
  decide.app = app.add_subcommand(
      "decide", "answer the question about HOST[:PORT]: once, session, always, deny or never");
  decide.app->fallthrough();
  decide.app->add_option("target", decide.target, "HOST, HOST:PORT, [IPV6]:PORT (port 443 if none)")
      ->required();
  decide.app->add_option("answer", decide.answer, "once, session, always, deny or never")
      ->required();
  decide.app->add_option("--request", decide.request,
                         "a request's question, as `sandgate pending` lists it (\"POST /x\")");

  WatchCommand& watch = commands.watch;
  watch.app = app.add_subcommand(
      "watch",
      "a terminal view of a run (or, with --admin, a serve): its connections, questions to "
      "answer, budgets and bytes per destination");
  watch.app->fallthrough();
  watch.app->add_option("pid", watch.pid, "the run to watch (default: every run of this user)")
      ->check(CLI::PositiveNumber);
}

void add_commands(CLI::App& app, const CLI::Option* version, Commands& commands) {
  commands.serve = app.add_subcommand("serve", "run the gate (what `sandgate` alone does)");
  commands.serve->fallthrough();
  add_check_command(app, commands.check);
  add_profile_command(app, commands.profile);
  add_run_command(app, commands.run);
  add_operator_commands(app, commands);
  for (CLI::App* command :
       {commands.serve, commands.check.app, commands.profile.app, commands.run.app, commands.ca.app,
        commands.pending.app, commands.decide.app, commands.watch.app}) {
    show_setting_flags(app, *command, version);
  }
}

// The settings' sources: the process's environment, and the setting flags given (a flag given
// empty, `--allowlist=`, counts: it overrides the variable).
sandgate::settings::Sources settings_sources(const CLI::App& app,
                                             const std::map<std::string, std::string>& values) {
  sandgate::settings::Sources sources;
  sources.env = sandgate::settings::process_env;
  for (const auto& [flag, value] : values) {
    if (!value.empty() || app.count(flag) > 0) {
      sources.flags.emplace(flag, value);
    }
  }
  return sources;
}

int run_check_command(const CheckCommand& check, const sandgate::settings::Settings& settings) {
  std::optional<sandgate::commands::McpCall> mcp;
  if (*check.mcp_tool_option) {
    mcp = sandgate::commands::McpCall{sandgate::rules::McpKind::tool, check.mcp_tool};
  } else if (*check.mcp_prompt_option) {
    mcp = sandgate::commands::McpCall{sandgate::rules::McpKind::prompt, check.mcp_prompt};
  } else if (*check.mcp_resource_option) {
    mcp = sandgate::commands::McpCall{sandgate::rules::McpKind::resource, check.mcp_resource};
  }
  return sandgate::commands::run_check(settings, check.target, std::cout, std::cerr, check.resolve,
                                       check.method, mcp ? &*mcp : nullptr);
}

int run_profile_command(const ProfileCommand& profile,
                        const sandgate::settings::Settings& settings) {
  sandgate::sandbox::ProfileRequest request;
  request.sandbox = settings.sandbox;
  request.gate = sandgate::commands::gate_view(settings);
  request.flags = profile.flags;
  request.proxy_port = profile.proxy_port_option->count() > 0
                           ? profile.proxy_port
                           : sandgate::commands::listen_port(settings);
  request.listen_text = settings.listen.text();
  request.home = sandgate::settings::home_directory();
  return sandgate::sandbox::run_profile(request, std::cout, std::cerr);
}

// Hands over to the command named (serve when none was), with the settings loaded.
int run_command(const Commands& commands, sandgate::settings::Settings& settings,
                const sandgate::settings::Sources& sources) {
  if (*commands.check.app) {
    return run_check_command(commands.check, settings);
  }
  if (*commands.ca.app) {
    return sandgate::commands::run_ca(settings, commands.ca.rotate, std::cout, std::cerr);
  }
  if (*commands.pending.app) {
    return sandgate::commands::run_pending(settings, commands.pending.watch, std::cout, std::cerr);
  }
  if (*commands.decide.app) {
    const DecideCommand& decide = commands.decide;
    return sandgate::commands::run_decide(settings, decide.target, decide.answer, decide.request,
                                          std::cout, std::cerr);
  }
  if (*commands.watch.app) {
    const pid_t pid = commands.watch.pid;
    return sandgate::commands::run_watch(
        settings, pid > 0 ? std::optional<pid_t>(pid) : std::nullopt, std::cerr);
  }
  if (*commands.profile.app) {
    return run_profile_command(commands.profile, settings);
  }
  if (*commands.run.app) {
    // `run` starts a gate of its own whose only client is CMD (on Linux it listens inside CMD's
    // private network namespace). A token (SANDGATE_TOKEN for a shared gate, say) would have to
    // be handed to CMD, the very process the gate confines, and would protect nothing: it is
    // not used there (gate::GateOptions::without_token, also across reloads).
    settings.token.clear();
    return sandgate::commands::run_run(settings, sources, commands.run.options);
  }
  return sandgate::commands::run_serve(settings, sources);
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
  Commands commands;
  add_commands(app, version, commands);

  // A mistake in `run`'s command line or settings exits with kRunFailed, which is not mistaken for
  // CMD's own status; any other command's is a configuration error.
  const auto failed = [&commands] {
    return *commands.run.app ? sandgate::sandbox::kRunFailed : kConfigError;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    const int status = app.exit(error);
    return status == 0 ? 0 : failed();
  }

  const sandgate::settings::Sources sources = settings_sources(app, flag_values);
  auto settings = sandgate::settings::load(sources);
  if (!settings) {
    std::cerr << "sandgate: " << settings.error() << "\n";
    return failed();
  }
  return run_command(commands, *settings, sources);
}
