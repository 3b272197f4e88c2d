// One line of the decision log, as the connection path hands it over (decision_log.hpp writes
// it; denial_tally.hpp counts it). The fields are views: the caller's strings outlive the
// write() call, which formats the line at once.
#pragma once

#include <cstdint>
#include <string_view>

namespace sandgate::log {

// What a line is about. Fields that do not apply are left empty / zero and omitted.
struct Record {
  // `message`: a WebSocket message of an inspected host, where --log-websocket-messages asks.
  enum class Event : std::uint8_t { decision, end, message };
  Event event = Event::decision;
  std::uint64_t connection_id = 0;
  std::string_view client;  // "127.0.0.1:50312"
  std::string_view method;  // "CONNECT", "GET", ...
  std::string_view host;    // normalised, `[v6]` for IPv6; or the raw target when invalid
  std::uint16_t port = 0;
  // The request's target (path and query) when the gate saw one: plain HTTP, and requests
  // inside inspected connections. Empty for tunnels.
  std::string_view path;
  // An MCP call the line is about (proxy/mcp: Call::logged()): "tool delete_repo", "prompt p",
  // "resource repo://docs/a.md", a name that is not plain ASCII quoted and escaped. Never the
  // call's arguments. Empty for anything else.
  std::string_view call;
  // The call's arguments as sent (JSON, at most 1 KiB), only where log_mcp_arguments asks.
  std::string_view arguments;
  // "allow", "deny" (the policy said no) or "error" (allowed, but the upstream failed).
  std::string_view verdict = "allow";
  // The reason's code, from the one reason table (rules::reason_code); empty on an end line
  // that ended normally. Text rather than the enum: the line is written as given, byte for byte.
  std::string_view reason;
  std::string_view rule;         // "file:line entry", empty when no list decided
  std::string_view address;      // the upstream address dialled, "93.184.216.34:443"
  std::string_view detail;       // the human sentence (denials and failures)
  std::uint64_t bytes_up = 0;    // client to upstream
  std::uint64_t bytes_down = 0;  // upstream to client
  double duration_ms = 0;
  // For `end`: "closed", "reset", "timeout", "idle-timeout", "aborted", "revoked", "refused",
  // "error", "budget-exhausted".
  std::string_view outcome;
  // A `message` line's message: which way it went ("up": client to origin, "down"), its kind
  // ("text", "binary"), its payload bytes, and its first bytes (at most 1 KiB, cleaned of the
  // real values of masked secrets; a binary message's in base64). `contents_cut`: the contents
  // are the message's beginning only; `unfinished`: the WebSocket ended in the middle of it.
  std::string_view direction;
  std::string_view message_kind;
  std::uint64_t message_size = 0;
  std::string_view contents;
  bool contents_cut = false;
  bool unfinished = false;
  // An inspected connection's end line, whose bytes are the sum of its requests' end lines
  // (not written to the log; the traffic tally does not count them twice).
  bool repeats_requests = false;
};

}  // namespace sandgate::log
