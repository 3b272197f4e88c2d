// The confined command's mount view. See private_view.hpp.
#include "sandbox-profile/linux/private_view.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/inotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "sandbox-profile/plan/protected_paths.hpp"
#include "sandbox-profile/process/run_support.hpp"

namespace sandgate::sandbox {
namespace {

// Creates `path` and the folders above it that are missing (mode 0755; `last_mode` for the last
// one), as the mapped user.
bool make_folders(const std::string& path, mode_t last_mode) {
  for (auto slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    ::mkdir(path.substr(0, slash).c_str(), 0755);
  }
  return ::mkdir(path.c_str(), last_mode) == 0 || errno == EEXIST;
}

// A mount point at `path` for something of the type `mode` (a folder, or a file for anything
// else: a bind mount of a socket or a file needs a file to sit on).
bool make_mount_point(const std::string& path, mode_t mode) {
  const auto slash = path.rfind('/');
  if (slash != 0 && slash != std::string::npos && !make_folders(path.substr(0, slash), 0755)) {
    return false;
  }
  if (S_ISDIR(mode)) {
    return ::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST;
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    return errno == EEXIST;
  }
  ::close(fd);
  return true;
}

// The flags a read-only remount must keep: a mount made in a less privileged namespace has its
// nosuid/nodev/noexec/atime flags locked, and a remount that drops one is refused. Of a mount
// already asked about (statvfs or fstatvfs), or by path.
unsigned long locked_flags_of(const struct statvfs& info) {
  unsigned long flags = 0;
  flags |= (info.f_flag & ST_NOSUID) != 0 ? MS_NOSUID : 0;
  flags |= (info.f_flag & ST_NODEV) != 0 ? MS_NODEV : 0;
  flags |= (info.f_flag & ST_NOEXEC) != 0 ? MS_NOEXEC : 0;
  flags |= (info.f_flag & ST_NOATIME) != 0 ? MS_NOATIME : 0;
  flags |= (info.f_flag & ST_NODIRATIME) != 0 ? MS_NODIRATIME : 0;
  flags |= (info.f_flag & ST_RELATIME) != 0 ? MS_RELATIME : 0;
  return flags;
}

unsigned long locked_flags(const std::string& path) {
  struct statvfs info {};
  return ::statvfs(path.c_str(), &info) == 0 ? locked_flags_of(info) : 0;
}

Expected<bool, std::string> self_bind(const std::string& path, bool read_only) {
  if (::mount(path.c_str(), path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    return Unexpected{errno_text("cannot bind " + path + " onto itself")};
  }
  if (read_only && ::mount(nullptr, path.c_str(), nullptr,
                           MS_BIND | MS_REMOUNT | MS_RDONLY | locked_flags(path), nullptr) != 0) {
    return Unexpected{errno_text("cannot make " + path + " read-only")};
  }
  return true;
}

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view text) {
  std::string out;
  const auto digit = [](char c) { return c >= '0' && c <= '7'; };
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size() && digit(text[i + 1]) && digit(text[i + 2]) &&
        digit(text[i + 3])) {
      out += static_cast<char>((text[i + 1] - '0') * 64 + (text[i + 2] - '0') * 8 +
                               (text[i + 3] - '0'));
      i += 3;
      continue;
    }
    out += text[i];
  }
  return out;
}

struct MountEntry {
  std::string device;  // major:minor
  std::string root;    // the folder of the file system that is mounted
  std::string point;   // where
};

std::vector<MountEntry> parse_mountinfo(std::string_view text) {
  std::vector<MountEntry> out;
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    // "ID PARENT MAJOR:MINOR ROOT POINT ...": fields 3 to 5.
    std::vector<std::string_view> fields;
    std::size_t at = 0;
    while (fields.size() < 5 && at < line.size()) {
      const auto space = line.find(' ', at);
      const auto stop = space == std::string_view::npos ? line.size() : space;
      fields.push_back(line.substr(at, stop - at));
      at = stop + 1;
    }
    if (fields.size() == 5) {
      out.push_back({std::string(fields[2]), unescape(fields[3]), unescape(fields[4])});
    }
  }
  return out;
}

// `path` relative to `folder` ("" when equal); `path` must be within `folder`.
std::string relative(const std::string& path, const std::string& folder) {
  if (path == folder) {
    return "";
  }
  return folder == "/" ? path.substr(1) : path.substr(folder.size() + 1);
}

std::string joined(const std::string& folder, const std::string& rest) {
  if (rest.empty()) {
    return folder;
  }
  return folder == "/" ? "/" + rest : folder + "/" + rest;
}

