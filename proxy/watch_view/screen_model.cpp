// What `sandgate watch` shows. See screen_model.hpp.
#include "proxy/watch_view/screen_model.hpp"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#include <cstdio>

namespace sandgate::watch_view {
namespace {

namespace json = boost::json;

std::string text_of(const json::object& object, std::string_view name) {
  const json::value* value = object.if_contains(name);
  return value != nullptr && value->is_string() ? printable(value->get_string()) : std::string();
}

std::uint64_t number_of(const json::object& object, std::string_view name) {
  const json::value* value = object.if_contains(name);
  if (value == nullptr) {
    return 0;
  }
  if (value->is_uint64()) {
    return value->get_uint64();
  }
  if (value->is_int64() && value->get_int64() >= 0) {
    return static_cast<std::uint64_t>(value->get_int64());
  }
  return 0;
}

std::uint16_t port_of(const json::object& object) {
  return static_cast<std::uint16_t>(std::min<std::uint64_t>(number_of(object, "port"), 65535));
}

// A JSON array of objects, each made into a row by `make`, at most kMaxRows; nothing when the
// text is not such an array.
template <class Row, class Make>
std::optional<std::vector<Row>> rows_of(std::string_view text, Make make) {
  boost::system::error_code ec;
  const json::value parsed = json::parse(text, ec);
  if (ec || !parsed.is_array()) {
    return std::nullopt;
  }
  std::vector<Row> rows;
  for (const json::value& item : parsed.get_array()) {
    if (!item.is_object()) {
      return std::nullopt;
    }
    if (rows.size() < GateView::kMaxRows) {
      rows.push_back(make(item.get_object()));
    }
  }
  return rows;
}

std::string host_port(const std::string& host, std::uint16_t port) {
  return host.find(':') != std::string::npos && !host.starts_with('[')
             ? "[" + host + "]:" + std::to_string(port)
             : host + ":" + std::to_string(port);
}

// Cut to `cols` characters (the screen's width).
ScreenLine line(std::string text, int cols, Style style = Style::plain) {
  if (text.size() > static_cast<std::size_t>(cols)) {
    text.resize(static_cast<std::size_t>(cols));
  }
  return {std::move(text), style};
}

std::string question_text(const QuestionRow& q) {
  const std::string target =
      q.request.empty() ? host_port(q.host, q.port) : q.request + " " + host_port(q.host, q.port);
  return "allow " + target + "?  " + std::to_string(q.waiting) + " waiting, " +
         std::to_string(q.age_ms / 1000) + " s";
}

std::string event_text(const EventRow& e) {
  std::string text = e.time + " ";
  if (e.end) {
    text += "end   " + host_port(e.host, e.port) + " " + e.outcome + " up " +
            human_bytes(e.bytes_up) + " down " + human_bytes(e.bytes_down);
  } else {
    std::string verdict = e.verdict;
    verdict.resize(std::max<std::size_t>(verdict.size(), 5), ' ');
    text += verdict + " " + (e.method.empty() ? "" : e.method + " ") + host_port(e.host, e.port) +
            e.path;
    if (!e.reason.empty()) {
      text += "  " + e.reason;
    }
    if (!e.detail.empty() && e.verdict != "allow") {
      text += ": " + e.detail;
    }
  }
  return text;
}

std::string amount_text(const BudgetRow& b, std::uint64_t value) {
  return b.kind == "up" || b.kind == "down" ? human_bytes(value) : std::to_string(value);
}

// The top line, and a line naming every gate when there are several.
void add_header(std::vector<ScreenLine>& out, const std::vector<GateView>& gates,
                const Selection& selection, int cols) {
  const GateView& shown = gates[selection.gate];
  std::string top = "sandgate watch: " + shown.name() + (shown.attached() ? "" : " (detached)");
  const std::string keys = "  q quit";
  top += keys;
  out.push_back(line(top, cols, Style::title));
  if (gates.size() > 1) {
    std::string list = "Tab next:";
    for (std::size_t i = 0; i < gates.size(); ++i) {
      list += std::string(i == selection.gate ? " [" : "  ") + std::to_string(i + 1) + " " +
              gates[i].name();
      if (!gates[i].questions().empty()) {
        list += " (" + std::to_string(gates[i].questions().size()) + "?)";
      }
      list += i == selection.gate ? "]" : "";
    }
    out.push_back(line(list, cols));
  }
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) {
      c = '?';
    }
  }
  return out;
}

std::string human_bytes(std::uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  if (bytes < 1000) {
    return std::to_string(bytes) + " B";
  }
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1000 && unit + 1 < std::size(kUnits)) {
    value /= 1000;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, value < 10 ? "%.1f %s" : "%.0f %s", value, kUnits[unit]);
  return text;
}

