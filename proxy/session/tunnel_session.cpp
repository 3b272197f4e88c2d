// An established tunnel. See tunnel_session.hpp.
#include "proxy/session/tunnel_session.hpp"

namespace sandgate::session {

void TunnelSession::start(SessionContext& context, std::string host, std::uint16_t port,
                          std::uint64_t early_bytes) {
  auto* session = new TunnelSession(context, std::move(host), port, early_bytes);
  session->relay_.start();
}

TunnelSession::TunnelSession(SessionContext& context, std::string host, std::uint16_t port,
                             std::uint64_t early_bytes)
    : worker_(context.worker),
      client_(std::move(context.client)),
      upstream_(std::move(context.upstream)),
      id_(context.id),
      client_address_(std::move(context.client_address)),
      host_(std::move(host)),
      port_(port),
      early_bytes_(early_bytes),
      started_(context.started),
      relay_(client_, upstream_, context.worker.pipes, context.settings().idle_timeout,
             [this](relay::Result result) { on_done(result); }) {
  context.handed_off = true;  // the connection's count and registration move here
  live_.client = &client_;
  live_.upstream = &upstream_;
  worker_.attach(live_);
  worker_.metrics.tunnels_open_total.add();
}

TunnelSession::~TunnelSession() {
  worker_.detach(live_);
  worker_.shared.open_connections.fetch_sub(1, std::memory_order_relaxed);
}

void TunnelSession::on_done(relay::Result result) {
  boost::system::error_code ignored;
  client_.close(ignored);
  upstream_.close(ignored);
  result.bytes_up += early_bytes_;
  worker_.metrics.tunnels_closed_total.add();
  worker_.metrics.bytes_up.add(result.bytes_up);
  worker_.metrics.bytes_down.add(result.bytes_down);

  log::Record end;
  end.event = log::Record::Event::end;
  end.connection_id = id_;
  end.client = client_address_;
  end.method = "CONNECT";
  end.host = host_;
  end.port = port_;
  end.outcome = relay::to_string(result.outcome);
  end.bytes_up = result.bytes_up;
  end.bytes_down = result.bytes_down;
  end.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_)
          .count();
  worker_.shared.log.write(end);
  delete this;
}

}  // namespace sandgate::session
