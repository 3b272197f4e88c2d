// The places a confined command must not write: the gate's own configuration and executables
// (always), and with protect_files (GOOSE_SANDBOX_PROTECT_FILES, on by default) every place that
// runs code later, outside the sandbox: shell start-up files, git's configuration and the hooks
// and configuration of the repository being worked on, the keys and configuration in ~/.ssh and
// ~/.gnupg, login agents, systemd and D-Bus user units, the folders on PATH, goose's config.
//
// One list serves both confinements: the Seatbelt profile (macOS) and Landlock (Linux), so the
// two cannot drift apart. protected_paths() is pure and thread-safe; the helpers below it that
// say "reads the file system" are not pure (and are thread-safe unless the working folder or
// the environment change while they run).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sandgate::sandbox {

enum class Platform : unsigned char { macos, linux };

struct ProtectedPath {
  std::string path;   // absolute and normal
  bool tree = false;  // true: the folder and everything below it; false: this one path
  // True for the gate's own configuration and executables, protected whatever protect_files
  // says: they decide where the sandbox may connect, and sandgate reloads its lists live.
  bool always = false;
};

struct ProtectionInputs {
  std::string home;  // absolute and normal
  bool protect_files = true;
  Platform platform = Platform::macos;
  // The files the running gate reads (blocklist, allowlist, config file, log file): protected
  // as single paths unless a protected folder already covers them. Empty entries are skipped.
  std::vector<std::string> gate_files{};

  // The folder the command starts in (absolute, normal, resolved; "" if unknown). PATH folders
  // inside it are left writable (they are the work itself: node_modules/.bin, a venv's bin),
  // unless it is the home folder or a folder above it.
  std::string working_directory{};
  // The git folders of the repository enclosing working_directory, as enclosing_git_dirs()
  // finds them: each one's hooks/ (tree), config and config.worktree are protected (git runs
  // hooks, core.fsmonitor, core.pager, aliases... from them, later, outside the sandbox).
  std::vector<std::string> git_dirs{};
  // $PATH's folders (absolute, resolved), e.g. from path_folders(): each is protected as a tree
  // (a program dropped there runs the next time the user types its name), except "/", folders
  // that contain the home or the working folder, and folders inside the working folder.
  std::vector<std::string> path_entries{};
  // sandgate's own executables (sandgate, sandgate-connect), resolved: protected always.
  std::vector<std::string> own_executables{};
};

// The protected paths, in a fixed order (the gate's configuration first), without duplicates and
// without paths that a protected folder earlier in the list already covers.
std::vector<ProtectedPath> protected_paths(const ProtectionInputs& inputs);

// True if `path` is `folder` or lies below it (component-wise: /a/bc is not below /a/b).
bool is_within(const std::string& path, const std::string& folder);

// The absolute entries of a PATH-style list ("a:b:c"), trailing slashes removed, in order,
// without duplicates. Relative and empty entries (the current folder) are left out: they are
// the working folder, which the command may write anyway. Pure.
std::vector<std::string> split_path_list(std::string_view list);

// --- helpers that read the file system or the process ------------------------------------

// `path` with every symbolic link resolved as far as the path exists, following dangling links
// too (a link to a missing file is resolved to where a write would land), made normal. Paths
// that are not absolute are returned unchanged. Reads the file system.
std::string resolve_links(const std::string& path);

// The git folders of the repository that encloses `working_directory` (found by walking up to
// the first folder holding `.git`): the `.git` folder, or for a linked worktree or a submodule
// (`.git` is a file, `gitdir: ...`) its git folder and the common folder named by `commondir`.
// Empty outside a repository. Reads the file system.
std::vector<std::string> enclosing_git_dirs(const std::string& working_directory);

// The top of the working tree that encloses `working_directory` (the first folder, walking up,
// that holds `.git`); "" outside a repository. Reads the file system.
std::string enclosing_worktree(const std::string& working_directory);

// What tools run or trust when the user opens `folder` (absolute and normal) later, outside the
// sandbox (auto_run_files.hpp: editors' tasks and settings, direnv's .envrc, mise's and package
// managers' configuration, agents' settings and instructions, pre-commit's and husky's hooks):
// the names marked read-only, at the top of `folder`. As protected paths (folders as trees), in
// a fixed order. Pure.
std::vector<ProtectedPath> auto_run_paths(const std::string& folder);

// $PATH's absolute folders, resolved. Reads the environment and the file system.
std::vector<std::string> path_folders();

// This executable and sandgate-connect beside it, resolved. Reads the process and the file
// system.
std::vector<std::string> own_executables();

// For each protected path that is, or lies below, a symbolic link: the resolved spelling, with
// the same flags (Seatbelt matches the path after links are resolved: ~/.zshrc -> dotfiles/zshrc
// is written as dotfiles/zshrc, so both spellings are protected). Paths that resolve to
// themselves are left out. Reads the file system.
std::vector<ProtectedPath> resolved_spellings(const std::vector<ProtectedPath>& paths);

// `inputs` with working_directory (the current folder), git_dirs, path_entries and
// own_executables filled in from this process. Reads the process and the file system.
ProtectionInputs with_process_inputs(ProtectionInputs inputs);

}  // namespace sandgate::sandbox