// Remounts every mount of this namespace read-only, /proc aside (a fresh one replaces it). Each
// keeps the flags the kernel locked when the mount namespace was copied into the user namespace.
Expected<bool, std::string> remount_all_read_only() {
  const std::string text = read_mountinfo();
  const auto mounts = parse_mountinfo(text);
  if (mounts.empty()) {
    return Unexpected{std::string("cannot read /proc/self/mountinfo")};
  }
  for (const auto& m : mounts) {
    if (is_within(m.point, "/proc")) {
      continue;
    }
    if (::mount(nullptr, m.point.c_str(), nullptr,
                MS_BIND | MS_REMOUNT | MS_RDONLY | locked_flags(m.point), nullptr) == 0) {
      continue;
    }
    if (errno == ENOENT || errno == EACCES || errno == ENOTDIR || errno == ESTALE) {
      continue;  // out of reach (a folder this user cannot enter): out of the command's too
    }
    return Unexpected{errno_text("cannot make " + m.point + " read-only")};
  }
  return true;
}

// A new devpts instance on /dev/pts, its ptmx bound on /dev/ptmx: ptys opened inside are the
// instance's, and the host's /dev/pts/N (the user's other terminals) are not there.
Expected<bool, std::string> mount_fresh_devpts() {
  struct stat info {};
  if (::stat("/dev/pts", &info) != 0 || !S_ISDIR(info.st_mode)) {
    return true;  // no devpts to replace
  }
  if (::mount("devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
              "newinstance,ptmxmode=0666,mode=0620") != 0) {
    return Unexpected{errno_text("cannot mount a new devpts instance on /dev/pts")};
  }
  if (::stat("/dev/ptmx", &info) == 0 &&
      ::mount("/dev/pts/ptmx", "/dev/ptmx", nullptr, MS_BIND, nullptr) != 0) {
    return Unexpected{errno_text("cannot bind /dev/pts/ptmx on /dev/ptmx")};
  }
  return true;
}

// The writable places, read-write again, and the run's fresh folders, parents first: a fresh
// tmpfs covers what lies below it on the host, so each writable folder is bound from a
// descriptor opened before any of them is mounted (the host's folder, wherever it now lies under a
// fresh one). Only the top mount of each writable place is made writable: a file system mounted
// inside one stays read-only, as do second mounts of protected folders.
Expected<bool, std::string> lay_writable_and_fresh(const ViewPlan& plan) {
  struct Layer {
    std::string path;
    int fd = -1;          // writable: the host's folder; -1 for a fresh one
    std::string options;  // fresh: tmpfs options
  };
  std::vector<Layer> layers;
  const auto close_all = [&layers] {
    for (auto& layer : layers) {
      if (layer.fd >= 0) {
        ::close(layer.fd);
      }
    }
  };
  for (const auto& path : plan.writable) {
    const int fd = ::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
      layers.push_back({path, fd, {}});
    }
  }
  for (std::size_t i = 0; i < plan.fresh.size(); ++i) {
    std::string options = "mode=0700";
    if (i < plan.fresh_options.size() && !plan.fresh_options[i].empty()) {
      options += "," + plan.fresh_options[i];
    }
    layers.push_back({plan.fresh[i], -1, std::move(options)});
  }
  std::stable_sort(layers.begin(), layers.end(),
                   [](const Layer& a, const Layer& b) { return a.path.size() < b.path.size(); });
  for (const auto& layer : layers) {
    if (!make_folders(layer.path, 0700)) {
      const std::string error = errno_text("cannot make " + layer.path + " in the view");
      close_all();
      return Unexpected{error};
    }
    if (layer.fd < 0) {
      if (::mount("tmpfs", layer.path.c_str(), "tmpfs", MS_NOSUID | MS_NODEV,
                  layer.options.c_str()) != 0) {
        const std::string error = errno_text("cannot mount the run's own " + layer.path);
        close_all();
        return Unexpected{error};
      }
      continue;
    }
    const std::string source = "/proc/self/fd/" + std::to_string(layer.fd);
    if (::mount(source.c_str(), layer.path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
      const std::string error = errno_text("cannot bind " + layer.path + " onto itself");
      close_all();
      return Unexpected{error};
    }
    if (::mount(nullptr, layer.path.c_str(), nullptr,
                MS_BIND | MS_REMOUNT | locked_flags(layer.path), nullptr) != 0 &&
        errno != EPERM) {  // EPERM: read-only on the host already (locked): it stays so
      const std::string error = errno_text("cannot make " + layer.path + " writable");
      close_all();
      return Unexpected{error};
    }
  }
  close_all();
  return true;
}

}  // namespace

std::string read_mountinfo() {
  std::string text;
  if (const int fd = ::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC); fd >= 0) {
    char buffer[65536];
    ssize_t got = 0;
    while ((got = ::read(fd, buffer, sizeof buffer)) > 0) {
      text.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(fd);
  }
  return text;
}

