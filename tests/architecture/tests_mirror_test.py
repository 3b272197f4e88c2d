#!/usr/bin/env python3
"""The unit tests mirror the tree, so that a folder of code cannot arrive without its tests.

It fails when
  - a folder of sources (a .cpp or .hpp under proxy/, rules/, sandbox-profile/ or connect-proxy/;
    proxy/main.cpp alone, which only wires, does not count) has no twin tests/unit/<folder>/
    holding a *_test.cpp;
  - a folder under tests/unit/ holding a *_test.cpp has no folder of sources it is the twin of
    (the code moved, and its tests stayed behind);
  - a *_test.cpp under tests/unit/ is named in no CMakeLists.txt there: a test never built never
    fails.
Run: tests/architecture/tests_mirror_test.py [SOURCE_ROOT | --self-test]
"""
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
CODE_ROOTS = ("proxy", "rules", "sandbox-profile", "connect-proxy")
UNIT = "tests/unit"
WIRING_ONLY = {"main.cpp"}


def source_folders(root: pathlib.Path) -> set[str]:
    """The folders holding C++ sources other than a main.cpp, relative to `root`."""
    out = set()
    for top in CODE_ROOTS:
        base = root / top
        if not base.is_dir():
            continue
        for folder in [base] + [p for p in base.rglob("*") if p.is_dir()]:
            sources = [f for f in folder.iterdir()
                       if f.is_file() and f.suffix in (".cpp", ".hpp") and f.name not in WIRING_ONLY]
            if sources:
                out.add(folder.relative_to(root).as_posix())
    return out


def test_folders(root: pathlib.Path) -> dict[str, list[pathlib.Path]]:
    """Each folder under tests/unit holding a *_test.cpp (as the folder it is the twin of), and
    its tests."""
    out: dict[str, list[pathlib.Path]] = {}
    base = root / UNIT
    if not base.is_dir():
        return out
    for test in sorted(base.rglob("*_test.cpp")):
        out.setdefault(test.parent.relative_to(base).as_posix(), []).append(test)
    return out


def check_tree(root: pathlib.Path) -> list[str]:
    problems = []
    sources = source_folders(root)
    tests = test_folders(root)
    for folder in sorted(sources - set(tests)):
        problems.append(f"{folder}/ holds sources and has no tests: add "
                        f"{UNIT}/{folder}/<unit>_test.cpp")
    for folder in sorted(set(tests) - sources):
        problems.append(f"{UNIT}/{folder}/ holds tests of {folder}/, which holds no sources "
                        "(moved? move its tests with it)")
    listed = "\n".join(p.read_text(encoding="utf-8")
                       for p in sorted((root / UNIT).rglob("CMakeLists.txt")))
    for folder_tests in tests.values():
        for test in folder_tests:
            if test.name not in listed:
                problems.append(f"{test.relative_to(root).as_posix()} is built by no "
                                f"CMakeLists.txt under {UNIT}/")
    return problems


def run(root: pathlib.Path) -> int:
    problems = check_tree(root)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s): the unit tests do not mirror the tree")
        return 1
    print(f"{UNIT}/ mirrors every folder of sources, and builds every test in it")
    return 0


def self_test() -> int:
    """The check can fail: each kind of drift is caught, and a mirrored tree passes."""
    import tempfile
    clean = {
        "proxy/main.cpp": "",
        "proxy/relay/relay.cpp": "",
        "rules/host.hpp": "",
        "tests/unit/proxy/relay/relay_test.cpp": "",
        "tests/unit/rules/host_test.cpp": "",
        "tests/unit/CMakeLists.txt": "relay/relay_test.cpp host_test.cpp",
    }
    cases = {
        "a mirrored tree": ({}, 0),
        "a folder of sources without tests": ({"proxy/dns/resolver.cpp": ""}, 1),
        "tests of a folder that moved": ({"tests/unit/proxy/gone/gone_test.cpp": "",
                                          "tests/unit/CMakeLists.txt":
                                              "relay_test.cpp host_test.cpp gone_test.cpp"}, 1),
        "a test no CMakeLists.txt builds": ({"tests/unit/rules/extra_test.cpp": ""}, 1),
    }
    failed = 0
    for name, (extra, expected) in cases.items():
        with tempfile.TemporaryDirectory() as folder:
            root = pathlib.Path(folder)
            for path, text in {**clean, **extra}.items():
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(text)
            problems = check_tree(root)
            if (1 if problems else 0) != expected:
                print(f"self-test: {name}: expected {'a failure' if expected else 'a pass'}; "
                      f"got {problems}")
                failed += 1
    if failed:
        return 1
    print("self-test passed")
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    sys.exit(run(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else HERE.parents[1])))
