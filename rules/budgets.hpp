// Egress budgets: how much may leave for a destination, not only whether it may. Read from the
// budgets file (SANDGATE_BUDGETS, --budgets), one line per destination entry:
//
//   *                    up=500MB/run            # every destination together
//   github.com           up=50MB/run down=2GB/day requests=5000/hour   #! uploads are capped here
//   registry.npmjs.org   connections=600/minute
//
//   LINE    := ENTRY LIMIT [LIMIT ...]     ('#' starts a comment, '#!' a message for whoever a
//                                           limit stops, as in the other rules files)
//   ENTRY   := `*` (every destination), or an entry as in the blocklist: name (and subdomains),
//              *.name, re:PATTERN, an IP literal, each optionally with :PORTS
//   LIMIT   := KIND=AMOUNT[/WINDOW]
//   KIND    := up          bytes from the client towards the destination (a tunnel's client
//                          bytes; a plain or inspected request's head and body as sent)
//            | down        bytes from the destination to the client
//            | connections connections to the destination (a tunnel; a plain-HTTP connection
//                          the gate opens to it)
//            | requests    HTTP requests to it (plain HTTP, and inside inspected TLS)
//   AMOUNT  := for up and down, bytes: a number (a fraction allowed) with a unit B, kB, MB, GB,
//              TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024); for connections and
//              requests a whole number
//   WINDOW  := run (everything since the gate started; the default) | minute | hour | day (the
//              last minute, hour or day, rolling)
//
// Every line whose entry matches a destination applies to it, and each of its limits is counted
// on its own: with `*` and `github.com` above, an upload to github.com counts against both.
// A destination is matched by the name the client asked for and, when it was dialled by name, by
// the address it resolved to (so an entry for an address also counts the names that lead there).
//
// A built BudgetRules is immutable and shared by every worker thread; match() is thread-safe.
// What has been spent is not here: the gate's ledger (proxy/budget/) keeps it across reloads,
// keyed by each limit's `key`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rules/domain_set.hpp"
#include "rules/expected.hpp"
#include "rules/host.hpp"
#include "rules/ip_address.hpp"
#include "rules/rule_line.hpp"

namespace sandgate::rules {

enum class BudgetKind : std::uint8_t { up, down, connections, requests };
inline constexpr std::size_t kBudgetKindCount = 4;
std::string_view to_string(BudgetKind kind);  // "up", "down", "connections", "requests"

enum class BudgetWindow : std::uint8_t { run, minute, hour, day };
std::string_view to_string(BudgetWindow window);  // "run", "minute", "hour", "day"
// The window's length in seconds; 0 for `run` (no end).
std::uint64_t window_seconds(BudgetWindow window);

// One limit of a line.
struct BudgetLimit {
  BudgetKind kind = BudgetKind::up;
  std::uint64_t amount = 0;  // bytes for up and down, a count otherwise
  BudgetWindow window = BudgetWindow::run;
  // What the ledger keeps its spending under: the entry (normal form) with the kind and the
  // window, not the amount, so that a reload that raises the amount keeps what was spent.
  std::string key;
};

struct BudgetLine {
  std::string source;
  std::uint32_t line = 0;
  std::string entry;    // as written: "github.com", "*", "*.npmjs.org:443"
  std::string message;  // the `#!` message, or empty
  std::vector<BudgetLimit> limits;
  // "budgets.txt:3 github.com": the rule text of logs, metrics and replies.
  std::string rule() const;
};

// "50 MB", "1.5 GiB", "120 connections": an amount as people read it (bytes with the largest
// unit of 1000 or 1024 that keeps it exact to three digits, else in bytes).
std::string describe_amount(BudgetKind kind, std::uint64_t amount);
// "50 MB per run", "600 connections per minute".
std::string describe_limit(const BudgetLimit& limit);

// The most lines a budgets file may have (each is matched against every new destination).
inline constexpr std::size_t kMaxBudgetLines = 1000;

class BudgetRules {
 public:
  BudgetRules();  // none: nothing is limited
  BudgetRules(BudgetRules&&) noexcept;
  BudgetRules& operator=(BudgetRules&&) noexcept;
  ~BudgetRules();

  // Parses a budgets file. Bad lines go to `issues` (file, line, why) and are skipped.
  static BudgetRules parse(std::string_view text, std::string_view source,
                           std::vector<LoadIssue>& issues);

  // The lines that apply to host:port (and to `dialled`, the address a name was dialled at),
  // in file order. Empty when none.
  std::vector<const BudgetLine*> match(const Host& host, std::uint16_t port,
                                       const std::optional<IpAddress>& dialled = {}) const;

  const std::vector<BudgetLine>& lines() const;
  bool empty() const;
  std::size_t size() const;  // limits, over all lines

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Parses one LIMIT (`up=50MB/hour`); the error names what is wrong. Exposed for tests.
Expected<BudgetLimit, std::string> parse_budget_limit(std::string_view text);

}  // namespace sandgate::rules
