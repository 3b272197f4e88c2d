// A parent proxy: where the gate's own outbound connections go on a network that reaches the
// internet only through a corporate HTTP proxy. The gate still decides everything it can
// locally (names, ports, SNI, SSH rules, LaunchDarkly); then, instead of dialling the
// destination, it dials the parent and asks it with CONNECT.
//
// The pieces here are pure (no I/O) but one: the parent's address as configured, the exclusion
// list in the NO_PROXY syntax every tool knows, the credentials file's text, the CONNECT request
// the gate sends and a strict reader of the parent's reply head. Thread-safe values. The one
// with I/O, read_credentials_file() (credentials_file.cpp), reads the file at start-up. The
// gate's dial through the parent is proxy/session/parent_dial.hpp.
//
// Only http:// parents: the gate speaks plain TCP to the parent and TLS travels inside the
// tunnel. An https:// parent (TLS to the proxy itself) is refused with a message saying so, not
// silently downgraded. Credentials never come from the URL (a flag or variable ends up in `ps`
// and in shell history): they come from a file only its owner can read.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rules/expected.hpp"
#include "rules/host.hpp"

namespace sandgate::parent {

// The longest reply head from a parent the gate reads; a longer one is refused.
inline constexpr std::size_t kReplyHeadLimit = 16 * 1024;
// The most of a parent's reason phrase the gate keeps (for the log and the client's 502); a
// longer one is cut, marked with "...".
inline constexpr std::size_t kReasonPhraseLimit = 128;

struct ParentAddress {
  rules::Host host;  // a DNS name (resolved by the gate) or an IP literal
  std::uint16_t port = 0;
  std::string display() const;  // host:port, [v6]:port
};

// Parses `http://HOST:PORT` (a trailing '/' allowed). The port is required: proxies listen on
// 3128, 8080, 80 and more, and a guessed default would fail far from its cause. Refused, each
// with a sentence saying what to do: another scheme (https:// named as such), user information
// (`user:pass@`, refused before anything else and never quoted back), a path, query or
// fragment, a bad host or port.
Expected<ParentAddress, std::string> parse_parent_url(std::string_view text);

// The parent's credentials: the first line of the credentials file, `user:password` (the
// password may contain ':'; the user may not). A CR before the newline is dropped. Refused: an
// empty line, no ':', an empty user, control characters.
struct Credentials {
  std::string user;
  std::string password;
};
Expected<Credentials, std::string> parse_credentials(std::string_view file_text);

// Reads the credentials file at `path` (credentials_file.cpp): a regular file that neither its
// group nor other users can read or write (it holds a password), whose first line
// parse_credentials() takes. Refused with a sentence naming the file (never the password).
// Blocking file I/O: start-up and the reloader's thread only.
Expected<Credentials, std::string> read_credentials_file(const std::string& path);

// Destinations that bypass the parent and are dialled directly, in NO_PROXY's syntax as curl
// reads it: entries separated by commas (spaces around them ignored); `*` alone matches every
// host; a name matches itself and every name below it, with or without a leading '.' or "*.";
// an IP literal matches that address, a CIDR block (`10.0.0.0/8`, `fd00::/8`) the addresses in
// it; an entry may end in `:PORT` to match that port only. IP entries match only destinations
// given as IP literals (a name is not resolved to decide: the parent resolves names). Names
// are compared in the gate's normal form (lower case, punycode).
class ExcludeList {
 public:
  // Refused with the entry and why: a bad name, address, prefix length or port.
  static Expected<ExcludeList, std::string> parse(std::string_view text);

  bool excludes(const rules::Host& host, std::uint16_t port) const;
  bool empty() const { return entries_.empty(); }
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    bool everything = false;
    bool is_network = false;
    std::string name;            // a name entry: normal form, no leading dot
    rules::IpAddress network;    // an address entry: the network's first address
    unsigned prefix_length = 0;  // an address entry: 32 or 128 for a single address
    std::uint16_t port = 0;      // 0: any port
  };
  std::vector<Entry> entries_;
};

// The value of a Proxy-Authorization field carrying `credentials`: `Basic base64(user:password)`.
std::string proxy_authorization(const Credentials& credentials);

// The request the gate sends to the parent for `destination`: `CONNECT host:port HTTP/1.1`, Host
// and, with credentials, `Proxy-Authorization: Basic ...`. Nothing of the client's request is
// passed on (its Proxy-Authorization was for this gate).
std::string connect_request(const rules::Host& host, std::uint16_t port,
                            const Credentials* credentials);

// The parent's reply to CONNECT, read from the start of `bytes`.
struct ReplyHead {
  enum class Status : std::uint8_t {
    need_more,  // valid so far, the head is not whole yet
    complete,   // `head_length` bytes are the head; any after it are the tunnel's first bytes
    malformed,  // not an HTTP/1.x status line and fields, or over kReplyHeadLimit
  };
  Status status = Status::need_more;
  std::size_t head_length = 0;
  int code = 0;               // the status code, 100..599
  std::string reason_phrase;  // printable ASCII, quote and backslash as '?', at most
                              // kReasonPhraseLimit: safe to quote in the log
  std::string problem;        // malformed: why
};

// Reads the reply head strictly: `HTTP/1.0` or `HTTP/1.1`, a three-digit code, fields as
// `name: value` lines without obsolete folding, CRLF line ends (a bare LF is accepted, as
// RFC 9112 allows recipients to), ending with an empty line. A 1xx reply is malformed here: a
// proxy answering CONNECT has no interim responses to give.
ReplyHead read_reply_head(std::span<const char> bytes);

}  // namespace sandgate::parent
