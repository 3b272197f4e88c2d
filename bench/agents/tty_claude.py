#!/usr/bin/env python3
"""Claude Code's interactive mode inside `sandgate run`, under a real terminal (tmux, 120x40),
twice with the same HOME (bench/agents/run.sh claude-tty):

    tty_claude.py RUN_FOLDER SANDGATE RUN_ARG... -- CLAUDE [ARG...]

Each time: answers the start-up questions as a user would (the theme: Enter; "use this API
key?": Yes; "trust this folder?": Yes; other notes: Enter), records which were asked, types
the prompt, and notes when each word of the streamed answer first shows on the screen (polled
every 50 ms). Writes RUN/tty.json and the screens (RUN/screen-N.txt, the last one of each run).
Exits 1 when an answer never showed."""
import json
import os
import re
import shlex
import subprocess
import sys
import time

run = sys.argv[1]
split = sys.argv.index("--")
gate, gate_args, agent = sys.argv[2], sys.argv[3:split], sys.argv[split + 1:]
here = os.path.dirname(os.path.abspath(__file__))
socket = None  # a tmux server of each run's own
PROMPT = "Reply with the words the fake API streams."
QUESTIONS = [  # (name, pattern on the screen, the option a user would pick, or None: Enter)
    ("theme", re.compile(r"Choose the text style|text style that looks best", re.I), None),
    ("api-key", re.compile(r"use this API key", re.I), re.compile(r"^\W*(\d\.\s*)?Yes\b")),
    ("trust-folder", re.compile(r"trust this folder|one you trust", re.I), re.compile(r"Yes, I trust")),
    ("notes", re.compile(r"Press Enter to continue|Security notes", re.I), None),
]


def keys_to_pick(text, option):
    """The keys that move a menu's cursor (❯) to the line OPTION matches, then Enter."""
    if option is None:
        return ["Enter"]
    lines = text.splitlines()
    cursor = next((i for i, line in enumerate(lines) if "❯" in line), None)
    wanted = next((i for i, line in enumerate(lines) if option.search(line.replace("❯", " ").strip())), None)
    if cursor is None or wanted is None:
        return ["Enter"]
    return ["Up" if wanted < cursor else "Down"] * abs(wanted - cursor) + ["Enter"]


def tmux(*args, check=True):
    return subprocess.run(["tmux", "-L", socket, *args], check=check, capture_output=True, text=True).stdout


def screen():
    return tmux("capture-pane", "-p", "-t", "agent", check=False)


def one_run(number):
    global socket
    socket = f"sandgate-bench-{os.getpid()}-{number}"
    command = [gate, *gate_args, "--", os.path.join(here, "inside.sh"),
               os.environ["KEY_VARIABLE"], "tty", "--", *agent]
    shell = f"{shlex.join(command)} 2>{shlex.quote(os.path.join(run, f'tty-{number}.err'))}; echo EXITED:$?; sleep 600"
    tmux("new-session", "-d", "-x", "120", "-y", "40", "-s", "agent", shell)
    asked, typed_at, seen, started = [], None, {}, time.time()
    words = None
    last = ""
    while time.time() - started < 120:
        text = screen()
        if text != last:
            last = text
            with open(os.path.join(run, f"screen-{number}.txt"), "w") as out:
                out.write(text)
        if "EXITED:" in text:
            break
        now = time.time()
        if typed_at:
            for word in re.findall(r"SANDGATE-OK|\bw\d+\b", text):
                seen.setdefault(word, now)
            if words and all(w in seen for w in words):
                break
            if now - typed_at > 60:
                break
            time.sleep(0.05)
            continue
        for name, pattern, option in QUESTIONS:
            if pattern.search(text) and (not asked or asked[-1][0] != name or now - asked[-1][1] > 3):
                asked.append((name, now))
                for key in keys_to_pick(text, option):
                    tmux("send-keys", "-t", "agent", key)
                    time.sleep(0.2)
                time.sleep(1)
                break
        else:
            if re.search(r"^[│ ]*[>❯]\s*$", text, re.M) or "? for shortcuts" in text:
                time.sleep(1)
                tmux("send-keys", "-t", "agent", "-l", PROMPT)
                time.sleep(0.3)
                tmux("send-keys", "-t", "agent", "Enter")
                typed_at = time.time()
                events = int(os.environ.get("EVENTS", "8"))
                words = ["SANDGATE-OK"] + [f"w{i}" for i in range(1, events + 1)]
            time.sleep(0.3)
    with open(os.path.join(run, f"screen-{number}.txt"), "w") as out:
        out.write(screen())
    tmux("send-keys", "-t", "agent", "C-c", check=False)
    time.sleep(0.5)
    tmux("send-keys", "-t", "agent", "C-c", check=False)
    for _ in range(40):
        if "EXITED:" in screen():
            break
        time.sleep(0.25)
    final = screen()
    tmux("kill-server", check=False)
    return {"run": number, "asked": [name for name, _ in asked], "typed_at": typed_at,
            "words_seen": seen, "answer_shown": bool(words) and all(w in seen for w in words),
            "exit": re.findall(r"EXITED:(\d+)", final)}


results = [one_run(1), one_run(2)]
with open(os.path.join(run, "tty.json"), "w") as out:
    json.dump(results, out, indent=1)
for result in results:
    print(f"interactive run {result['run']}: asked {result['asked'] or 'nothing'}; "
          f"answer shown: {result['answer_shown']}; exit {result['exit']}")
sys.exit(0 if all(r["answer_shown"] for r in results) else 1)
