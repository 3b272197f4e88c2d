// `sandgate run`: the gate side. See run.hpp.
#include "proxy/commands/run.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "proxy/commands/ask_commands.hpp"
#include "proxy/commands/run_sockets.hpp"
#include "proxy/commands/run_summary.hpp"
#include "proxy/commands/sandbox_view.hpp"
#include "proxy/gate/gate.hpp"
#include "proxy/gate/secret_loading.hpp"
#include "proxy/inspect/certificate_authority.hpp"
#include "proxy/json/json_writer.hpp"
#include "proxy/secrets/known_credentials.hpp"
#include "proxy/secrets/process_strings.hpp"
#include "proxy/secrets/redaction.hpp"
#include "proxy/settings/load.hpp"

namespace sandgate::commands {
namespace {

void say(const std::string& text) { std::cerr << "sandgate run: " << text << std::endl; }

// The terminal the board's listener hands questions to. The listener is called on the gate's
// session threads and may still hold a copy after ask_on(nullptr): it reaches the asker only
// through this slot, under its lock, so a question never reaches an asker that is gone.
struct AskerSlot {
  std::mutex mutex;
  sandbox::TerminalAsker* asker = nullptr;  // guarded by mutex
  // A `sandgate watch` answers questions now: the terminal is left alone (watch_attached()).
  std::atomic<bool> watched{false};
};

// A question for the terminal that steps aside while a watch is attached: a prompt already up
// is withdrawn (the asker polls `pending`), and a queued one is never put.
sandbox::TerminalQuestion unless_watched(sandbox::TerminalQuestion question,
                                         std::shared_ptr<AskerSlot> slot) {
  question.pending = [slot = std::move(slot), pending = std::move(question.pending)] {
    return !slot->watched.load() && pending();
  };
  return question;
}

// What GET /about says of this run on its private socket: the command's name and the pid.
std::string run_about(const std::vector<std::string>& command) {
  std::string name = command.empty() ? std::string("run")
                                     : std::filesystem::path(command.front()).filename().string();
  std::string out;
  json_writer::ObjectWriter object(out);
  object.string("name", name).number("pid", ::getpid());
  object.close();
  return out + "\n";
}

// One question of the board as the terminal puts it. Its answer takes the same path as
// POST /decide (QuestionBoard::answer), from the asker's thread.
sandbox::TerminalQuestion terminal_question(ask::QuestionBoard& board,
                                            const ask::PendingQuestion& question,
                                            const std::string& by) {
  sandbox::TerminalQuestion out;
  // "POST api.github.com:443/repos/o/r/pulls", "git push github.com:443/o/r", "github.com:443 50
  // MB more sent (...)", "tool delete_repo on mcp.example.com:443"
  const std::string target = ask::asked_about(question.host, question.port, question.request,
                                              question.budget, question.mcp_call);
  out.prompt = "allow " + target + "? [o]nce / [s]ession / [A]lways / [d]eny / [N]ever, then Enter";
  out.keys = "osadn";       // the first letters, as ask::parse_answer reads them
  out.lasting_keys = "an";  // always and never write a list file
  const std::uint64_t id = question.id;
  out.pending = [&board, id] {
    for (const auto& waiting : board.pending()) {
      if (waiting.id == id) {
        return true;
      }
    }
    return false;
  };
  const std::string host = question.host;
  const std::uint16_t port = question.port;
  const std::string request = question.request;
  out.answer = [&board, host, port, request, by](char key) -> std::optional<std::string> {
    const auto answer = ask::parse_answer(std::string_view(&key, 1));
    if (!answer) {
      return std::string("not an answer");
    }
    auto applied = board.answer(host, port, *answer, by, request);
    if (!applied) {
      return applied.error();
    }
    return std::nullopt;
  };
  return out;
}

// The Gate as the confinement drives it: opened before the fork, started on the listener the
// confinement hands over, stopped when CMD has ended.
class RunGate final : public sandbox::GateHandle {
 public:
  RunGate(const settings::Settings& settings, const settings::Sources& sources,
          std::shared_ptr<const secrets::MaskedSecrets> secrets)
      : settings_(settings), sources_(sources), secrets_(std::move(secrets)) {}
  // The gate stops first: a watch still attached is told it left (watch_attached) while the
  // members that reads are still here.
  ~RunGate() override { stop(); }
  RunGate(const RunGate&) = delete;
  RunGate& operator=(const RunGate&) = delete;

