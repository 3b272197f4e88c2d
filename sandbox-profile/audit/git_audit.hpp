// What the check of the git folders and working folders after a confined run did and found
// (git_quarantine.hpp does it), as `run`'s exit summary shows it.
#pragma once

#include <string>
#include <vector>

namespace sandgate::sandbox {

struct GitAudit {
  std::vector<std::string> actions;     // "PATH -> PATH.sandgate-quarantine-N", "PATH restored"
  std::vector<std::string> hidden;      // index entries hidden from git status during the run
  std::vector<std::string> auto_run;    // "PATH (new)", "PATH (changed)", "PATH (removed)"
  std::vector<std::string> incomplete;  // "FOLDER (stopped at PATH)"
};

}  // namespace sandgate::sandbox
