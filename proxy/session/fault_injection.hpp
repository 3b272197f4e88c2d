// Named points on a session's path where a test can make the gate fail as an unexpected error
// would (an allocation failure, a bug): the test installs a hook that throws at the point it
// names, and checks that the connection still ends with a logged, counted outcome and that only
// that connection is affected. In the daemon no hook is installed, and a point costs one test of
// a null pointer.
#pragma once

#include <string_view>

namespace sandgate::session {

// Installed by tests before the gate starts, never while it runs.
using FaultHook = void (*)(std::string_view point);
inline FaultHook fault_hook = nullptr;

// The points: "admission-decided" (any front end's request allowed by the policy, before
// LaunchDarkly and the dial; session/admission.cpp), "tunnel-relay" (an established tunnel's relay,
// in a completion handler), "head-read" (a request head read, before anything is decided).
inline void fault_point(std::string_view point) {
  if (fault_hook != nullptr) {
    fault_hook(point);
  }
}

}  // namespace sandgate::session