std::vector<std::string> mount_aliases(std::string_view mountinfo, const std::string& path) {
  const auto mounts = parse_mountinfo(mountinfo);
  // The mount that shows `path`: the last one (the top of a stack) with the longest mount point
  // above it.
  const MountEntry* home = nullptr;
  for (const auto& m : mounts) {
    if (is_within(path, m.point) && (home == nullptr || m.point.size() >= home->point.size())) {
      home = &m;
    }
  }
  if (home == nullptr) {
    return {};
  }
  // Where `path` is inside its file system.
  const std::string inside = joined(home->root, relative(path, home->point));
  std::vector<std::string> out;
  for (const auto& m : mounts) {
    if (&m == home || m.device != home->device || !is_within(inside, m.root)) {
      continue;
    }
    std::string alias = joined(m.point, relative(inside, m.root));
    if (alias != path) {
      out.push_back(std::move(alias));
    }
  }
  return out;
}

namespace {

// Paths opened (O_PATH) before the folders they live in are covered, so that they can be bound
// back afterwards; closed when it goes. A path that cannot be opened is left out (gone: nothing
// to bind back).
class OpenedPaths {
 public:
  struct Opened {
    std::string path;
    int fd;
    mode_t mode;
  };
  // `flags`: added to O_PATH | O_CLOEXEC (O_NOFOLLOW: never through a link).
  OpenedPaths(const std::vector<std::string>& paths, int flags) {
    for (const auto& path : paths) {
      const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC | flags);
      struct stat info {};
      if (fd < 0 || ::fstat(fd, &info) != 0) {
        if (fd >= 0) {
          ::close(fd);
        }
        continue;
      }
      opened_.push_back({path, fd, info.st_mode});
    }
  }
  ~OpenedPaths() {
    for (const auto& o : opened_) {
      ::close(o.fd);
    }
  }
  OpenedPaths(const OpenedPaths&) = delete;
  OpenedPaths& operator=(const OpenedPaths&) = delete;

  const std::vector<Opened>& opened() const { return opened_; }

 private:
  std::vector<Opened> opened_;
};

// Binds `o` back at its path (a mount point made for it where it is missing).
bool bind_back(const OpenedPaths::Opened& o) {
  const std::string source = "/proc/self/fd/" + std::to_string(o.fd);
  return make_mount_point(o.path, o.mode) &&
         ::mount(source.c_str(), o.path.c_str(), nullptr, MS_BIND | MS_REC, nullptr) == 0;
}

// The last step of the view: the credential stores (ViewPlan::secret_*). A store that vanished
// since the plan is skipped; any other failure ends the run, since the command would read what
// it was promised not to.
// The empty, read-only files that cover hidden files, one each (an open of one is an attempt
// on its store, StoreReads): made on a small tmpfs mounted under a private root only while they
// are made, then detached (the binds keep them; no path inside shows them). Empty when there is
// no private root to make them under: the files are then covered with /dev/null, unwatched.
struct Placeholders {
  std::string folder;      // the tmpfs's mount point while it is mounted
  std::vector<int> files;  // O_PATH, one per hidden file, same order
};

Placeholders make_placeholders(const ViewPlan& plan, std::size_t count) {
  Placeholders made;
  if (count == 0 || plan.private_roots.empty()) {
    return made;
  }
  std::string folder = plan.private_roots.front() + "/.sandgate-stores-XXXXXX";
  if (::mkdtemp(folder.data()) == nullptr) {
    return made;
  }
  if (::mount("tmpfs", folder.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0700,size=64k,nr_inodes=4096") != 0) {
    ::rmdir(folder.c_str());
    return made;
  }
  made.folder = folder;
  for (std::size_t i = 0; i < count; ++i) {
    const std::string path = folder + "/" + std::to_string(i);
    const int created = ::open(path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0444);
    const int fd = created < 0 ? -1 : ::open(path.c_str(), O_PATH | O_CLOEXEC);
    if (created >= 0) {
      ::close(created);
    }
    made.files.push_back(fd);
  }
  return made;
}

void drop_placeholders(Placeholders& made) {
  for (int fd : made.files) {
    if (fd >= 0) {
      ::close(fd);
    }
  }
  made.files.clear();
  if (!made.folder.empty()) {
    ::umount2(made.folder.c_str(), MNT_DETACH);
    ::rmdir(made.folder.c_str());
    made.folder.clear();
  }
}

// Whether `path` names something readable through it (followed, as the cover's mount follows it:
// a dangling link hides nothing).
bool is_there(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

Unexpected<std::string> store_refused(const std::string& path) {
  return Unexpected{errno_text("cannot hide the credential store " + path) +
                    " (give --allow-read " + path + " to leave it readable)"};
}

// The store's path does not show the cover just made: a program outside replaced or moved the
// store meanwhile (which takes the cover away with the old one).
Unexpected<std::string> store_moved(const std::string& path) {
  return Unexpected{"cannot hide the credential store " + path +
                    ": it was replaced or moved outside while it was being covered; run it again "
                    "(or give --allow-read " +
                    path + " to leave it readable)"};
}

// `paths`, and where a second mount of their file system (the home under the working folder,
// say) shows them by another path.
std::vector<std::string> with_aliases(const std::vector<std::string>& paths,
                                      const std::string& mountinfo) {
  std::vector<std::string> out = paths;
  for (const auto& path : paths) {
    for (auto& alias : mount_aliases(mountinfo, path)) {
      out.push_back(std::move(alias));
    }
  }
  return out;
}

// Watches `path` (a hidden store's cover) for the command's opens, recorded as attempts on `as`;
// without inotify the stores are hidden all the same.
void watch_store(StoreReads& reads, const std::string& path, bool folder, const std::string& as) {
  if (reads.watch < 0 || as.find('\n') != std::string::npos) {
    return;
  }
  // Closes too: two opens in a row would be merged into one event by the kernel.
  const int wd =
      ::inotify_add_watch(reads.watch, path.c_str(),
                          IN_OPEN | IN_CLOSE_NOWRITE | (folder ? IN_ONLYDIR : 0) | IN_DONT_FOLLOW);
  if (wd >= 0) {
    reads.watched.push_back({wd, folder, as});
  }
}

// What `path` shows now (followed, as the cover's mount is), as a cover.
bool shown_at(const std::string& path, StoreCover& cover) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return false;
  }
  cover = {path, info.st_dev, info.st_ino};
  return true;
}

