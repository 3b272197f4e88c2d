// `sandgate run` on Linux, the parent's side: plans the confinement, clones the namespace's init
// (confined_init.hpp), starts the gate on the listener it hands over, sets up the forwarded ports
// and the terminal, runs the self-probe, lets CMD start, supervises it, then stops the gate and
// moves new .git entries aside. Internal to `sandgate run`.
#pragma once

#include "sandbox-profile/plan/run_options.hpp"
#include "sandbox-profile/run/gate_handle.hpp"

namespace sandgate::sandbox {

// Returns CMD's exit status, 128+N if it died of signal N, or kRunFailed.
int run_isolated(const RunOptions& options, GateHandle& gate);

}  // namespace sandgate::sandbox
