// Fuzz target: the TLS ClientHello / SSH banner reader (rules/tls_client_hello.hpp) that the SNI
// check runs on the first bytes of a tunnel, on arbitrary bytes.
//
// Invariants, beyond "never reads outside the input" (ASan; the input is copied into a buffer of
// exactly its size so that one byte too far is caught) and "no undefined behaviour":
//   - the status is one of the five; a server name comes only with `tls`, and is at most 65535
//     bytes (the width of its length field);
//   - streaming is consistent: the proxy calls the reader again each time more bytes arrive, so a
//     final answer (anything but need_more) for a prefix is the answer for every longer prefix,
//     name included. Checked on every prefix of short inputs and on a spread of prefixes
//     (including every TLS record boundary) of long ones;
//   - a server name that was read survives a round trip: a ClientHello built around it (as in
//     tests/support/client_hello.hpp), whole or split into small records, reads back as `tls`
//     with the same name.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "rules/tls_client_hello.hpp"
#include "tests/fuzz/fuzz_check.hpp"
#include "tests/support/client_hello.hpp"

namespace {

using sandgate::fuzz::escaped;
namespace rules = sandgate::rules;
using Status = rules::ClientHello::Status;

constexpr std::size_t kAllPrefixesUpTo = 160;
constexpr std::size_t kSpreadPrefixes = 48;

std::string_view status_name(Status status) {
  switch (status) {
    case Status::need_more:
      return "need_more";
    case Status::tls:
      return "tls";
    case Status::ssh:
      return "ssh";
    case Status::other:
      return "other";
    case Status::malformed:
      return "malformed";
  }
  return "out-of-range";
}

std::string show(const rules::ClientHello& hello) {
  return std::string(status_name(hello.status)) + " '" + escaped(hello.server_name) + "'";
}

void check_shape(const rules::ClientHello& hello, std::size_t length) {
  const std::string where = show(hello) + " at length " + std::to_string(length);
  FUZZ_CHECK(status_name(hello.status) != "out-of-range", where);
  FUZZ_CHECK(hello.server_name.size() <= 65535, where);
  FUZZ_CHECK(hello.status == Status::tls || hello.server_name.empty(),
             "a server name without tls: " + where);
}

// Reads exactly the first `length` bytes, from a heap block of that size, so that ASan reports
// any read past the end of what the caller has received.
rules::ClientHello read_prefix(const std::uint8_t* data, std::size_t length) {
  const std::unique_ptr<char[]> copy(new char[length == 0 ? 1 : length]);
  std::copy(data, data + length, copy.get());
  return rules::read_client_hello(std::string_view(copy.get(), length));
}

// Prefix lengths worth checking on a long input: evenly spread ones, the last few, and each
// TLS record boundary (where "need more" turns into a verdict) with its neighbours.
std::set<std::size_t> prefix_lengths(const std::uint8_t* data, std::size_t size) {
  std::set<std::size_t> lengths;
  if (size <= kAllPrefixesUpTo) {
    for (std::size_t n = 0; n <= size; ++n) {
      lengths.insert(n);
    }
    return lengths;
  }
  for (std::size_t k = 0; k <= kSpreadPrefixes; ++k) {
    lengths.insert(size * k / kSpreadPrefixes);
  }
  for (std::size_t n = 0; n < 16; ++n) {  // the record and handshake headers, byte by byte
    lengths.insert(n);
    lengths.insert(size - n);
  }
  for (std::size_t at = 0; at + 5 <= size && lengths.size() < 4 * kSpreadPrefixes;) {
    const std::size_t end = at + 5 + (std::size_t{data[at + 3]} << 8 | data[at + 4]);
    for (const std::size_t n : {end - 1, end, end + 1}) {
      if (n <= size) {
        lengths.insert(n);
      }
    }
    at = end;
  }
  return lengths;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const rules::ClientHello full = read_prefix(data, size);
  check_shape(full, size);

  std::optional<rules::ClientHello> settled;  // the first final answer, at `settled_at`
  std::size_t settled_at = 0;
  for (const std::size_t n : prefix_lengths(data, size)) {
    const rules::ClientHello part = n == size ? full : read_prefix(data, n);
    check_shape(part, n);
    if (settled) {
      FUZZ_CHECK(part.status == settled->status && part.server_name == settled->server_name,
                 "answered " + show(*settled) + " at length " + std::to_string(settled_at) +
                     " but " + show(part) + " at length " + std::to_string(n));
    } else if (part.status != Status::need_more) {
      settled = part;
      settled_at = n;
    }
  }

  if (full.status == Status::tls && !full.server_name.empty() && full.server_name.size() <= 4096) {
    for (const std::size_t record_size : {std::size_t{16384}, std::size_t{7}}) {
      const std::string rebuilt =
          sandgate::testing::client_hello_records(full.server_name, true, record_size);
      const rules::ClientHello again = rules::read_client_hello(rebuilt);
      FUZZ_CHECK(
          again.status == Status::tls && again.server_name == full.server_name,
          "rebuilt ClientHello for '" + escaped(full.server_name) + "' reads as " + show(again));
    }
  }
  return 0;
}
