// The state of one plain-HTTP exchange (a request and its response through the proxy), as an
// explicit machine: where the request body is, where the response is, and the two facts that
// are independent of both (the client connection broke; the idle watchdog fired). Every change
// goes through one of the transitions below, and how the exchange ended (the end line's outcome
// and reason, whether the proxy answers, whether either connection is kept) is derived from the
// state by ending(), reusable_upstream() and keeps_client(), in one place.
//
// No I/O and no Asio: the coroutines of http_request_side.cpp and http_response_side.cpp report
// what happened, and ask here whether to go on. Pure; one exchange's two directions run on one
// thread, so nothing here is synchronised.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "rules/reason.hpp"

namespace sandgate::session {

// The request body, client to origin.
enum class RequestPhase : std::uint8_t {
  sending,         // being read from the client and written upstream (or nothing left to read)
  sent,            // the whole request reached the origin
  client_failed,   // reading it from the client failed: the client left, or sent a malformed
                   // body (problem() says how)
  origin_stopped,  // the origin stopped taking it (it may still answer: a 413, say)
  abandoned,       // the response ended (or failed) first: the rest is not read
  stopped,         // the watchdog stopped it before it was all read
};

// The response, origin to client.
enum class ResponsePhase : std::uint8_t {
  awaiting_head,  // interim responses may have passed; no final head yet
  failed,         // the origin failed before a final head reached the client (failure())
  upgraded,       // a 101 to the WebSocket upgrade the client asked for
  streaming,      // the final head went to the client; the body is flowing
  complete,       // ... and all of it
  cut_off,        // broken off after its head reached the client
  oversized,      // ... because a chunk header or trailer section broke the size limit
};

const char* to_string(RequestPhase phase);
const char* to_string(ResponsePhase phase);

class ExchangeState {
 public:
  // ---- transitions: the request side ----
  // Reading from the client failed; `problem`, when not empty, is why its body is malformed.
  void client_read_failed(std::string problem);
  // Writing the request upstream failed.
  void origin_stopped_reading();
  // The request side's loop ended; `all_read`: the parser has the whole request.
  void request_side_ended(bool all_read);

  // ---- transitions: the response side ----
  // The origin failed before a final head reached the client; the first failure is kept. (After
  // it, the sentence is the end line's detail of the response broken off.)
  void origin_failed(rules::Reason reason, std::string sentence);
  // The gate refuses the request after it was admitted (a masked secret it cannot sign again):
  // answered with `reason`, nothing sent upstream.
  void refused(rules::Reason reason, std::string sentence) {
    origin_failed(reason, std::move(sentence));
  }
  void upgraded();
  // The final head is about to go to the client; `keeps_client`: the client connection can
  // carry another request after this one, as far as this response's framing goes.
  void response_started(bool keeps_client);
  // The body loop ended. `complete`: all of it reached the client; `origin_keep_alive`: the
  // origin's framing lets the upstream carry another request.
  void response_ended(bool complete, bool origin_keep_alive);
  void response_oversized();
  // The response side has ended while the request side still reads: true when the rest of the
  // request body is to be abandoned (the caller cancels the pending operations).
  bool abandon_request(bool request_all_read);

  // ---- transitions: independent of both sides ----
  // Writing to the client failed (an interim response, a 100 Continue).
  void client_write_failed() { client_failed_ = true; }
  // The idle watchdog fired (the caller cancels the pending operations).
  void timed_out() { timed_out_ = true; }
  // The request body came too slowly (http_exchange.hpp, kBodyMinRate); `sentence` says how
  // slowly. Ends it as the watchdog would, with that sentence (the caller cancels).
  void body_too_slow(std::string sentence) {
    timed_out_ = true;
    slow_body_ = std::move(sentence);
  }

  // An egress budget of the destination's ends here (`sentence` says which): both directions
  // stop (the caller cancels); answered 429 budget-exhausted before the response began, cut
  // (the client reset) after.
  void budget_spent(std::string sentence, std::string rule) {
    if (budget_.empty()) {
      budget_ = std::move(sentence);
      budget_rule_ = std::move(rule);
    }
  }

  // ---- what the directions ask ----
  // The request side stops before its next operation: the response, the watchdog or a budget
  // ended it.
  bool request_should_stop() const {
    return request_ == RequestPhase::abandoned || timed_out_ || !budget_.empty();
  }
  // The response side stops before its next operation: the client broke, the watchdog fired or
  // a budget ended.
  bool response_should_stop() const { return client_failed_ || timed_out_ || !budget_.empty(); }

  RequestPhase request() const { return request_; }
  ResponsePhase response() const { return response_; }
  bool client_failed() const { return client_failed_; }
  const std::string& problem() const { return problem_; }

  // ---- how it ended ----
  struct Ending {
    enum class Kind : std::uint8_t {
      websocket,  // hand the connection to the tunnel relay
      silent,     // the client left before any response: close, log, no answer
      answer,     // the proxy answers with `reason` (nothing of the response reached the client)
      broken,     // the response broke off after it started: reset the client, never add bytes
      complete,   // the response is complete: keep or close the connections (see below)
    };
    Kind kind = Kind::complete;
    // The end line's: "closed", "reset", "timeout", "error", "budget-exhausted".
    std::string_view outcome;
    std::optional<rules::Reason> reason;
    std::string sentence;  // the end line's detail, and the answer's sentence
    std::string rule;      // the budget's line, when one ended it
  };
  // `where`: "host:port", for sentences; `idle_seconds`: the idle timeout, for sentences;
  // `request_all_read`: the parser has the whole request; `buffer_limit_kib`: the size limit an
  // oversized response broke.
  Ending ending(std::string_view where, std::int64_t idle_seconds, bool request_all_read,
                std::size_t buffer_limit_kib) const;
  // After a complete response: the upstream can carry the next request (the origin keeps it
  // alive and got the whole request), when nothing unread waits in its buffer either.
  bool reusable_upstream() const;
  // After a complete response: the client connection goes on to its next request.
  bool keeps_client() const;

 private:
  RequestPhase request_ = RequestPhase::sending;
  ResponsePhase response_ = ResponsePhase::awaiting_head;
  bool client_failed_ = false;
  bool timed_out_ = false;
  std::string slow_body_;  // set by body_too_slow()
  std::string budget_;     // set by budget_spent()
  std::string budget_rule_;
  bool response_keeps_client_ = false;
  bool origin_keep_alive_ = false;
  std::string problem_;  // the malformed body's sentence
  std::optional<rules::Reason> failure_;
  std::string failure_sentence_;
};

}  // namespace sandgate::session
