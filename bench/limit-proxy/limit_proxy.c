// sandgate-limit-proxy: the least an HTTP CONNECT proxy can do on this kernel, as the benchmark's
// reference row ("limit"). One thread, one epoll set (level-triggered), non-blocking sockets,
// read(2)/write(2) through a 16 KiB buffer per direction. No policy, no DNS (the target must be
// an IPv4 literal), no logging, no timeouts, no limits beyond the descriptor table. Every
// sandgate figure in bench/ is also given as a ratio to this one, measured in the same rounds:
// what sandgate costs beyond the minimum the kernel already charges.
//
//   sandgate-limit-proxy [--listen 127.0.0.1:PORT] [--port-file FILE]
//
// Prints "sandgate-limit-proxy listening on HOST:PORT" on stdout once bound. Not a product: never
// expose it (it relays anything to anywhere).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

enum { kBuffer = 16384, kHead = 4096, kEvents = 256 };

// One side of a tunnel. `out` holds bytes read from the peer, waiting to be written to this
// side's socket.
struct side {
  int fd;
  struct side* peer;
  int is_client;
  int connecting;   // upstream: the non-blocking connect has not completed
  int read_closed;  // this side sent FIN (or failed): nothing more to read from it
  int write_shut;   // shutdown(SHUT_WR) done on this side
  size_t out_len;
  size_t out_off;
  size_t head_len;  // client side before the tunnel: bytes of the request head so far
  int tunnel;       // client side: the 200 was sent, bytes now relay
  int dead;         // closed in this batch of events: freed after it
  int added;        // in the epoll set
  unsigned interest;  // the events asked for (so an unchanged interest costs no system call)
  struct side* next_dead;
  char out[kBuffer];
  char head[kHead];
};

static int epoll_fd;
// Sides closed while handling a batch of events: a later event of the same batch may name them,
// so they are freed only after the batch.
static struct side* graveyard;

static void bury(struct side* s) {
  if (s != NULL && !s->dead) {
    close(s->fd);  // also leaves the epoll set
    s->dead = 1;
    s->next_dead = graveyard;
    graveyard = s;
  }
}

static void set_interest(struct side* s) {
  struct epoll_event event = {0};
  event.data.ptr = s;
  if (s->connecting) {
    event.events = EPOLLOUT;
  } else {
    // Read while the peer has room for it; write while something waits.
    if (!s->read_closed && (!s->is_client || s->tunnel || s->peer == NULL) &&
        (s->peer == NULL || s->peer->out_len == 0)) {
      event.events |= EPOLLIN;
    }
    if (s->out_len > s->out_off) {
      event.events |= EPOLLOUT;
    }
  }
  if (s->added && event.events == s->interest) {
    return;
  }
  epoll_ctl(epoll_fd, s->added ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s->fd, &event);
  s->added = 1;
  s->interest = event.events;
}

static void close_tunnel(struct side* s) {
  bury(s->peer);
  bury(s);
}

// Writes what waits in s->out; returns -1 on a broken socket.
static int flush_side(struct side* s) {
  while (s->out_off < s->out_len) {
    const ssize_t n = write(s->fd, s->out + s->out_off, s->out_len - s->out_off);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) {
        return 0;
      }
      return -1;
    }
    s->out_off += (size_t)n;
  }
  s->out_off = s->out_len = 0;
  return 0;
}

// Both directions done (FIN passed on each way, nothing left to write): the tunnel ends.
static int finished(struct side* s) {
  struct side* p = s->peer;
  return p != NULL && s->read_closed && p->read_closed && s->out_len == 0 && p->out_len == 0;
}

// Passes a FIN on once everything read before it is written.
static void pass_fin(struct side* from) {
  struct side* to = from->peer;
  if (from->read_closed && to->out_len == 0 && !to->write_shut) {
    shutdown(to->fd, SHUT_WR);
    to->write_shut = 1;
  }
}

static void reply_and_close(struct side* client, const char* reply) {
  ssize_t ignored = write(client->fd, reply, strlen(reply));
  (void)ignored;
  close_tunnel(client);
}

