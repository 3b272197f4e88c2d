// The namespace's init, the child `sandgate run` clones on Linux: it enters the namespaces and
// confines itself as planned, hands the gate's listener (and the forwarded ports' and the
// terminal's descriptors) to the parent, passes the self-probe, waits for "go", then runs CMD in a
// session of its own and supervises it. Internal to `sandgate run`.
#pragma once

#include <signal.h>

#include <string>

#include "sandbox-profile/linux/confinement_plan.hpp"
#include "sandbox-profile/plan/run_options.hpp"
#include "sandbox-profile/process/run_support.hpp"

namespace sandgate::sandbox {

// The child, pid 1 of its namespaces: confine, hand the listeners over, pass the self-probe,
// wait for the gate, then run CMD in a session of its own and supervise it.
[[noreturn]] void confined_init(int channel, const Confinement& confinement,
                                const RunOptions& options, const std::string& helper,
                                const SignalState& previous, const sigset_t& set,
                                unsigned tty_streams);

}  // namespace sandgate::sandbox
