// An inspected HTTP/1.1 client's requests over an HTTP/2 origin connection (http_over_h2.hpp).
#include "proxy/session/fronts/http_over_h2.hpp"

#include <string>
#include <utility>

#include "proxy/session/h2_origin_pool.hpp"
#include "proxy/session/origin_pool.hpp"

namespace sandgate::session {
namespace {

std::string key_of(const InspectedOrigin& origin) {
  return origin.host.display() + ":" + std::to_string(origin.port);
}

// `secured` started as an HTTP/2 connection: shared unless reached by address (or past the pool's
// bounds, or secured under rules no longer in force: then this client's own).
std::shared_ptr<H2Origin> adopt(SessionContext& context, const InspectedOrigin& origin,
                                std::unique_ptr<SecuredOrigin> secured) {
  return context.worker.h2_origins->adopt(key_of(origin), std::move(secured),
                                          !origin.facts.by_address(),
                                          context.worker.origins->epoch());
}

}  // namespace

void adopt_tunnels_h2(SessionContext& context, InspectedOrigin& origin, Upstream& upstream) {
  if (!origin.origin_chose_h2()) {
    return;
  }
  if (context.shared_h2_origin) {
    upstream.h2 = std::move(context.shared_h2_origin);
  } else if (std::unique_ptr<SecuredOrigin> secured = origin.release_origin(origin.facts.dialled)) {
    upstream.h2 = adopt(context, origin, std::move(secured));
  }
  upstream.reusable = false;  // context.upstream is the connection's no more
}

std::shared_ptr<H2Origin> adopt_secured_h2(SessionContext& context, InspectedOrigin& origin,
                                           Upstream& upstream, const Admission& admission) {
  if (!origin.origin_chose_h2()) {
    return nullptr;
  }
  std::unique_ptr<SecuredOrigin> secured = origin.release_origin(admission.dialled);
  if (secured == nullptr) {
    return nullptr;
  }
  upstream.h2 = adopt(context, origin, std::move(secured));
  return upstream.h2;
}

std::shared_ptr<H2Origin> own_h2_with_room(DecisionState& decided, Admission& admission,
                                           const InspectedOrigin& origin, Upstream& upstream) {
  if (upstream.h2 == nullptr || upstream.h2->available_streams() == 0) {
    return nullptr;
  }
  if (!keep_open_upstream(decided, admission, origin.facts.requested, origin.port,
                          upstream.h2->dialled())) {
    return nullptr;
  }
  return upstream.h2;
}

void go_over_h2(SessionContext& context, Upstream& upstream, std::shared_ptr<H2Origin> connection,
                std::string key) {
  end_h2_stream(context, upstream);
  upstream.address = to_text(connection->endpoint());
  upstream.dialled = connection->dialled();
  upstream.key = std::move(key);
  upstream.reusable = false;
  upstream.buffer.clear();
  upstream.over_h2 = std::make_unique<exchange::H1OverH2Upstream>(context.upstream.get_executor(),
                                                                  std::move(connection), "https");
  context.upstream_stream.attach(*upstream.over_h2);
}

void end_h2_stream(SessionContext& context, Upstream& upstream) {
  if (upstream.over_h2 != nullptr) {
    context.upstream_stream.detach();
    upstream.over_h2.reset();
  }
}

std::optional<std::string> websocket_needs_http1(SessionContext& context, const Upstream& upstream,
                                                 const std::string& key, const std::string& why) {
  if (upstream.h2 == nullptr && context.worker.h2_origins->any(key) == nullptr) {
    return std::nullopt;
  }
  return key + " speaks HTTP/2, and a WebSocket upgrade from an HTTP/1.1 client needs its " +
         "HTTP/1.1 (the gate does not carry it over HTTP/2): " + why;
}

}  // namespace sandgate::session
