#!/usr/bin/env bash
# Runs inside `sandgate run` (bench/agents/run.sh): keeps what the sandbox sees of the agent's key
# variable (./key-inside), runs the agent with its standard output timestamped line by line
# (./agent-lines.jsonl, as the agent wrote them, not as a pipe outside would delay them), then
# asks for one streamed reply itself with the same key (./probe.json): the gate's effect on a
# stream, measured from inside, for an agent that prints no events as they come.
#   inside.sh KEY_VARIABLE PROBE_URL|tty -- AGENT [ARG...]
# With "tty" in place of the URL the agent keeps the terminal: only the key is kept.
key_variable=$1 probe_url=$2
shift 3
here=$(dirname "$0")
printenv "$key_variable" >key-inside || true
[[ $probe_url != tty ]] || exec "$@"
"$@" | /usr/bin/python3 "$here/timestamp_lines.py" agent-lines.jsonl
status=${PIPESTATUS[0]}
/usr/bin/python3 "$here/probe_stream.py" "$probe_url" "$key_variable" >probe.json 2>probe.err || true
exit "$status"
