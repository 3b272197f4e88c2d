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
      -> sandbox-profile, proxy/parent confinement; takes its own options, knows nothing of proxy/
                                       (its rooms have an order of their own, ROOMS below);
         proxy/secrets                 the parent proxy's values and the masked credentials
                                       (settings hold them typed);
         proxy/budget                  the ledger of egress budgets (what was spent)
      -> rules, config, proxy/json, proxy/sse, proxy/asio

A folder whose rooms (subfolders) are layers of their own is listed in ROOMS, lowest first: a
room may include only lower rooms of it (and the layers below the folder's).
connect-proxy (sandgate-connect) is plain POSIX and may include only rules/expected.hpp and
rules/ascii.hpp (header-only).
No cycles, of any length: not between folders, and not between units (a unit is a header and
its source, foo.hpp with foo.cpp), in any folder. A type two units both need goes in a header
of its own.
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
# Folders of LAYERS whose rooms are layers in their own right, lowest first. A file directly in
# such a folder (in no room) fails the check like a folder missing from the table.
ROOMS = {
    "sandbox-profile": [
        # What a run is and allows, platform-free, decided before anything starts.
        ["sandbox-profile/plan"],
        # The process's primitives every later step shares: saying, exec, signals, file checks,
        # the channel between `run` and its confined child, the pseudo-terminal, the capture's
        # sockets.
        ["sandbox-profile/process"],
        # The plan applied on each platform.
        ["sandbox-profile/linux", "sandbox-profile/macos"],
        # What lives outside the confinement while the command runs.
        ["sandbox-profile/supervisor"],
        # What is checked after the run.
        ["sandbox-profile/audit"],
        # The run, start to end: plan, apply, supervise, audit, in that order, behind the gate.
        ["sandbox-profile/run"],
    ],
}
# Every folder's rank: (its layer, its house (the ROOMS key, or itself), its room's rank there).
RANK = {}
for _layer, _names in enumerate(LAYERS):
    for _folder in _names:
        if _folder in ROOMS:
            for _room, _rooms in enumerate(ROOMS[_folder]):
                for _name in _rooms:
                    RANK[_name] = (_layer, _folder, _room)
        else:
            RANK[_folder] = (_layer, _folder, 0)
# Folders whose includes are not checked (they may use anything), and the files allowed to
# connect-proxy from the rest of the tree.
UNCHECKED = ("tests/", "bench/", "build")
CONNECT_PROXY_MAY_INCLUDE = {"rules/expected.hpp", "rules/ascii.hpp"}
SOURCES = ("proxy", "rules", "sandbox-profile", "connect-proxy", "config")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def folder_of(path: str) -> str | None:
    """The table's folder that `path` (relative to the source root) belongs to, longest first."""
    for folder in sorted(RANK, key=len, reverse=True):
        if path == folder or path.startswith(folder + "/"):
            return folder
    return None


def may_include(here: str, there: str) -> bool:
    """Whether a file of folder `here` may include one of folder `there`."""
    (layer, house, room), (other_layer, other_house, other_room) = RANK[here], RANK[there]
    if here == there or other_layer < layer:
        return True
    return house == other_house and other_room < room


def describe(folder: str) -> str:
    layer, house, room = RANK[folder]
    return f"layer {layer}" if house == folder else f"layer {layer}, room {room} of {house}"


class Include:
    """One `#include "..."` of the tree: where it is, and what it names."""

    def __init__(self, source: str, line: int, target: str):
        self.source, self.line, self.target = source, line, target

    def __str__(self) -> str:
        return f"{self.source}:{self.line} includes {self.target}"


def includes(root: pathlib.Path) -> tuple[list[Include], list[str]]:
    """Every include of the checked sources, and the sources whose folder is not in the table."""
    found, strays = [], []
    sources = sorted(path for top in SOURCES for path in (root / top).glob("**/*.[ch]pp"))
    for source in sources:
        relative = source.relative_to(root).as_posix()
        if relative.startswith(UNCHECKED):
            continue
        if folder_of(relative) is None:
            strays.append(relative)
            continue
        text = source.read_text(encoding="utf-8", errors="replace")
        for match in INCLUDE.finditer(text):
            found.append(Include(relative, text.count("\n", 0, match.start()) + 1, match.group(1)))
    return found, strays


def check(root: pathlib.Path) -> int:
    problems = problems_in(root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) with the direction of dependencies")
        return 1
    print("includes point one way")
    return 0


def problems_in(root: pathlib.Path) -> list[str]:
    found, strays = includes(root)
    problems = [f"{stray}: its folder is not in the layer table of {__file__}" for stray in strays]
    for include in found:
        problems += direction_problems(root, include)
    problems += cycles(folder_graph(found), "folders")
    problems += cycles(unit_graph(root, found), "units")
    return problems


def direction_problems(root: pathlib.Path, include: Include) -> list[str]:
    here, there = folder_of(include.source), folder_of(include.target)
    if there is None:
        if "/" in include.target and (root / include.target).exists():
            return [f"{include}, whose folder is not in the layer table"]
        return []  # a system or third-party header
    if here == "connect-proxy" and there != "connect-proxy":
        if include.target in CONNECT_PROXY_MAY_INCLUDE:
            return []
        return [f"{include}: connect-proxy may include only "
                f"{', '.join(sorted(CONNECT_PROXY_MAY_INCLUDE))}"]
    if may_include(here, there):
        return []
    return [f"{include}: {here} ({describe(here)}) includes {there} ({describe(there)}): "
            "dependencies point down only"]


# A graph: for each node, the nodes it includes, each with the include that shows it.
Graph = dict[str, dict[str, Include]]


def folder_graph(found: list[Include]) -> Graph:
    graph: Graph = {}
    for include in found:
        here, there = folder_of(include.source), folder_of(include.target)
        if there is not None and there != here:
            graph.setdefault(here, {}).setdefault(there, include)
    return graph


def unit_graph(root: pathlib.Path, found: list[Include]) -> Graph:
    """Units (`foo.hpp` with `foo.cpp`, named `foo`) and the units whose headers they include."""
    graph: Graph = {}
    for include in found:
        unit, other = include.source.rsplit(".", 1)[0], include.target.rsplit(".", 1)[0]
        if other != unit and (root / include.target).exists():
            graph.setdefault(unit, {}).setdefault(other, include)
    return graph


def cycles(graph: Graph, kind: str) -> list[str]:
    """One line per strongly connected part of `graph` with more than one node: its nodes, and
    one shortest cycle through the first of them, include by include."""
    problems = []
    for part in strongly_connected(graph):
        if len(part) < 2:
            continue
        path = shortest_cycle(graph, min(part), part)
        steps = "; ".join(str(graph[a][b]) for a, b in zip(path, path[1:]))
        problems.append(f"a cycle between {kind}: {' -> '.join(path)} ({steps}); "
                        f"all of {', '.join(sorted(part))} reach each other. Move what they "
                        "share down, or into a header of its own")
    return problems


def strongly_connected(graph: Graph) -> list[set[str]]:
    """Tarjan's algorithm, iteratively (a deep tree would exceed Python's recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    parts: list[set[str]] = []
    nodes = sorted(set(graph) | {b for edges in graph.values() for b in edges})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, {}))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph.get(successor, {})))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.add(member)
                    if member == node:
                        break
                parts.append(part)
    return parts


def shortest_cycle(graph: Graph, start: str, part: set[str]) -> list[str]:
    """The shortest path from `start` back to itself inside `part` (breadth first)."""
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for successor in sorted(graph.get(node, {})):
                if successor == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return list(reversed(path)) + [start]
                if successor in part and successor not in came_from:
                    came_from[successor] = node
                    following.append(successor)
        frontier = following
    return [start]


def self_test() -> int:
    """The check can fail: each broken tree below fails it, naming what is wrong; the clean
    tree passes."""
    import tempfile
    clean = {
        "rules/host.hpp": "#pragma once\n",
        "proxy/server/worker.hpp": '#include "proxy/session/session.hpp"\n',
        "proxy/session/session.hpp": '#include "rules/host.hpp"\n#include <string>\n',
        "sandbox-profile/plan/options.hpp": '#include "rules/host.hpp"\n',
        "sandbox-profile/linux/apply.hpp": '#include "sandbox-profile/plan/options.hpp"\n',
        "sandbox-profile/run/run.cpp": '#include "sandbox-profile/linux/apply.hpp"\n',
        "proxy/session/a.hpp": '#include "proxy/session/b.hpp"\n',
        "proxy/session/b.hpp": "#pragma once\n",
        "proxy/session/b.cpp": '#include "proxy/session/c.hpp"\n',
        "proxy/session/c.hpp": "#pragma once\n",
    }
    broken = {
        "a session -> server include": (
            {"proxy/session/session.hpp": '#include "proxy/server/worker.hpp"\n'},
            "dependencies point down only"),
        "two units including each other": (
            {"proxy/session/c.cpp": '#include "proxy/session/b.hpp"\n'},
            "a cycle between units: proxy/session/b -> proxy/session/c -> proxy/session/b"),
        "three units in a circle": (
            {"proxy/session/c.cpp": '#include "proxy/session/a.hpp"\n'},
            "a cycle between units: proxy/session/a -> proxy/session/b -> proxy/session/c -> "
            "proxy/session/a"),
        "plan including a platform (a higher room)": (
            {"sandbox-profile/plan/options.cpp": '#include "sandbox-profile/linux/apply.hpp"\n'},
            "sandbox-profile/plan (layer 1, room 0 of sandbox-profile) includes "
            "sandbox-profile/linux (layer 1, room 2 of sandbox-profile)"),
        "three rooms in a circle": (
            {"sandbox-profile/plan/options.cpp": '#include "sandbox-profile/run/run.hpp"\n',
             "sandbox-profile/run/run.hpp": "#pragma once\n"},
            "a cycle between folders: sandbox-profile/linux -> sandbox-profile/plan -> "
            "sandbox-profile/run -> sandbox-profile/linux"),
        "a file in no room": (
            {"sandbox-profile/loose.hpp": "#pragma once\n"},
            "sandbox-profile/loose.hpp: its folder is not in the layer table"),
    }
    with tempfile.TemporaryDirectory() as folder:
        root = pathlib.Path(folder)
        if write_tree(root, clean) and problems_in(root):
            print("self-test: a clean tree failed:", *problems_in(root), sep="\n  ")
            return 1
        for name, (changes, expected) in broken.items():
            write_tree(root, clean | changes)
            found = problems_in(root)
            if not any(expected in problem for problem in found):
                print(f"self-test: {name} was not caught as «{expected}»; found:", *found,
                      sep="\n  ")
                return 1
            for path in changes:
                (root / path).unlink()
    print("self-test passed")
    return 0


def write_tree(root: pathlib.Path, files: dict[str, str]) -> bool:
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return True


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    sys.exit(check(pathlib.Path(sys.argv[1] if len(sys.argv) > 1
                                else pathlib.Path(__file__).parents[2])))
