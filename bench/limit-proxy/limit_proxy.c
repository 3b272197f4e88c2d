// sandgate-limit-proxy: the least an HTTP CONNECT proxy can do on this kernel, as the benchmark's
// reference row ("limit"). One thread, one edge-triggered epoll set (each socket added once, never
// re-armed), non-blocking sockets, read(2)/write(2) through a 16 KiB buffer per direction,
// TCP_NODELAY inherited from the listener. No policy, no DNS (the target must be an IPv4
// literal), no logging, no timeouts, no limits beyond the descriptor table. Every sandgate figure
// in bench/ is also a ratio to this one, measured in the same rounds: what sandgate costs beyond
// the least the kernel already charges.
//
//   sandgate-limit-proxy [--listen 127.0.0.1:PORT] [--port-file FILE]
//
// Prints "sandgate-limit-proxy listening on HOST:PORT" on stdout once bound. Not a product: never
// expose it (it relays anything to anywhere).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stddef.h>
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
  int tunnel;       // client: the 200 was sent; bytes now relay
  int read_closed;  // this side sent its FIN: nothing more to read from it
  int write_shut;   // shutdown(SHUT_WR) done on this side
  int dead;         // closed during this batch of events: freed after it
  struct side* next_dead;
  size_t out_len;
  size_t out_off;
  size_t head_len;  // client, before the tunnel: bytes of the request head so far
  char head[kHead];
  char out[kBuffer];
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

static void close_tunnel(struct side* s) {
  bury(s->peer);
  bury(s);
}

static void watch(struct side* s) {
  struct epoll_event event = {0};
  event.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
  event.data.ptr = s;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, s->fd, &event);
}

// Writes what waits in s->out: 1 when all of it went, 0 when the socket is full (an EPOLLOUT
// edge follows), -1 on a broken socket.
static int flush_side(struct side* s) {
  while (s->out_off < s->out_len) {
    const ssize_t n = write(s->fd, s->out + s->out_off, s->out_len - s->out_off);
    if (n < 0) {
      return errno == EAGAIN || errno == EINTR ? 0 : -1;
    }
    s->out_off += (size_t)n;
  }
  s->out_off = s->out_len = 0;
  return 1;
}

// Passes `from`'s FIN on once everything read before it is written. When the other direction
// had already ended, the tunnel is over: closing both sends the last FIN.
static void pass_fin(struct side* from) {
  struct side* to = from->peer;
  if (!from->read_closed || to->out_len != 0 || to->write_shut) {
    return;
  }
  if (to->read_closed && from->out_len == 0) {
    close_tunnel(from);
    return;
  }
  shutdown(to->fd, SHUT_WR);
  to->write_shut = 1;
}

// Moves bytes from `from` to its peer until `from` has nothing more or the peer is full.
static void pump(struct side* from) {
  struct side* to = from->peer;
  while (!from->dead && !from->read_closed && to->out_len == 0) {
    const ssize_t n = read(from->fd, to->out, kBuffer);
    if (n < 0) {
      if (errno != EAGAIN && errno != EINTR) {
        close_tunnel(from);
      }
      return;
    }
    if (n == 0) {
      from->read_closed = 1;
      pass_fin(from);
      return;
    }
    to->out_len = (size_t)n;
    to->out_off = 0;
    if (flush_side(to) < 0) {
      close_tunnel(from);
      return;
    }
    if ((size_t)n < kBuffer) {
      return;  // drained: the next bytes to arrive raise a new edge
    }
  }
}

static void reply_and_close(struct side* client, const char* reply) {
  ssize_t ignored = write(client->fd, reply, strlen(reply));
  (void)ignored;
  close_tunnel(client);
}

// The head is complete: parse "CONNECT a.b.c.d:port HTTP/1.x" and start the connect. Bytes after
// the head are the tunnel's first, kept for upstream.
static void open_upstream(struct side* client, size_t head_length) {
  char host[64];
  unsigned port = 0;
  struct sockaddr_in address = {0};
  address.sin_family = AF_INET;
  client->head[client->head_len] = '\0';
  if (sscanf(client->head, "CONNECT %63[0-9.]:%u HTTP/1.", host, &port) != 2 || port == 0 ||
      port > 65535 || inet_pton(AF_INET, host, &address.sin_addr) != 1) {
    reply_and_close(client, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  address.sin_port = htons((uint16_t)port);
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 ||
      (connect(fd, (struct sockaddr*)&address, sizeof address) != 0 && errno != EINPROGRESS)) {
    if (fd >= 0) {
      close(fd);
    }
    reply_and_close(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  struct side* upstream = malloc(sizeof *upstream);
  memset(upstream, 0, offsetof(struct side, head));
  upstream->fd = fd;
  upstream->peer = client;
  upstream->connecting = 1;
  upstream->out_len = client->head_len - head_length;  // < kHead < kBuffer
  memcpy(upstream->out, client->head + head_length, upstream->out_len);
  client->peer = upstream;
  watch(upstream);
}

static void on_connected(struct side* upstream) {
  struct side* client = upstream->peer;
  int error = 0;
  socklen_t length = sizeof error;
  getsockopt(upstream->fd, SOL_SOCKET, SO_ERROR, &error, &length);
  if (error == EINPROGRESS || error == EALREADY) {
    return;
  }
  if (error != 0) {
    client->peer = NULL;
    bury(upstream);
    reply_and_close(client, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  upstream->connecting = 0;
  client->tunnel = 1;
  static const char kEstablished[] = "HTTP/1.1 200 Connection established\r\n\r\n";
  memcpy(client->out, kEstablished, sizeof kEstablished - 1);
  client->out_len = sizeof kEstablished - 1;
  if (flush_side(client) < 0 || flush_side(upstream) < 0) {
    close_tunnel(client);
    return;
  }
  pump(client);
  if (!upstream->dead) {
    pump(upstream);
  }
}

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
  if (blank != NULL) {
    open_upstream(client, (size_t)(blank - client->head) + 4);
  } else if (client->head_len == kHead - 1) {
    reply_and_close(client, "HTTP/1.1 431 Request Header Fields Too Large\r\n\r\n");
  }
}

static void on_event(struct side* s, unsigned what) {
  if (s->connecting) {
    on_connected(s);
    return;
  }
  if (s->is_client && !s->tunnel) {
    if (s->peer == NULL) {
      read_head(s);
    } else if (what & (EPOLLERR | EPOLLHUP)) {
      close_tunnel(s);  // gone while its upstream connects
    }
    return;
  }
  if (what & EPOLLERR) {
    close_tunnel(s);
    return;
  }
  if (what & EPOLLOUT) {
    const int flushed = flush_side(s);
    if (flushed < 0) {
      close_tunnel(s);
      return;
    }
    if (flushed > 0) {
      pass_fin(s->peer);
      if (!s->dead) {
        pump(s->peer);  // it stopped reading while this side was full
      }
    }
  }
  if (!s->dead && (what & (EPOLLIN | EPOLLRDHUP | EPOLLHUP))) {
    pump(s);
  }
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
  setsockopt(listener, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // accepted sockets inherit it
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
          struct side* client = malloc(sizeof *client);
          memset(client, 0, offsetof(struct side, head));
          client->fd = fd;
          client->is_client = 1;
          watch(client);
          read_head(client);  // the head is usually there already
        }
      } else if (!s->dead) {
        on_event(s, events[i].events);
      }
    }
    while (graveyard != NULL) {
      struct side* next = graveyard->next_dead;
      free(graveyard);
      graveyard = next;
    }
  }
}