  bool open() override {
    gate::GateOptions options{settings_, sources_, settings::MissingDefaultBlocklist::create};
    options.without_token = true;  // see GateOptions::without_token
    options.secrets = secrets_;
    if (settings_.policy.unknown != rules::UnknownMode::ask) {
      options.asking_only_from_start =
          "as this run started without asking: its questions go to the terminal, which is set "
          "up when the run starts (start a new run with --unknown=ask)";
    }
    auto opened = gate::Gate::open(std::move(options));
    if (!opened) {
      report(opened.error());
      return false;
    }
    gate_ = std::move(*opened);
    return true;
  }

  void serve_capture(sandbox::CaptureSockets sockets) override { capture_ = std::move(sockets); }

  std::optional<std::uint16_t> start(int listener) override {
    if (auto error = gate_->start(listener)) {
      capture_.close_all();
      report(*error);
      return std::nullopt;
    }
    // The capture's sockets, before the workers start serving (see serve_capture).
    if (!capture_.tcp.empty()) {
      if (auto adopted = gate_->adopt_capture(std::move(capture_)); !adopted) {
        gate_->log().note("error", adopted.error());
        say(adopted.error());
        return std::nullopt;
      }
    }
    // Signals are `run`'s to handle (they go to CMD): the gate runs without a handler of its own.
    gate_->start_thread();
    serve_watch();
    return gate_->port();
  }

  // The command, named on the private socket for `sandgate watch`. Before start().
  void name_for_watch(const std::vector<std::string>& command) { about_ = run_about(command); }

  void stop() override {
    if (gate_) {
      gate_->stop();
    }
  }

  void log_detail(const std::string& line) override {
    if (gate_) {
      gate_->log().note("info", "run: " + line);
    }
  }

  bool asks() const override { return settings_.policy.unknown == rules::UnknownMode::ask; }

  void ask_on(sandbox::TerminalAsker* asker) override {
    if (!gate_ || !asks()) {
      return;
    }
    ask::QuestionBoard& board = gate_->questions();
    if (asker != nullptr && !asking_) {
      {
        std::lock_guard lock(slot_->mutex);
        slot_->asker = asker;
      }
      // Questions the terminal cannot take (its queue is full) wait for another answer or
      // their timeout, as on the admin endpoint.
      board.set_listener([slot = slot_, &board, by = answering_user() + " via the terminal"](
                             const ask::PendingQuestion& question) {
        std::lock_guard lock(slot->mutex);
        if (slot->asker != nullptr && !slot->watched.load()) {
          slot->asker->ask(unless_watched(terminal_question(board, question, by), slot));
        }
      });
      board.add_answerer();
      asking_ = true;
      gate_->log().note("info", "ask: questions are asked on the terminal of " + answering_user());
    } else if (asker == nullptr && asking_) {
      board.set_listener({});
      {
        std::lock_guard lock(slot_->mutex);
        slot_->asker = nullptr;
      }
      board.remove_answerer();
      asking_ = false;
    }
  }

  void stores_attempted(std::vector<sandbox::StoreAttempt> attempts, bool complete) override {
    store_attempts_ = std::move(attempts);
    store_attempts_complete_ = complete;
  }
  void audited(sandbox::GitAudit audit) override { audit_ = std::move(audit); }
  const sandbox::GitAudit& audit() const { return audit_; }
  const std::vector<sandbox::StoreAttempt>& store_attempts() const { return store_attempts_; }
  bool store_attempts_complete() const { return store_attempts_complete_; }

  // What the gate refused while it ran (all of it, aggregated; see log::DenialTally); empty
  // when it never opened.
  log::DenialCounts denials() const {
    return gate_ ? gate_->log().denials().counts() : log::DenialCounts{};
  }
  // What went where and what the budgets spent (render_budget_summary); "" without budgets or
  // when the gate never opened.
  std::string budget_summary() const {
    if (!gate_) {
      return {};
    }
    return render_budget_summary(gate_->log().traffic().counts(),
                                 gate_->current_policy()->budgets(), gate_->budgets());
  }

