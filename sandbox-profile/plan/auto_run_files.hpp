// The files in a working folder that tools run or trust by themselves, later, outside the
// sandbox: when the user opens the folder in an editor, enters it in a shell (direnv, mise), runs
// a package manager or a build there, or starts an agent there. Not the project's code (which
// the user runs knowingly), but the settings that make a tool run something, or trust a
// registry, an interpreter or an instruction, without being asked.
//
// Two uses, one list (the README's table mirrors it):
//   - at the top of the working folder and --allow-write folders, each `read_only` name is
//     protected (auto_run_paths() in protected_paths.hpp: bound read-only on Linux where it
//     exists, denied on macOS whether it exists or not);
//   - at every depth, each name is judged after the run (git_quarantine.hpp): new, changed or
//     removed, it is named in the exit summary. Most of these tools read them below the top too:
//     direnv's `.envrc` in every folder the user enters, cargo's `.cargo/config.toml` in every
//     folder above a crate, npm's `.npmrc` in each package's folder, mise's files in every
//     folder above, an agent's instructions in the folder it works in. A symbolic link at one of
//     these names (or at a folder on the way to one, `.vscode`) is named with where it leads
//     and which of these files it finds there.
// Pure; thread-safe.
#pragma once

#include <span>
#include <string_view>

namespace sandgate::sandbox {

struct AutoRunName {
  std::string_view path;  // relative, "/"-separated: ".envrc", ".cargo/config.toml", ".idea"
  bool folder = false;    // true: every file below it
  // True: protected at the top. False: only named when new or changed (a file the work itself
  // writes as often as not, whose power is small: `uv python pin` writes .python-version).
  bool read_only = true;
};

// The list, in a fixed order.
std::span<const AutoRunName> auto_run_names();

// `relative`: a file's path below a working folder ("a/b/.envrc", ".vscode/mcp.json"). True when
// it ends with a listed file's path, at whatever depth ("sub/.cargo/config.toml").
bool is_auto_run_file(std::string_view relative);

// `relative`: a folder's path below a working folder. True when it ends with a listed folder's
// path ("packages/web/.idea"): every file below it is judged.
bool is_auto_run_folder(std::string_view relative);

// `relative`: an entry's path below a working folder. True when a tool looks it up by that name:
// a listed file or folder, or a folder on the way to a listed file (".vscode" for
// ".vscode/tasks.json", ".cargo", ".config", ".github"). A symbolic link there leads the tool
// wherever it points (`sub/.vscode -> ../assets`: assets/tasks.json runs on folder open).
bool is_auto_run_name(std::string_view relative);

// `relative`: a file's path below a working folder. True when a tool reads it: a listed file, or
// any file below a listed folder, at whatever depth (".claude/commands/x.md").
bool is_auto_run_path(std::string_view relative);

}  // namespace sandgate::sandbox
