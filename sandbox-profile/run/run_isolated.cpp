// `sandgate run` on Linux, the parent's side. See run_isolated.hpp.
//
// One way through: plan (what the confinement allows, decided before anything starts), apply
// (the namespace's init confines itself and hands over what the gate and the supervision need:
// linux/confined_child.hpp), supervise (the gate serves, the ports are forwarded, the self-probe
// passes, CMD runs with its terminal relayed), audit (what CMD left in the git folders and what
// it attempted on the hidden stores); each step takes only what the one before handed it.
//
// The order matters: everything that may fail is checked before CMD starts; clone() happens
// before the gate's threads start; the signals that are forwarded, and SIGCHLD, are blocked
// before it so that none is lost, and are taken synchronously in this thread.
#include "sandbox-profile/run/run_isolated.hpp"

#include <memory>
#include <optional>

#include "sandbox-profile/audit/git_quarantine.hpp"
#include "sandbox-profile/linux/confined_child.hpp"
#include "sandbox-profile/linux/confinement_plan.hpp"
#include "sandbox-profile/linux/store_watch.hpp"
#include "sandbox-profile/plan/resolved_path.hpp"
#include "sandbox-profile/process/run_support.hpp"
#include "sandbox-profile/run/terminal_questions.hpp"
#include "sandbox-profile/supervisor/port_forwarder.hpp"
#include "sandbox-profile/supervisor/pty_relay.hpp"