 private:
  // `sandgate watch`: the gate's admin routes on a socket of this user's only, outside the
  // sandbox (run_sockets.hpp). Without it the run goes on; watch just cannot attach.
  void serve_watch() {
    auto folder = make_run_sockets_folder();
    const std::string path = folder ? run_socket_path(*folder, ::getpid()) : std::string();
    if (path.empty()) {
      gate_->log().note("warning", "sandgate watch cannot attach to this run: " +
                                       (folder ? "the socket path is too long" : folder.error()));
      return;
    }
    gate::PrivateAdmin watch{path, about_,
                             [this](std::size_t answering) { watch_attached(answering > 0); }};
    if (auto error = gate_->start_private_admin(watch)) {
      report(*error);
    }
  }

  // A watch that answers came (or the last one went): questions go to it, and the terminal is
  // left alone; when it goes, the terminal asks again, starting with what waits now. Admin
  // thread.
  void watch_attached(bool attached) {
    if (!asks() || slot_->watched.load() == attached) {
      return;
    }
    ask::QuestionBoard& board = gate_->questions();
    slot_->watched.store(attached);
    if (attached) {
      board.add_answerer();
      gate_->log().note("info", "ask: questions go to sandgate watch while it is attached");
      return;
    }
    board.remove_answerer();
    gate_->log().note("info", "ask: sandgate watch left; questions are asked on the terminal");
    std::lock_guard lock(slot_->mutex);
    if (slot_->asker != nullptr) {
      for (const auto& question : board.pending()) {
        slot_->asker->ask(unless_watched(
            terminal_question(board, question, answering_user() + " via the terminal"), slot_));
      }
    }
  }

  static void report(const gate::GateError& error) {
    if (!error.logged) {
      say(error.message);
    }
  }

