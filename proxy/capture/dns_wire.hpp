// DNS on the wire (RFC 1035) for the one job the gate's own DNS server has in a `sandgate run`
// with capture: answer a confined command's queries itself, from a reserved synthetic range,
// so that no query leaves the machine and every connection that follows names its destination.
//
// Only queries are read: one question, class IN, opcode QUERY, no answer or authority records,
// at most one additional record and that an EDNS OPT at the root (RFC 6891). Names must be
// uncompressed (a query has nothing to point back to), in letters, digits, '-' and '_' per label
// (the gate's host parser decides the rest) and within 253 characters. Anything else is
// malformed, answered with FORMERR when its header could be read.
//
// Pure functions on values; no I/O; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rules/expected.hpp"
#include "rules/ip_address.hpp"

namespace sandgate::capture {

// The query types the server knows; every other type is answered REFUSED.
enum class QueryType : std::uint16_t {
  a = 1,
  ns = 2,
  cname = 5,
  soa = 6,
  ptr = 12,
  mx = 15,
  txt = 16,
  aaaa = 28,
  srv = 33,
  opt = 41,
  svcb = 64,
  https = 65,
  any = 255,
};

enum class ResponseCode : std::uint8_t {
  no_error = 0,
  format_error = 1,
  server_failure = 2,
  name_error = 3,  // NXDOMAIN
  not_implemented = 4,
  refused = 5,
};

// The largest DNS message over UDP without EDNS, and the largest the server ever sends.
inline constexpr std::size_t kClassicUdpLimit = 512;

struct Query {
  std::uint16_t id = 0;
  bool recursion_desired = false;
  std::string name;              // lower case, dot-separated, no trailing dot; "" for the root
  std::uint16_t type = 0;        // QTYPE as sent (compare with QueryType)
  std::size_t question_end = 0;  // offset just past the question (to echo it)
  bool edns = false;             // an OPT record came with it
};

struct QueryError {
  std::string problem;
  // The ID, when at least the header was there and it is a query: a FORMERR can be sent back
  // to it (never to a response).
  std::optional<std::uint16_t> id;
};

Expected<Query, QueryError> parse_query(std::span<const std::uint8_t> message);

// A response to `query` (whose raw bytes are `message`, for echoing the question) with `code`
// and, for NOERROR, one A or AAAA record per address of the query's type with `ttl` seconds.
// Other NOERROR answers (HTTPS, SVCB: "no such record", so resolvers fall back to A/AAAA) have no
// records.
std::vector<std::uint8_t> build_response(std::span<const std::uint8_t> message, const Query& query,
                                         ResponseCode code,
                                         std::span<const rules::IpAddress> addresses = {},
                                         std::uint32_t ttl = 0);

// A FORMERR for a query that could not be read beyond its header.
std::vector<std::uint8_t> format_error(std::uint16_t id);

// Why `name` looks like data rather than a host name, if it does: the budget that keeps a
// confined command from carrying data out in the names it asks for (the gate resolves an
// allowed name for real when the command connects). Over budget: a name over 160 characters, a
// label over 48, or a label of 28 characters or more whose letters are as varied as encoded data
// (Shannon entropy over 4.0 bits per character: base32 and base64 text is, hexadecimal IDs and
// words are not: sixteen symbols carry at most 4 bits).
std::optional<std::string> name_over_budget(std::string_view name);

}  // namespace sandgate::capture
