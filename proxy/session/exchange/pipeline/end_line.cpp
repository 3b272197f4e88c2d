// The end line of an admitted exchange (end_line.hpp).
#include "proxy/session/exchange/pipeline/end_line.hpp"

#include "proxy/session/worker_context.hpp"

namespace sandgate::session::exchange {

log::Record end_record(const SessionContext& context, const EndLine& line) {
  log::Record end;
  end.event = log::Record::Event::end;
  end.connection_id = context.id;
  end.client = context.client_address;
  end.method = line.method;
  end.host = line.host;
  end.port = line.port;
  end.path = line.path;
  // The request was allowed; a failure after that is the end line's reason, not a new verdict.
  end.verdict = rules::verdict_name(rules::Verdict::allow);
  end.reason = line.reason ? rules::reason_code(*line.reason) : std::string_view{};
  end.detail = line.detail;
  end.outcome = line.outcome;
  end.bytes_up = line.bytes_up;
  end.bytes_down = line.bytes_down;
  end.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - line.started)
          .count();
  return end;
}

void write_end_line(SessionContext& context, const EndLine& line) {
  log::Record end = end_record(context, line);
  if (line.reason == rules::Reason::budget_exhausted) {
    // Refused or cut where a budget ended: the end line is the denial, counted as one.
    end.rule = line.rule;
    record_late_denial(context.worker, end, *line.reason);
    return;
  }
  context.record_end(end);
}

}  // namespace sandgate::session::exchange