// An empty read-only tmpfs over each folder, with what stays readable in it (`shown`, opened
// before) bound back.
Expected<bool, std::string> hide_store_folders(const std::vector<std::string>& folders,
                                               const OpenedPaths& shown, StoreReads& reads,
                                               std::vector<StoreCover>& covers) {
  for (const auto& folder : folders) {
    if (::mount("tmpfs", folder.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                "mode=0700,size=1m") != 0) {
      // Only a store that is not there is passed over: one that is there stays hidden or the run
      // does not start (errno is the mount's: stat sets it only when it fails).
      if ((errno == ENOENT || errno == ENOTDIR) && !is_there(folder)) {
        continue;
      }
      return store_refused(folder);
    }
    // The folder now shows the new tmpfs, a file system of its own (not its parent's): else the
    // store was moved away or replaced in the meantime, and the mount covers nothing.
    StoreCover cover;
    StoreCover parent;
    const auto slash = folder.rfind('/');
    if (!shown_at(folder, cover) ||
        !shown_at(slash == 0 ? std::string("/") : folder.substr(0, slash), parent) ||
        cover.device == parent.device) {
      return store_moved(folder);
    }
    covers.push_back(std::move(cover));
    watch_store(reads, folder, true, folder);
    for (const auto& o : shown.opened()) {
      if (o.path.starts_with(folder + "/") && !bind_back(o)) {
        return Unexpected{errno_text("cannot show " + o.path + " in its hidden folder")};
      }
    }
    if (::mount(nullptr, folder.c_str(), nullptr,
                MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700") != 0) {
      return store_refused(folder);
    }
  }
  return true;
}

// An empty read-only file (a placeholder, else /dev/null) over each file.
Expected<bool, std::string> hide_store_files(const std::vector<std::string>& files,
                                             Placeholders& placeholders, StoreReads& reads,
                                             std::vector<StoreCover>& covers) {
  for (std::size_t i = 0; i < files.size(); ++i) {
    const std::string& file = files[i];
    const int placeholder = i < placeholders.files.size() ? placeholders.files[i] : -1;
    const std::string source =
        placeholder >= 0 ? "/proc/self/fd/" + std::to_string(placeholder) : "/dev/null";
    // The cover as it must show: the placeholder's inode, or /dev/null's.
    struct stat expected {};
    if ((placeholder >= 0 ? ::fstat(placeholder, &expected) : ::stat(source.c_str(), &expected)) !=
        0) {
      return store_refused(file);
    }
    if (::mount(source.c_str(), file.c_str(), nullptr, MS_BIND, nullptr) != 0) {
      // ENOENT may be the cover's as well as the store's: only a store that is not there is
      // passed over, never one that is there and could not be covered.
      if ((errno == ENOENT || errno == ENOTDIR) && !is_there(file)) {
        continue;
      }
      return store_refused(file);
    }
    // Read-only, so that nobody inside changes its mode and writes into it (/dev/null is
    // harmless written).
    if (placeholder >= 0 &&
        ::mount(nullptr, file.c_str(), nullptr,
                MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                nullptr) != 0) {
      return store_refused(file);
    }
    // The path shows the cover, or the store was replaced in the meantime (the rename took the
    // new mount with the old file) and the run does not start.
    StoreCover cover;
    if (!shown_at(file, cover) || cover.device != expected.st_dev ||
        cover.inode != expected.st_ino) {
      return store_moved(file);
    }
    covers.push_back(std::move(cover));
    if (placeholder >= 0) {
      watch_store(reads, placeholders.folder + "/" + std::to_string(i), false, file);
    }
  }
  return true;
}

// The folder `path` lies in ("/" for a path right under the root).
std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? std::string("/") : path.substr(0, slash);
}