  const settings::Settings& settings_;
  const settings::Sources& sources_;
  std::shared_ptr<const secrets::MaskedSecrets> secrets_;
  std::unique_ptr<gate::Gate> gate_;
  sandbox::CaptureSockets capture_;  // handed over before start()
  std::shared_ptr<AskerSlot> slot_ = std::make_shared<AskerSlot>();
  std::string about_ = run_about({});  // GET /about on the private socket
  bool asking_ = false;                // the terminal is one of the board's answerers
  std::vector<sandbox::StoreAttempt> store_attempts_;
  bool store_attempts_complete_ = true;
  sandbox::GitAudit audit_;
};

// A log file of its own for this run, under $XDG_STATE_HOME/sandgate/runs (else
// ~/.local/state/sandgate/runs), made private to the user; "" if it cannot be made.
std::string run_log_path(const std::string& home) {
  const char* state = std::getenv("XDG_STATE_HOME");
  std::string folder =
      state != nullptr && state[0] == '/' ? std::string(state) : home + "/.local/state";
  folder += "/sandgate/runs";
  std::error_code ec;
  std::filesystem::create_directories(folder, ec);
  if (ec || ::chmod(folder.c_str(), 0700) != 0) {
    return {};
  }
  char stamp[32] = {};
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  ::localtime_r(&now, &local);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &local);
  return folder + "/run-" + stamp + "-" + std::to_string(::getpid()) + ".log";
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) {
    out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

// The well-known credential variables of the caller's environment (ANTHROPIC_API_KEY,
// GITHUB_TOKEN, ...; known_credentials.hpp) that no --secret names are kept outside by default:
// each is masked for its API's hosts as `--secret NAME` would, and one that cannot be masked (too
// short or plain for a sentinel) is left out of the command's environment. An agent's own key is
// what a prompt injection wants most; with it masked, the command can use it only on its API.
// With --mask-known-secrets=false each passes in the clear, named in a warning.
void keep_known_credentials_outside(settings::Settings& settings) {
  const auto environment = [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    return value == nullptr ? std::nullopt : std::optional<std::string>(value);
  };
  std::vector<std::string> masked;
  std::vector<std::string> left_out;
  std::vector<std::string> passed;
  std::vector<std::string> named;
  for (const auto& spec : settings.secrets) {
    named.push_back(spec.name);
  }
  for (const secrets::KnownCredential* known : secrets::known_credentials_set(environment, named)) {
    const std::string name(known->variable);
    if (!settings.mask_known_secrets) {
      passed.push_back(name);
      continue;
    }
    auto spec = secrets::parse_secret_spec(name);
    if (spec && secrets::can_mask(*environment(name))) {
      settings.secrets.push_back(std::move(*spec));
      masked.push_back(name);
    } else {
      ::unsetenv(name.c_str());
      left_out.push_back(name);
    }
  }
  if (!masked.empty()) {
    say("keys kept outside: " + joined(masked) +
        " (the command holds sentinels; the gate fills the real values in for their APIs; "
        "--mask-known-secrets=false passes them in the clear)");
  }
  if (!left_out.empty()) {
    say("left out of the command's environment (too short or too plain to mask): " +
        joined(left_out));
  }
  if (!passed.empty()) {
    say("warning: " + joined(passed) +
        " pass into the sandbox in the clear (--mask-known-secrets=false); drop that flag, or "
        "name each with --secret NAME, to keep them outside");
  }
}
}  // namespace

int run_run(const settings::Settings& given, const settings::Sources& sources,
            sandbox::RunOptions options) {
  // While the command runs, the gate's lines would be interleaved with its output on the
  // terminal (and staircased by the relay's raw mode): when standard error is a terminal and no
  // log file is given, they go to a log file of the run, named before the command starts and
  // after it ends.
  settings::Settings settings = given;
  const std::string home = settings::home_directory();
  std::string run_log;
  if (settings.log_file.empty() && ::isatty(STDERR_FILENO) == 1) {
    run_log = run_log_path(home);
    if (run_log.empty()) {
      say("cannot make a log folder under " + home +
          "/.local/state/sandgate: the gate's lines go to this terminal");
    } else {
      settings.log_file = run_log;
      say("the gate's log of this run: " + run_log);
    }
  }
  options.sandbox = settings.sandbox;
  options.gate = gate_view(settings);
  options.home = home;
  // The masked credentials are read now: the command's environment holds their sentinels.
  keep_known_credentials_outside(settings);
  auto secrets = gate::load_masked_secrets(settings);
  if (!secrets) {
    say(secrets.error());
    return sandbox::kRunFailed;
  }
  for (const auto& secret : (*secrets)->all()) {
    options.gate.masked_variables.push_back({secret.spec.name, secret.value, secret.sentinel});
  }
  // Nothing of this process shows a real value from now on, neither to the command (its
  // environment is made from this one) nor to `ps -E` or /proc/PID/environ.
  secrets::mask_process_strings(**secrets);
  if (!settings.request_rules_path.empty() || !settings.inspect.empty() ||
      !settings.secrets.empty()) {
    // The gate inspects: the command's tools are pointed at its CA (with the system's roots).
    auto ca = inspect::CertificateAuthority::open(inspect_ca_folder(settings), 1);
    if (!ca) {
      say("inspection: " + ca.error());
      return sandbox::kRunFailed;
    }
    auto bundle = inspect::write_trust_bundle(**ca);
    if (!bundle) {
      say("inspection: " + bundle.error());
      return sandbox::kRunFailed;
    }
    options.gate.ca_bundle = *bundle;
    auto java = inspect::write_java_trust_store(*bundle);
    if (!java) {
      say("inspection: " + java.error());
      return sandbox::kRunFailed;
    }
    options.gate.java_trust_store = *java;
  }
  RunGate gate(settings, sources, *secrets);
  gate.name_for_watch(options.command);
  const int status = sandbox::run_confined(options, gate);
  // The command has exited and the gate has stopped (its log still open): tell the person what
  // was refused, on run's standard error, after anything the command printed. Nothing when
  // nothing was.
  std::cerr << render_run_summary(gate.denials(), settings) << gate.budget_summary()
            << render_store_attempts(gate.store_attempts(), gate.store_attempts_complete())
            << render_git_audit(gate.audit()) << std::flush;
  if (!run_log.empty()) {
    say("the gate's log of this run: " + run_log);
  }
  return status;
}

}  // namespace sandgate::commands
