#!/usr/bin/env bash
# The real coding agents inside `sandgate run`, their API key masked, against fake APIs on
# loopback (bench/agents/README.md has the results). Installs nothing: run install.sh first.
#
#   bench/agents/run.sh claude|claude-tty|codex
#
#   claude      claude -p PROMPT (stream-json output, so each text delta is timestamped)
#   claude-tty  claude's interactive mode under tmux, twice with the same HOME: is the key
#               question asked again? (screens kept in the run folder)
#   codex       codex exec PROMPT, without its own sandbox (--sandbox danger-full-access)
#
# Everything runs in a network namespace with loopback only (scripts/offline.sh; run.sh enters
# it itself): a fake DNS answering every name with 127.0.0.1, the fake API on 127.0.0.1:443 with
# a certificate for any name from a CA of the run's own, and the gate of `sandgate run`, which
# inspects every host (so that it can trust that CA, --inspect-extra-ca) and is told the real key.
# The agent gets a scratch HOME. Then it checks and prints: the answer arrived, the key inside was
# a sentinel, the API saw the real key, and when streamed events reached the agent against when
# the API sent them.
#
# Settings (environment):
#   EVENTS (8) text deltas, GAP_MS (500) apart; FRAMING chunked (as the APIs send) or length
#   MASK=1 (--secret), default (the gate's default), 0 (the key in the clear, for comparison)
#   KEY_VARIABLE the agent's key variable (ANTHROPIC_API_KEY; codex: CODEX_API_KEY, or
#     OPENAI_API_KEY with a provider that reads it, CODEX_CONFIG=bench/agents/codex-config.toml)
#   KEY the real key (default: random, of the provider's shape)
#   CODEX_CONFIG=FILE Codex's config.toml; CODEX_HOME=default leaves CODEX_HOME unset
#   CONFIG_DIR=1 CLAUDE_CONFIG_DIR=~/.claude; FRESH=1 the agent's folder not made first
#   ALLOWLIST the agent's presets by default, or none; GATE_ARGS, AGENT_ARGS more arguments
#   SANDGATE the gate (default build/bin/sandgate); SANDGATE_ROOT the repository
set -euo pipefail
mode=${1:?usage: run.sh claude|claude-tty|codex}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=${SANDGATE_ROOT:-$(cd "$here/../.." && pwd)}
if [[ -z ${SANDGATE_OFFLINE:-} ]]; then
  exec "$root/scripts/offline.sh" "$here/run.sh" "$@"
fi
gate=${SANDGATE:-$root/build/bin/sandgate}
[[ -x $gate ]] || { echo "run.sh: no sandgate at $gate (make gate, or SANDGATE=PATH)" >&2; exit 1; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/sandgate-bench
agents=$cache/agents
events=${EVENTS:-8} gap_ms=${GAP_MS:-500} mask=${MASK:-1}
dns_port=18053

# The run's folder is outside /tmp: `sandgate run` gives the command a private /tmp.
run=$cache/runs/$mode-$(date +%Y%m%d-%H%M%S)-$$
home=$run/home project=$run/home/project
mkdir -p "$project"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

case $mode in
  claude | claude-tty)
    agent=$agents/claude-code/node_modules/.bin/claude
    key_variable=${KEY_VARIABLE:-ANTHROPIC_API_KEY}
    key=sk-ant-api03-$(head -c 70 /dev/urandom | base64 -w0 | tr '+/' '-_' | head -c 93)AA
    probe_url=https://api.anthropic.com/v1/messages
    allowlist=${ALLOWLIST:-preset:claude-code}
    agent_home=$home/.claude ;;
  codex)
    agent=$agents/codex/node_modules/.bin/codex
    # `codex exec` takes its key from CODEX_API_KEY and ignores OPENAI_API_KEY (but for a
    # provider whose env_key names it); CODEX_API_KEY is not a well-known credential of the
    # gate's, so its host is written out below.
    key_variable=${KEY_VARIABLE:-CODEX_API_KEY}
    key=sk-proj-$(head -c 120 /dev/urandom | base64 -w0 | tr '+/' '-_' | head -c 156)
    probe_url=https://api.openai.com/v1/responses
    allowlist=${ALLOWLIST:-preset:codex}
    agent_home=$home/.codex ;;
  *) echo "run.sh: unknown mode $mode" >&2; exit 2 ;;
esac
key=${KEY:-$key}  # a key of another shape: KEY=sk-ant-api03-...
if [[ ! -x $agent ]]; then
  echo "run.sh: $agent is missing: run bench/agents/install.sh first" >&2
  exit 1
fi
# `--allow-write` of a folder that does not exist yet is dropped: made first (FRESH=1: not made,
# as a new user would start).
[[ ${FRESH:-0} == 1 ]] || mkdir -p "$agent_home"
# CODEX_CONFIG=FILE: Codex's config.toml (codex-config.toml beside this script is the recipe's).
[[ -z ${CODEX_CONFIG:-} ]] || cp "$CODEX_CONFIG" "$agent_home/config.toml"

openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=fake-api-ca -keyout "$run/ca.key" \
  -out "$run/ca.pem" 2>/dev/null
python3 "$root/bench/e2e/fake_dns.py" $dns_port & pids+=($!)
python3 "$here/fake_api.py" --port 443 --ca-cert "$run/ca.pem" --ca-key "$run/ca.key" \
  --log "$run/requests.jsonl" --events "$events" --gap-ms "$gap_ms" --real-key "$key" \
  --framing "${FRAMING:-chunked}" \
  2>"$run/fake_api.err" & pids+=($!)
for _ in $(seq 50); do grep -q listening "$run/fake_api.err" 2>/dev/null && break; sleep 0.1; done
printf '%s' "$key" >"$run/real-key"

gate_args=(run --dns-server "127.0.0.1:$dns_port" --block-loopback=false
  --inspect 're:.*' --inspect-extra-ca "$run/ca.pem" --log-file "$run/gate.log"
  --allow-write "$agent_home")
# A gate built before the agents' presets were bundled gets the same lists as one file.
if [[ $allowlist != none ]]; then
  entries=() files=()
  IFS=, read -ra wanted <<<"$allowlist"
  for entry in "${wanted[@]}"; do
    known=0  # `check` exits 0 or 1 (allowed, denied) with a preset it knows, 2 without
    "$gate" check --allowlist "$entry" --dns-server 127.0.0.1:1 example.com >/dev/null 2>&1 \
      || known=$?
    if [[ $entry == preset:* && $known == 2 && -f $root/config/presets/${entry#preset:}.txt ]]; then
      echo "run.sh: this sandgate has no $entry: using config/presets/${entry#preset:}.txt" >&2
      files+=("$root/config/presets/${entry#preset:}.txt")
    else
      entries+=("$entry")
    fi
  done
  if ((${#files[@]})); then
    cat "${files[@]}" >"$run/allowlist.txt"
    entries+=("$run/allowlist.txt")
  fi
  gate_args+=(--allowlist "$(IFS=,; echo "${entries[*]}")")
fi
# MASK=0: the key in the clear (a gate that masks well-known keys by default is told not to);
# MASK=default: neither (the gate's default); MASK=1: --secret.
run_help=$("$gate" run --help 2>&1 || true)
if [[ $mask == 0 && $run_help == *--mask-known-secrets* ]]; then
  gate_args+=(--mask-known-secrets=false)
fi
if [[ $mask == 1 ]]; then
  case $key_variable in
    ANTHROPIC_API_KEY | ANTHROPIC_AUTH_TOKEN | OPENAI_API_KEY)
      gate_args+=(--secret "$key_variable") ;;
    *) api_host=${probe_url#https://}; gate_args+=(--secret "$key_variable=${api_host%%/*}") ;;
  esac
fi
# shellcheck disable=SC2206 # GATE_ARGS and AGENT_ARGS are word lists by design
gate_args+=(${GATE_ARGS:-})
# shellcheck disable=SC2206
extra_agent_args=(${AGENT_ARGS:-})
prompt="Reply with the words the fake API streams."

agent_command=()
case $mode in
  claude)
    agent_command=("$agent" -p "$prompt" --output-format stream-json --verbose
      --include-partial-messages "${extra_agent_args[@]}") ;;
  codex)
    agent_command=("$agent" exec --json --skip-git-repo-check --sandbox danger-full-access
      "${extra_agent_args[@]}" "$prompt") ;;
esac

cd "$project"
export HOME=$home "$key_variable=$key"
unset XDG_CONFIG_HOME XDG_DATA_HOME XDG_STATE_HOME XDG_CACHE_HOME
# CODEX_HOME=default leaves it unset (Codex then uses ~/.codex).
[[ $mode != codex || ${CODEX_HOME:-} == default ]] || export CODEX_HOME=$agent_home
[[ ${CODEX_HOME:-} != default ]] || unset CODEX_HOME
# Claude Code keeps its settings and answers in ~/.claude.json, beside ~/.claude, where the home
# is read-only inside run; CLAUDE_CONFIG_DIR moves it into ~/.claude (CONFIG_DIR=1).
[[ $mode == codex || ${CONFIG_DIR:-0} != 1 ]] || export CLAUDE_CONFIG_DIR=$agent_home
echo "run.sh: $mode in $run" >&2
echo "sandgate ${gate_args[*]} -- ${agent_command[*]:-$agent}" >"$run/command"
started=$(date +%s.%N)
status=0
if [[ $mode == claude-tty ]]; then
  KEY_VARIABLE=$key_variable python3 "$here/tty_claude.py" "$run" "$gate" "${gate_args[@]}" \
    -- "$agent" "${extra_agent_args[@]}" || status=$?
else
  timeout 300 "$gate" "${gate_args[@]}" -- "$here/inside.sh" "$key_variable" "$probe_url" -- \
    "${agent_command[@]}" </dev/null >"$run/agent.out" 2>"$run/agent.err" || status=$?
fi
echo "$started $(date +%s.%N) $status" >"$run/times"
KEY_VARIABLE=$key_variable python3 "$here/summarize.py" "$run" "$mode"
