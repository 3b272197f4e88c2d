// The confined command's view of the file system on Linux, built in its own mount namespace
// before Landlock is applied (Landlock forbids mounting afterwards):
//   - private, empty tmpfs over the folders where unix sockets of the user's and the system's
//     daemons live (/run, /var/run, /tmp, /var/tmp, /dev/shm, $XDG_RUNTIME_DIR): no daemon's
//     socket there is reachable, including one its daemon re-creates after start (a restart),
//     and no POSIX shared memory of the host's either;
//   - bound back in from the host: what must stay visible (the working folder or the home when
//     they lie under one of those folders, the unix sockets the user allows);
//   - protected paths in folders that must stay writable (a repository's .git/config and
//     .git/hooks) bound read-only onto themselves, and their folders bound onto themselves, so
//     that none can be written, removed or renamed (a mount point cannot be);
//   - with read_only_root: every mount remounted read-only (keeping the flags the kernel locks
//     in a user namespace), then the writable places bound back read-write: everything else,
//     the home included, refuses writes and metadata changes (chmod, utimes, xattrs) with EROFS;
//     a file system mounted inside a writable place stays read-only;
//   - the run's own caches (fresh): an empty tmpfs over each, the shared ones inside bound back;
//   - a new devpts instance on /dev/pts (and its ptmx on /dev/ptmx): the user's other
//     terminals are not there;
//   - the credential stores hidden: empty read-only tmpfs over their folders (with what stays
//     readable in them bound back), an empty read-only file over each of their files, all of
//     them watched for the command's attempts to open them (StoreReads); then the folders that
//     hold them frozen, where the command cannot write (FrozenFolders);
//   - a fresh /proc for the new pid namespace, its /proc/sys read-only.
//
// Mount work runs in the confined child, single-threaded, between clone() and exec(). The
// mountinfo parsing is pure and thread-safe.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "rules/expected.hpp"

