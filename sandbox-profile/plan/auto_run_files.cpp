// The files tools run or trust by themselves. See auto_run_files.hpp.
#include "sandbox-profile/plan/auto_run_files.hpp"

#include <array>

namespace sandgate::sandbox {
namespace {

constexpr std::array kNames = {
    // Editors. VS Code runs tasks marked runOn: folderOpen, takes interpreters, terminal
    // profiles and formatters from settings, starts the MCP servers mcp.json names and offers
    // the extensions extensions.json recommends; a dev container's initializeCommand runs on
    // the host when the folder is opened in one; JetBrains' run configurations and startup
    // tasks, Zed's tasks and settings; vim's and neovim's exrc and Emacs' directory variables
    // (eval) run when a file there is opened.
    AutoRunName{".vscode/tasks.json"},
    AutoRunName{".vscode/settings.json"},
    AutoRunName{".vscode/launch.json"},
    AutoRunName{".vscode/extensions.json"},
    AutoRunName{".vscode/mcp.json"},
    AutoRunName{".devcontainer", true},
    AutoRunName{".devcontainer.json"},
    AutoRunName{".idea", true},
    AutoRunName{".zed", true},
    AutoRunName{".nvim.lua"},
    AutoRunName{".nvimrc"},
    AutoRunName{".exrc"},
    AutoRunName{".dir-locals.el"},
    // Shells: direnv runs .envrc when the user enters the folder; mise (and asdf) read their
    // files in every folder above the one entered: mise.toml's hooks and env run code, and a
    // tool version may be a path (`python path:/tmp/x`). .python-version picks the interpreter
    // pyenv and uv run, among those installed; it is only named.
    AutoRunName{".envrc"},
    AutoRunName{"mise.toml"},
    AutoRunName{".mise.toml"},
    AutoRunName{"mise.local.toml"},
    AutoRunName{".mise.local.toml"},
    AutoRunName{".mise", true},
    AutoRunName{".config/mise", true},
    AutoRunName{".config/mise.toml"},
    AutoRunName{".tool-versions"},
    AutoRunName{".python-version", false, false},
    // Package managers: their project configuration names the registries they trust and
    // programs they run: .npmrc's node-options and script-shell, yarn's yarnPath and plugins,
    // pnpm's hooks file, bun's preload scripts, cargo's rustc-wrapper, runners and aliases, uv's
    // indexes.
    AutoRunName{".npmrc"},
    AutoRunName{".yarnrc.yml"},
    AutoRunName{".yarnrc"},
    AutoRunName{".pnpmfile.cjs"},
    AutoRunName{"bunfig.toml"},
    AutoRunName{".cargo/config.toml"},
    AutoRunName{".cargo/config"},
    AutoRunName{"uv.toml"},
    // Git's helpers: submodule URLs, and the hooks that pre-commit, husky and lefthook run at
    // the user's next commit from the files in the working folder.
    AutoRunName{".gitmodules"},
    AutoRunName{".pre-commit-config.yaml"},
    AutoRunName{".husky", true},
    AutoRunName{"lefthook.yml"},
    AutoRunName{".lefthook.yml"},
    // Agents: their settings (hooks and MCP servers run commands) and the instructions they
    // follow in the folder they work in.
    AutoRunName{".claude", true},
    AutoRunName{".mcp.json"},
    AutoRunName{"CLAUDE.md"},
    AutoRunName{"CLAUDE.local.md"},
    AutoRunName{"AGENTS.md"},
    AutoRunName{".goosehints"},
    AutoRunName{".gemini", true},
    AutoRunName{"GEMINI.md"},
    AutoRunName{".cursor", true},
    AutoRunName{".cursorrules"},
    AutoRunName{".windsurfrules"},
    AutoRunName{".github/copilot-instructions.md"},
    AutoRunName{".github/instructions", true},
};

// `relative` is `name`, or ends with "/" + `name`.
bool ends_with_component(std::string_view relative, std::string_view name) {
  return relative.ends_with(name) &&
         (relative.size() == name.size() || relative[relative.size() - name.size() - 1] == '/');
}

bool matches(std::string_view relative, bool folder) {
  for (const auto& name : kNames) {
    if (name.folder == folder && ends_with_component(relative, name.path)) {
      return true;
    }
  }
  return false;
}

// `relative` ends with a folder on the way to a listed path: ".vscode" for ".vscode/tasks.json",
// ".config" for ".config/mise".
bool on_the_way(std::string_view relative) {
  for (const auto& name : kNames) {
    for (auto slash = name.path.find('/'); slash != std::string_view::npos;
         slash = name.path.find('/', slash + 1)) {
      if (ends_with_component(relative, name.path.substr(0, slash))) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

std::span<const AutoRunName> auto_run_names() { return kNames; }

bool is_auto_run_file(std::string_view relative) { return matches(relative, false); }

bool is_auto_run_folder(std::string_view relative) { return matches(relative, true); }

bool is_auto_run_name(std::string_view relative) {
  return matches(relative, false) || matches(relative, true) || on_the_way(relative);
}

bool is_auto_run_path(std::string_view relative) {
  if (is_auto_run_file(relative)) {
    return true;
  }
  for (auto slash = relative.find('/'); slash != std::string_view::npos;
       slash = relative.find('/', slash + 1)) {
    if (is_auto_run_folder(relative.substr(0, slash))) {
      return true;
    }
  }
  return false;
}

}  // namespace sandgate::sandbox
