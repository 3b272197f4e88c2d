// What `run` checks, and makes, before anything of a confined run starts (run_confined.cpp): a
// way out among the inherited streams, the home as the working folder, the --allow-write folders
// that do not exist yet. Each refusal says why and what to do instead.
#pragma once

#include <string>
#include <vector>

#include "rules/expected.hpp"

namespace sandgate::sandbox {

// The command inherits the standard streams that are not a terminal. One that is a socket able
// to reach beyond the confinement (an IP socket of the host's network: an inetd or
// socket-activation caller; an unconnected unix datagram socket, which can send to any path) is
// a way out: the error names it and says what to give instead. Pipes, files, terminals and
// connected unix sockets (a journal stream) are fine.
Expected<bool, std::string> refuse_socket_streams();

// The working folder is writable inside, so started in the home folder (or a folder above it)
// the command could write every place there that runs code later and that no list names: a
// Python user-site .pth, an editor's or a package manager's configuration, a direnvrc. That is
// refused (the error says so and what to do) unless the user gave the folder with --allow-write
// (`allow_writes`, resolved), and so takes it knowingly; then a warning is said. `/` itself is
// never writable: started there, nothing is. Checks $HOME (`home`) and the passwd entry's home.
Expected<bool, std::string> refuse_home_as_working_folder(
    const std::string& working_folder, const std::string& home,
    const std::vector<std::string>& allow_writes);

// Makes each --allow-write folder (`paths`, as given) that does not exist yet, with its missing
// parents (mode 0700), so that the grant is not lost: an agent that makes its folder on its first
// run (~/.codex) finds it writable. Returns the folders it made, for the start-up line; the error
// names a path that could not be made and why. A path that exists is left as it is. Nothing is
// made through a symbolic link inside `home` or the `working_folder` (a cloned project's
// `tools -> ~/.local/lib/python3.11` would have the folder made, and granted, where Python runs
// code from): that is refused, naming the link and where it leads; so is a path that is a
// dangling link.
Expected<std::vector<std::string>, std::string> make_missing_write_folders(
    const std::vector<std::string>& paths, const std::string& home,
    const std::string& working_folder);

}  // namespace sandgate::sandbox
