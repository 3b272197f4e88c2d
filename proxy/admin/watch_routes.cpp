// GET /budgets and GET /traffic, apart from HTTP. See watch_routes.hpp.
#include "proxy/admin/watch_routes.hpp"

#include "proxy/json/json_writer.hpp"

namespace sandgate::admin {
namespace {

void add_destination(std::string& out, const log::DestinationTraffic& row) {
  out += out.size() == 1 ? "\n" : ",\n";
  json_writer::ObjectWriter object(out);
  object.string("host", row.host)
      .number("port", row.port)
      .number("sent", row.sent)
      .number("received", row.received)
      .number("connections", row.connections);
  object.close();
}

}  // namespace

std::string render_budgets_json(const rules::BudgetRules& budgets, const budget::Ledger& ledger) {
  std::string out = "[";
  for (const rules::BudgetLine& line : budgets.lines()) {
    for (const rules::BudgetLimit& limit : line.limits) {
      const auto account = ledger.find(limit.key);
      const budget::Account::State state =
          account ? account->state() : budget::Account::State{limit.amount, 0, 0, 0};
      out += out.size() == 1 ? "\n" : ",\n";
      json_writer::ObjectWriter object(out);
      object.string("rule", line.rule())
          .string("kind", rules::to_string(limit.kind))
          .string("window", rules::to_string(limit.window))
          .number("spent", state.spent)
          .number("amount", account ? state.amount : limit.amount);
      object.close();
    }
  }
  out += out.size() == 1 ? "]\n" : "\n]\n";
  return out;
}

std::string render_traffic_json(const log::TrafficCounts& traffic, std::size_t limit) {
  std::string out = "[";
  log::DestinationTraffic rest = traffic.others;
  for (std::size_t i = 0; i < traffic.destinations.size(); ++i) {
    const auto& row = traffic.destinations[i];
    if (i < limit) {
      add_destination(out, row);
    } else {
      rest.sent += row.sent;
      rest.received += row.received;
      rest.connections += row.connections;
    }
  }
  if (rest.sent + rest.received + rest.connections > 0) {
    rest.host.clear();
    rest.port = 0;
    add_destination(out, rest);
  }
  out += out.size() == 1 ? "]\n" : "\n]\n";
  return out;
}

}  // namespace sandgate::admin