std::string bar(std::uint64_t spent, std::uint64_t amount, int width) {
  const std::size_t cells = static_cast<std::size_t>(std::max(width, 3) - 2);
  std::size_t full = cells;
  if (amount > 0 && spent < amount) {
    full = static_cast<std::size_t>(static_cast<long double>(spent) * cells / amount);
  }
  return "[" + std::string(full, '#') + std::string(cells - full, '-') + "]";
}

std::optional<std::string_view> answer_for_key(int key) {
  switch (key) {
    case 'o':
    case 'O':
      return "once";
    case 's':
    case 'S':
      return "session";
    case 'a':
    case 'A':
      return "always";
    case 'd':
    case 'D':
      return "deny";
    case 'n':
    case 'N':
      return "never";
    default:
      return std::nullopt;
  }
}

std::string decide_form(const QuestionRow& question, std::string_view answer,
                        std::string_view who) {
  auto encode = [](std::string_view text) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : text) {
      if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
          c == '.' || c == '_' || c == '~' || c == '[' || c == ']' || c == ':') {
        out += static_cast<char>(c);
      } else {
        out += '%';
        out += kHex[c >> 4];
        out += kHex[c & 15];
      }
    }
    return out;
  };
  std::string form = "host=" + encode(question.host) + "&port=" + std::to_string(question.port) +
                     "&answer=" + std::string(answer) + "&who=" + encode(who);
  if (!question.request.empty()) {
    form += "&request=" + encode(question.request);
  }
  return form;
}

std::optional<std::string> name_from_about(std::string_view text) {
  boost::system::error_code ec;
  const json::value parsed = json::parse(text, ec);
  if (ec || !parsed.is_object() || !parsed.get_object().contains("name")) {
    return std::nullopt;
  }
  const json::object& object = parsed.get_object();
  std::string name = text_of(object, "name");
  if (const std::uint64_t pid = number_of(object, "pid"); pid > 0) {
    name += " " + std::to_string(pid);
  }
  return name.empty() ? std::nullopt : std::optional<std::string>(name);
}

void GateView::add_event_line(std::string_view text) {
  if (text.find_first_not_of(" \t\r") == std::string_view::npos) {
    return;  // the stream's heartbeat
  }
  boost::system::error_code ec;
  const json::value parsed = json::parse(text, ec);
  if (ec || !parsed.is_object()) {
    ++dropped_;
    return;
  }
  const json::object& object = parsed.get_object();
  const std::string event = text_of(object, "event");
  if (event == "dropped") {
    dropped_ += number_of(object, "count");
    return;
  }
  if (event != "decision" && event != "end") {
    return;
  }
  EventRow row;
  const std::string ts = text_of(object, "ts");  // "2026-12-06T08:22:15.123Z"
  row.time = ts.size() >= 19 ? ts.substr(11, 8) : ts;
  row.end = event == "end";
  row.verdict = text_of(object, "verdict");
  row.method = text_of(object, "method");
  row.host = text_of(object, "host");
  row.port = port_of(object);
  row.path = text_of(object, "path");
  row.reason = text_of(object, "reason");
  row.detail = text_of(object, "detail");
  row.outcome = text_of(object, "outcome");
  row.bytes_up = number_of(object, "bytes_up");
  row.bytes_down = number_of(object, "bytes_down");
  events_.push_back(std::move(row));
  while (events_.size() > kMaxEvents) {
    events_.pop_front();
  }
}

bool GateView::set_pending(std::string_view text) {
  auto rows = rows_of<QuestionRow>(text, [](const json::object& o) {
    return QuestionRow{number_of(o, "id"),    text_of(o, "host"),      port_of(o),
                       text_of(o, "request"), number_of(o, "waiting"), number_of(o, "age_ms")};
  });
  if (rows) {
    questions_ = std::move(*rows);
  }
  return rows.has_value();
}

bool GateView::set_budgets(std::string_view text) {
  auto rows = rows_of<BudgetRow>(text, [](const json::object& o) {
    return BudgetRow{text_of(o, "rule"), text_of(o, "kind"), text_of(o, "window"),
                     number_of(o, "spent"), number_of(o, "amount")};
  });
  if (rows) {
    budgets_ = std::move(*rows);
  }
  return rows.has_value();
}

bool GateView::set_traffic(std::string_view text) {
  auto rows = rows_of<TrafficRow>(text, [](const json::object& o) {
    return TrafficRow{text_of(o, "host"), port_of(o), number_of(o, "sent"),
                      number_of(o, "received"), number_of(o, "connections")};
  });
  if (rows) {
    traffic_ = std::move(*rows);
  }
  return rows.has_value();
}

