// The exchange's state machine. See http_exchange_state.hpp.
#include "proxy/session/fronts/http_exchange_state.hpp"

namespace sandgate::session {

const char* to_string(RequestPhase phase) {
  switch (phase) {
    case RequestPhase::sending:
      return "sending";
    case RequestPhase::sent:
      return "sent";
    case RequestPhase::client_failed:
      return "client-failed";
    case RequestPhase::origin_stopped:
      return "origin-stopped";
    case RequestPhase::abandoned:
      return "abandoned";
    case RequestPhase::stopped:
      return "stopped";
  }
  return "unknown";
}

const char* to_string(ResponsePhase phase) {
  switch (phase) {
    case ResponsePhase::awaiting_head:
      return "awaiting-head";
    case ResponsePhase::failed:
      return "failed";
    case ResponsePhase::upgraded:
      return "upgraded";
    case ResponsePhase::streaming:
      return "streaming";
    case ResponsePhase::complete:
      return "complete";
    case ResponsePhase::cut_off:
      return "cut-off";
    case ResponsePhase::oversized:
      return "oversized";
  }
  return "unknown";
}

void ExchangeState::client_read_failed(std::string problem) {
  client_failed_ = true;
  problem_ = std::move(problem);
  if (request_ == RequestPhase::sending) {
    request_ = RequestPhase::client_failed;
  }
}

void ExchangeState::origin_stopped_reading() {
  if (request_ == RequestPhase::sending) {
    request_ = RequestPhase::origin_stopped;
  }
}

void ExchangeState::request_side_ended(bool all_read) {
  if (request_ != RequestPhase::sending) {
    return;  // it ended in a failure or was abandoned: that phase stays
  }
  // The whole body went upstream, unless the client broke meanwhile (writing an interim
  // response to it, say): then the exchange cannot go on either way.
  if (all_read && !client_failed_) {
    request_ = RequestPhase::sent;
  } else if (all_read) {
    request_ = RequestPhase::client_failed;
  } else {
    request_ = RequestPhase::stopped;
  }
}

void ExchangeState::origin_failed(rules::Reason reason, std::string sentence) {
  if (!failure_) {
    failure_ = reason;
    failure_sentence_ = std::move(sentence);
  }
  if (response_ == ResponsePhase::awaiting_head) {
    response_ = ResponsePhase::failed;
  }
}

void ExchangeState::upgraded() {
  if (response_ == ResponsePhase::awaiting_head) {
    response_ = ResponsePhase::upgraded;
  }
}

void ExchangeState::response_started(bool keeps_client) {
  if (response_ == ResponsePhase::awaiting_head) {
    response_ = ResponsePhase::streaming;
    response_keeps_client_ = keeps_client;
  }
}

void ExchangeState::response_ended(bool complete, bool origin_keep_alive) {
  if (response_ != ResponsePhase::streaming) {
    return;
  }
  response_ = complete ? ResponsePhase::complete : ResponsePhase::cut_off;
  origin_keep_alive_ = complete && origin_keep_alive;
}

void ExchangeState::response_oversized() {
  if (response_ == ResponsePhase::streaming) {
    response_ = ResponsePhase::oversized;
  }
}

bool ExchangeState::abandon_request(bool request_all_read) {
  if (request_all_read || client_failed_ || response_ == ResponsePhase::upgraded) {
    return false;
  }
  // Neither connection is kept after this: the client's stream is somewhere inside a body.
  response_keeps_client_ = false;
  origin_keep_alive_ = false;
  if (request_ == RequestPhase::sending) {
    request_ = RequestPhase::abandoned;
  }
  return true;
}

ExchangeState::Ending ExchangeState::ending(std::string_view where, std::int64_t idle_seconds,
                                            bool request_all_read,
                                            std::size_t buffer_limit_kib) const {
  Ending end;
  switch (response_) {
    case ResponsePhase::upgraded:
      end.kind = Ending::Kind::websocket;
      return end;
    case ResponsePhase::awaiting_head:
    case ResponsePhase::failed: {
      if (client_failed_ && problem_.empty() && !timed_out_) {
        end.kind = Ending::Kind::silent;  // the client left: nobody to answer
        end.outcome = "reset";
        return end;
      }
      end.kind = Ending::Kind::answer;
      end.outcome = "error";
      const std::string idle = std::to_string(idle_seconds);
      if (!budget_.empty()) {
        end.outcome = "budget-exhausted";
        end.reason = rules::Reason::budget_exhausted;
        end.sentence = budget_;
        end.rule = budget_rule_;
      } else if (!problem_.empty()) {
        end.reason = rules::Reason::bad_request;
        end.sentence = problem_;
      } else if (timed_out_ && !request_all_read) {
        end.reason = rules::Reason::request_timeout;
        end.sentence =
            slow_body_.empty() ? "the request body stalled for " + idle + " s." : slow_body_;
      } else if (timed_out_) {
        end.reason = rules::Reason::response_timeout;
        end.sentence = std::string(where) + " sent no response for " + idle + " s.";
      } else if (failure_) {
        end.reason = *failure_;
        end.sentence = failure_sentence_;
      } else {
        end.reason = rules::Reason::upstream_closed;
        end.sentence = std::string(where) + " closed the connection without a response.";
      }
      return end;
    }
    case ResponsePhase::streaming:  // the body loop always ends in one of the phases below
    case ResponsePhase::cut_off:
      // Broken off mid-response: a reset, never bytes of the proxy's own in a half-sent one.
      end.kind = Ending::Kind::broken;
      end.outcome = timed_out_ ? "timeout" : "reset";
      end.sentence = failure_sentence_;  // why the origin broke off, when it was said
      if (!budget_.empty()) {
        end.outcome = "budget-exhausted";
        end.reason = rules::Reason::budget_exhausted;
        end.sentence = budget_;
        end.rule = budget_rule_;
      }
      return end;
    case ResponsePhase::oversized:
      end.kind = Ending::Kind::broken;
      end.outcome = "error";
      end.reason = rules::Reason::bad_response;
      end.sentence = std::string(where) + " sent a chunk header or trailer section larger than " +
                     std::to_string(buffer_limit_kib) + " KiB; the response was cut off.";
      return end;
    case ResponsePhase::complete:
      end.kind = Ending::Kind::complete;
      end.outcome = "closed";
      return end;
  }
  return end;
}

bool ExchangeState::reusable_upstream() const {
  return response_ == ResponsePhase::complete && origin_keep_alive_ &&
         request_ == RequestPhase::sent;
}

bool ExchangeState::keeps_client() const {
  return response_ == ResponsePhase::complete && response_keeps_client_ &&
         request_ == RequestPhase::sent;
}

}  // namespace sandgate::session
