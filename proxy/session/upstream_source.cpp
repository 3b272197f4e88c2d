// The one way a connection gets its upstream (upstream_source.hpp).
#include "proxy/session/upstream_source.hpp"

#include "proxy/session/h2_origin.hpp"
#include "proxy/session/h2_origin_pool.hpp"
#include "proxy/session/parent_dial.hpp"
#include "proxy/settings/parent_route.hpp"

namespace sandgate::session {
namespace {

namespace asio = boost::asio;

// 2. A connection the worker keeps for the wish's host:port, for a request decided with the rules
// and settings they were verified under: a shared HTTP/2 one first (whatever the client speaks:
// an HTTP/1.1 client's requests go as its streams, fronts/http_over_h2.hpp), else an idle one
// that serves its ALPN offer. Fills the admission's dial fields from it.
UpstreamFrom take_kept(SessionContext& context, const DecisionState& decided, Admission& admission,
                       const UpstreamWish& wish) {
  if (!decided.current(context.worker) || !decided.settings_current(context.worker)) {
    return UpstreamFrom::none;
  }
  const std::string key = wish.host.display() + ":" + std::to_string(wish.port);
  std::shared_ptr<H2Origin> shared;
  std::unique_ptr<SecuredOrigin> idle;
  if (wish.may_borrow_h2) {
    shared = context.worker.h2_origins->take(key);
  }
  if (shared == nullptr && wish.may_take_idle) {
    idle = context.worker.origins->take(key, wish.alpn);
  }
  if (shared == nullptr && idle == nullptr) {
    return UpstreamFrom::none;
  }
  admission.use = wish.use;
  admission.parent = settings::parent_for(decided.settings(), wish.host, wish.port);
  admission.endpoint = shared ? shared->endpoint() : idle->endpoint;
  admission.dialled = shared ? shared->dialled() : idle->dialled;
  if (shared != nullptr) {
    context.shared_h2_origin = std::move(shared);
    return UpstreamFrom::shared_h2;
  }
  context.upstream = std::move(idle->socket);
  idle->tls->next_layer().point_at(context.upstream);
  context.secured_origin = std::move(idle);
  return UpstreamFrom::idle;
}

// 3. A dial, and for an origin the gate speaks TLS to first, nothing of the origin's before it.
asio::awaitable<UpstreamFrom> dial(SessionContext& context, DecisionState& decided,
                                   Admission& admission, const UpstreamWish& wish,
                                   boost::beast::flat_buffer& from_parent) {
  co_await connect_upstream(context, decided, admission, wish.method, wish.host, wish.port,
                            wish.use, from_parent);
  if (!admission.admitted()) {
    co_return UpstreamFrom::none;
  }
  if (wish.tls_first && from_parent.size() > 0) {
    boost::system::error_code ignored;
    context.upstream.close(ignored);
    admission.status = Admission::Status::refused;
    admission.refusal = Refusal(rules::Reason::bad_response,
                                bytes_before_handshake(wish.host, wish.port, from_parent.size()));
    co_return UpstreamFrom::none;
  }
  co_return UpstreamFrom::dialled;
}

}  // namespace

asio::awaitable<UpstreamFrom> get_upstream(SessionContext& context, DecisionState& decided,
                                           Admission& admission, const UpstreamWish& wish,
                                           boost::beast::flat_buffer& from_parent) {
  // 1. The connection's own, its address judged again by the rules this request carries.
  if (wish.keep_own) {
    keep_open_upstream(decided, admission, wish.host, wish.port, wish.own_dialled);
    co_return admission.admitted() ? UpstreamFrom::own : UpstreamFrom::none;
  }
  if (wish.count_connection) {
    BudgetCheck spent = co_await check_budgets_before_dial(
        context, decided, wish.method, rules::BudgetKind::connections, wish.host, wish.port);
    if (!spent.apply_to(admission)) {
      co_return UpstreamFrom::none;
    }
  }
  // 2, else 3.
  UpstreamFrom from = take_kept(context, decided, admission, wish);
  if (from != UpstreamFrom::none &&
      !keep_open_upstream(decided, admission, wish.host, wish.port, admission.dialled)) {
    boost::system::error_code ignored;
    context.upstream.close(ignored);  // (an idle one's; a shared one stays with the others)
    context.secured_origin.reset();
    context.shared_h2_origin.reset();
    co_return UpstreamFrom::none;
  }
  if (from == UpstreamFrom::none && wish.may_dial) {
    from = co_await dial(context, decided, admission, wish, from_parent);
  }
  // Counted once the address is known (an entry for it counts names that lead there), before any
  // byte moves; refused, it is closed before anything was sent.
  if (from != UpstreamFrom::none && wish.count_connection) {
    BudgetCheck counted = co_await count_against_budgets(context, decided, wish.method,
                                                         rules::BudgetKind::connections, wish.host,
                                                         wish.port, admission.dialled);
    if (!counted.apply_to(admission)) {
      boost::system::error_code ignored;
      context.upstream.close(ignored);
      context.secured_origin.reset();
      context.shared_h2_origin.reset();
      co_return UpstreamFrom::none;
    }
  }
  co_return from;
}

}  // namespace sandgate::session
