// The admin endpoint's side of --unknown=ask, apart from HTTP: the JSON of GET /pending, and the
// parsing and applying of POST /decide's form body. Pure apart from the board; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "proxy/ask/question_board.hpp"
#include "rules/expected.hpp"

namespace sandgate::ask {

// [{"id":1,"host":"api.example.dev","port":443,"waiting":2,"age_ms":1520}, ...], oldest first.
std::string render_pending_json(const QuestionBoard& board);
// One line a question, oldest first ("#1 api.example.dev:443  2 waiting  for 5 s"), or
// "no questions pending".
std::string render_pending_text(const QuestionBoard& board);

// A POST /decide body: `host=H&port=P&answer=A&who=W` (form-encoded; port 443 when absent, the
// host normalised as the policy sees it; who optional).
struct DecideRequest {
  std::string host;  // as the board keys it ("api.example.dev", "[2001:db8::1]")
  std::uint16_t port = 443;
  Answer answer = Answer::once;
  std::string who;
  std::string request;  // a request's question ("POST /x"); empty for a destination's
};
Expected<DecideRequest, std::string> parse_decide_form(std::string_view body);

// Parses `body` and applies it to `board`; `peer` is the answering client's address, for the
// log. The HTTP status (200 applied, 400 malformed, 404 no such question, 409 not applied) and a
// line for the answerer.
std::pair<unsigned, std::string> decide_from_form(QuestionBoard& board, std::string_view body,
                                                  std::string_view peer);

}  // namespace sandgate::ask
