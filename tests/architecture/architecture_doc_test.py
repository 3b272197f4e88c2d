#!/usr/bin/env python3
"""docs/architecture.md against the tree and the include check's layer table, so it cannot go stale.

It fails when
  - a folder of the source tree (every folder under proxy/, rules/, sandbox-profile/,
    connect-proxy/ and config/, and every top-level folder) is named nowhere on the page;
  - a folder that holds C++ sources has no row in the page's layer table (under "## Layers":
    `| LAYER | `folder/` | what |`), or its row gives another layer than the include check
    (include_direction_test.py, LAYERS: layer 0 is the bottom) gives it;
  - the page names a folder (a backticked relative path ending in `/`) that does not exist, unless
    the page lists it as arriving (under "### Arriving"); a folder listed as arriving that exists
    fails too: it has arrived, and belongs in the layer table.
Run: tests/architecture/architecture_doc_test.py [SOURCE_ROOT | --self-test]
"""
import importlib.util
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
PAGE = "docs/architecture.md"
CODE_ROOTS = ("proxy", "rules", "sandbox-profile", "connect-proxy", "config")
NOT_FOLDERS = {".git"}
LAYER_ROW = re.compile(r"^\|\s*(\d+)\s*\|\s*`([^`]+)`\s*\|")
FOLDER_NAMED = re.compile(r"`([A-Za-z0-9_.][A-Za-z0-9_./-]*/)`")


def include_check():
    """The include check's module: its LAYER table and folder_of()."""
    spec = importlib.util.spec_from_file_location("include_direction_test",
                                                  HERE / "include_direction_test.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def section(text: str, heading: str) -> str:
    """The lines under `heading` up to the next heading of the same or a higher level."""
    level = heading.split(" ", 1)[0]
    lines, inside = [], False
    for line in text.splitlines():
        if line.strip() == heading:
            inside = True
            continue
        if inside and line.startswith("#"):
            mark = line.split(" ", 1)[0]
            if set(mark) == {"#"} and len(mark) <= len(level):
                break
        if inside:
            lines.append(line)
    return "\n".join(lines)


def tree_folders(root: pathlib.Path) -> tuple[set[str], set[str]]:
    """(every folder the page must name, the folders among them that hold C++ sources)."""
    ignored = ("build", ".")
    named = {p.name for p in root.iterdir()
             if p.is_dir() and p.name not in NOT_FOLDERS and not p.name.startswith(ignored)}
    named |= {".ci"} & {p.name for p in root.iterdir() if p.is_dir()}
    code = set()
    for top in CODE_ROOTS:
        base = root / top
        if not base.is_dir():
            continue
        for folder in [base] + [p for p in base.rglob("*") if p.is_dir()]:
            relative = folder.relative_to(root).as_posix()
            named.add(relative)
            if any(f.suffix in (".cpp", ".hpp") for f in folder.iterdir() if f.is_file()):
                code.add(relative)
    return named, code


def expected_layer(check, relative: str) -> int | None:
    """The layer the include check gives a folder of sources (or proxy/'s own main.cpp)."""
    if relative == "proxy":
        relative = "proxy/main.cpp"
    owner = check.folder_of(relative)
    return None if owner is None else check.RANK[owner][0]


def check_page(root: pathlib.Path, check) -> list[str]:
    page_path = root / PAGE
    if not page_path.is_file():
        return [f"{PAGE} is missing"]
    text = page_path.read_text(encoding="utf-8")
    problems = []
    rows: dict[str, list[int]] = {}
    for line in section(text, "## Layers").splitlines():
        match = LAYER_ROW.match(line)
        if match:
            rows.setdefault(match.group(2).rstrip("/"), []).append(int(match.group(1)))
    if not rows:
        return [f"{PAGE}: no layer table under '## Layers' (rows `| LAYER | `folder/` | what |`)"]
    arriving = {m.group(1).rstrip("/") for m in FOLDER_NAMED.finditer(section(text, "### Arriving"))}
    named_on_page = {m.group(1).rstrip("/") for m in FOLDER_NAMED.finditer(text)}

    folders, code = tree_folders(root)
    for folder in sorted(folders - named_on_page - set(rows)):
        problems.append(f"{PAGE}: the folder {folder}/ is named nowhere on the page")
    for folder in sorted(code):
        key = "proxy/main.cpp" if folder == "proxy" else folder
        layer = expected_layer(check, folder)
        if key not in rows:
            problems.append(f"{PAGE}: {key} has no row in the layer table (the include check "
                            f"puts it in layer {layer}): add `| {layer} | `{key}"
                            f"{'' if key.endswith('.cpp') else '/'}` | what it does |`")
            continue
        if len(rows[key]) > 1:
            problems.append(f"{PAGE}: {key} has {len(rows[key])} rows in the layer table")
        if layer is None:
            problems.append(f"{key}: not in the include check's layer table "
                            "(include_direction_test.py fails on it too)")
        elif rows[key][0] != layer:
            problems.append(f"{PAGE}: {key} is in layer {rows[key][0]} on the page, in layer "
                            f"{layer} in include_direction_test.py")
    for key in sorted(rows):
        if not (root / key).exists():
            problems.append(f"{PAGE}: the layer table names {key}, which does not exist")
        elif key not in code and key not in check.RANK:
            problems.append(f"{PAGE}: the layer table names {key}, which holds no C++ source: "
                            "describe it under '## Other folders'")
    for folder in sorted(named_on_page):
        exists = (root / folder).exists()
        if folder in arriving and exists:
            problems.append(f"{PAGE}: {folder}/ is listed as arriving but exists: give it its "
                            "row in the layer table")
        elif folder not in arriving and not exists:
            problems.append(f"{PAGE}: names {folder}/, which does not exist")
    return problems


def run(root: pathlib.Path, check) -> int:
    problems = check_page(root, check)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s): {PAGE} does not match the tree")
        return 1
    print(f"{PAGE} names every folder with the layer the include check gives it")
    return 0


