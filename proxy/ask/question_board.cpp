// The question board. See question_board.hpp.
#include "proxy/ask/question_board.hpp"

#include <boost/asio/post.hpp>
#include <cctype>

#include "rules/ascii.hpp"

namespace sandgate::ask {
namespace {

constexpr std::string_view kAnswerNames[kAnswerCount] = {"once", "session", "always", "deny",
                                                         "never"};

std::string key_of(std::string_view host, std::uint16_t port, std::string_view request = {}) {
  std::string key = std::string(host) + ":" + std::to_string(port);
  if (!request.empty()) {
    key += " ";
    key += request;
  }
  return key;
}

std::shared_ptr<Waiter> resolved(boost::asio::any_io_executor executor, std::string key,
                                 Resolution resolution, const RequestQuestion* request) {
  auto waiter = std::make_shared<Waiter>();
  waiter->executor = std::move(executor);
  waiter->key = std::move(key);
  waiter->result = std::move(resolution);
  if (request != nullptr && request->grant) {
    waiter->grant = std::make_shared<Grant>(request->grant);  // a question of its own
  }
  return waiter;
}

}  // namespace

std::string asked_about(std::string_view host, std::uint16_t port, std::string_view request,
                        bool budget, bool mcp_call) {
  const std::string where = std::string(host) + ":" + std::to_string(port);
  if (request.empty()) {
    return where;
  }
  if (mcp_call) {
    return std::string(request) + " on " + where;
  }
  if (budget) {
    return where + " " + std::string(request);
  }
  const std::size_t space = request.rfind(' ');
  return std::string(request.substr(0, space)) + " " + where +
         std::string(request.substr(space + 1));
}

std::string_view to_string(Answer answer) { return kAnswerNames[static_cast<std::size_t>(answer)]; }

std::optional<Answer> parse_answer(std::string_view text) {
  const std::string lower = rules::ascii_lower(text);
  for (std::size_t i = 0; i < kAnswerCount; ++i) {
    const std::string_view name = kAnswerNames[i];
    // The full word, or its first letter (the terminal's [o]nce / [s]ession / ...).
    if (lower == name || (lower.size() == 1 && lower[0] == name[0])) {
      return static_cast<Answer>(i);
    }
  }
  return std::nullopt;
}

bool allows(Answer answer) {
  return answer == Answer::once || answer == Answer::session || answer == Answer::always;
}

QuestionBoard::QuestionBoard(Note note) : note_(std::move(note)) {}

void QuestionBoard::set_recorder(Recorder recorder) {
  std::lock_guard lock(mutex_);
  recorder_ = std::move(recorder);
}

void QuestionBoard::set_listener(Listener listener) {
  std::lock_guard lock(mutex_);
  listener_ = std::move(listener);
}

void QuestionBoard::add_answerer() {
  std::lock_guard lock(mutex_);
  ++answerers_;
}

void QuestionBoard::remove_answerer() {
  std::vector<std::shared_ptr<Waiter>> orphans;
  {
    std::lock_guard lock(mutex_);
    if (--answerers_ > 0) {
      return;
    }
    // Nobody is left to answer what is pending: the ask default decides it now.
    for (auto& [key, question] : questions_) {
      orphans.insert(orphans.end(), question.waiters.begin(), question.waiters.end());
    }
    unavailable_total_ += orphans.size();
    questions_.clear();
  }
  resolve(std::move(orphans), Resolution{Outcome::unavailable, std::nullopt, {}});
}

std::shared_ptr<Waiter> QuestionBoard::ask(std::string_view host, std::uint16_t port,
                                           boost::asio::any_io_executor executor,
                                           const RequestQuestion* request) {
  const std::string_view asked = request != nullptr ? std::string_view(request->request) : "";
  const bool budget = request != nullptr && request->budget;
  const bool mcp_call = request != nullptr && request->mcp_call;
  std::string key = key_of(host, port, asked);
  const std::string remembered_as = request != nullptr && !request->remembered_as.empty()
                                        ? key_of(host, port, request->remembered_as)
                                        : key;
  std::optional<PendingQuestion> fresh;
  Listener listener;
  std::shared_ptr<Waiter> waiter;
  std::string refused;
  Outcome refusal = Outcome::unavailable;
  {
    std::lock_guard lock(mutex_);
    if (closed_) {
      return resolved(std::move(executor), std::move(key), {Outcome::cancelled, {}, {}}, request);
    }
    if (auto known = remembered_.find(remembered_as); known != remembered_.end()) {
      ++remembered_hits_total_;
      return resolved(
          std::move(executor), std::move(key),
          {known->second ? Outcome::allowed : Outcome::denied, std::nullopt, "an earlier answer"},
          request);
    }
    auto question = questions_.find(key);
    if (question == questions_.end()) {
      if (answerers_ <= 0 || questions_.size() >= kMaxQuestions) {
        ++unavailable_total_;
        if (answerers_ <= 0) {
          refused =
              "nobody can answer it (no terminal, no admin endpoint); the ask default applies";
        } else {
          refusal = Outcome::overloaded;
          refused = std::to_string(kMaxQuestions) + " questions are pending; it is denied";
        }
      } else {
        Question made;
        made.id = next_id_++;
        made.host = std::string(host);
        made.port = port;
        made.asked = std::chrono::steady_clock::now();
        if (request != nullptr) {
          made.request = *request;
          if (request->grant) {
            made.grant = std::make_shared<Grant>(request->grant);
          }
        }
        made.remembered_as = remembered_as;
        question = questions_.emplace(key, std::move(made)).first;
        ++questions_total_;
        fresh = PendingQuestion{question->second.id,
                                question->second.host,
                                port,
                                std::string(asked),
                                1,
                                {},
                                budget,
                                mcp_call};
        listener = listener_;
      }
    }
    if (refused.empty()) {
      waiter = std::make_shared<Waiter>();
      waiter->executor = std::move(executor);
      waiter->key = key;
      waiter->grant = question->second.grant;
      question->second.waiters.push_back(waiter);
    }
  }
  if (!refused.empty()) {
    if (note_) {
      note_("warning", "ask: " + asked_about(host, port, asked, budget, mcp_call) +
                           " is not asked about: " + refused);
    }
    return resolved(std::move(executor), std::move(key), {refusal, {}, {}}, request);
  }
  if (fresh && note_) {
    note_("info", "ask: question #" + std::to_string(fresh->id) + ": allow " +
                      asked_about(host, port, asked, budget, mcp_call) + "?");
  }
  if (fresh && listener) {
    listener(*fresh);
  }
  return waiter;
}

void QuestionBoard::leave(const std::shared_ptr<Waiter>& waiter, bool timed_out) {
  std::lock_guard lock(mutex_);
  if (timed_out) {
    ++timeouts_total_;
  }
  auto question = questions_.find(waiter->key);
  if (question == questions_.end()) {
    return;
  }
  auto& waiters = question->second.waiters;
  std::erase(waiters, waiter);
  if (waiters.empty()) {
    questions_.erase(question);  // nobody waits for the answer any more
  }
}

Expected<std::size_t, std::string> QuestionBoard::answer(std::string_view host, std::uint16_t port,
                                                         Answer answer, std::string_view by,
                                                         std::string_view request) {
  const std::string key = key_of(host, port, request);
  std::string named = asked_about(host, port, request, false);
  const bool recorded = answer == Answer::always || answer == Answer::never;
  Recorder recorder;
  std::optional<RequestQuestion> asked;
  {
    std::lock_guard lock(mutex_);
    const auto question = questions_.find(key);
    if (question == questions_.end() &&
        (answer == Answer::once || answer == Answer::deny || (recorded && !request.empty()))) {
      return Unexpected{"no question is pending for " + named};
    }
    if (question != questions_.end()) {
      asked = question->second.request;
      if (asked && (asked->budget || asked->mcp_call)) {
        named = asked_about(host, port, request, asked->budget, asked->mcp_call);
      }
    }
    recorder = recorder_;
  }
  // `always` and `never` become rules: the entry is written before anything is woken, so that a
  // failed write leaves the question pending for another answer.
  if (answer == Answer::always || answer == Answer::never) {
    if (!recorder) {
      return Unexpected{std::string("this gate has no list file to write the answer into")};
    }
    if (auto error = recorder(answer, host, port, by, asked ? &*asked : nullptr)) {
      return Unexpected{*error};
    }
  }
  std::vector<std::shared_ptr<Waiter>> woken;
  {
    std::lock_guard lock(mutex_);
    std::string remembered_as = key;
    if (auto question = questions_.find(key); question != questions_.end()) {
      woken = std::move(question->second.waiters);
      remembered_as = std::move(question->second.remembered_as);
      questions_.erase(question);
    }
    if (answer != Answer::once && answer != Answer::deny) {
      remember_locked(remembered_as, allows(answer));
    }
    ++answers_total_[static_cast<std::size_t>(answer)];
  }
  if (note_) {
    note_("info", "ask: " + named + " answered " + std::string(to_string(answer)) + " by " +
                      std::string(by) + " (" + std::to_string(woken.size()) +
                      " waiting request(s) decided)");
  }
  const std::size_t decided = woken.size();
  resolve(std::move(woken),
          Resolution{allows(answer) ? Outcome::allowed : Outcome::denied, answer, std::string(by)});
  return decided;
}

void QuestionBoard::remember_locked(const std::string& key, bool allowed) {
  auto [at, inserted] = remembered_.insert_or_assign(key, allowed);
  if (!inserted) {
    return;  // already in the order list
  }
  remembered_order_.push_back(key);
  if (remembered_order_.size() > kMaxRemembered) {
    remembered_.erase(remembered_order_.front());
    remembered_order_.pop_front();
  }
}

std::vector<PendingQuestion> QuestionBoard::pending() const {
  std::vector<PendingQuestion> out;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  for (const auto& [key, question] : questions_) {
    out.push_back({question.id, question.host, question.port,
                   question.request ? question.request->request : std::string(),
                   question.waiters.size(), now - question.asked,
                   question.request && question.request->budget,
                   question.request && question.request->mcp_call});
  }
  return out;
}

std::string QuestionBoard::render_prometheus() const {
  std::lock_guard lock(mutex_);
  std::string out =
      "# HELP sandgate_ask_questions_total Questions asked about destinations no rule decides "
      "(--unknown=ask), one per host:port however many requests wait on it.\n"
      "# TYPE sandgate_ask_questions_total counter\n"
      "sandgate_ask_questions_total " +
      std::to_string(questions_total_) + "\n";
  out +=
      "# HELP sandgate_ask_pending Questions waiting for an answer now.\n"
      "# TYPE sandgate_ask_pending gauge\n"
      "sandgate_ask_pending " +
      std::to_string(questions_.size()) + "\n";
  out +=
      "# HELP sandgate_ask_answers_total How questions ended: a person's answer (once, session, "
      "always, deny, never), a request's wait timing out (timeout), nobody to ask or too many "
      "questions (unavailable), an earlier session answer (remembered).\n"
      "# TYPE sandgate_ask_answers_total counter\n";
  for (std::size_t i = 0; i < kAnswerCount; ++i) {
    out += "sandgate_ask_answers_total{answer=\"" + std::string(kAnswerNames[i]) + "\"} " +
           std::to_string(answers_total_[i]) + "\n";
  }
  out += "sandgate_ask_answers_total{answer=\"timeout\"} " + std::to_string(timeouts_total_) + "\n";
  out += "sandgate_ask_answers_total{answer=\"unavailable\"} " +
         std::to_string(unavailable_total_) + "\n";
  out += "sandgate_ask_answers_total{answer=\"remembered\"} " +
         std::to_string(remembered_hits_total_) + "\n";
  return out;
}

void QuestionBoard::close() {
  std::vector<std::shared_ptr<Waiter>> waiting;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    for (auto& [key, question] : questions_) {
      waiting.insert(waiting.end(), question.waiters.begin(), question.waiters.end());
    }
    questions_.clear();
  }
  resolve(std::move(waiting), Resolution{Outcome::cancelled, std::nullopt, {}});
}

void QuestionBoard::resolve(std::vector<std::shared_ptr<Waiter>> waiters,
                            const Resolution& resolution) {
  for (auto& waiter : waiters) {
    // On the waiter's own thread: only there are `wake` and `result` touched. A waiter whose
    // session stopped waiting (wake null) is left alone.
    boost::asio::post(waiter->executor, [waiter, resolution] {
      if (waiter->wake != nullptr && !waiter->result) {
        waiter->result = resolution;
        waiter->wake->cancel();
      }
    });
  }
}

}  // namespace sandgate::ask