// Descriptors closed on leaving a scope.
struct Descriptors {
  std::vector<int> fds;
  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    for (int fd : fds) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
  }
  int keep(int fd) {
    fds.push_back(fd);
    return fd;
  }
};

std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// One entry of a folder being frozen, as the view showed it before: what is bound back in the
// frozen folder (`fd`: the top mount at its path, or its cover for a store), or the link made
// again there.
struct FrozenEntry {
  std::string name;
  int fd = -1;  // O_PATH, never followed
  mode_t mode = 0;
  std::string target;  // a link's
};

// The entries of `folder` (opened as `dir`), each opened through the view, a store's checked to
// show its cover (`covers`): a store without a cover (missing when the covers were made) is left
// out, never copied.
Expected<std::vector<FrozenEntry>, std::string> frozen_entries(
    const std::string& folder, int dir, const std::vector<std::string>& store_names,
    const std::vector<StoreCover>& covers, Descriptors& opened) {
  std::vector<std::string> names;
  {
    const int listed = ::openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR* stream = listed < 0 ? nullptr : ::fdopendir(listed);
    if (stream == nullptr) {
      if (listed >= 0) {
        ::close(listed);
      }
      return Unexpected{errno_text("cannot list " + folder + " to freeze it")};
    }
    // Bounded: a folder with more entries stops the run (a mount each).
    while (const dirent* entry = ::readdir(stream)) {
      const std::string name = entry->d_name;
      if (name == "." || name == "..") {
        continue;
      }
      if (names.size() == kMaxFrozenEntries) {
        ::closedir(stream);
        return Unexpected{"cannot freeze " + folder + ", which holds a hidden credential store: " +
                          "it has more than " + std::to_string(kMaxFrozenEntries) +
                          " entries (each is a mount of its own); move the store's folder " +
                          "elsewhere, or give --allow-read for its store"};
      }
      names.push_back(name);
    }
    ::closedir(stream);
  }
  std::vector<FrozenEntry> entries;
  for (const auto& name : names) {
    const std::string path = joined(folder, name);
    const bool store = std::find(store_names.begin(), store_names.end(), name) != store_names.end();
    const auto cover = std::find_if(covers.begin(), covers.end(),
                                    [&path](const StoreCover& c) { return c.path == path; });
    if (store && cover == covers.end()) {
      continue;  // not covered: not there when the covers were made, and not shown now either
    }
    const int fd = opened.keep(::openat(dir, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct stat info {};
    if (fd < 0 || ::fstat(fd, &info) != 0) {
      if (errno == ENOENT && !store) {
        continue;  // removed outside meanwhile
      }
      return store ? store_moved(path) : Unexpected{errno_text("cannot open " + path)};
    }
    if (store && (info.st_dev != cover->device || info.st_ino != cover->inode)) {
      return store_moved(path);
    }
    FrozenEntry entry{name, fd, info.st_mode, {}};
    if (S_ISLNK(info.st_mode)) {
      std::string target(PATH_MAX, '\0');
      const ssize_t got = ::readlinkat(fd, "", target.data(), target.size());
      if (got < 0 || static_cast<std::size_t>(got) >= target.size()) {
        return Unexpected{errno_text("cannot read the link " + path)};
      }
      target.resize(static_cast<std::size_t>(got));
      entry.target = std::move(target);
    }
    entries.push_back(std::move(entry));
  }
  return entries;
}

// A new tmpfs for a frozen copy of a folder of `count` entries (the mode and owner of `like`),
// mounted on a folder made for it under `staging` (a private root: nothing outside can reach or
// rename it) until it is moved over the folder: its root, O_PATH, and the folder it is on. (Not
// fsmount(): a detached mount counts as a mount namespace, and the sandbox's user namespace may
// make none.) The size bounds it to the entries' mount points and links.
struct StagedTmpfs {
  int root = -1;
  std::string at;
};

Expected<StagedTmpfs, std::string> frozen_tmpfs(const std::string& folder, const struct stat& like,
                                                std::size_t count, const std::string& staging) {
  StagedTmpfs made{-1, staging + "/.sandgate-frozen-XXXXXX"};
  if (::mkdtemp(made.at.data()) == nullptr) {
    return Unexpected{errno_text("cannot make a tmpfs to freeze " + folder)};
  }
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(like.st_mode & 07777));
  const std::string options = std::string("mode=") + mode +
                              ",nr_inodes=" + std::to_string(count + 16) +
                              ",size=" + std::to_string((count + 16) * 4096);
  // The owner as the folder's, where this namespace maps it (a folder of another user's keeps
  // the mapped user as owner: read-only, its mode says the same).
  const std::string owned =
      options + ",uid=" + std::to_string(like.st_uid) + ",gid=" + std::to_string(like.st_gid);
  const unsigned long flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
  if (::mount("tmpfs", made.at.c_str(), "tmpfs", flags, owned.c_str()) != 0 &&
      ::mount("tmpfs", made.at.c_str(), "tmpfs", flags, options.c_str()) != 0) {
    const int error = errno;
    ::rmdir(made.at.c_str());
    errno = error;
    return Unexpected{errno_text("cannot mount a tmpfs to freeze " + folder)};
  }
  made.root = ::open(made.at.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (made.root < 0) {
    const int error = errno;
    ::umount2(made.at.c_str(), MNT_DETACH);
    ::rmdir(made.at.c_str());
    errno = error;
    return Unexpected{errno_text("cannot open the tmpfs made to freeze " + folder)};
  }
  return made;
}

// Freezes `folder` (FrozenFolders): its entries opened through the view as it is now, a tmpfs
// made with a mount point for each, attached over the folder, each entry bound back in from its
// descriptor (recursively: what is mounted below it comes along, a frozen folder deeper down
// included), read-only where it was, and the tmpfs made read-only. `store_names`: the names of
// the hidden stores in it, each bound back from its cover only.
Expected<bool, std::string> freeze_folder(const std::string& folder,
                                          const std::vector<std::string>& store_names,
                                          const std::vector<StoreCover>& covers,
                                          const std::string& staging) {
  Descriptors opened;
  const int dir = opened.keep(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat like {};
  if (dir < 0 || ::fstat(dir, &like) != 0) {
    return Unexpected{errno_text("cannot open " + folder + " to freeze it")};
  }
  auto entries = frozen_entries(folder, dir, store_names, covers, opened);
  if (!entries) {
    return Unexpected{entries.error()};
  }
  auto made = frozen_tmpfs(folder, like, entries->size(), staging);
  if (!made) {
    return Unexpected{made.error()};
  }
  const int root = opened.keep(made->root);
  // The staging folder goes once the tmpfs has left it (or on failure, with the tmpfs).
  struct Unstage {
    const std::string& at;
    ~Unstage() {
      ::umount2(at.c_str(), MNT_DETACH);  // EINVAL once moved: nothing mounted there then
      ::rmdir(at.c_str());
    }
  } unstage{made->at};
  // The mount points, made while the tmpfs is detached.
  for (const auto& entry : *entries) {
    int made_point = -1;
    if (S_ISLNK(entry.mode)) {
      made_point = ::symlinkat(entry.target.c_str(), root, entry.name.c_str());
    } else if (S_ISDIR(entry.mode)) {
      made_point = ::mkdirat(root, entry.name.c_str(), 0755);
    } else {
      const int file =
          ::openat(root, entry.name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
      made_point = file < 0 ? -1 : ::close(file);
    }
    if (made_point != 0) {
      return Unexpected{errno_text("cannot make " + joined(folder, entry.name) +
                                   " in the frozen copy of " + folder)};
    }
  }
  // Over the folder as it was opened (not its path again: a rename outside could move it).
  if (::mount(made->at.c_str(), fd_path(dir).c_str(), nullptr, MS_MOVE, nullptr) != 0) {
    return Unexpected{errno_text("cannot mount the frozen copy of " + folder)};
  }
  const std::string inside = fd_path(root);
  for (const auto& entry : *entries) {
    if (S_ISLNK(entry.mode)) {
      continue;
    }
    const std::string target = inside + "/" + entry.name;
    if (::mount(fd_path(entry.fd).c_str(), target.c_str(), nullptr, MS_BIND | MS_REC, nullptr) !=
        0) {
      return Unexpected{errno_text("cannot bind " + joined(folder, entry.name) +
                                   " into the frozen copy of " + folder)};
    }
    // A bind copies the mount's flags, read-only included; made sure of, since a writable copy of
    // a read-only place (a store's cover, the home's files) would let the command write there.
    struct statvfs source {};
    struct statvfs copy {};
    if (::fstatvfs(entry.fd, &source) != 0 || ::statvfs(target.c_str(), &copy) != 0) {
      return Unexpected{errno_text("cannot check the copy of " + joined(folder, entry.name))};
    }
    if ((source.f_flag & ST_RDONLY) != 0 && (copy.f_flag & ST_RDONLY) == 0 &&
        (::mount(nullptr, target.c_str(), nullptr,
                 MS_REMOUNT | MS_BIND | MS_RDONLY | locked_flags_of(source), nullptr) != 0 ||
         ::statvfs(target.c_str(), &copy) != 0 || (copy.f_flag & ST_RDONLY) == 0)) {
      return Unexpected{
          errno_text("cannot make the copy of " + joined(folder, entry.name) + " read-only")};
    }
  }
  if (::mount(nullptr, inside.c_str(), nullptr,
              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return Unexpected{errno_text("cannot make the frozen copy of " + folder + " read-only")};
  }
  // The folder's path shows the copy now, or it was moved outside meanwhile (the copy went with
  // it) and the run does not start.
  struct stat shown {};
  struct stat copy {};
  if (::stat(folder.c_str(), &shown) != 0 || ::fstat(root, &copy) != 0 ||
      shown.st_dev != copy.st_dev || shown.st_ino != copy.st_ino) {
    return store_moved(folder);
  }
  return true;
}

// Freezes each folder that holds one of `stores` (every name of the hidden stores, second ones
// included) and that the command cannot write, deepest first (a folder's copy then carries the
// frozen ones below it). A folder missing from the view (under a private root, say) shows no
// store either, and is passed over.
Expected<bool, std::string> freeze_store_folders(const std::vector<std::string>& stores,
                                                 const std::vector<StoreCover>& covers,
                                                 const std::string& staging,
                                                 FrozenFolders& frozen) {
  std::map<std::string, std::vector<std::string>> by_folder;
  for (const auto& store : stores) {
    by_folder[parent_of(store)].push_back(store.substr(store.rfind('/') + 1));
  }
  std::vector<std::string> folders;
  for (const auto& [folder, names] : by_folder) {
    folders.push_back(folder);
  }
  const auto depth = [](const std::string& path) {
    return std::count(path.begin(), path.end(), '/');
  };
  std::stable_sort(folders.begin(), folders.end(),
                   [&](const std::string& a, const std::string& b) { return depth(a) > depth(b); });
  for (const auto& folder : folders) {
    // Inside a hidden folder (a file store named there too, KUBECONFIG in ~/.kube, say): its
    // empty tmpfs shows none of the host's names, and stays (a copy would stand in its cover's
    // place).
    const bool in_hidden_folder = std::any_of(stores.begin(), stores.end(), [&](const auto& s) {
      return is_within(folder, s) && std::any_of(covers.begin(), covers.end(), [&](const auto& c) {
               struct stat info {};
               return c.path == s && ::stat(s.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
             });
    });
    if (in_hidden_folder) {
      continue;
    }
    struct statvfs info {};
    if (::statvfs(folder.c_str(), &info) != 0) {
      const auto& names = by_folder[folder];
      const bool shown = std::any_of(names.begin(), names.end(), [&folder](const auto& name) {
        return is_there(joined(folder, name));
      });
      if (!shown) {
        continue;
      }
      return Unexpected{errno_text("cannot freeze " + folder)};
    }
    // Writable inside (the command's new entries must show there), or the root itself; or no
    // private root to make the copy in (a plan without one: the run's always has /tmp).
    if ((info.f_flag & ST_RDONLY) == 0 || folder == "/" || staging.empty()) {
      frozen.left.push_back(folder);
      continue;
    }
    if (auto done = freeze_folder(folder, by_folder[folder], covers, staging); !done) {
      return done;
    }
    frozen.folders.push_back(folder);
  }
  return true;
}

Expected<bool, std::string> hide_credential_stores(const ViewPlan& plan, StoreReads& reads,
                                                   std::vector<StoreCover>& covers,
                                                   FrozenFolders& frozen) {
  // Aliases of the stores are hidden too (whole, without what stays readable in them).
  const std::string mountinfo = read_mountinfo();
  const std::vector<std::string> folders = with_aliases(plan.secret_folders, mountinfo);
  const std::vector<std::string> files = with_aliases(plan.secret_files, mountinfo);
  // Each store of the plan with its second names, for FrozenFolders::settled.
  std::vector<std::vector<std::string>> names;
  for (const auto* stores : {&plan.secret_folders, &plan.secret_files}) {
    for (const auto& store : *stores) {
      names.push_back(with_aliases({store}, mountinfo));
    }
  }
  reads.watch = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  {
    // What stays readable, opened before its folder is covered; never through a link: one could
    // lead into a store (the plan takes none; this holds if one replaced a file since).
    const OpenedPaths shown(plan.secret_shown, O_NOFOLLOW);
    if (auto hidden = hide_store_folders(folders, shown, reads, covers); !hidden) {
      return hidden;
    }
  }
  Placeholders placeholders = make_placeholders(plan, files.size());
  auto hidden = hide_store_files(files, placeholders, reads, covers);
  drop_placeholders(placeholders);
  if (!hidden) {
    return hidden;
  }
  std::vector<std::string> stores = folders;
  stores.insert(stores.end(), files.begin(), files.end());
  const std::string staging = plan.private_roots.empty() ? "" : plan.private_roots.front();
  if (auto done = freeze_store_folders(stores, covers, staging, frozen); !done) {
    return done;
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    const bool settled = std::all_of(names[i].begin(), names[i].end(), [&](const auto& name) {
      return std::find(frozen.folders.begin(), frozen.folders.end(), parent_of(name)) !=
             frozen.folders.end();
    });
    if (settled) {
      frozen.settled.push_back(names[i].front());
    }
  }
  return true;
}

// Private tmpfs over the private roots (every mount made read-only first when the plan says
// so), $XDG_RUNTIME_DIR made again inside, and what is kept bound back in.
Expected<bool, std::string> cover_private_roots(const ViewPlan& plan) {
  // What is bound back, opened before the folders it lives in are covered.
  const OpenedPaths kept(plan.keep, 0);
  // Every mount read-only, before anything is mounted on top: what is writable is bound back
  // later.
  if (plan.read_only_root) {
    if (auto done = remount_all_read_only(); !done) {
      return done;
    }
  }
  for (std::size_t i = 0; i < plan.private_roots.size(); ++i) {
    const std::string& root = plan.private_roots[i];
    const bool sticky = root != "/run" && root != "/var/run";
    std::string options = sticky ? "mode=1777" : "mode=0755";
    if (i < plan.private_options.size() && !plan.private_options[i].empty()) {
      options += "," + plan.private_options[i];
    }
    if (::mount("tmpfs", root.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
      return Unexpected{errno_text("cannot mount a private tmpfs on " + root)};
    }
  }
  if (!plan.runtime_dir.empty()) {
    make_folders(plan.runtime_dir, 0700);
  }
  for (const auto& k : kept.opened()) {
    if (!bind_back(k)) {
      return Unexpected{errno_text("cannot bind " + k.path + " back into the view")};
    }
  }
  return true;
}

// Sockets outside the private folders, as found at start-up: /dev/null over each.
Expected<bool, std::string> hide_sockets(const ViewPlan& plan, std::vector<std::string>& hidden) {
  for (const auto& path : plan.hide) {
    if (::mount("/dev/null", path.c_str(), nullptr, MS_BIND, nullptr) == 0) {
      hidden.push_back(path);
      continue;
    }
    if (errno == ENOENT || errno == EACCES || errno == ENOTDIR) {
      continue;  // vanished, or this user cannot reach it anyway
    }
    return Unexpected{errno_text("cannot hide the unix socket " + path) +
                      " (give --allow-unix-socket " + path + " to leave it reachable)"};
  }
  return true;
}

// The protected paths bound onto themselves: folders first (pinned: they cannot be moved), then
// what they protect read-only (a bind onto a folder would cover a bind below it).
Expected<bool, std::string> bind_protected(const ViewPlan& plan) {
  for (const auto& path : plan.pinned) {
    if (auto bound = self_bind(path, false); !bound) {
      return bound;
    }
  }
  for (const auto& path : plan.read_only) {
    if (auto bound = self_bind(path, true); !bound) {
      return bound;
    }
  }
  return true;
}

}  // namespace

Expected<bool, std::string> build_private_view(const ViewPlan& plan,
                                               std::vector<std::string>& hidden, StoreReads& reads,
                                               std::vector<StoreCover>& covers,
                                               FrozenFolders& frozen) {
  // Nothing mounted here may propagate back to the host's mount namespace.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    return Unexpected{errno_text("cannot make the mount namespace private")};
  }
  if (auto covered = cover_private_roots(plan); !covered) {
    return covered;
  }
  if (plan.fresh_devpts) {
    if (auto done = mount_fresh_devpts(); !done) {
      return done;
    }
  }
  if (auto laid = lay_writable_and_fresh(plan); !laid) {
    return laid;
  }
  if (auto done = hide_sockets(plan, hidden); !done) {
    return done;
  }
  if (auto bound = bind_protected(plan); !bound) {
    return bound;
  }
  return hide_credential_stores(plan, reads, covers, frozen);
}

std::string first_uncovered(const std::vector<StoreCover>& covers) {
  // Any of the run's covers will do: two names of one store (a link to another) share the
  // mount made last on it.
  const auto is_a_cover = [&covers](const struct stat& info) {
    return std::any_of(covers.begin(), covers.end(), [&info](const StoreCover& cover) {
      return cover.device == info.st_dev && cover.inode == info.st_ino;
    });
  };
  for (const auto& cover : covers) {
    struct stat info {};
    if (::stat(cover.path.c_str(), &info) != 0 || !is_a_cover(info)) {
      return cover.path;
    }
  }
  return {};
}

Expected<bool, std::string> mount_fresh_proc() {
  if (::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return Unexpected{errno_text("cannot mount /proc for the new pid namespace")};
  }
  // Kernel settings: read-only, whoever the command is.
  if (::mount("/proc/sys", "/proc/sys", nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
      ::mount(nullptr, "/proc/sys", nullptr,
              MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    return Unexpected{errno_text("cannot make /proc/sys read-only")};
  }
  return true;
}

}  // namespace sandgate::sandbox