def self_test(check) -> int:
    """The check can fail: each kind of drift is caught, and a matching page passes."""
    import tempfile
    # The layers are the include check's own, whatever they are today.
    session = expected_layer(check, "proxy/session")
    main = expected_layer(check, "proxy/main.cpp")
    page = ("# Architecture\n\n## Layers\n\n| layer | folder | what |\n| --- | --- | --- |\n"
            f"| 0 | `rules/` | policy |\n| {session} | `proxy/session/` | the path |\n"
            f"| {main} | `proxy/main.cpp` | main |\n\n### Arriving\n\n| `proxy/session/h9/` | soon |\n\n"
            "## Other folders\n\n`docs/` `proxy/`\n")
    cases = {
        "a clean tree": (page, None, 0),
        "a folder missing from the page": (page.replace(f"| {session} | `proxy/session/` | the path |\n", ""),
                                           None, 1),
        "a folder in another layer": (page.replace(f"| {session} |", f"| {session - 1} |"), None, 1),
        "a folder that does not exist": (page + "`proxy/nowhere/`\n", None, 1),
        "an arriving folder that arrived": (page, "proxy/session/h9/x.cpp", 1),
        "a new folder of the tree": (page, "rules/new/x.hpp", 1),
    }
    failed = 0
    for name, (text, extra, expected) in cases.items():
        with tempfile.TemporaryDirectory() as folder:
            root = pathlib.Path(folder)
            for path in ["rules/host.hpp", "proxy/session/session.cpp", "proxy/main.cpp",
                         "docs/architecture.md"] + ([extra] if extra else []):
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text("")
            (root / PAGE).write_text(text)
            problems = check_page(root, check)
            if (1 if problems else 0) != expected:
                print(f"self-test: {name}: expected {'a failure' if expected else 'a pass'}; "
                      f"got {problems}")
                failed += 1
    if failed:
        return 1
    print("self-test passed")
    return 0


if __name__ == "__main__":
    module = include_check()
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test(module))
    sys.exit(run(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else HERE.parents[1]), module))