std::vector<ScreenLine> render(const std::vector<GateView>& gates, const Selection& selection,
                               int rows, int cols) {
  std::vector<ScreenLine> out;
  rows = std::max(rows, 1);
  cols = std::max(cols, 1);
  if (gates.empty()) {
    out.push_back(line("sandgate watch: no gate attached  q quit", cols, Style::title));
  } else {
    const GateView& gate = gates[std::min(selection.gate, gates.size() - 1)];
    add_header(out, gates, {std::min(selection.gate, gates.size() - 1), selection.question}, cols);
    // The sections share what the header and the status line leave: questions first (they
    // wait on a person), then budgets and traffic (a few rows each), then the live
    // connections in whatever is left, newest first.
    const int body = rows - static_cast<int>(out.size()) - 1;
    const auto& questions = gate.questions();
    const int question_rows = std::min(static_cast<int>(std::max<std::size_t>(questions.size(), 1)),
                                       std::max(body / 4, 1));
    out.push_back(line("Questions (" + std::to_string(questions.size()) +
                           ")  o once  s session  a always  d deny  n never",
                       cols, questions.empty() ? Style::title : Style::alert));
    if (questions.empty()) {
      out.push_back(line("  none waiting", cols));
    }
    const std::size_t chosen =
        std::min(selection.question, questions.empty() ? 0 : questions.size() - 1);
    // Keep the chosen question in view when there are more than fit.
    const std::size_t first =
        chosen >= static_cast<std::size_t>(question_rows) ? chosen + 1 - question_rows : 0;
    for (std::size_t i = first; i < questions.size() && i < first + question_rows; ++i) {
      const bool is_chosen = i == chosen;
      out.push_back(line((is_chosen ? "> " : "  ") + question_text(questions[i]), cols,
                         is_chosen ? Style::selected : Style::plain));
    }
    const int small_rows = std::max(std::min(4, body / 6), 1);
    if (!gate.budgets().empty()) {
      out.push_back(line("Budgets (spent of amount)", cols, Style::title));
      for (std::size_t i = 0; i < gate.budgets().size() && i < static_cast<std::size_t>(small_rows);
           ++i) {
        const BudgetRow& b = gate.budgets()[i];
        const int bar_width = std::clamp(cols / 5, 5, 22);
        out.push_back(line("  " + bar(b.spent, b.amount, bar_width) + " " +
                               amount_text(b, b.spent) + " of " + amount_text(b, b.amount) + " " +
                               b.kind + "/" + b.window + "  " + b.rule,
                           cols, b.spent >= b.amount ? Style::alert : Style::plain));
      }
    }
    out.push_back(line("Traffic (sent / received)", cols, Style::title));
    if (gate.traffic().empty()) {
      out.push_back(line("  nothing yet", cols));
    }
    for (std::size_t i = 0; i < gate.traffic().size() && i < static_cast<std::size_t>(small_rows);
         ++i) {
      const TrafficRow& t = gate.traffic()[i];
      const std::string where =
          t.host.empty() ? std::string("(others)") : host_port(t.host, t.port);
      out.push_back(line("  " + where + "  " + human_bytes(t.sent) + " / " +
                             human_bytes(t.received) + "  " + std::to_string(t.connections) +
                             " conn",
                         cols));
    }
    out.push_back(line("Connections (newest first)", cols, Style::title));
    const auto& events = gate.events();
    for (auto e = events.rbegin(); e != events.rend() && static_cast<int>(out.size()) < rows - 1;
         ++e) {
      out.push_back(
          line("  " + event_text(*e), cols,
               e->verdict == "deny" || e->verdict == "error" ? Style::denied : Style::plain));
    }
    if (events.empty() && static_cast<int>(out.size()) < rows - 1) {
      out.push_back(line("  none yet", cols));
    }
    // The status line: what the last answer did, what was dropped, whether attached.
    std::string status = gate.attached() ? "attached" : "detached: trying again";
    if (gate.dropped() > 0) {
      status += "  " + std::to_string(gate.dropped()) + " events dropped (slow reader)";
    }
    if (!gate.status().empty()) {
      status += "  " + gate.status();
    }
    out.resize(std::min<std::size_t>(out.size(), static_cast<std::size_t>(rows - 1)));
    out.resize(static_cast<std::size_t>(rows - 1));
    out.push_back(line(status, cols, gate.attached() ? Style::plain : Style::alert));
    return out;
  }
  out.resize(static_cast<std::size_t>(rows));
  return out;
}

}  // namespace sandgate::watch_view
