// The shared flags. See sandbox_flags.hpp.
#include "sandbox-profile/plan/sandbox_flags.hpp"

namespace sandgate::sandbox {

std::vector<std::string> gate_files(const GateView& gate) {
  std::vector<std::string> out;
  for (const std::string& path : gate.files) {
    if (!path.empty()) {
      out.push_back(resolved_path(path));
    }
  }
  return out;
}

}  // namespace sandgate::sandbox
