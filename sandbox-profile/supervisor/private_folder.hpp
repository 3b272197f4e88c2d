// The run's private folder on the host's side (macOS under sandbox-exec): a fresh folder that
// belongs to this run alone, made under the user's temporary folder with mode 0700 and removed
// with everything in it when the run ends. The command gets it as $TMPDIR, and the Seatbelt
// profile lets it bind unix sockets there and nowhere else (ProfileOptions::private_folders): a
// socket bound in a shared place (/private/tmp, the user's $TMPDIR) could squat a name that a
// program outside connects to later (a tmux server's, an editor's). (On Linux the namespace's
// /tmp is private already: linux/private_view.hpp.)
//
// Not thread-safe; made and destroyed in `run`'s main thread, outside the sandbox.
#pragma once

#include <string>

#include "rules/expected.hpp"

namespace sandgate::sandbox {

class PrivateFolder {
 public:
  // Makes `sandgate-run.XXXXXX` below `parent` (the user's $TMPDIR; /tmp when it is empty), and
  // resolves it (on macOS /var/folders is /private/var/folders: Seatbelt matches resolved
  // paths). The error names the folder and the call that failed.
  static Expected<PrivateFolder, std::string> make(const std::string& parent);

  PrivateFolder(PrivateFolder&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
  }
  PrivateFolder& operator=(PrivateFolder&& other) noexcept;  // removes this one's folder first
  PrivateFolder(const PrivateFolder&) = delete;
  PrivateFolder& operator=(const PrivateFolder&) = delete;
  ~PrivateFolder() { remove(); }

  const std::string& path() const { return path_; }

 private:
  explicit PrivateFolder(std::string path) : path_(std::move(path)) {}
  // Removes the folder and everything in it, never following a link. Idempotent.
  void remove() noexcept;
  std::string path_;
};

}  // namespace sandgate::sandbox
