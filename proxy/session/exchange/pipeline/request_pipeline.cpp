// The request direction's driver (request_pipeline.hpp).
#include "proxy/session/exchange/pipeline/request_pipeline.hpp"

#include <array>
#include <utility>

#include "proxy/session/exchange/pipeline/head_budget.hpp"
#include "proxy/session/exchange/pipeline/mcp_judgement.hpp"
#include "proxy/session/exchange/pipeline/secrets_signing.hpp"
#include "proxy/session/exchange/secrets_stage.hpp"

namespace sandgate::session::exchange {
namespace {

namespace asio = boost::asio;

// The stages after the head is ready, in their order. Stateless: what one request's stages share
// is its RequestRun.
McpJudgement mcp_judgement;
SecretsSigning secrets_signing;
HeadBudget head_budget;
const std::array<RequestStage*, 3> kStages{&mcp_judgement, &secrets_signing, &head_budget};

// Step 2: the head as the origin gets it, and the stages of the exchange opened on it.
void open_stages(SessionContext& context, DecisionState& decided, ExchangeFront& front,
                 const AdmittedRequest& admitted, const OriginReach& origin, ExchangeStages& stages,
                 SecretsStage& secrets) {
  auto& head = front.head();
  front.rewrite_for_origin();
  secrets.fill(head);
  front.head_ready();
  stages.redactions = secrets.redactions();
  stages.carried_secret = secrets.carried_secret();
  const rules::Host& host = admitted.target.host;
  const std::uint16_t port = admitted.target.port;
  stages.budget.open(context, decided, admitted.method, host, port, origin.inspected(),
                     origin.dialled());
  // A POST to a host with MCP lines is judged by the MCP stage on its whole body first
  // (mcp_judgement.hpp): refused calls are answered here and never sent.
  stages.mcp.open(context, decided, head, front.has_body(), host, port, front.mcp_usual(),
                  origin.dialled());
  stages.mcp.prepare(head);
}

}  // namespace

asio::awaitable<PipelineEnd> run_request_pipeline(SessionContext& context, DecisionState& decided,
                                                  ExchangeFront& front, HttpTarget target,
                                                  OriginReach& origin) {
  // 1. Admission: the rules decide, the origin is reached, the decision line is written.
  RequestAdmission admission =
      co_await admit_request(context, decided, front.head(), std::move(target), origin);
  if (admission.status == RequestAdmission::Status::refused) {
    co_await front.refuse_admission(admission.request, admission.refusal);
    co_return PipelineEnd::not_admitted;
  }
  if (admission.status != RequestAdmission::Status::admitted) {
    front.admission_over();
    co_return PipelineEnd::not_admitted;
  }
  ExchangeStages& stages = front.admitted(admission.request);
  if (front.client_gone()) {
    co_return PipelineEnd::stopped;
  }
  // 2. The masked secrets bound to the host, taken before the head is rewritten: a SigV4
  // signature is read as the client made it.
  SecretsStage secrets(context.worker.shared.secrets, admission.request.target.host.name,
                       origin.inspected(), front.head());
  open_stages(context, decided, front, admission.request, origin, stages, secrets);
  // 3-5. The stages that may hold the request back, in order.
  RequestRun run{context, decided, front, stages, secrets};
  for (RequestStage* stage : kStages) {
    const RequestStage::Step step = co_await stage->run(run);
    if (step == RequestStage::Step::stop) {
      co_return PipelineEnd::stopped;
    }
  }
  co_return PipelineEnd::send;
}

}  // namespace sandgate::session::exchange
