// The documents `sandgate watch` reads besides the event stream, apart from HTTP: GET /budgets
// (each budget's limits, spent against their amounts) and GET /traffic (bytes per destination).
// Pure functions of what they are given; thread-safe.
#pragma once

#include <cstddef>
#include <string>

#include "proxy/budget/ledger.hpp"
#include "proxy/log/traffic_tally.hpp"
#include "rules/budgets.hpp"

namespace sandgate::admin {

// [{"rule":"budgets.txt:2 github.com","kind":"up","window":"run","spent":N,"amount":M}, ...]
// in the file's order; amount is what is in force (the line's and what people granted).
std::string render_budgets_json(const rules::BudgetRules& budgets, const budget::Ledger& ledger);

// [{"host":"api.example.dev","port":443,"sent":N,"received":M,"connections":C}, ...], most
// bytes first, at most `limit` rows, then the rest together as one row with host "".
std::string render_traffic_json(const log::TrafficCounts& traffic, std::size_t limit = 50);

}  // namespace sandgate::admin
