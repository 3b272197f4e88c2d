// A small reader for SBPL, the Seatbelt profile language, for the tests: it parses a profile as
// S-expressions the way sandbox-exec's Scheme reader does for the forms sandgate writes (lists,
// symbols, "strings" with \\ and \" escapes, #"regex" literals, ; comments), so the tests can
// check that a profile is well formed and that every string reads back as the bytes meant; and a
// checker for the vocabulary sandgate's profiles may use (operations, filters and their
// arguments, regexes), so that a misspelt operation or a filter in the wrong place, which
// sandbox-exec would refuse or silently never match, fails a unit test on Linux too; and an
// evaluator that decides one operation the way libsandbox does (the last matching rule wins).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rules/expected.hpp"

namespace sandgate::testing {

struct Sexp {
  enum class Kind { list, symbol, string, regex };
  Kind kind = Kind::list;
  std::string text;         // symbol name, string value (unescaped) or regex source
  std::vector<Sexp> items;  // for lists

  bool is_symbol(std::string_view name) const { return kind == Kind::symbol && text == name; }
  // The form printed back in one line, strings escaped: a stable key for comparisons.
  std::string print() const;
};

// Reads every top-level form. The error gives the byte offset and what was wrong.
Expected<std::vector<Sexp>, std::string> read_sbpl(std::string_view text);

// Checks every top-level form against the vocabulary sandgate writes: (version 1), and
// (allow|deny OPERATION... FILTER...) with known operations (; comments inside a form too), each
// filter allowed for the operations of its rule and given arguments of the right kind: path filters
// take strings, `regex` a string or #"..." that compiles as a POSIX extended regex and has no
// `(?i)` (AppleMatch has no such flag: the rule would match nothing), `ip` only "localhost:PORT" or
// "localhost:*" (never any host). Returns "" or the first problem, naming the form.
std::string check_sbpl(const std::vector<Sexp>& forms);

// One operation to decide, with what its filters look at. Fields an operation has no use for stay
// empty; a filter that needs an empty field does not match.
struct Request {
  std::string operation;   // e.g. "file-write-unlink", "sysctl-read", "network-outbound"
  std::string path;        // file operations, and unix sockets (with `unix_socket`)
  std::string vnode_type;  // what a file operation acts on or creates: "SYMLINK", "REGULAR-FILE"
  std::string sysctl;      // sysctl-read and sysctl-write: the name, e.g. "kern.procargs2"
  std::string mach;        // mach-lookup: the service's global name
  bool unix_socket = false;
  // An IP socket: "tcp" or "udp", 4 or 6, and where the address is: "localhost" (127.0.0.1 or
  // ::1) or anything else ("*" matches both, "localhost" only the former).
  std::string protocol;  // "tcp4", "tcp6", "udp4", "udp6"
  std::string host = "localhost";
  std::uint16_t port = 0;
};

// What the profile decides for `request`, read the way libsandbox does: of the rules that name
// the operation (itself, a wildcard such as file-write* that covers it, or default), the last
// whose filters match decides (the filters of one rule are alternatives; a rule without filters
// matches everything). None: refused. Filters: literal, subpath, regex (POSIX extended),
// path-literal and path-regex, require-all/-any/-not, vnode-type, (local|remote unix-socket ...),
// (local|remote ip|ip4|ip6|tcp|tcp4|tcp6|udp|udp4|udp6 "HOST:PORT"), sysctl-name,
// sysctl-name-prefix and global-name; (extension ...) and (target ...) never match (the evaluator
// holds no extension and is no process). `local` filters are read for network-bind and
// network-inbound, `remote` for network-outbound.
bool evaluate(const std::vector<Sexp>& forms, const Request& request);

// Every string (not regex) value in `forms`, depth first.
std::vector<std::string> all_strings(const std::vector<Sexp>& forms);

// Calls `visit` on every list whose head is one of the path filters (literal, subpath,
// path-literal, path-regex's strings are not paths) with the filter name and its string argument.
template <typename Visit>
void for_each_path_filter(const std::vector<Sexp>& forms, Visit&& visit) {
  for (const auto& form : forms) {
    if (form.kind != Sexp::Kind::list) {
      continue;
    }
    if (form.items.size() == 2 && form.items[0].kind == Sexp::Kind::symbol &&
        (form.items[0].text == "literal" || form.items[0].text == "subpath" ||
         form.items[0].text == "path-literal") &&
        form.items[1].kind == Sexp::Kind::string) {
      visit(form.items[0].text, form.items[1].text);
    }
    for_each_path_filter(form.items, visit);
  }
}

}  // namespace sandgate::testing