namespace sandgate::sandbox {

struct ViewPlan {
  std::vector<std::string> private_roots;    // absolute, existing folders (not links): tmpfs over
  std::vector<std::string> private_options;  // tmpfs options for each private root, same order
                                             // ("" or missing: mode only, no size limit)
  // Every mount read-only first (bubblewrap's way: chmod, chown, utimes and setxattr fail with
  // EROFS, which Landlock cannot deny), then `writable` bound back read-write.
  bool read_only_root = false;
  std::vector<std::string> writable;  // existing folders bound read-write onto themselves
  // Folders the run gets afresh: an empty, writable tmpfs over each (the host's contents are not
  // seen, and nothing written there outlives the run), laid with `writable` parents first, so
  // that a writable folder inside one is the host's folder bound back into it and one inside a
  // writable folder covers that part of it. Existing folders (on the host, or made in a fresh
  // parent), absolute.
  std::vector<std::string> fresh;
  std::vector<std::string> fresh_options;  // tmpfs options for each, same order ("": mode only)
  bool fresh_devpts = false;  // a new devpts instance on /dev/pts: the host's ptys are not there
  std::vector<std::string> keep;       // absolute paths under a private root, bound back
  std::string runtime_dir;             // $XDG_RUNTIME_DIR: re-created empty (0700) inside
  std::vector<std::string> hide;       // unix sockets elsewhere: /dev/null bound over each
  std::vector<std::string> read_only;  // bound read-only onto themselves (existing paths)
  std::vector<std::string> pinned;     // bound read-write onto themselves: cannot be moved
  // Credential stores (plan/credential_stores.hpp), mounted last so that no bind covers them:
  // an empty read-only tmpfs over each folder (what it held reads as missing, nothing can be
  // written there), with `secret_shown` (paths inside them) bound back; an empty read-only
  // file over each file (it reads as empty, and cannot be written).
  std::vector<std::string> secret_folders;
  std::vector<std::string> secret_shown;
  std::vector<std::string> secret_files;
};

// What the command attempts on the hidden credential stores, as the kernel sees it: an inotify
// instance watching each cover for opens (a hidden file's placeholder opened: a read; a hidden
// folder's tmpfs opened: a listing; a read of a name inside a hidden folder fails as missing
// before anything is opened, and is not seen). `run` reads it when the command has ended
// (store_reads.hpp). `watch` is -1 when nothing is watched.
struct StoreReads {
  int watch = -1;
  struct Watched {
    int wd;
    bool folder;
    std::string path;
  };
  std::vector<Watched> watched;
};

// A hidden store's cover as its path showed it once made: the placeholder (or /dev/null) over a
// file, the empty tmpfs over a folder. A program outside that renames a file over the store, or
// removes it, takes the cover away in every namespace (the kernel detaches mounts on a dentry
// renamed over or unlinked anywhere): the path then shows the host's file again.
struct StoreCover {
  std::string path;
  dev_t device = 0;
  ino_t inode = 0;
};

// The folders that directly hold a hidden store, frozen as the last step of the view where the
// command cannot write them (the home, and every second mount of it, but for what is bound back
// writable): a read-only tmpfs over the folder, holding a copy of each of its entries as the
// view showed it (each bound back, recursively, from a descriptor opened before: a writable
// folder stays writable, a read-only one read-only, a link points where it did), and in each
// store's place its cover. No name inside resolves to a store any more: the kernel's rename over
// a store (`git credential-store`, kubectl, `docker login`) takes away the store's own cover in
// every namespace before the name moves to the new file, and a lookup in between would find the
// old file; a frozen folder's names are the tmpfs's, which no rename outside touches, and a store
// folder moved away outside takes nothing with it that is seen. The cost: the folder's names are
// those at start (an entry made outside during the run is not seen inside, one removed stays,
// a file replaced by a rename shows its old content).
//
// A folder the command may write (the working folder, or a store inside it) is not frozen (the
// command's new entries must show): its stores keep their covers alone, and `run`'s watch stops
// the command when one is replaced outside (store_watch.hpp).
struct FrozenFolders {
  std::vector<std::string> folders;  // frozen, deepest first
  std::vector<std::string> left;     // holding a store, but writable inside: not frozen
  // The stores of the plan (ViewPlan::secret_folders and secret_files, not their second names)
  // every name of which inside lies in a frozen folder: one replaced outside shows nothing.
  std::vector<std::string> settled;
};

// The most entries a frozen folder may hold: each is a mount of its own. A folder with more
// stops the run from starting (its error names the folder and the count).
inline constexpr std::size_t kMaxFrozenEntries = 4096;

// Makes the mount namespace private (nothing propagates to the host), then builds the view
// above. `hidden` receives the sockets actually covered, `reads` the watch over the stores,
// `covers` each store's cover as made (its path shows it through a frozen folder as well),
// `frozen` the folders frozen around the stores. The error names the path and errno.
Expected<bool, std::string> build_private_view(const ViewPlan& plan,
                                               std::vector<std::string>& hidden, StoreReads& reads,
                                               std::vector<StoreCover>& covers,
                                               FrozenFolders& frozen);

// The first of `covers` whose path no longer shows its cover (it shows something else, or
// nothing); "" when every cover is in place. The confined init asks before the command starts:
// `run`'s watch over the stores (store_watch.hpp) begins only after the covers may have been
// made, so a store replaced in between would otherwise stay readable for the whole run.
std::string first_uncovered(const std::vector<StoreCover>& covers);

// Mounts a new proc file system on /proc (call as the pid namespace's first process, after
// build_private_view: it binds through /proc/self/fd).
Expected<bool, std::string> mount_fresh_proc();

// The text of /proc/self/mountinfo ("" when it cannot be read).
std::string read_mountinfo();

// The other places where a mount shows `path` (absolute, resolved) according to the text of
// /proc/self/mountinfo: the same file system's folder mounted a second time (a bind mount of
// the home under a working folder, say). `path` itself is not among them.
std::vector<std::string> mount_aliases(std::string_view mountinfo, const std::string& path);

}  // namespace sandgate::sandbox
