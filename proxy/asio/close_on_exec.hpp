// Every descriptor the gate opens is closed across exec: the gate runs programs (a masked
// secret's command, nft for the capture, the confined command of `sandgate run`), and a socket
// such a program inherits would keep a client's connection, an origin's or the listening port
// open behind the gate's back, readable and writable by that program. Asio opens and accepts its
// sockets with plain socket() and accept() (no SOCK_CLOEXEC), and dup() drops the flag: each
// place that makes a descriptor that way marks it here, at once. (A program started in the
// instant between the two calls would still inherit it: the gate starts its programs before its
// workers serve, or from a process of its own.)
#pragma once

#include <fcntl.h>

namespace sandgate::descriptors {

// Marks `fd` close-on-exec; false when it could not be (not a descriptor).
inline bool close_on_exec(int fd) { return ::fcntl(fd, F_SETFD, FD_CLOEXEC) == 0; }

// A duplicate of `fd`, close-on-exec from the start (dup() makes an inheritable one); -1 when
// none could be made.
inline int duplicate(int fd) { return ::fcntl(fd, F_DUPFD_CLOEXEC, 0); }

}  // namespace sandgate::descriptors
