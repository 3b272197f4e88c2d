#!/usr/bin/env bash
# Installs the real coding agents the agent benchmarks run inside `sandgate run`, at pinned
# versions, with npm, into one folder of the user's cache (nothing global):
#   ${XDG_CACHE_HOME:-$HOME/.cache}/sandgate-bench/agents/{claude-code,codex}/node_modules/.bin/
# The only step of bench/agents that needs the network (the npm registry); run.sh itself runs
# offline. Idempotent: a version already installed is left as it is. Other versions:
#   CLAUDE_CODE_VERSION=2.1.197 CODEX_VERSION=0.171.0 bench/agents/install.sh
set -euo pipefail
claude_code_version=${CLAUDE_CODE_VERSION:-2.1.332}
codex_version=${CODEX_VERSION:-0.171.0}
agents=${XDG_CACHE_HOME:-$HOME/.cache}/sandgate-bench/agents
command -v npm >/dev/null || { echo "install.sh: npm is needed (apt-get install npm)" >&2; exit 1; }

# install FOLDER PACKAGE VERSION: PACKAGE@VERSION into FOLDER/node_modules, unless it is there.
install() {
  local folder=$agents/$1 package=$2 version=$3
  local manifest=$folder/node_modules/$package/package.json
  if [[ -f $manifest ]] && [[ $(node -p "require('$manifest').version") == "$version" ]]; then
    echo "install.sh: $package $version already in $folder"
    return
  fi
  mkdir -p "$folder"
  [[ -f $folder/package.json ]] || printf '{"private":true}\n' >"$folder/package.json"
  # --prefix keeps it in FOLDER; the cache and the audit/fund calls stay out of the way.
  npm install --prefix "$folder" --no-audit --no-fund --save-exact "$package@$version" >&2
  echo "install.sh: $package $version installed in $folder"
}
install claude-code @anthropic-ai/claude-code "$claude_code_version"
install codex @openai/codex "$codex_version"
"$agents/claude-code/node_modules/.bin/claude" --version
"$agents/codex/node_modules/.bin/codex" --version
