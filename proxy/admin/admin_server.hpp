// The admin listener (`--admin ADDR:PORT`, loopback only, off by default), served with Beast on
// a thread and io_context of its own so that a slow scraper never touches the workers:
//   GET /metrics  Prometheus text format
//   GET /healthz  200 while the process runs
//   GET /readyz   200 once rules are loaded and the listener is up, else 503
//   GET /denials  the most recent denials, newest first (JSON)
//   GET /pending  --unknown=ask: the questions waiting for an answer (JSON; ?format=text: a
//                 line each, what `sandgate pending` prints)
//   POST /decide  --unknown=ask: answer one (form body host=H&port=P&answer=A[&who=W])
//   GET /events   `sandgate watch`: the decision log's records as JSON lines, streamed until the
//                 client closes (?answer=1: the client answers questions while it reads)
//   GET /budgets  the egress budgets, spent against their amounts (JSON)
//   GET /traffic  bytes sent and received per destination, most first (JSON)
//   GET /about    what this gate is (JSON: name, pid, command)
// /pending, /decide and the watch routes (/events, /budgets, /traffic, /about) need the admin
// token, when one is set, as `Authorization: Bearer TOKEN`
// (the proxy token then does not do: the agent being asked holds it); without an admin token,
// the gate's token when one is set. An answer lets traffic out, and the question list names
// where an agent tries to go.
//
// It is built to stay cheap whatever its clients do (AdminLimits): at most 64 connections at once
// (more are closed at once, unanswered), one request per connection, a request head of at most
// 8 KiB read within 10 s, a response written within 10 s. A stream (/events) is the exception to
// the one response: at most 8 at once (one more is answered 503), each reading from a bounded
// queue of the feed (log/event_feed.hpp: a slow reader's lines are dropped and counted, and a
// {"event":"dropped","count":N} line says so), each write done within 10 s or the stream is cut,
// and an empty line every 2 s so that a client can tell a quiet gate from a dead one.
//
// start_private() serves the same routes on a unix socket for `run` (0600, in a 0700 folder):
// a connection from another user (SO_PEERCRED) is closed unanswered; no token is asked. When accept
// fails (out of descriptors: EMFILE, ENFILE; out of memory: ENOBUFS, ENOMEM) the pending connection
// stays in the backlog and the listener stays readable, so the endpoint pauses 100 ms before it
// tries again instead of spinning, and says so at most once a second.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "proxy/log/event_feed.hpp"
#include "proxy/settings/endpoint.hpp"
#include "rules/expected.hpp"

namespace sandgate::admin {

// Called on the admin thread; each must be thread-safe against the rest of the gate.
struct AdminHandlers {
  std::function<std::string()> metrics;
  std::function<std::string()> denials;
  std::function<bool()> ready;
  // --unknown=ask: the pending questions as JSON, and an answer (the form body; the client's
  // address for the log) giving the HTTP status and a line for the answerer. Empty: 404.
  std::function<std::string(bool text)> pending;
  std::function<std::pair<unsigned, std::string>(std::string_view body, std::string_view peer)>
      decide;
  // The token /pending and /decide require now when no admin token is set (a reload may change
  // it); empty: none.
  std::function<std::string()> token;
  // The admin token (a reload may change it); when non-empty, /pending and /decide require it
  // instead of `token`. Empty, or no function: none.
  std::function<std::string()> admin_token;
  // `sandgate watch`'s routes: JSON documents (budgets, traffic, about) and the live feed.
  // Empty (null): 404.
  std::function<std::string()> budgets;
  std::function<std::string()> traffic;
  std::function<std::string()> about;
  log::EventFeed* events = nullptr;
  // Told how many /events?answer=1 streams are open whenever that number changes (on the admin
  // thread): questions go to them while there are any. May be empty.
  std::function<void(std::size_t answering)> answering_changed;
  // Where the endpoint's own warnings go ("warning", text); may be empty.
  std::function<void(std::string_view level, std::string_view text)> note;
};

// What one scraper, slow, stuck or hostile, can hold. The defaults are the documented ones.
struct AdminLimits {
  // Connections served at once; one more is closed as soon as it is accepted, unanswered (the
  // endpoint spends nothing on it; a scraper sees the connection end and tries next interval).
  std::size_t max_connections = 64;
  // Bytes of request head (request line and fields); a larger one is answered 431 and closed.
  std::size_t max_request_head = 8192;
  // From accept to a complete request; a request not complete by then is closed, unanswered.
  std::chrono::milliseconds request_timeout{10000};
  // For writing the response; a client that does not read it is cut off.
  std::chrono::milliseconds response_timeout{10000};
  // The pause after a failed accept.
  std::chrono::milliseconds accept_backoff{100};
  // /events streams at once (they count against max_connections too); one more is answered 503.
  std::size_t max_streams = 8;
  // How often a stream looks for new lines, and how long it stays silent before an empty line.
  std::chrono::milliseconds stream_poll{100};
  std::chrono::milliseconds stream_heartbeat{2000};
};

class AdminServer {
 public:
  explicit AdminServer(AdminHandlers handlers, AdminLimits limits = {});
  ~AdminServer();  // stops and joins
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // Binds `where` (loopback only; port 0 picks a free one) and starts serving. Returns the bound
  // `ADDR:PORT`, or an error naming the address.
  Expected<std::string, std::string> start(const settings::TcpEndpoint& where);
  // Binds a unix socket at `path` (made 0600; its folder must be the caller's, 0700) and starts
  // serving; only connections from this process's user are served. Returns the path, or an
  // error naming it. Call start() or start_private(), once.
  Expected<std::string, std::string> start_private(const std::string& path);

  // Connections being served now (accepted and not yet closed); any thread.
  std::size_t open_connections() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sandgate::admin
