// The command's attempts on the hidden credential stores, read when it has ended from the
// inotify instance the confined child made over their covers (private_view.hpp, StoreReads):
// each open of a hidden file's placeholder is a read, each open of a hidden folder a listing.
// Events wait in the kernel's queue during the run (16384 by default; identical events in a row
// are merged), so nothing runs while the command does.
#pragma once

#include <string>
#include <vector>

#include "sandbox-profile/linux/private_view.hpp"
#include "sandbox-profile/supervisor/run_options.hpp"

namespace sandgate::sandbox {

struct StoreAttempts {
  std::vector<StoreAttempt> attempts;  // most attempted first
  bool complete = true;                // false: the queue overflowed, some were dropped
};

// Reads every event queued on `watch` (non-blocking) and counts them per store. Opens of
// `shown` paths (what stays readable inside a hidden folder) are no attempts.
StoreAttempts read_store_attempts(int watch, const std::vector<StoreReads::Watched>& watched,
                                  const std::vector<std::string>& shown);

}  // namespace sandgate::sandbox
