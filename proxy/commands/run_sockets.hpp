// Where `sandgate run` serves its private admin socket and where `sandgate watch` finds it:
// $XDG_RUNTIME_DIR/sandgate/runs/<pid>.sock (else /tmp/sandgate-<uid>/runs/<pid>.sock), in
// folders of this user's only (0700). Both places are private, empty folders inside every
// `run`'s sandbox (sandbox-profile/plan/unix_sockets.hpp), so no confined command sees them.
// Thread-safe (file system calls only).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "rules/expected.hpp"

namespace sandgate::commands {

// The folder, whether it exists or not.
std::string run_sockets_folder();

// Makes the folder (and its parents under the runtime folder) when missing, and checks that it
// is a real folder (not a link) owned by this user that nobody else may enter. Returns it, or
// why it cannot be used.
Expected<std::string, std::string> make_run_sockets_folder();

// The socket of the run whose process is `pid`, in `folder`; "" when the path is too long for
// a unix socket address.
std::string run_socket_path(const std::string& folder, pid_t pid);

struct RunSocket {
  pid_t pid = 0;
  std::string path;
};

// The sockets in the folder whose run still lives, by pid.
std::vector<RunSocket> list_run_sockets();

}  // namespace sandgate::commands
