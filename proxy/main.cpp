// The `sandgate` executable: parses the command line and hands over to a command.
//   sandgate [serve] [SETTINGS...]          run the gate (the default)
//   sandgate check HOST[:PORT] [SETTINGS...] print the decision for one destination
#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <string>

#include "proxy/commands/check.hpp"
#include "proxy/commands/serve.hpp"
#include "proxy/settings/settings.hpp"

namespace {

constexpr int kConfigError = 2;

// Every setting becomes a flag on the top-level command; subcommands fall through to it, so
// `sandgate check --allow-ip x` and `sandgate --allow-ip check x` both work.
void add_setting_flags(CLI::App& app, std::map<std::string, std::string>& values) {
  app.add_option("--config", values["--config"],
                 "TOML config file (SANDGATE_CONFIG); flags and variables override it")
      ->type_name("PATH");
  for (const auto& info : sandgate::settings::all_settings()) {
    std::string help = std::string(info.help) + " [" + std::string(info.env) +
                       ", default " + std::string(info.default_text) + "]";
    std::string& value = values[std::string(info.flag)];
    if (info.boolean) {
      // `--allow-ip` means true; `--allow-ip=false` gives a value.
      app.add_flag(std::string(info.flag) + "{true}", value, help);
    } else {
      app.add_option(std::string(info.flag), value, help)->type_name("VALUE");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sandgate: the network gate for sandboxed AI agents", "sandgate"};
  app.set_version_flag("--version", std::string("sandgate ") + SANDGATE_VERSION);
  app.require_subcommand(0, 1);

  std::map<std::string, std::string> flag_values;
  add_setting_flags(app, flag_values);

  auto* serve = app.add_subcommand("serve", "run the gate (what `sandgate` alone does)");
  serve->fallthrough();
  auto* check = app.add_subcommand(
      "check", "print the decision for HOST[:PORT] (port 443 by default); exit 0 allowed, 1 denied");
  check->fallthrough();
  std::string target;
  check->add_option("target", target, "HOST, HOST:PORT, [IPV6]:PORT")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : kConfigError;
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
    return kConfigError;
  }

  if (*check) {
    return sandgate::commands::run_check(*settings, target, std::cout, std::cerr);
  }
  return sandgate::commands::run_serve(*settings, sources);
}
