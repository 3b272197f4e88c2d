// The parent's side of the namespace's init (confined_init.hpp), the Linux confinement applied:
// `run` clones the init, which confines itself as planned (confinement_plan.hpp) and hands over,
// on a channel of their own, in this order: the gate's listener and what it found
// (NamespaceReport), the watch over the hidden credential stores, the unix-socket supervisor's
// listener, the command's terminal, the capture's sockets; after the gate has started, the
// forwarded ports' listeners and the inbound connector. Then the self-probe, and "go".
// Nothing here knows the gate or the terminal's relay: what is handed over is handed on by
// `run` (run/run_isolated.cpp). Internal to `sandgate run`; `run`'s main thread.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "rules/expected.hpp"
#include "sandbox-profile/linux/confinement_plan.hpp"
#include "sandbox-profile/linux/linux_namespaces.hpp"
#include "sandbox-profile/linux/store_reads.hpp"
#include "sandbox-profile/linux/unix_connect_guard.hpp"
#include "sandbox-profile/plan/run_options.hpp"
#include "sandbox-profile/process/capture_sockets.hpp"
#include "sandbox-profile/process/run_support.hpp"

namespace sandgate::sandbox {

// What the init hands over before the gate starts. Owns its descriptors but the listener's
// (the gate takes that one over).
struct Handover {
  NamespaceReport report;
  int listener = -1;                            // the gate's, listening in the namespace
  std::unique_ptr<StoreReadWatch> store_reads;  // the attempts on hidden stores; null: none
  std::unique_ptr<UnixConnectGuard> guard;      // the unix-socket supervisor; null: none
  int pty_master = -1;                          // the command's terminal; -1: none
  CaptureSockets capture;                       // the capture's sockets; empty: no capture
};

class ConfinedChild {
 public:
  // Clones the namespace's init, which runs confined_init() with `confinement` (planned for
  // `options`), `helper` (sandgate-connect), the signal state to give CMD back and the set it
  // passes on, and `tty_streams` (which standard streams get the relayed terminal; 0: none).
  // The signals must be blocked already (take_run_signals()). The error says why.
  static Expected<std::unique_ptr<ConfinedChild>, std::string> start(const Confinement& confinement,
                                                                     const RunOptions& options,
                                                                     const std::string& helper,
                                                                     const RunSignals& signals,
                                                                     unsigned tty_streams);

  ~ConfinedChild();  // abandon()s unless the command ran
  ConfinedChild(const ConfinedChild&) = delete;
  ConfinedChild& operator=(const ConfinedChild&) = delete;

  pid_t pid() const { return pid_; }

  // What the init hands over before the gate starts, as `confinement` and the run ask for (a
  // terminal when `pty`, the capture's sockets when `capture`). The error is for the user.
  Expected<Handover, std::string> receive_handover(const Confinement& confinement, bool pty,
                                                   bool capture);

  // The listeners of --allow-localhost-port `ports`, in their order: (port, listener) each.
  Expected<std::vector<std::pair<std::uint16_t, int>>, std::string> receive_outbound(
      const std::vector<std::uint16_t>& ports);
  // The connector of --allow-inbound-port (linux/inbound_connector.hpp).
  Expected<int, std::string> receive_connector();

  // The self-probe, against a host socket made now where the command could see it (under
  // `home` or the `runtime_dir`), after the confinement (as a daemon's restart would make one).
  // The error says how the probe got out, or that the init ended during it.
  Expected<bool, std::string> pass_self_probe(const std::string& home,
                                              const std::string& runtime_dir);

  // Lets CMD start: the init runs it and supervises it from now on. False when the init is gone.
  bool go();

  // Ends the init (it waits for the next message and exits when the channel closes) and reaps
  // it. Returns kRunFailed. Idempotent.
  int abandon();

 private:
  ConfinedChild(pid_t pid, int channel) : pid_(pid), channel_(channel) {}

  pid_t pid_;
  int channel_;            // -1 once closed
  bool released_ = false;  // go() succeeded or abandon() reaped it: nothing left to end
};

}  // namespace sandgate::sandbox
