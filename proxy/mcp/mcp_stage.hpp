// The MCP stage: what the HTTP exchange pipeline asks of a POST to a host with MCP lines
// (rules/mcp_rules.hpp), and of the answers it gets back. Pure: no I/O, no clock, no locks; the
// pipeline reads, writes, asks and logs, this decides and rewrites.
//
// The request side (McpStage::judge_request), with the whole body read ahead:
//   - the body is read once and strictly (messages.hpp); one the gate cannot judge is refused
//     whole (400, or 413 when too large) with a JSON-RPC error (id null), never passed;
//   - each message is judged: MCP's own methods pass, tools/call, prompts/get, resources/read
//     and resources/subscribe are decided by the MCP lines, any other method is refused;
//   - refused calls never reach the server: a refused tools/call is answered with a tool result
//     marked isError (the text names the rule and its `#!` message: the SDKs hand a tool's
//     error result to the model, which can read it and change course, while a JSON-RPC error
//     becomes an exception the client program sees), any other refused request with a JSON-RPC
//     error; a refused notification is dropped (it has no answer);
//   - a batch mixing allowed and refused calls is split: the allowed ones go on as a smaller
//     batch of their own bytes, the gate's answers are merged into the server's answer in the
//     order of the requests (JSON) or written before the server's events (SSE);
//   - under --unknown=ask a call no line decides is a Question; the pipeline asks, then judges
//     the body again with the answers (Setting::answers);
//   - report-only lets refused calls through, each one a `would-deny` Call.
// The response side (ResponseFilter, response_filter.hpp): tools/list, prompts/list and
// resources/list results are filtered to what may be called, in JSON answers and in event streams
// (POST answers and the GET stream alike, so a list asked for after
// notifications/tools/list_changed is filtered too); the gate's answers are merged in; a server
// message the gate cannot read cuts the stream.
//
// Thread safety: a McpStage belongs to one exchange on one thread (its const members may be
// called from any). It holds a pointer to the rules (Setting::rules): the pipeline keeps that
// policy snapshot alive for the exchange, as it does for the request rules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/mcp/answers.hpp"
#include "proxy/mcp/messages.hpp"
#include "rules/expected.hpp"
#include "rules/host.hpp"
#include "rules/mcp_rules.hpp"
#include "rules/reason.hpp"

namespace sandgate::mcp {

struct Limits {
  MessageLimits request;  // the POST body read ahead: 1 MiB, depth 64, batches of 100
  // A JSON answer held whole to filter or merge, and one event of a stream.
  JsonLimits response{16u << 20, 64};
};

// A person's answer to a Question, carried into the judgement made again.
struct PersonAnswer {
  rules::McpKind kind = rules::McpKind::tool;
  std::string name;
  bool allowed = false;
  // For a refusal, the sentence the client gets ("a person answered deny to the question
  // about tool delete_repo on mcp.example.com."); for an allowance, what the log's rule says.
  std::string why;
};

// What the stage is told of the exchange.
struct Setting {
  const rules::McpRules* rules = nullptr;  // the policy's (kept alive by the pipeline)
  rules::Host host;
  std::uint16_t port = 443;
  bool ask = false;             // --unknown=ask: a call no line decides is asked about
  bool report_only = false;     // refusals pass, logged as would-deny
  bool keep_arguments = false;  // Call::arguments filled (log_mcp_arguments)
  std::vector<PersonAnswer> answers;
  Limits limits;
};

// The most of a call's arguments a decision line carries, when asked to.
inline constexpr std::size_t kMaxLoggedArguments = 1024;

// One judged message, for the decision log, /metrics and the budgets. Never its arguments,
// unless Setting::keep_arguments asks.
struct Call {
  enum class Outcome : std::uint8_t {
    passed,      // a protocol method or a response, or a call of a word the host has no lines of
    allowed,     // a line (or a person) allowed it
    refused,     // answered by the gate; the server never sees it
    would_deny,  // report-only: refused by the rules, sent on
  };
  std::size_t index = 0;  // in the body (0 for a single message)
  std::string method;     // "tools/call", "initialize", ...
  MethodClass what = MethodClass::protocol;
  rules::McpKind kind = rules::McpKind::tool;  // judged methods
  std::string name;                            // judged methods: decoded as the server reads it
  Outcome outcome = Outcome::passed;
  rules::Reason reason = rules::Reason::allowed;  // request_denied, request_not_allowed
  std::string rule;                               // the line that decided ("file:line text")
  std::string sentence;                           // why, for a refusal or would-deny
  // Only with Setting::keep_arguments: a judged call's `arguments` as sent (JSON text), its first
  // kMaxLoggedArguments bytes ("..." after them when cut).
  std::string arguments;
  // What the log's line names: "tool delete_repo", "prompt p", "resource u", or the method.
  std::string logged() const;
  bool is_call() const { return what == MethodClass::judged; }
};

// A question for the board (ask::RequestQuestion), about one call no line decides.
struct Question {
  rules::McpKind kind = rules::McpKind::tool;
  std::string name;
  std::string request;     // "tool delete_repo": what the board keys and shows
  std::string text;        // "allow tool delete_repo on mcp.example.com?"
  std::string allow_line;  // "allow mcp.example.com mcp-tool delete_repo" (for `always`)
  std::string deny_line;   // "deny mcp.example.com mcp-tool delete_repo" (for `never`)
};

// What the request side leaves the response side.
struct ResponsePlan {
  bool batch = false;
  // The requests with an id, in body order, and the gate's answer for each it refused.
  struct Slot {
    boost::json::value id;
    std::optional<std::string> gate_answer;  // one JSON-RPC message's text
  };
  std::vector<Slot> slots;
  bool lists = false;  // a list request went on whose result is filtered: read a JSON answer
  Transport gate_transport = Transport::json;
  bool has_gate_answers() const;
};

struct Judgement {
  enum class Action : std::uint8_t {
    forward,  // send `body` to the server; its answer goes through a ResponseFilter(plan)
    answer,   // send nothing; write `answer` to the client
    ask,      // ask `questions`, then judge again with Setting::answers
  };
  Action action = Action::forward;
  std::string body;           // forward: the original, or the smaller batch
  bool body_changed = false;  // forward: `body` is not the request's (its length changed)
  GateAnswer answer;          // answer
  // The body could not be judged (answer is then a 400 or 413): the refusal's reason and
  // sentence, for the exchange's own decision line.
  bool unjudgeable = false;
  std::string problem;
  std::vector<Call> calls;          // every message, in body order
  std::vector<Question> questions;  // ask: one per call no line decides, once each
  std::size_t forwarded_calls = 0;  // judged calls sent on (budgets: see README)
  ResponsePlan plan;
};

class McpStage {
 public:
  explicit McpStage(Setting setting);

  // Judges a POST body. `accept`: the request's Accept; `usual`: the transport the server
  // answered this connection in last (nothing before its first answer).
  Judgement judge_request(std::string_view body, std::string_view accept,
                          std::optional<Transport> usual) const;

  // Whether a list entry of `kind` named `name` is shown: everything a call could be allowed
  // for (by a line, or by a person under ask), nothing a line denies.
  bool listed(rules::McpKind kind, std::string_view name) const;

  const Setting& setting() const { return setting_; }

 private:
  Call judge(const Message& message, std::size_t index, std::vector<Question>& questions) const;

  Setting setting_;
};

}  // namespace sandgate::mcp
