// The test SBPL reader. See sbpl_reader.hpp.
#include "tests/unit/sandbox-profile/macos/sbpl_reader.hpp"

#include <re2/re2.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <stdexcept>

namespace sandgate::testing {
namespace {

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  Expected<std::vector<Sexp>, std::string> all() {
    std::vector<Sexp> forms;
    for (;;) {
      skip_space();
      if (at_end()) {
        return forms;
      }
      if (peek() == ')') {
        return fail("')' without '('");
      }
      auto form = one();
      if (!form) {
        return Unexpected{form.error()};
      }
      forms.push_back(std::move(*form));
    }
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }

  Unexpected<std::string> fail(const std::string& what) const {
    return Unexpected{"offset " + std::to_string(pos_) + ": " + what};
  }

  void skip_space() {
    while (!at_end()) {
      const char c = peek();
      if (c == ';') {
        while (!at_end() && peek() != '\n') {
          ++pos_;
        }
      } else if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
        ++pos_;
      } else {
        return;
      }
    }
  }

  Expected<Sexp, std::string> one() {
    const char c = peek();
    if (c == '(') {
      ++pos_;
      Sexp list;
      for (;;) {
        skip_space();
        if (at_end()) {
          return fail("unclosed '('");
        }
        if (peek() == ')') {
          ++pos_;
          return list;
        }
        auto item = one();
        if (!item) {
          return item;
        }
        list.items.push_back(std::move(*item));
      }
    }
    if (c == '"') {
      ++pos_;
      Sexp string{Sexp::Kind::string, {}, {}};
      for (;;) {
        if (at_end()) {
          return fail("unclosed string");
        }
        const char d = text_[pos_++];
        if (d == '"') {
          return string;
        }
        if (d == '\\') {
          if (at_end()) {
            return fail("unclosed string");
          }
          const char e = text_[pos_++];
          if (e != '\\' && e != '"') {
            return fail(std::string("unexpected escape \\") + e);
          }
          string.text += e;
        } else if (static_cast<unsigned char>(d) < 0x20 || d == 0x7f) {
          return fail("raw control character in a string");
        } else {
          string.text += d;
        }
      }
    }
    if (c == '#') {
      if (pos_ + 1 >= text_.size() || text_[pos_ + 1] != '"') {
        return fail("'#' not followed by '\"'");
      }
      pos_ += 2;
      const auto end = text_.find('"', pos_);
      if (end == std::string_view::npos) {
        return fail("unclosed regex");
      }
      Sexp regex{Sexp::Kind::regex, std::string(text_.substr(pos_, end - pos_)), {}};
      pos_ = end + 1;
      return regex;
    }
    const std::size_t start = pos_;
    while (!at_end()) {
      const char d = peek();
      if (d == ' ' || d == '\n' || d == '\t' || d == '\r' || d == '(' || d == ')' || d == '"' ||
          d == ';') {
        break;
      }
      ++pos_;
    }
    if (pos_ == start) {
      return fail("unexpected character");
    }
    return Sexp{Sexp::Kind::symbol, std::string(text_.substr(start, pos_ - start)), {}};
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

void collect_strings(const Sexp& form, std::vector<std::string>& out) {
  if (form.kind == Sexp::Kind::string) {
    out.push_back(form.text);
  }
  for (const auto& item : form.items) {
    collect_strings(item, out);
  }
}

// --- the vocabulary ---------------------------------------------------------------------------

enum class Family { file, network, mach, signal, socket, exec, sysctl, bare };

const std::set<std::string>& file_operations() {
  static const std::set<std::string> ops = {
      "file-read*", "file-read-data",    "file-write*",       "file-write-data",   "file-ioctl",
      "file-link",  "file-write-create", "file-write-unlink", "file-write-setugid"};
  return ops;
}

bool family_of(const std::string& op, Family& family) {
  if (file_operations().count(op) != 0) {
    family = Family::file;
  } else if (op == "network*" || op == "network-outbound" || op == "network-bind" ||
             op == "network-inbound") {
    family = Family::network;
  } else if (op == "mach-lookup") {
    family = Family::mach;
  } else if (op == "signal" || op == "process-info*") {
    family = Family::signal;
  } else if (op == "system-socket") {
    family = Family::socket;
  } else if (op == "process-exec") {
    family = Family::exec;
  } else if (op == "sysctl-read" || op == "sysctl-write") {
    family = Family::sysctl;
  } else if (op == "default" || op == "process-fork" || op == "user-preference-read" ||
             op == "iokit-get-properties" || op == "ipc-posix-shm" || op == "ipc-posix-sem" ||
             op == "pseudo-tty" || op == "lsopen" || op == "appleevent-send" ||
             op == "job-creation" || op == "system-kext-load") {
    family = Family::bare;
  } else {
    return false;
  }
  return true;
}

std::string check_regex(const Sexp& arg) {
  if (arg.kind != Sexp::Kind::string && arg.kind != Sexp::Kind::regex) {
    return "a regex must be a string or #\"...\"";
  }
  if (arg.text.find("(?") != std::string::npos) {
    return "regex '" + arg.text + "' uses a (?...) flag, which AppleMatch does not know";
  }
  try {
    std::regex compiled(arg.text, std::regex::extended);
  } catch (const std::regex_error&) {
    return "regex '" + arg.text + "' is not a POSIX extended regex";
  }
  return {};
}

bool one_string(const Sexp& filter) {
  return filter.items.size() == 2 && filter.items[1].kind == Sexp::Kind::string;
}

// The address kinds of a network filter: any IP, IPv4 or IPv6, TCP or UDP over either or one.
bool ip_kind(const Sexp& symbol) {
  static const std::set<std::string> kinds = {"ip",   "ip4", "ip6",  "tcp", "tcp4",
                                              "tcp6", "udp", "udp4", "udp6"};
  return symbol.kind == Sexp::Kind::symbol && kinds.count(symbol.text) != 0;
}

std::string check_ip(const Sexp& filter) {
  // (remote tcp4 "localhost:PORT") / (local tcp "localhost:*")
  if (filter.items.size() != 3 || filter.items[2].kind != Sexp::Kind::string) {
    return "ip takes one string";
  }
  const std::string& value = filter.items[2].text;
  constexpr std::string_view kHost = "localhost:";
  if (value.rfind(kHost, 0) != 0) {
    return "ip '" + value + "' is not on localhost";
  }
  const std::string port = value.substr(kHost.size());
  if (port == "*") {
    return {};
  }
  unsigned number = 0;
  auto [end, error] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (error != std::errc() || end != port.data() + port.size() || number == 0 || number > 65535) {
    return "ip '" + value + "' has no valid port";
  }
  return {};
}

std::string check_unix_socket(const Sexp& filter) {
  // (remote unix-socket) or (remote unix-socket (path-literal|path-regex|subpath ARG))
  if (filter.items.size() == 2) {
    return {};
  }
  if (filter.items.size() != 3 || filter.items[2].kind != Sexp::Kind::list ||
      filter.items[2].items.size() != 2) {
    return "unix-socket takes one path filter";
  }
  const Sexp& path = filter.items[2];
  if (path.items[0].is_symbol("path-literal") || path.items[0].is_symbol("subpath")) {
    return one_string(path) ? std::string() : "unix-socket path filters take one string";
  }
  if (path.items[0].is_symbol("path-regex")) {
    return check_regex(path.items[1]);
  }
  return "unknown unix-socket filter " + path.print();
}

bool vnode_type(const Sexp& symbol) {
  return symbol.is_symbol("REGULAR-FILE") || symbol.is_symbol("DIRECTORY") ||
         symbol.is_symbol("SYMLINK");
}

std::string check_filter(const Sexp& filter, Family family) {
  if (filter.kind != Sexp::Kind::list || filter.items.empty() ||
      filter.items[0].kind != Sexp::Kind::symbol) {
    return "a filter must be a list";
  }
  const std::string& name = filter.items[0].text;
  switch (family) {
    case Family::file:
      if (name == "literal" || name == "subpath") {
        return one_string(filter) ? std::string() : name + " takes one string";
      }
      if (name == "regex" && filter.items.size() == 2) {
        return check_regex(filter.items[1]);
      }
      if (name == "vnode-type") {
        return filter.items.size() == 2 && vnode_type(filter.items[1])
                   ? std::string()
                   : "vnode-type takes one of REGULAR-FILE, DIRECTORY, SYMLINK";
      }
      if (name == "require-all" && filter.items.size() >= 3) {
        // Path filters, (vnode-type ...) and (extension "NAME") parts: the pty rule, links in
        // the git folders.
        for (std::size_t i = 1; i < filter.items.size(); ++i) {
          const Sexp& part = filter.items[i];
          const bool extension = part.items.size() == 2 && part.items[0].is_symbol("extension") &&
                                 part.items[1].kind == Sexp::Kind::string;
          const bool nested =
              part.kind == Sexp::Kind::list && !part.items.empty() &&
              (part.items[0].is_symbol("regex") || part.items[0].is_symbol("literal") ||
               part.items[0].is_symbol("subpath") || part.items[0].is_symbol("vnode-type"));
          if (!extension && !nested) {
            return "unknown file filter " + part.print();
          }
          if (nested) {
            if (auto problem = check_filter(part, family); !problem.empty()) {
              return problem;
            }
          }
        }
        return {};
      }
      break;
    case Family::sysctl:
      if (name == "sysctl-name" || name == "sysctl-name-prefix") {
        return one_string(filter) ? std::string() : name + " takes one string";
      }
      break;
    case Family::exec:
      if (name == "regex" && filter.items.size() == 2) {
        return check_regex(filter.items[1]);
      }
      if (name == "literal") {
        return one_string(filter) ? std::string() : "literal takes one string";
      }
      break;
    case Family::network:
      if ((name == "remote" || name == "local") && filter.items.size() >= 2) {
        if (ip_kind(filter.items[1])) {
          return check_ip(filter);
        }
        if (filter.items[1].is_symbol("unix-socket")) {
          return check_unix_socket(filter);
        }
      }
      break;
    case Family::mach:
      if (name == "global-name") {
        return one_string(filter) ? std::string() : "global-name takes one string";
      }
      break;
    case Family::signal:
      if (name == "target" && filter.items.size() == 2 &&
          filter.items[1].is_symbol("same-sandbox")) {
        return {};
      }
      break;
    case Family::socket:
      if (name == "socket-domain" && filter.items.size() == 2 &&
          (filter.items[1].is_symbol("AF_UNIX") || filter.items[1].is_symbol("AF_INET") ||
           filter.items[1].is_symbol("AF_INET6"))) {
        return {};
      }
      if (name == "require-all") {
        for (std::size_t i = 1; i < filter.items.size(); ++i) {
          const Sexp& part = filter.items[i];
          const bool domain =
              part.items.size() == 2 && part.items[0].is_symbol("socket-domain") &&
              (part.items[1].is_symbol("AF_INET") || part.items[1].is_symbol("AF_INET6"));
          const bool type = part.items.size() == 2 && part.items[0].is_symbol("socket-type") &&
                            part.items[1].is_symbol("SOCK_RAW");
          if (!domain && !type) {
            return "unknown socket filter " + part.print();
          }
        }
        return {};
      }
      break;
    case Family::bare:
      break;
  }
  return "filter " + filter.print() + " does not belong here";
}

std::string check_form(const Sexp& form) {
  if (form.kind != Sexp::Kind::list || form.items.empty()) {
    return "a top-level form must be a non-empty list";
  }
  if (form.items[0].is_symbol("version")) {
    return form.items.size() == 2 && form.items[1].is_symbol("1") ? std::string()
                                                                  : "expected (version 1)";
  }
  if (!form.items[0].is_symbol("allow") && !form.items[0].is_symbol("deny")) {
    return "a rule starts with allow or deny";
  }
  std::size_t i = 1;
  bool have = false;
  Family family = Family::bare;
  for (; i < form.items.size() && form.items[i].kind == Sexp::Kind::symbol; ++i) {
    Family f = Family::bare;
    if (!family_of(form.items[i].text, f)) {
      return "unknown operation " + form.items[i].text;
    }
    if (have && f != family) {
      return "operations of different kinds in one rule";
    }
    family = f;
    have = true;
  }
  if (!have) {
    return "a rule names at least one operation";
  }
  for (; i < form.items.size(); ++i) {
    if (auto problem = check_filter(form.items[i], family); !problem.empty()) {
      return problem;
    }
  }
  return {};
}

// --- the evaluator --------------------------------------------------------------------------

bool within(const std::string& path, const std::string& folder) {
  if (folder == "/") {
    return path.starts_with("/");
  }
  return path == folder || (path.starts_with(folder) && path[folder.size()] == '/');
}

// Whether a rule's operation `named` covers `operation`: the same, or a wildcard (file-write*
// covers file-write-data, file-write-create, file-write-unlink, ...).
bool covers(const std::string& named, const std::string& operation) {
  if (named == operation || named == "default") {
    return true;
  }
  return named.ends_with("*") && operation.starts_with(named.substr(0, named.size() - 1));
}

// "tcp4" is matched by ip, ip4, tcp and tcp4; "udp6" by ip, ip6, udp and udp6.
bool kind_matches(const std::string& kind, const std::string& protocol) {
  if (protocol.size() != 4) {
    return false;
  }
  const std::string transport = protocol.substr(0, 3);
  const char version = protocol[3];
  return kind == "ip" || kind == std::string("ip") + version || kind == transport ||
         kind == protocol;
}

bool address_matches(const std::string& value, const Request& request) {
  const auto colon = value.rfind(':');
  if (colon == std::string::npos) {
    return false;
  }
  const std::string host = value.substr(0, colon);
  const std::string port = value.substr(colon + 1);
  const bool host_ok = host == "*" || (host == "localhost" && request.host == "localhost");
  const bool port_ok = port == "*" || port == std::to_string(request.port);
  return host_ok && port_ok;
}

// A regex compiled once: the evaluator meets the same case-folded regexes in every request. The
// tests run on one thread. RE2 in its POSIX mode reads the POSIX extended syntax check_regex holds
// a profile's regexes to, an order of magnitude faster than std::regex (the profile tests spent
// most of their time here); '.' matches a newline as in std::regex's extended grammar, since an
// awkward home folder may hold one.
bool search(const std::string& text, const std::string& source) {
  static std::map<std::string, std::unique_ptr<re2::RE2>> compiled;
  auto at = compiled.find(source);
  if (at == compiled.end()) {
    re2::RE2::Options options;
    options.set_posix_syntax(true);
    options.set_dot_nl(true);
    options.set_log_errors(false);
    auto regex = std::make_unique<re2::RE2>(source, options);
    if (!regex->ok()) {
      throw std::runtime_error("the SBPL reader cannot evaluate regex '" + source +
                               "': " + regex->error());
    }
    at = compiled.emplace(source, std::move(regex)).first;
  }
  return re2::RE2::PartialMatch(text, *at->second);
}

bool matches(const Sexp& filter, const Request& request) {
  if (filter.kind != Sexp::Kind::list || filter.items.empty()) {
    return false;
  }
  const Sexp& head = filter.items[0];
  const bool one = filter.items.size() == 2;
  const std::string& arg = one ? filter.items[1].text : head.text;
  if (head.is_symbol("require-all")) {
    return std::all_of(filter.items.begin() + 1, filter.items.end(),
                       [&](const Sexp& part) { return matches(part, request); });
  }
  if (head.is_symbol("require-any")) {
    return std::any_of(filter.items.begin() + 1, filter.items.end(),
                       [&](const Sexp& part) { return matches(part, request); });
  }
  if (head.is_symbol("require-not") && one) {
    return !matches(filter.items[1], request);
  }
  const bool file = !request.path.empty() && !request.unix_socket;
  const bool socket_path = !request.path.empty() && request.unix_socket;
  if (one && (head.is_symbol("literal") || head.is_symbol("subpath") || head.is_symbol("regex"))) {
    if (!file && !socket_path) {
      return false;
    }
    if (head.is_symbol("literal")) {
      return request.path == arg;
    }
    if (head.is_symbol("subpath")) {
      return within(request.path, arg);
    }
    return search(request.path, arg);
  }
  if (one && head.is_symbol("path-literal")) {
    return socket_path && request.path == arg;
  }
  if (one && head.is_symbol("path-regex")) {
    return socket_path && search(request.path, arg);
  }
  if (one && head.is_symbol("vnode-type")) {
    return !request.vnode_type.empty() && request.vnode_type == arg;
  }
  if (one && head.is_symbol("sysctl-name")) {
    return !request.sysctl.empty() && request.sysctl == arg;
  }
  if (one && head.is_symbol("sysctl-name-prefix")) {
    return !request.sysctl.empty() && request.sysctl.starts_with(arg);
  }
  if (one && head.is_symbol("global-name")) {
    return !request.mach.empty() && request.mach == arg;
  }
  if ((head.is_symbol("local") || head.is_symbol("remote")) && filter.items.size() >= 2) {
    const bool local_side =
        request.operation == "network-bind" || request.operation == "network-inbound";
    if (head.is_symbol("local") != local_side) {
      return false;
    }
    if (filter.items[1].is_symbol("unix-socket")) {
      return request.unix_socket && (filter.items.size() == 2 || matches(filter.items[2], request));
    }
    if (ip_kind(filter.items[1]) && filter.items.size() == 3) {
      return !request.unix_socket && kind_matches(filter.items[1].text, request.protocol) &&
             address_matches(filter.items[2].text, request);
    }
  }
  return false;  // extension, target, socket-domain: never
}

}  // namespace

bool evaluate(const std::vector<Sexp>& forms, const Request& request) {
  bool decision = false;  // (deny default), or no rule at all
  for (const auto& form : forms) {
    if (form.items.size() < 2 ||
        !(form.items[0].is_symbol("allow") || form.items[0].is_symbol("deny"))) {
      continue;
    }
    bool named = false;
    std::size_t i = 1;
    for (; i < form.items.size() && form.items[i].kind == Sexp::Kind::symbol; ++i) {
      named = named || covers(form.items[i].text, request.operation);
    }
    if (!named) {
      continue;
    }
    bool match = i == form.items.size();  // no filter: everything
    for (; i < form.items.size() && !match; ++i) {
      match = matches(form.items[i], request);
    }
    if (match) {
      decision = form.items[0].is_symbol("allow");
    }
  }
  return decision;
}

std::string check_sbpl(const std::vector<Sexp>& forms) {
  if (forms.empty() || forms[0].print() != "(version 1)") {
    return "a profile starts with (version 1)";
  }
  for (const auto& form : forms) {
    if (auto problem = check_form(form); !problem.empty()) {
      return problem + " in " + form.print();
    }
  }
  return {};
}

std::string Sexp::print() const {
  switch (kind) {
    case Kind::symbol:
      return text;
    case Kind::regex:
      return "#\"" + text + "\"";
    case Kind::string: {
      std::string out = "\"";
      for (char c : text) {
        if (c == '"' || c == '\\') {
          out += '\\';
        }
        out += c;
      }
      return out + "\"";
    }
    case Kind::list: {
      std::string out = "(";
      for (std::size_t i = 0; i < items.size(); ++i) {
        out += (i == 0 ? "" : " ") + items[i].print();
      }
      return out + ")";
    }
  }
  return {};
}

Expected<std::vector<Sexp>, std::string> read_sbpl(std::string_view text) {
  return Reader(text).all();
}

std::vector<std::string> all_strings(const std::vector<Sexp>& forms) {
  std::vector<std::string> out;
  for (const auto& form : forms) {
    collect_strings(form, out);
  }
  return out;
}

}  // namespace sandgate::testing
