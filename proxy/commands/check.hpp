// `sandgate check [--resolve] HOST[:PORT]`: the decision the gate would take, with its reason and
// rule; `sandgate check [--method M] http(s)://HOST[:PORT]/PATH`: the same for one request,
// through the request rules too, and whether the host's connections are inspected;
// `sandgate check --mcp-tool NAME https://HOST/PATH` (or --mcp-prompt, --mcp-resource): the same
// for an MCP call posted there, through the MCP lines of the request rules.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "proxy/settings/settings.hpp"
#include "rules/mcp_rules.hpp"

namespace sandgate::commands {

// Exit statuses of `sandgate check`.
inline constexpr int kCheckAllowed = 0;
inline constexpr int kCheckDenied = 1;
inline constexpr int kCheckUsageError = 2;  // also configuration errors

// Loads the policy the daemon would load (reading files afresh, writing nothing), decides for
// `target` and prints the decision to `out`; warnings and errors go to `err`. With `resolve`
// (--resolve) and a name allowed by the rules, also shows what the resolver would do with it
// (dns/resolve_report.hpp); an address the rules deny makes the answer a denial.
// `target` may be a URL (http:// or https://); then `method` is its request's method, and
// `git-fetch` or `git-push` stand for the requests of a git clone or push of the repository the
// URL names. `mcp`: an MCP call posted to the URL (its method is then POST): its tool, prompt
// or resource, judged as the MCP stage judges it (rules/mcp_rules.hpp).
struct McpCall {
  rules::McpKind kind = rules::McpKind::tool;
  std::string name;
};
int run_check(const settings::Settings& settings, std::string_view target, std::ostream& out,
              std::ostream& err, bool resolve = false, std::string_view method = "GET",
              const McpCall* mcp = nullptr);

}  // namespace sandgate::commands