// The request head is complete: parse "CONNECT a.b.c.d:port HTTP/1.x", start the connect.
static void open_upstream(struct side* client, const char* early, size_t early_length) {
  char host[64];
  unsigned port = 0;
  client->head[client->head_len] = '\0';  // sscanf stops at the first line's end anyway
  if (sscanf(client->head, "CONNECT %63[0-9.]:%u HTTP/1.", host, &port) != 2 || port == 0 ||
      port > 65535) {
    reply_and_close(client, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  struct sockaddr_in address = {0};
  address.sin_family = AF_INET;
  address.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, host, &address.sin_addr) != 1) {
    reply_and_close(client, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || (connect(fd, (struct sockaddr*)&address, sizeof address) != 0 &&
                 errno != EINPROGRESS)) {
    if (fd >= 0) {
      close(fd);
    }
    reply_and_close(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct side* upstream = calloc(1, sizeof *upstream);
  upstream->fd = fd;
  upstream->peer = client;
  upstream->connecting = 1;
  memcpy(upstream->out, early, early_length);  // early_length < kHead < kBuffer
  upstream->out_len = early_length;
  client->peer = upstream;
  set_interest(client);  // nothing to read until the tunnel is up
  set_interest(upstream);
}

static void on_connected(struct side* upstream) {
  struct side* client = upstream->peer;
  int error = 0;
  socklen_t length = sizeof error;
  getsockopt(upstream->fd, SOL_SOCKET, SO_ERROR, &error, &length);
  if (error != 0) {
    client->peer = NULL;
    bury(upstream);
    reply_and_close(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  upstream->connecting = 0;
  client->tunnel = 1;
  if (flush_side(upstream) < 0) {  // the client's early bytes
    close_tunnel(client);
    return;
  }
  static const char kEstablished[] = "HTTP/1.1 200 Connection established\r\n\r\n";
  memcpy(client->out, kEstablished, sizeof kEstablished - 1);
  client->out_len = sizeof kEstablished - 1;
  if (flush_side(client) < 0) {
    close_tunnel(client);
    return;
  }
  set_interest(client);
  set_interest(upstream);
}

// Reads the request head; bytes after its blank line are the tunnel's first, kept for upstream.
static void read_head(struct side* client) {
  const ssize_t n = read(client->fd, client->head + client->head_len, kHead - 1 - client->head_len);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    return;
  }
  if (n <= 0) {
    close_tunnel(client);
    return;
  }
  client->head_len += (size_t)n;
  const char* blank = memmem(client->head, client->head_len, "\r\n\r\n", 4);
  if (blank == NULL) {
    if (client->head_len == kHead - 1) {
      reply_and_close(client, "HTTP/1.1 431 Request Header Fields Too Large\r\n\r\n");
    }
    return;
  }
  const size_t length = (size_t)(blank - client->head) + 4;
  open_upstream(client, client->head + length, client->head_len - length);
}

// Relays what `from` has to its peer; returns 0 when the tunnel ended (and was freed).
static int relay(struct side* from) {
  struct side* to = from->peer;
  const ssize_t n = read(from->fd, to->out, kBuffer);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    return 1;
  }
  if (n < 0) {
    close_tunnel(from);
    return 0;
  }
  if (n == 0) {
    from->read_closed = 1;
    pass_fin(from);
  } else {
    to->out_len = (size_t)n;
    to->out_off = 0;
    if (flush_side(to) < 0) {
      close_tunnel(from);
      return 0;
    }
  }
  if (finished(from)) {
    close_tunnel(from);
    return 0;
  }
  set_interest(from);
  set_interest(to);
  return 1;
}

static void on_writable(struct side* s) {
  if (flush_side(s) < 0) {
    close_tunnel(s);
    return;
  }
  pass_fin(s->peer);
  if (finished(s)) {
    close_tunnel(s);
    return;
  }
  set_interest(s);
  set_interest(s->peer);
}

int main(int argc, char** argv) {
  const char* listen_at = "127.0.0.1:0";
  const char* port_file = NULL;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--listen") == 0 && i + 1 < argc) {
      listen_at = argv[++i];
    } else if (strcmp(argv[i], "--port-file") == 0 && i + 1 < argc) {
      port_file = argv[++i];
    } else {
      fprintf(stderr, "usage: %s [--listen 127.0.0.1:PORT] [--port-file FILE]\n", argv[0]);
      return 2;
    }
  }
  char host[64];
  unsigned port = 0;
  struct sockaddr_in address = {0};
  address.sin_family = AF_INET;
  if (sscanf(listen_at, "%63[0-9.]:%u", host, &port) != 2 || port > 65535 ||
      inet_pton(AF_INET, host, &address.sin_addr) != 1) {
    fprintf(stderr, "sandgate-limit-proxy: --listen wants IPV4:PORT, not '%s'\n", listen_at);
    return 2;
  }
  address.sin_port = htons((uint16_t)port);
  signal(SIGPIPE, SIG_IGN);
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int one = 1;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(listener, (struct sockaddr*)&address, sizeof address) != 0 ||
      listen(listener, 4096) != 0) {
    perror("sandgate-limit-proxy: bind");
    return 1;
  }
  socklen_t length = sizeof address;
  getsockname(listener, (struct sockaddr*)&address, &length);
  char bound[80];
  snprintf(bound, sizeof bound, "%s:%u", host, ntohs(address.sin_port));
  if (port_file != NULL) {
    FILE* out = fopen(port_file, "w");
    if (out != NULL) {
      fprintf(out, "%s\n", bound);
      fclose(out);
    }
  }
  printf("sandgate-limit-proxy listening on %s\n", bound);
  fflush(stdout);

  epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event event = {0};
  event.events = EPOLLIN;
  event.data.ptr = NULL;  // the listener
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listener, &event);
  struct epoll_event events[kEvents];
  for (;;) {
    const int ready = epoll_wait(epoll_fd, events, kEvents, -1);
    for (int i = 0; i < ready; ++i) {
      struct side* s = events[i].data.ptr;
      if (s == NULL) {
        for (;;) {
          const int fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (fd < 0) {
            break;
          }
          setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          struct side* client = calloc(1, sizeof *client);
          client->fd = fd;
          client->is_client = 1;
          set_interest(client);
        }
        continue;
      }
      const unsigned what = events[i].events;
      if (s->dead) {
        continue;
      }
      if (s->connecting) {
        on_connected(s);
      } else if (s->is_client && !s->tunnel) {
        if (s->peer == NULL) {
          read_head(s);
        } else if (what & (EPOLLERR | EPOLLHUP)) {
          close_tunnel(s);  // gone while its upstream connects
        }
      } else if (what & EPOLLERR) {
        close_tunnel(s);
      } else {
        if (what & EPOLLOUT) {
          on_writable(s);
        }
        if (!s->dead && (what & (EPOLLIN | EPOLLHUP)) && !s->read_closed && s->peer->out_len == 0) {
          relay(s);
        }
      }
    }
    while (graveyard != NULL) {
      struct side* next = graveyard->next_dead;
      free(graveyard);
      graveyard = next;
    }
  }
}