namespace sandgate::sandbox {
namespace {

// The plan, and what must be ready before the confinement is made.
struct Prepared {
  Confinement confinement;
  std::string helper;             // sandgate-connect, for the command's ssh
  std::unique_ptr<PtyRelay> pty;  // the terminal's relay; null: no stream is a terminal
};

// Plans the confinement for `options` and the user's `home` (resolved), checks that CMD is in
// view inside, opens the gate and prepares the terminal's relay. The error is the exit status
// (the reason said).
Expected<Prepared, int> prepare(const RunOptions& options, const std::string& home,
                                GateHandle& gate) {
  auto confinement = plan_confinement(options, home);
  if (!confinement) {
    say(confinement.error());
    return Unexpected{kRunFailed};
  }
  if (const std::string hidden =
          command_out_of_view(*confinement, options.command.front(), env_or_empty("PATH"));
      !hidden.empty()) {
    say(hidden);
    return Unexpected{kCommandNotFound};
  }
  Prepared prepared{std::move(*confinement), connect_helper(), nullptr};
  if (!gate.open()) {
    return Unexpected{kRunFailed};
  }
  if (PtyRelay::wanted()) {
    auto relay = PtyRelay::prepare();
    if (!relay) {
      say("cannot relay the terminal: " + relay.error());
      return Unexpected{kRunFailed};
    }
    prepared.pty = std::move(*relay);
  }
  return prepared;
}

// The `.git` entries and git folder entries before the command runs: new ones are moved aside
// after it (audit/git_quarantine.hpp).
GitSnapshot snapshot_before(const Confinement& confinement) {
  GitSnapshot before =
      snapshot_git(confinement.scanned, confinement.git_dirs, confinement.git_targets);
  for (const auto& [folder, stopped] : before.incomplete) {
    say("warning: " + folder + " is too large to check whole (stopped at " + stopped +
        "): what the command leaves there beyond that point will not be judged after the run");
  }
  return before;
}

// The forwarded ports: --allow-localhost-port's listeners and --allow-inbound-port's connector,
// as the child sends them, given to `forwarder`. False: it said why.
bool forward_ports(ConfinedChild& child, const SandboxFlags& flags, PortForwarder& forwarder) {
  auto outbound = child.receive_outbound(flags.allow_localhost_ports);
  if (!outbound) {
    say(outbound.error());
    return false;
  }
  for (const auto& [port, listener] : *outbound) {
    forwarder.forward_outbound(listener, port);
  }
  if (flags.allow_inbound_ports.empty()) {
    return true;
  }
  auto connector = child.receive_connector();
  if (!connector) {
    say(connector.error());
    return false;
  }
  for (auto forwarded : flags.allow_inbound_ports) {
    if (auto listening = forwarder.forward_inbound(forwarded, *connector); !listening) {
      say(listening.error());
      return false;
    }
  }
  return true;
}

// How the command is confined: in full to the run's log, and to the terminal one line (and
// every warning) unless --verbose asks for all of it.
void announce(const RunOptions& options, const Confinement& confinement,
              const NamespaceReport& report, std::uint16_t port, bool pty, GateHandle& gate) {
  std::vector<std::string> details =
      describe_protection(options.sandbox, confinement, report, port, pty);
  for (auto& line : describe_ports(options)) {
    details.push_back(std::move(line));
  }
  for (const auto& line : details) {
    gate.log_detail(line);
  }
  if (!options.verbose) {
    say(summarize_protection(confinement, report, port));
  }
  for (const auto& line : details) {
    if (options.verbose || line.starts_with("warning:")) {
      say(line);
    }
  }
}

// CMD's run: its terminal relayed, --unknown=ask's questions on the user's terminal (ended
// before the relay: the terminal's modes are restored in the reverse order they were set), "go"
// to the child, then waiting for it while passing signals on. CMD's exit status, or nothing
// when the child was gone before "go".
std::optional<int> run_command(ConfinedChild& child, PtyRelay* pty, GateHandle& gate,
                               const sigset_t& waited) {
  if (pty != nullptr) {
    pty->start();
  }
  TerminalQuestions questions(gate, pty);
  const auto stop_asking = [&]() {
    questions.stop();
    if (pty != nullptr) {
      pty->finish();
    }
  };
  if (!child.go()) {
    stop_asking();
    return std::nullopt;
  }
  const int status = supervise(child.pid(), waited, [pty] {
    if (pty != nullptr) {
      pty->resize();
    }
  });
  stop_asking();
  return status;
}

// After CMD: what it left in the git folders (moved aside or reported) and what it attempted on
// the hidden stores, for the gate's summary. kRunFailed when a hidden store was replaced outside
// during the run (the command was stopped for it); else `status`.
int audit(int status, const GitSnapshot& git_before, const Confinement& confinement,
          StoreReadWatch* store_reads, const StoreWatch& store_watch, GateHandle& gate) {
  gate.audited(quarantine_new_git_entries(git_before, confinement.scanned, confinement.git_dirs));
  if (store_reads != nullptr) {
    StoreAttempts attempts = store_reads->finish();
    gate.stores_attempted(std::move(attempts.attempts), attempts.complete);
  }
  // Replaced in a frozen folder: nothing of it showed inside, the command went on.
  for (const auto& noted : store_watch.noted()) {
    say("note: the hidden credential store " + noted +
        " was replaced outside during the run; its folder is frozen inside (the names as at "
        "start), so the command went on and saw nothing of it");
  }
  if (const std::string replaced = store_watch.replaced(); !replaced.empty()) {
    say("the command was stopped: the hidden credential store " + replaced +
        " was replaced outside during the run, which would have shown the new one inside; run "
        "it again to hide it (or --allow-read it)");
    return kRunFailed;
  }
  return status;
}

}  // namespace

int run_isolated(const RunOptions& options, GateHandle& gate) {
  // Plan.
  const std::string home = resolved_path(options.home);
  auto prepared = prepare(options, home, gate);
  if (!prepared) {
    return prepared.error();
  }
  const Confinement& confinement = prepared->confinement;
  PtyRelay* pty = prepared->pty.get();
  const GitSnapshot git_before = snapshot_before(confinement);

  // Apply: the namespace's init confines itself and hands over what the gate needs.
  const RunSignals signals = take_run_signals();
  auto child = ConfinedChild::start(confinement, options, prepared->helper, signals,
                                    pty != nullptr ? pty->terminal_streams() : 0);
  if (!child) {
    say(child.error());
    return kRunFailed;
  }
  // From now on a hidden credential store replaced outside ends the run, until the view says
  // which are frozen (store_watch.hpp).
  StoreWatch store_watch(confinement.hidden_stores, (*child)->pid());
  auto handover = (*child)->receive_handover(confinement, pty != nullptr, options.sandbox.capture);
  if (!handover) {
    say(handover.error());
    return (*child)->abandon();
  }
  // The view is built: a store in a frozen folder replaced from now on shows nothing inside.
  store_watch.settle(handover->report.frozen.settled, handover->report.frozen.folders);
  if (pty != nullptr) {
    pty->adopt(handover->pty_master);
  }
  if (options.sandbox.capture) {
    gate.serve_capture(std::move(handover->capture));
  }

  // Supervise: the gate serves, the ports are forwarded, the self-probe passes, CMD runs.
  const auto port = gate.start(handover->listener);
  if (!port) {
    return (*child)->abandon();
  }
  PortForwarder forwarder;
  const auto give_up = [&]() {
    forwarder.stop();
    gate.stop();
    return (*child)->abandon();
  };
  if (!forward_ports(**child, options.flags, forwarder)) {
    return give_up();
  }
  if (auto probed = (*child)->pass_self_probe(home, confinement.runtime_dir); !probed) {
    say(probed.error());
    return give_up();
  }
  announce(options, confinement, handover->report, *port, pty != nullptr, gate);
  const std::optional<int> status = run_command(**child, pty, gate, signals.waited);
  if (!status) {
    return give_up();
  }
  forwarder.stop();
  gate.stop();

  // Audit.
  return audit(*status, git_before, confinement, handover->store_reads.get(), store_watch, gate);
}

}  // namespace sandgate::sandbox
