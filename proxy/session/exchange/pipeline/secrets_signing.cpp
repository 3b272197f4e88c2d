// SigV4 signed again (secrets_signing.hpp).
#include "proxy/session/exchange/pipeline/secrets_signing.hpp"

#include <optional>
#include <string_view>
#include <utility>

namespace sandgate::session::exchange {

namespace asio = boost::asio;

asio::awaitable<RequestStage::Step> SecretsSigning::run(RequestRun& run) {
  SecretsStage& secrets = run.secrets;
  if (!secrets.signed_again()) {
    co_return Step::go_on;
  }
  // Checked before any body is read: a request the gate would not sign costs no buffer.
  if (auto refused = secrets.refuse_unsignable()) {
    run.front.refuse(Refusal(rules::Reason::secret_refused, std::move(*refused)));
    co_return Step::stop;
  }
  if (secrets.needs_body() && !run.body_read_ahead) {
    const bool continued = co_await run.front.answer_continue();
    if (!continued) {
      co_return Step::stop;
    }
    const bool read = co_await run.front.read_body_ahead(kSignedBodyLimit, BodyAheadFor::signing);
    if (!read) {
      co_return Step::stop;
    }
    run.body_read_ahead = true;
  }
  const std::optional<std::string_view> body =
      secrets.needs_body() ? std::optional<std::string_view>(run.front.body_ahead()) : std::nullopt;
  if (auto refused = secrets.sign(run.front.head(), body)) {
    run.front.refuse(Refusal(rules::Reason::secret_refused, std::move(*refused)));
    co_return Step::stop;
  }
  co_return Step::go_on;
}

}  // namespace sandgate::session::exchange
