// Capture's network set-up inside the namespace. See capture_network.hpp.
#include "sandbox-profile/linux/capture_network.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "sandbox-profile/process/capture_sockets.hpp"
#include "sandbox-profile/process/run_support.hpp"
#include "sandbox-profile/process/unique_fd.hpp"

namespace sandgate::sandbox {
namespace {

constexpr int kBacklog = 4096;  // as the gate's own listener
constexpr std::uint16_t kDnsPort = 53;
constexpr const char* kCaptureOff =
    "; run with --capture=off (SANDGATE_CAPTURE=off) to confine the command without capture "
    "(only tools that honour the proxy variables then reach the network)";

// One rtnetlink request (`request`, its length in its header) and its acknowledgement; the
// error names `what`.
Expected<bool, std::string> netlink_request(nlmsghdr& request, const std::string& what) {
  UniqueFd sock(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (sock.get() < 0) {
    return Unexpected{errno_text("netlink socket")};
  }
  request.nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
  request.nlmsg_seq = 1;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(sock.get(), &request, request.nlmsg_len, 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof kernel) < 0) {
    return Unexpected{errno_text("netlink sendto")};
  }
  // The acknowledgement: an NLMSG_ERROR whose error is 0 on success.
  char reply[4096];
  const ssize_t got = ::recv(sock.get(), reply, sizeof reply, 0);
  if (got < static_cast<ssize_t>(NLMSG_LENGTH(sizeof(nlmsgerr)))) {
    return Unexpected{errno_text("netlink: no acknowledgement")};
  }
  const auto* header = reinterpret_cast<const nlmsghdr*>(reply);
  if (header->nlmsg_type == NLMSG_ERROR) {
    const auto* error = static_cast<const nlmsgerr*>(NLMSG_DATA(header));
    if (error->error != 0) {
      errno = -error->error;
      return Unexpected{errno_text(what)};
    }
  }
  return true;
}

// An rtnetlink message with room for a few attributes.
template <typename Body>
struct NetlinkMessage {
  nlmsghdr header{};
  Body body{};
  char attributes[64]{};

