// The home's caches that `sandgate run` lets a confined command write, on Linux and macOS: one
// decision for both. A cache is shared with the user's later programs only when it is the data
// folder of a known tool that checks its entries against what they name when it uses them;
// everything else a tool caches in the home (compiled build outputs, downloaded programs, shell
// start-up caches, git repositories) is run later without a check, outside the sandbox, so the
// command never writes the host's copy of it. Pure constants; thread-safe.
#pragma once

namespace sandgate::sandbox {

// The download caches in the home that stay writable when they exist as folders (not links):
// only the data folders of known tools whose entries are checked against what they name when
// they are used (npm's content-addressed cache, pip's cache, cargo's registry, Go's module cache
// under go.sum, Maven's repository), never a whole ~/.cache or ~/Library/Caches: those also hold
// what runs later without a check (pre-commit's hook environments, Homebrew's bootsnap,
// Playwright's browsers, npx's installs, compiled build caches). A poisoned entry may still be
// used by a later build outside the sandbox: the price of downloads that are kept.
inline constexpr const char* kHomeCaches[] = {
    "/.npm/_cacache", "/Library/Caches/pip", "/.cargo/registry", "/go/pkg/mod", "/.m2/repository",
};

// The same kind of data folders where the tools keep them on Linux (the XDG places): pip's cache
// and pnpm's content-addressed store. Shared on Linux together with kHomeCaches.
inline constexpr const char* kLinuxHomeCaches[] = {
    "/.cache/pip",
    "/.local/share/pnpm/store",
};

// Inside a shared cache, the folders where a tool keeps git repositories it runs git in later
// (Go's VCS cache for modules fetched directly: `go` runs the git command there, which obeys the
// repository's config, hooks and credential helpers). Never shared: on Linux the run gets an
// empty folder there, and the folders on the way to it cannot be renamed.
inline constexpr const char* kUnsharedInHomeCaches[] = {
    "/go/pkg/mod/cache/vcs",
};

// On Linux, the home's folders where tools write caches that are not shared: the run gets an
// empty folder of its own over each (a tmpfs, gone when the run ends), with the shared caches
// that lie inside bound back. Tools that write caches keep working; nothing the command writes
// there survives the run, and what the host's copy holds (Powerlevel10k's instant prompt,
// prezto's zcompdump, pre-commit's hook environments, corepack's package managers, npx's
// installs, the gradle wrapper's distributions, cargo's git checkouts, Go's build cache,
// ccache) is not seen inside. ~/.cache is made if missing; the others only when they exist.
inline constexpr const char* kRunOnlyHomeCaches[] = {
    "/.cache", "/.npm", "/.cargo/git", "/.gradle/caches", "/.gradle/wrapper",
};

}  // namespace sandgate::sandbox
