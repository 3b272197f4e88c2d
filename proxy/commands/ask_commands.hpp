// `sandgate pending [--watch]` and `sandgate decide HOST[:PORT] ANSWER`: the command-line front
// end of --unknown=ask, talking to a running gate's admin endpoint (GET /pending, POST /decide)
// at the admin setting's address, with the token setting (token or token_file) as a bearer
// token when one is set.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "proxy/settings/settings.hpp"

namespace sandgate::commands {

// Exit statuses of `pending` and `decide`.
inline constexpr int kAskOk = 0;
inline constexpr int kAskRefused = 1;     // the gate did not apply the answer (no such question)
inline constexpr int kAskUsageError = 2;  // bad arguments, no admin address, gate unreachable

// Prints the questions pending (one line each). `watch`: again every second, until interrupted.
int run_pending(const settings::Settings& settings, bool watch, std::ostream& out,
                std::ostream& err);

// Answers the question about `target` (HOST, HOST:PORT, [V6]:PORT; port 443 by default) with
// `answer` (once, session, always, deny, never), as the user running the command. `request`
// ("POST /repos/o/r/pulls", as `sandgate pending` lists it) answers a request's question.
int run_decide(const settings::Settings& settings, std::string_view target, std::string_view answer,
               std::string_view request, std::ostream& out, std::ostream& err);

// Who answers a question (`sandgate decide`, `watch`, `run`'s terminal), for the log and the list
// files' comments: the user running the command ($USER, else the passwd entry's name, else "uid
// N").
std::string answering_user();

}  // namespace sandgate::commands