  explicit NetlinkMessage(unsigned short type, unsigned short flags) {
    header.nlmsg_len = NLMSG_LENGTH(sizeof(Body));
    header.nlmsg_type = type;
    header.nlmsg_flags = flags;
  }
  void add(unsigned short type, const void* data, std::size_t size) {
    auto* attribute =
        reinterpret_cast<rtattr*>(reinterpret_cast<char*>(this) + NLMSG_ALIGN(header.nlmsg_len));
    attribute->rta_type = type;
    attribute->rta_len = static_cast<unsigned short>(RTA_LENGTH(size));
    std::memcpy(RTA_DATA(attribute), data, size);
    header.nlmsg_len = NLMSG_ALIGN(header.nlmsg_len) + RTA_ALIGN(attribute->rta_len);
  }
};

const char* family_name(int family) { return family == AF_INET ? "IPv4" : "IPv6"; }

// `ip route add default dev lo src SOURCE` over rtnetlink. The source address matters: without
// it the kernel picks none for a link-scope route over lo, and connections leave from 0.0.0.0.
Expected<bool, std::string> add_default_route(int family, int loopback) {
  NetlinkMessage<rtmsg> request(RTM_NEWROUTE, NLM_F_CREATE | NLM_F_EXCL);
  request.body.rtm_family = static_cast<unsigned char>(family);
  request.body.rtm_dst_len = 0;  // default
  request.body.rtm_table = RT_TABLE_MAIN;
  request.body.rtm_protocol = RTPROT_BOOT;
  request.body.rtm_scope = family == AF_INET ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE;
  request.body.rtm_type = RTN_UNICAST;
  request.add(RTA_OIF, &loopback, sizeof loopback);
  if (family == AF_INET) {
    const in_addr source{htonl(INADDR_LOOPBACK)};
    request.add(RTA_PREFSRC, &source, sizeof source);
  } else {
    const in6_addr source = IN6ADDR_LOOPBACK_INIT;
    request.add(RTA_PREFSRC, &source, sizeof source);
  }
  return netlink_request(request.header, std::string("cannot add a default route over lo (") +
                                             family_name(family) + ")");
}

// An address on lo that is not the loopback address itself, for getaddrinfo's AI_ADDRCONFIG
// (glibc's default when a program passes no hints): it answers a family only when the system
// has an address of it other than 127.0.0.1 and ::1, and would otherwise resolve nothing in a
// namespace that has only those. 127.0.0.2 is loopback already; 100::1 is in the discard
// prefix (RFC 6666). Neither is ever the source of a connection (the routes name theirs), and
// a connection to either is captured like any other.
Expected<bool, std::string> add_addrconfig_address(int family, int loopback) {
  NetlinkMessage<ifaddrmsg> request(RTM_NEWADDR, NLM_F_CREATE | NLM_F_REPLACE);
  request.body.ifa_family = static_cast<unsigned char>(family);
  request.body.ifa_prefixlen = family == AF_INET ? 32 : 128;
  request.body.ifa_flags = IFA_F_NODAD;
  request.body.ifa_scope = RT_SCOPE_HOST;
  request.body.ifa_index = static_cast<unsigned>(loopback);
  if (family == AF_INET) {
    in_addr address{};
    ::inet_pton(AF_INET, "127.0.0.2", &address);
    request.add(IFA_LOCAL, &address, sizeof address);
    request.add(IFA_ADDRESS, &address, sizeof address);
  } else {
    in6_addr address{};
    ::inet_pton(AF_INET6, "100::1", &address);
    request.add(IFA_LOCAL, &address, sizeof address);
    request.add(IFA_ADDRESS, &address, sizeof address);
  }
  return netlink_request(request.header,
                         std::string("cannot add an address to lo (") + family_name(family) + ")");
}

// A socket of `type` bound to loopback (`v6`: ::1, IPv6 only) on `port`; listening for TCP.
Expected<int, std::string> bound_socket(bool v6, int type, std::uint16_t port) {
  UniqueFd sock(::socket(v6 ? AF_INET6 : AF_INET, type | SOCK_CLOEXEC, 0));
  if (sock.get() < 0) {
    return Unexpected{errno_text("socket")};
  }
  sockaddr_storage storage{};
  socklen_t length = 0;
  if (v6) {
    const int only = 1;
    ::setsockopt(sock.get(), IPPROTO_IPV6, IPV6_V6ONLY, &only, sizeof only);
    auto* address = reinterpret_cast<sockaddr_in6*>(&storage);
    address->sin6_family = AF_INET6;
    address->sin6_addr = in6addr_loopback;
    address->sin6_port = htons(port);
    length = sizeof *address;
  } else {
    auto* address = reinterpret_cast<sockaddr_in*>(&storage);
    address->sin_family = AF_INET;
    address->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address->sin_port = htons(port);
    length = sizeof *address;
  }
  const std::string where = std::string(v6 ? "[::1]:" : "127.0.0.1:") + std::to_string(port);
  if (::bind(sock.get(), reinterpret_cast<sockaddr*>(&storage), length) != 0) {
    return Unexpected{errno_text("bind " + where)};
  }
  if (type == SOCK_STREAM && ::listen(sock.get(), kBacklog) != 0) {
    return Unexpected{errno_text("listen " + where)};
  }
  return sock.release();
}

// Whether the namespace has IPv6 on loopback (::1): a kernel booted with ipv6.disable=1, or
// net.ipv6.conf.default.disable_ipv6=1, has none, and capture then covers IPv4 only (IPv6
// connections find no route: nothing gets out either way).
bool has_ipv6() {
  UniqueFd probe(::socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (probe.get() < 0) {
    return false;
  }
  sockaddr_in6 address{};
  address.sin6_family = AF_INET6;
  address.sin6_addr = in6addr_loopback;
  return ::bind(probe.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) == 0;
}

// Where Debian (and most distributions) install nft, the nftables command. It runs as a program
// of its own rather than through libnftables: that library is GPL-2.0-only, which cannot be
// linked into one program with OpenSSL 3 (Apache-2.0); a separate program can be run by any.
constexpr const char* kNftPaths[] = {"/usr/sbin/nft", "/sbin/nft", "/usr/bin/nft"};

const char* nft_path() {
  for (const char* path : kNftPaths) {
    if (::access(path, X_OK) == 0) {
      return path;
    }
  }
  return nullptr;
}

// In the child, before exec: CAP_NET_ADMIN (which this process holds in the run's network
// namespace, as the owner of its user namespace) stays effective across exec, which otherwise
// clears the capabilities of a user that is not root.
void keep_net_admin_across_exec() {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (::syscall(SYS_capget, &header, data) != 0) {
    return;
  }
  data[0].inheritable |= 1U << CAP_NET_ADMIN;
  if (::syscall(SYS_capset, &header, data) == 0) {
    ::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_ADMIN, 0, 0);
  }
}

// Runs `nft -f -` with `text` on its input; its first line of errors when it fails.
Expected<bool, std::string> apply_ruleset(const std::string& text) {
  const char* nft = nft_path();
  if (nft == nullptr) {
    return Unexpected{std::string(
        "the capture needs the nft command (Debian's nftables package), found in none of "
        "/usr/sbin, /sbin, /usr/bin")};
  }
  int input[2];
  int errors[2];
  if (::pipe2(input, O_CLOEXEC) != 0) {
    return Unexpected{errno_text("pipe")};
  }
  if (::pipe2(errors, O_CLOEXEC) != 0) {
    ::close(input[0]);
    ::close(input[1]);
    return Unexpected{errno_text("pipe")};
  }
  const pid_t child = ::fork();
  if (child < 0) {
    for (int fd : {input[0], input[1], errors[0], errors[1]}) {
      ::close(fd);
    }
    return Unexpected{errno_text("fork for nft")};
  }
  if (child == 0) {
    ::dup2(input[0], STDIN_FILENO);
    ::dup2(errors[1], STDOUT_FILENO);
    ::dup2(errors[1], STDERR_FILENO);
    keep_net_admin_across_exec();
    char* const argv[] = {const_cast<char*>("nft"), const_cast<char*>("-f"), const_cast<char*>("-"),
                          nullptr};
    char* const envp[] = {const_cast<char*>("PATH=/usr/sbin:/usr/bin:/sbin:/bin"), nullptr};
    ::execve(nft, argv, envp);
    ::_exit(127);
  }
  ::close(input[0]);
  ::close(errors[1]);
  // The ruleset is a few hundred bytes: far below a pipe's buffer, so the write cannot block
  // on a child that has not started reading.
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(input[1], text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    written += static_cast<std::size_t>(n);
  }
  ::close(input[1]);
  std::string error;
  char buffer[1024];
  for (;;) {
    const ssize_t n = ::read(errors[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      break;
    }
    if (error.size() < 4096) {
      error.append(buffer, static_cast<std::size_t>(n));
    }
  }
  ::close(errors[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    // The first line says what; the ones after it quote the rule and point at the spot.
    error = error.substr(0, error.find('\n'));
    return Unexpected{"nftables refused the capture rules: " +
                      (error.empty() ? std::string("nft failed with no reason given") : error)};
  }
  return true;
}

// Connects to a documentation address (nothing there could answer) and checks that the
// connection arrives on `listener` with that address as its original destination: the proof
// that the redirect works before the gate relies on it.
Expected<bool, std::string> check_redirect(int listener, bool v6) {
  sockaddr_storage target{};
  socklen_t length = 0;
  if (v6) {
    auto* address = reinterpret_cast<sockaddr_in6*>(&target);
    address->sin6_family = AF_INET6;
    ::inet_pton(AF_INET6, "2001:db8::1", &address->sin6_addr);
    address->sin6_port = htons(9);
    length = sizeof *address;
  } else {
    auto* address = reinterpret_cast<sockaddr_in*>(&target);
    address->sin_family = AF_INET;
    ::inet_pton(AF_INET, "192.0.2.1", &address->sin_addr);
    address->sin_port = htons(9);
    length = sizeof *address;
  }
  const std::string family = v6 ? "IPv6" : "IPv4";
  UniqueFd client(::socket(target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (client.get() < 0) {
    return Unexpected{errno_text("socket")};
  }
  if (::connect(client.get(), reinterpret_cast<sockaddr*>(&target), length) != 0 &&
      errno != EINPROGRESS) {
    return Unexpected{errno_text("the capture check's " + family + " connection failed")};
  }
  pollfd ready{listener, POLLIN, 0};
  if (::poll(&ready, 1, 2000) != 1) {
    return Unexpected{"the capture check's " + family +
                      " connection was not redirected to the capture listener"};
  }
  UniqueFd accepted(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  sockaddr_storage original{};
  if (accepted.get() < 0 || !original_destination(accepted.get(), original)) {
    return Unexpected{"the capture check's " + family +
                      " connection arrived without its original destination (SO_ORIGINAL_DST)"};
  }
  const bool same = v6 ? std::memcmp(&reinterpret_cast<sockaddr_in6*>(&original)->sin6_addr,
                                     &reinterpret_cast<sockaddr_in6*>(&target)->sin6_addr, 16) == 0
                       : reinterpret_cast<sockaddr_in*>(&original)->sin_addr.s_addr ==
                             reinterpret_cast<sockaddr_in*>(&target)->sin_addr.s_addr;
  if (!same) {
    return Unexpected{"the capture check's " + family +
                      " connection arrived with another original destination"};
  }
  return true;
}

// The command's /etc/resolv.conf: a file naming the gate's DNS address, bound read-only over the
// one it would read. When /etc/resolv.conf is a link into a folder that is private here (to
// systemd-resolved's /run/systemd/resolve/stub-resolv.conf, say), its target is created in the
// private tmpfs first. No /etc/resolv.conf at all: resolvers default to 127.0.0.1, which is
// the gate's DNS address already.
Expected<bool, std::string> point_resolv_conf() {
  constexpr const char* kResolvConf = "/etc/resolv.conf";
  constexpr const char* kFolder = "/run/sandgate-capture";
  constexpr const char* kFile = "/run/sandgate-capture/resolv.conf";
  struct stat link {};
  if (::lstat(kResolvConf, &link) != 0) {
    return true;
  }
  if (S_ISLNK(link.st_mode)) {
    struct stat target {};
    if (::stat(kResolvConf, &target) != 0) {
      // Create the link's target (its folders in the private /run) so there is a file to bind
      // over; only within /run, which is a private tmpfs here.
      char buffer[4096];
      const ssize_t n = ::readlink(kResolvConf, buffer, sizeof buffer - 1);
      if (n <= 0) {
        return Unexpected{errno_text("readlink /etc/resolv.conf")};
      }
      std::string path(buffer, static_cast<std::size_t>(n));
      if (!path.starts_with("/")) {
        path = "/etc/" + path;
      }
      if (!path.starts_with("/run/") || path.find("/../") != std::string::npos) {
        return Unexpected{"/etc/resolv.conf leads to " + path +
                          ", which is missing and not under /run"};
      }
      for (std::size_t slash = path.find('/', 5); slash != std::string::npos;
           slash = path.find('/', slash + 1)) {
        ::mkdir(path.substr(0, slash).c_str(), 0755);
      }
      UniqueFd created(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
      if (created.get() < 0) {
        return Unexpected{errno_text("cannot create " + path)};
      }
    }
  }
  if (::mkdir(kFolder, 0755) != 0 && errno != EEXIST) {
    return Unexpected{errno_text(std::string("mkdir ") + kFolder)};
  }
  {
    UniqueFd file(::open(kFile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    const std::string text =
        "# sandgate run: names are answered by the gate (capture)\nnameserver 127.0.0.1\n";
    if (file.get() < 0 ||
        ::write(file.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
      return Unexpected{errno_text(std::string("cannot write ") + kFile)};
    }
  }
  if (::mount(kFile, kResolvConf, nullptr, MS_BIND, nullptr) != 0) {
    return Unexpected{errno_text("cannot bind the capture's resolv.conf over /etc/resolv.conf")};
  }
  // Read-only, and the source removed: the command sees one read-only file.
  ::mount(nullptr, kResolvConf, nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr);
  ::unlink(kFile);
  ::rmdir(kFolder);
  return true;
}

}  // namespace

std::string capture_ruleset(std::uint16_t port) {
  const std::string p = std::to_string(port);
  // DNS first: a query to any name server but the gate's own address goes to the gate's DNS
  // sockets (127.0.0.53, the systemd-resolved stub, included). Then every other TCP connection
  // that leaves loopback goes to the capture listener. The filter chain runs after the nat
  // chain (priority 0 after -100), so it sees redirected packets aimed at loopback; everything
  // else that would leave loopback is dropped (the sender gets EPERM).
  return "table inet sandgate_capture {\n"
         "  chain to_gate {\n"
         "    type nat hook output priority -100; policy accept;\n"
         "    ip daddr != 127.0.0.1 udp dport 53 redirect to :53\n"
         "    ip daddr != 127.0.0.1 tcp dport 53 redirect to :53\n"
         "    ip6 daddr != ::1 udp dport 53 redirect to :53\n"
         "    ip6 daddr != ::1 tcp dport 53 redirect to :53\n"
         "    ip daddr != 127.0.0.0/8 meta l4proto tcp redirect to :" +
         p +
         "\n"
         "    ip6 daddr != ::1 meta l4proto tcp redirect to :" +
         p +
         "\n"
         "  }\n"
         "  chain fence {\n"
         "    type filter hook output priority 0; policy drop;\n"
         "    ip daddr 127.0.0.0/8 accept\n"
         "    ip6 daddr ::1 accept\n"
         "  }\n"
         "}\n";
}

Expected<CaptureSockets, std::string> set_up_capture() {
  CaptureSockets sockets;
  const auto fail = [&](const std::string& why) {
    sockets.close_all();
    return Unexpected{"capture: " + why + kCaptureOff};
  };
  const bool v6 = has_ipv6();
  const int loopback = static_cast<int>(::if_nametoindex("lo"));
  if (loopback == 0) {
    return fail(errno_text("no loopback interface"));
  }
  for (const int family : {AF_INET, AF_INET6}) {
    if (family == AF_INET6 && !v6) {
      continue;
    }
    if (auto route = add_default_route(family, loopback); !route) {
      return fail(route.error());
    }
    if (auto address = add_addrconfig_address(family, loopback); !address) {
      return fail(address.error());
    }
  }
  // The capture listener: IPv4 on a port the kernel picks, IPv6 on the same one (one rule).
  auto listener = bound_socket(false, SOCK_STREAM, 0);
  if (!listener) {
    return fail(listener.error());
  }
  sockets.tcp.push_back(*listener);
  sockaddr_in bound{};
  socklen_t length = sizeof bound;
  ::getsockname(*listener, reinterpret_cast<sockaddr*>(&bound), &length);
  sockets.port = ntohs(bound.sin_port);
  for (const bool six : {false, true}) {
    if (six && !v6) {
      continue;
    }
    if (six) {
      auto listener6 = bound_socket(true, SOCK_STREAM, sockets.port);
      if (!listener6) {
        return fail(listener6.error());
      }
      sockets.tcp.push_back(*listener6);
    }
    auto udp = bound_socket(six, SOCK_DGRAM, kDnsPort);
    if (!udp) {
      return fail("the DNS socket: " + udp.error());
    }
    sockets.dns_udp.push_back(*udp);
    auto tcp = bound_socket(six, SOCK_STREAM, kDnsPort);
    if (!tcp) {
      return fail("the DNS socket: " + tcp.error());
    }
    sockets.dns_tcp.push_back(*tcp);
  }
  if (auto rules = apply_ruleset(capture_ruleset(sockets.port)); !rules) {
    return fail(rules.error() +
                " (the kernel needs nf_tables with nat and conntrack, usable in a user "
                "namespace)");
  }
  for (std::size_t i = 0; i < sockets.tcp.size(); ++i) {
    if (auto checked = check_redirect(sockets.tcp[i], i == 1); !checked) {
      return fail(checked.error());
    }
  }
  if (auto resolv = point_resolv_conf(); !resolv) {
    return fail(resolv.error());
  }
  return sockets;
}

}  // namespace sandgate::sandbox
