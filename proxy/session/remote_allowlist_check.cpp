// The LaunchDarkly step shared by CONNECT and plain-HTTP forwarding.
#include "proxy/session/handlers.hpp"

namespace sandgate::session {

boost::asio::awaitable<std::optional<launchdarkly::Answer>> consult_remote_allowlist(
    SessionContext& context, std::string_view method, const rules::Host& host,
    std::uint16_t port) {
  launchdarkly::RemoteAllowlist* remote = context.worker.shared.remote_allowlist;
  if (remote == nullptr) {
    co_return std::nullopt;
  }
  launchdarkly::Answer answer = co_await remote->check(host, port);
  if (!answer.allowed && context.reports(answer.reason)) {
    // Report-only mode: kept for the request's decision line (would-deny), and the request goes
    // on as if allowed.
    context.keep_reported(answer.reason, remote_allowlist_rule(answer), answer.detail + ".");
    answer.allowed = true;
    co_return answer;
  }
  if (!answer.allowed) {
    co_await reply_and_log(context, answer.reason, method, host.display(), port,
                           answer.detail + ".", remote_allowlist_rule(answer));
  }
  co_return answer;
}

std::string remote_allowlist_rule(const launchdarkly::Answer& answer) {
  if (!answer.rule) {
    return {};
  }
  return std::string(answer.rule->source) + ":" + std::to_string(answer.rule->line) + ": " +
         std::string(answer.rule->entry);
}

std::string remote_allowlist_note(const std::optional<launchdarkly::Answer>& answer) {
  if (!answer || answer->source == launchdarkly::Source::network ||
      answer->source == launchdarkly::Source::cache || answer->source == launchdarkly::Source::list) {
    return {};
  }
  return answer->detail;
}

}  // namespace sandgate::session
