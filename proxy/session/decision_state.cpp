// What one request is decided with (decision_state.hpp).
#include "proxy/session/decision_state.hpp"

#include <utility>

namespace sandgate::session {

DecisionState::DecisionState(const WorkerContext& worker,
                             std::shared_ptr<const settings::Settings> settings)
    : policy_(worker.policy), settings_(std::move(settings)) {}

void DecisionState::take_current_policy(const WorkerContext& worker) {
  policy_ = worker.policy;
  reported_.reset();
}

DecisionState DecisionState::under(std::shared_ptr<const rules::Policy> policy) const {
  DecisionState other = *this;
  other.policy_ = std::move(policy);
  other.reported_.reset();
  other.stream = nullptr;
  return other;
}

bool DecisionState::report_instead(const rules::Decision& decision, const rules::Host& host,
                                   std::uint16_t port) {
  if (decision.allowed() || !reports(decision.reason) ||
      policy_->enforced_anyway(host, port).has_value()) {
    return false;
  }
  keep_reported(decision.reason, rules::rule_text(decision),
                policy_->explain(decision, host, port));
  return true;
}

void DecisionState::keep_reported(rules::Reason reason, std::string rule, std::string sentence) {
  if (!reported_) {
    reported_ = Reported{reason, std::move(rule), std::move(sentence)};
  }
}

}  // namespace sandgate::session
