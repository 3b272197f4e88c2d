// `sandgate run`: the gate side. See run.hpp.
#include "proxy/commands/run.hpp"

#include <iostream>
#include <memory>

#include "proxy/commands/run_summary.hpp"
#include "proxy/commands/sandbox_view.hpp"
#include "proxy/gate/gate.hpp"

namespace sandgate::commands {
namespace {

void say(const std::string& text) { std::cerr << "sandgate run: " << text << std::endl; }

// The Gate as the confinement drives it: opened before the fork, started on the listener the
// confinement hands over, stopped when CMD has ended.
class RunGate final : public sandbox::GateHandle {
 public:
  RunGate(const settings::Settings& settings, const settings::Sources& sources)
      : settings_(settings), sources_(sources) {}

  bool open() override {
    gate::GateOptions options{settings_, sources_, settings::MissingDefaultBlocklist::create};
    options.without_token = true;  // see GateOptions::without_token
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
      if (auto adopted = gate_->server().adopt_capture(std::move(capture_)); !adopted) {
        gate_->log().note("error", adopted.error());
        say(adopted.error());
        return std::nullopt;
      }
    }
    // Signals are `run`'s to handle (they go to CMD): the gate runs without a handler of its own.
    gate_->start_thread();
    return gate_->port();
  }

  void stop() override {
    if (gate_) {
      gate_->stop();
    }
  }

  // What the gate refused while it ran (all of it, aggregated; see log::DenialTally); empty
  // when it never opened.
  log::DenialCounts denials() const {
    return gate_ ? gate_->log().denials().counts() : log::DenialCounts{};
  }

 private:
  static void report(const gate::GateError& error) {
    if (!error.logged) {
      say(error.message);
    }
  }

  const settings::Settings& settings_;
  const settings::Sources& sources_;
  std::unique_ptr<gate::Gate> gate_;
  sandbox::CaptureSockets capture_;  // handed over before start()
};

}  // namespace

int run_run(const settings::Settings& settings, const settings::Sources& sources,
            sandbox::RunOptions options) {
  options.sandbox = settings.sandbox;
  options.gate = gate_view(settings);
  options.home = settings::home_directory();
  RunGate gate(settings, sources);
  const int status = sandbox::run_confined(options, gate);
  // The command has exited and the gate has stopped (its log still open): tell the person what
  // was refused, on run's standard error, after anything the command printed. Nothing when
  // nothing was.
  std::cerr << render_run_summary(gate.denials(), settings) << std::flush;
  return status;
}

}  // namespace sandgate::commands
