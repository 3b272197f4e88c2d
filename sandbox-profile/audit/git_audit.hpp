// What the check of the git folders and working folders after a confined run did and found
// (git_quarantine.hpp does it), as `run`'s exit summary shows it.
#pragma once

#include <string>
#include <vector>

namespace sandgate::sandbox {

struct GitAudit {
  std::vector<std::string> actions;   // "PATH -> PATH.sandgate-quarantine-RANDOM", "PATH restored"
  std::vector<std::string> hidden;    // index entries hidden from git status during the run
  std::vector<std::string> auto_run;  // "PATH (new)", "PATH (changed)", "PATH (removed)"
  std::vector<std::string> incomplete;  // "FOLDER (stopped at PATH)"
  // What should have been moved aside or put back and could not be: "PATH (why; made
  // unreadable)". git, an editor or a shell there would still obey it.
  std::vector<std::string> unmoved;
};

}  // namespace sandgate::sandbox
