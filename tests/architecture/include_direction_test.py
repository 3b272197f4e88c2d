#!/usr/bin/env python3
"""Dependencies point one way: a folder may include only folders of a lower layer (and itself).

    proxy/main.cpp                     the executable: wires the commands
      -> proxy/commands                serve, check, run, profile
      -> proxy/gate                    assembles log, policy, reloader, resolver, LaunchDarkly, server, admin
      -> proxy/server                  workers, listeners
      -> proxy/session/fronts          the protocols a client speaks to the gate: HTTP (CONNECT and
                                       plain requests), SOCKS5, captured connections; each turns
                                       bytes into a destination and a refusal into its reply
      -> proxy/session                 one connection's path: the admission pipeline (policy,
                                       question, LaunchDarkly, dial), the tunnel's set-up and relay
      -> proxy/launchdarkly, proxy/reload, proxy/admin, proxy/ask, proxy/watch_view (watch's
                                       screen model and admin client)
      -> proxy/log
      -> proxy/dns                     the resolver and its cache
      -> proxy/settings, proxy/watch, proxy/relay, proxy/metrics, proxy/socks, proxy/capture,
         proxy/session/wire,           typed settings; the pieces below a session (the HTTP wire:
         proxy/session/exchange/h2,    targets, heads, the gate's replies, the proxy token; the
         proxy/mcp                     HTTP/2 codecs on nghttp2, sans-IO; the MCP stage)
      -> sandbox-profile, proxy/parent confinement; takes its own options, knows nothing of proxy/;
         proxy/secrets                 the parent proxy's values and the masked credentials
                                       (settings hold them typed);
         proxy/budget                  the ledger of egress budgets (what was spent)
      -> rules, config, proxy/json, proxy/sse, proxy/asio

connect-proxy (sandgate-connect) is plain POSIX and may include only rules/expected.hpp.
Within a folder, no two units (a header and its source) include each other: a type both need
goes in a header of its own.
A folder that is not in the table fails the check: place it in a layer when you add it.
Run: tests/architecture/include_direction_test.py [SOURCE_ROOT | --self-test]
"""
import pathlib
import re
import sys

LAYERS = [
    ["rules", "config", "proxy/json", "proxy/sse", "proxy/asio"],
    ["sandbox-profile", "connect-proxy", "proxy/parent", "proxy/secrets", "proxy/budget"],
    ["proxy/settings", "proxy/watch", "proxy/relay", "proxy/metrics", "proxy/socks",
     "proxy/capture", "proxy/session/wire", "proxy/session/exchange/h2", "proxy/inspect",
     "proxy/mcp"],
    ["proxy/dns"],
    ["proxy/log"],
    ["proxy/launchdarkly", "proxy/reload", "proxy/admin", "proxy/ask", "proxy/watch_view"],
    ["proxy/session"],
    ["proxy/session/exchange"],
    ["proxy/session/fronts"],
    ["proxy/server"],
    ["proxy/gate"],
    ["proxy/commands"],
    ["proxy/main.cpp"],
]
LAYER = {folder: index for index, names in enumerate(LAYERS) for folder in names}
# Folders whose includes are not checked (they may use anything), and the files allowed to
# connect-proxy from the rest of the tree.
UNCHECKED = ("tests/", "bench/", "build")
CONNECT_PROXY_MAY_INCLUDE = {"rules/expected.hpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def folder_of(path: str) -> str | None:
    """The table's folder that `path` (relative to the source root) belongs to, longest first."""
    for folder in sorted(LAYER, key=len, reverse=True):
        if path == folder or path.startswith(folder + "/"):
            return folder
    return None


def check(root: pathlib.Path) -> int:
    problems = []
    for source in sorted(list(root.glob("proxy/**/*.[ch]pp")) + list(root.glob("rules/**/*.[ch]pp"))
                         + list(root.glob("sandbox-profile/**/*.[ch]pp"))
                         + list(root.glob("connect-proxy/**/*.[ch]pp"))
                         + list(root.glob("config/**/*.[ch]pp"))):
        relative = source.relative_to(root).as_posix()
        if relative.startswith(UNCHECKED):
            continue
        here = folder_of(relative)
        if here is None:
            problems.append(f"{relative}: its folder is not in the layer table of {__file__}")
            continue
        text = source.read_text(encoding="utf-8", errors="replace")
        for match in INCLUDE.finditer(text):
            target = match.group(1)
            line = text.count("\n", 0, match.start()) + 1
            there = folder_of(target)
            if there is None:
                if "/" in target and (root / target).exists():
                    problems.append(f"{relative}:{line}: includes {target}, "
                                    "whose folder is not in the layer table")
                continue  # a header next to this file, or a system/third-party header
            if here == "connect-proxy" and there != "connect-proxy":
                if target not in CONNECT_PROXY_MAY_INCLUDE:
                    problems.append(f"{relative}:{line}: connect-proxy includes {target}; it may "
                                    f"include only {', '.join(sorted(CONNECT_PROXY_MAY_INCLUDE))}")
                continue
            if there != here and LAYER[there] >= LAYER[here]:
                problems.append(f"{relative}:{line}: {here} (layer {LAYER[here]}) includes {target} "
                                f"from {there} (layer {LAYER[there]}): dependencies point down only")
    problems += mutual_units(root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) with the direction of dependencies")
        return 1
    print("includes point one way")
    return 0


def mutual_units(root: pathlib.Path) -> list[str]:
    """Pairs of units (`x.hpp` with `x.cpp`) where each one's files include the other's header."""
    uses: dict[str, set[str]] = {}
    for source in sorted(root.glob("**/*.[ch]pp")):
        relative = source.relative_to(root).as_posix()
        if relative.startswith(UNCHECKED) or folder_of(relative) is None:
            continue
        unit = relative.rsplit(".", 1)[0]
        text = source.read_text(encoding="utf-8", errors="replace")
        for match in INCLUDE.finditer(text):
            other = match.group(1).rsplit(".", 1)[0]
            if other != unit and (root / match.group(1)).exists():
                uses.setdefault(unit, set()).add(other)
    return [f"{a} and {b} include each other: move what both need into a header of its own"
            for a in sorted(uses) for b in sorted(uses[a]) if a < b and a in uses.get(b, ())]


def self_test() -> int:
    """The check can fail: a tree with a back edge fails it, the same tree without passes."""
    import tempfile
    with tempfile.TemporaryDirectory() as folder:
        root = pathlib.Path(folder)
        for path, text in {
            "rules/host.hpp": "#pragma once\n",
            "proxy/server/worker.hpp": '#include "proxy/session/session.hpp"\n',
            "proxy/session/session.hpp": '#include "rules/host.hpp"\n#include <string>\n',
        }.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
        if check(root) != 0:
            print("self-test: a clean tree failed")
            return 1
        (root / "proxy/session/session.hpp").write_text('#include "proxy/server/worker.hpp"\n')
        if check(root) != 1:
            print("self-test: a session -> server include was not caught")
            return 1
        (root / "proxy/session/session.hpp").write_text('#include "rules/host.hpp"\n')
        (root / "proxy/session/other.hpp").write_text('#include "proxy/session/session.hpp"\n')
        (root / "proxy/session/session.cpp").write_text('#include "proxy/session/other.hpp"\n')
        if check(root) != 1:
            print("self-test: two units including each other were not caught")
            return 1
    print("self-test passed")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    sys.exit(check(pathlib.Path(sys.argv[1] if len(sys.argv) > 1
                                else pathlib.Path(__file__).parents[2])))
