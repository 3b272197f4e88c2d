// The gate's own process holds no real secret where another process of the user's can read it:
// once the secrets are read (masked_secrets.hpp), every variable of this process that holds one,
// in any form responses are cleaned of (the value, base64, %-encoded, a copy under another name),
// holds the masked form instead, and so do the strings the kernel placed at exec: the initial
// environment and the arguments, which `/proc/PID/environ`, `/proc/PID/cmdline` and macOS's
// `ps -E` (KERN_PROCARGS2) read from the process's memory as it is now, whatever setenv() and
// unsetenv() did to `environ` since. They are overwritten in place, each form by its masked form
// of the same length, so the layout the kernel reports stays whole.
//
// A secret's source names no value (`--secret` takes $VARIABLE, @FILE or !COMMAND, never a
// literal); a command written with a literal in it (`!printf VALUE`) has the value blotted from
// the arguments all the same.
//
// Not thread-safe: call both from main()'s thread, before any other thread reads the
// environment.
#pragma once

#include "proxy/secrets/masked_secrets.hpp"

namespace sandgate::secrets {

// Notes where the arguments' and the initial environment's strings are. From main(), first,
// before anything changes the environment.
void note_process_strings(int argc, char** argv);

// After `secrets` are read: masks them in the environment (setenv) and in the noted strings.
void mask_process_strings(const MaskedSecrets& secrets);

}  // namespace sandgate::secrets
