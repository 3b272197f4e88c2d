#!/usr/bin/env python3
"""The manual pages, as built (build/man/, the man_pages target), against the built executables:
  - each page renders with groff's every warning on (`groff -man -Tutf8 -ww -z`): any warning
    fails, and with `man -l` (what a user runs) into non-empty text with its NAME section;
  - every flag a command's `--help` prints is in its page: `sandgate --help` and the help of its
    commands but run and profile in sandgate(1), those two in sandgate-run(1), `sandgate-connect
    --help` in sandgate-connect(1), `sandgate-load --help` and each of its commands' in
    sandgate-load(1);
  - every key of docs/settings.md's settings table (held to the gate's own table of settings by
    ReloadSettings.TheDocsListEverySettingOnce) is in sandgate.toml(5), one per flag of `sandgate
    --help` that is a setting.
Usage: man_pages_test.py BUILD_DIR SOURCE_DIR SANDGATE SANDGATE_CONNECT [SANDGATE_LOAD]
"""
import os
import re
import subprocess
import sys

PAGES = ["sandgate.1", "sandgate-run.1", "sandgate-connect.1", "sandgate-load.1", "sandgate.toml.5"]
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)")
SETTINGS_ROW = re.compile(r"^\| `(--[a-z0-9-]+)` / `([a-z0-9_]+)` \|")
# Flags every CLI11 command has, not worth a line in each page's command list.
IMPLICIT = {"--help"}

failures = []


def fail(message):
    failures.append(message)
    print(f"man_pages_test: FAIL: {message}", file=sys.stderr)


def help_text(*command):
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        fail(f"{' '.join(command)} exited {result.returncode}: {result.stderr.strip()}")
    return result.stdout + result.stderr


def options_flags(text, section="Options:"):
    """The flags defined in one section of a CLI11 help text ("Options:" or "Settings:"): the
    first flag of each option line, not flags its description mentions."""
    flags, inside = set(), False
    for line in text.splitlines():
        if not line.startswith(" "):
            inside = line.strip() == section
            continue
        if inside:
            match = re.match(r"^\s+(?:-\w,)?(--[a-z][a-z0-9-]*)", line)
            if match:
                flags.add(match.group(1))
    return flags


def all_flags(text):
    """Every flag a help text names (for the usage texts that are not CLI11's)."""
    return set(FLAG.findall(text))


def rendered(path):
    """The page as `man -l` prints it, wide, with words a line break cut at a hyphen joined."""
    env = dict(os.environ, MANWIDTH="1000", MAN_KEEP_FORMATTING="", LC_ALL="C.UTF-8")
    result = subprocess.run(["man", "-l", path], capture_output=True, text=True, env=env,
                            timeout=60)
    if result.returncode != 0 or not result.stdout.strip():
        fail(f"man -l {path}: exit {result.returncode}, {result.stderr.strip() or 'no output'}")
    text = re.sub(r"-\n\s+", "-", result.stdout)
    if "NAME" not in text:
        fail(f"man -l {path}: no NAME section")
    return text


def groff_warnings(path):
    result = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", path], capture_output=True,
                            text=True, timeout=60)
    if result.returncode != 0 or result.stderr.strip():
        fail(f"groff -man -Tutf8 -ww on {path} (exit {result.returncode}):\n{result.stderr}")


def expect_flags(page, text, flags, source):
    present = set(FLAG.findall(text))
    for flag in sorted(flags - IMPLICIT - present):
        fail(f"{page} lacks {flag}, which `{source}` prints")


def main(argv):
    if len(argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    build, source, sandgate, connect = argv[1:5]
    load = argv[5] if len(argv) > 5 else None
    for tool in ("man", "groff"):
        if subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True).returncode:
            print(f"man_pages_test: no {tool} here; skipped")
            return 77
    texts = {}
    for page in PAGES:
        path = os.path.join(build, "man", page)
        if not os.path.isfile(path):
            fail(f"{path} is missing: build the man_pages target (part of ALL)")
            continue
        groff_warnings(path)
        texts[page] = rendered(path)
    if failures:
        return 1

    top = help_text(sandgate, "--help")
    main_flags = options_flags(top)
    for command in ("serve", "check", "ca", "pending", "decide", "watch"):
        main_flags |= options_flags(help_text(sandgate, command, "--help"))
    expect_flags("sandgate(1)", texts["sandgate.1"], main_flags, "sandgate [COMMAND] --help")

    run_flags = set()
    for command in ("run", "profile"):
        run_flags |= options_flags(help_text(sandgate, command, "--help"))
    expect_flags("sandgate-run(1)", texts["sandgate-run.1"], run_flags,
                 "sandgate run|profile --help")

    expect_flags("sandgate-connect(1)", texts["sandgate-connect.1"],
                 all_flags(help_text(connect, "--help")), "sandgate-connect --help")

    if load:
        load_flags = set()
        for command in ((), ("origin",), ("run",), ("compare",)):
            load_flags |= options_flags(help_text(load, *command, "--help"))
        expect_flags("sandgate-load(1)", texts["sandgate-load.1"], load_flags,
                     "sandgate-load [COMMAND] --help")
    else:
        print("man_pages_test: sandgate-load not built (SANDGATE_BUILD_BENCH off); its page's "
              "flags not checked")

    keys = []
    with open(os.path.join(source, "docs", "settings.md"), encoding="utf-8") as docs:
        for line in docs:
            match = SETTINGS_ROW.match(line)
            if match:
                keys.append(match.group(2))
    settings_flags = options_flags(top) - {"--help", "--version", "--config"}
    if len(keys) != len(settings_flags):
        fail(f"docs/settings.md has {len(keys)} settings rows, `sandgate --help` "
             f"{len(settings_flags)} settings")
    toml = texts["sandgate.toml.5"]
    for key in keys:
        if not re.search(rf"(?<![\w-]){re.escape(key)}(?![\w-])", toml):
            fail(f"sandgate.toml(5) lacks the key {key}")

    if failures:
        print(f"man_pages_test: {len(failures)} problem(s)", file=sys.stderr)
        return 1
    print(f"man_pages_test: ok ({len(PAGES)} pages; {len(main_flags)} + {len(run_flags)} flags of "
          f"sandgate, {len(keys)} keys)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
