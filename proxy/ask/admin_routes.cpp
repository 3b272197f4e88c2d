// GET /pending and POST /decide, apart from HTTP. See admin_routes.hpp.
#include "proxy/ask/admin_routes.hpp"

#include <algorithm>
#include <chrono>

#include "proxy/json/json_writer.hpp"
#include "rules/host.hpp"
#include "rules/percent_escape.hpp"

namespace sandgate::ask {
namespace {

// application/x-www-form-urlencoded: '+' is a space, %XX a byte.
std::optional<std::string> form_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%') {
      if (i + 2 >= text.size()) {
        return std::nullopt;
      }
      const int high = rules::hex_value(text[i + 1]);
      const int low = rules::hex_value(text[i + 2]);
      if (high < 0 || low < 0) {
        return std::nullopt;
      }
      out += static_cast<char>(high * 16 + low);
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

std::string render_pending_json(const QuestionBoard& board) {
  auto questions = board.pending();
  std::sort(questions.begin(), questions.end(),
            [](const PendingQuestion& a, const PendingQuestion& b) { return a.id < b.id; });
  std::string out = "[";
  for (std::size_t i = 0; i < questions.size(); ++i) {
    const PendingQuestion& q = questions[i];
    out += i == 0 ? "\n" : ",\n";
    json_writer::ObjectWriter object(out);
    object.number("id", q.id).string("host", q.host).number("port", q.port);
    if (!q.request.empty()) {
      object.string("request", q.request);
    }
    object.number("waiting", q.waiting)
        .number("age_ms", std::chrono::duration_cast<std::chrono::milliseconds>(q.age).count());
    object.close();
  }
  out += questions.empty() ? "]\n" : "\n]\n";
  return out;
}

std::string render_pending_text(const QuestionBoard& board) {
  auto questions = board.pending();
  std::sort(questions.begin(), questions.end(),
            [](const PendingQuestion& a, const PendingQuestion& b) { return a.id < b.id; });
  if (questions.empty()) {
    return "no questions pending\n";
  }
  std::string out;
  for (const PendingQuestion& q : questions) {
    out += "#" + std::to_string(q.id) + " " + q.host + ":" + std::to_string(q.port) +
           (q.request.empty() ? "" : " " + q.request) + "  " + std::to_string(q.waiting) +
           " waiting  for " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(q.age).count()) + " s\n";
  }
  return out;
}

Expected<DecideRequest, std::string> parse_decide_form(std::string_view body) {
  DecideRequest request;
  std::optional<std::string> host;
  std::optional<Answer> answer;
  while (!body.empty()) {
    const auto amp = body.find('&');
    const std::string_view pair = body.substr(0, amp);
    body = amp == std::string_view::npos ? std::string_view{} : body.substr(amp + 1);
    if (pair.empty()) {
      continue;
    }
    const auto eq = pair.find('=');
    const std::string_view name = pair.substr(0, eq);
    auto value =
        form_decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1));
    if (!value) {
      return Unexpected{"the value of '" + std::string(name) + "' is not form-encoded"};
    }
    if (name == "host") {
      host = std::move(*value);
    } else if (name == "port") {
      const std::string& text = *value;
      unsigned long port = 0;
      if (text.empty() || text.size() > 5 ||
          !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
          (port = std::stoul(text)) == 0 || port > 65535) {
        return Unexpected{std::string("port: expected 1..65535")};
      }
      request.port = static_cast<std::uint16_t>(port);
    } else if (name == "answer") {
      answer = parse_answer(*value);
      if (!answer) {
        return Unexpected{std::string("answer: expected once, session, always, deny or never")};
      }
    } else if (name == "who") {
      request.who = value->substr(0, 80);
    } else if (name == "request") {
      // A request's question, as /pending lists it ("POST /repos/o/r/pulls").
      if (value->size() > 8192 || std::any_of(value->begin(), value->end(), [](char c) {
            return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
          })) {
        return Unexpected{std::string("request: expected METHOD /PATH as /pending lists it")};
      }
      request.request = std::move(*value);
    }
  }
  if (!host || !answer) {
    return Unexpected{std::string("expected host=HOST&port=PORT&answer=ANSWER")};
  }
  // The board's key is the host as the policy normalised it (what the sessions ask with).
  std::string_view text = *host;
  if (text.size() > 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  auto parsed = rules::parse_host(text);
  if (!parsed) {
    return Unexpected{"host: '" + *host + "' is not a valid host"};
  }
  request.host = parsed->display();
  request.answer = *answer;
  return request;
}

std::pair<unsigned, std::string> decide_from_form(QuestionBoard& board, std::string_view body,
                                                  std::string_view peer) {
  auto request = parse_decide_form(body);
  if (!request) {
    return {400, request.error() + "\n"};
  }
  const std::string by = (request->who.empty() ? std::string("someone") : request->who) +
                         " via sandgate decide (the admin endpoint, from " + std::string(peer) +
                         ")";
  auto applied = board.answer(request->host, request->port, request->answer, by, request->request);
  const std::string target = request->host + ":" + std::to_string(request->port) +
                             (request->request.empty() ? "" : " " + request->request);
  if (!applied) {
    const bool missing = applied.error().starts_with("no question");
    return {missing ? 404u : 409u, applied.error() + "\n"};
  }
  return {200, std::string(to_string(request->answer)) + " " + target + ": " +
                   std::to_string(*applied) + " waiting request(s) decided\n"};
}

}  // namespace sandgate::ask
