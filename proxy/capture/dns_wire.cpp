#include "proxy/capture/dns_wire.hpp"

#include <array>
#include <cmath>
#include <cstdio>

#include "rules/ascii.hpp"

namespace sandgate::capture {
namespace {

constexpr std::size_t kHeader = 12;
constexpr std::size_t kMaxName = 253;
constexpr std::uint16_t kClassIn = 1;

std::uint16_t u16(std::span<const std::uint8_t> m, std::size_t at) {
  return static_cast<std::uint16_t>((m[at] << 8) | m[at + 1]);
}

void put16(std::vector<std::uint8_t>& out, std::uint16_t value) {
  out.push_back(static_cast<std::uint8_t>(value >> 8));
  out.push_back(static_cast<std::uint8_t>(value & 0xff));
}

void put32(std::vector<std::uint8_t>& out, std::uint32_t value) {
  put16(out, static_cast<std::uint16_t>(value >> 16));
  put16(out, static_cast<std::uint16_t>(value & 0xffff));
}

bool label_byte(std::uint8_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

Unexpected<QueryError> bad(std::string problem, std::optional<std::uint16_t> id) {
  return Unexpected<QueryError>{QueryError{std::move(problem), id}};
}

// Reads an uncompressed name at `at`, into `name` (lower case, no trailing dot). Returns the
// offset past it, or nothing with `problem` set.
std::optional<std::size_t> read_name(std::span<const std::uint8_t> m, std::size_t at,
                                     std::string& name, std::string& problem) {
  name.clear();
  while (true) {
    if (at >= m.size()) {
      problem = "the name runs past the message";
      return std::nullopt;
    }
    const std::uint8_t length = m[at++];
    if (length == 0) {
      return at;
    }
    if ((length & 0xc0) != 0) {
      problem = (length & 0xc0) == 0xc0 ? "a compressed name in a query" : "an extended label type";
      return std::nullopt;
    }
    if (at + length > m.size()) {
      problem = "a label runs past the message";
      return std::nullopt;
    }
    if (!name.empty()) {
      name += '.';
    }
    for (std::size_t i = 0; i < length; ++i) {
      const std::uint8_t c = m[at + i];
      if (!label_byte(c)) {
        problem = "a name byte that is not a letter, digit, '-' or '_'";
        return std::nullopt;
      }
      name += rules::ascii_lower(static_cast<char>(c));
    }
    if (name.size() > kMaxName) {
      problem = "a name over 253 characters";
      return std::nullopt;
    }
    at += length;
  }
}

}  // namespace

Expected<Query, QueryError> parse_query(std::span<const std::uint8_t> m) {
  if (m.size() < kHeader) {
    return bad("shorter than a DNS header", std::nullopt);
  }
  Query query;
  query.id = u16(m, 0);
  const std::uint16_t flags = u16(m, 2);
  if ((flags & 0x8000) != 0) {
    // Never answered, not even with FORMERR (RFC 1035 4.1.1: a server answers queries): an
    // answer to an answer lets two servers, or the gate's own DNS sockets given a forged
    // source, bounce datagrams between them for ever.
    return bad("a response, not a query", std::nullopt);
  }
  if (((flags >> 11) & 0xf) != 0) {
    return bad("an opcode other than QUERY", query.id);
  }
  if ((flags & 0x0200) != 0) {
    return bad("the truncation bit set on a query", query.id);
  }
  query.recursion_desired = (flags & 0x0100) != 0;
  if (u16(m, 4) != 1) {
    return bad("not exactly one question", query.id);
  }
  if (u16(m, 6) != 0 || u16(m, 8) != 0) {
    return bad("answer or authority records in a query", query.id);
  }
  const std::uint16_t additional = u16(m, 10);
  if (additional > 1) {
    return bad("more than one additional record", query.id);
  }
  std::string problem;
  auto at = read_name(m, kHeader, query.name, problem);
  if (!at) {
    return bad(problem, query.id);
  }
  if (*at + 4 > m.size()) {
    return bad("the question runs past the message", query.id);
  }
  query.type = u16(m, *at);
  if (u16(m, *at + 2) != kClassIn) {
    return bad("a class other than IN", query.id);
  }
  query.question_end = *at + 4;
  std::size_t end = query.question_end;
  if (additional == 1) {
    // EDNS OPT: the root name, type 41, then class (UDP size), TTL (flags), RDLENGTH, RDATA.
    if (end + 11 > m.size() || m[end] != 0 ||
        u16(m, end + 1) != static_cast<std::uint16_t>(QueryType::opt)) {
      return bad("an additional record that is not an EDNS OPT at the root", query.id);
    }
    const std::size_t rdlength = u16(m, end + 9);
    end += 11 + rdlength;
    if (end > m.size()) {
      return bad("the OPT record runs past the message", query.id);
    }
    query.edns = true;
  }
  if (end != m.size()) {
    return bad("bytes after the last record", query.id);
  }
  return query;
}

std::vector<std::uint8_t> build_response(std::span<const std::uint8_t> message, const Query& query,
                                         ResponseCode code,
                                         std::span<const rules::IpAddress> addresses,
                                         std::uint32_t ttl) {
  std::vector<std::uint8_t> out;
  out.reserve(kClassicUdpLimit);
  put16(out, query.id);
  // QR, AA (the gate is the authority on its synthetic answers), RD echoed, RA.
  const std::uint16_t flags =
      static_cast<std::uint16_t>(0x8000 | 0x0400 | (query.recursion_desired ? 0x0100 : 0) | 0x0080 |
                                 static_cast<std::uint16_t>(code));
  put16(out, flags);
  put16(out, 1);  // the question, echoed
  std::vector<const rules::IpAddress*> records;
  if (code == ResponseCode::no_error) {
    for (const auto& address : addresses) {
      const bool want_v4 = query.type == static_cast<std::uint16_t>(QueryType::a);
      const bool want_v6 = query.type == static_cast<std::uint16_t>(QueryType::aaaa);
      if ((want_v4 && address.is_v4()) || (want_v6 && !address.is_v4())) {
        records.push_back(&address);
      }
    }
  }
  // Each record is 2 (name pointer) + 10 + 4 or 16; keep the answer within the classic limit.
  const std::size_t question = query.question_end - kHeader;
  while (!records.empty() &&
         kHeader + question + records.size() * (12 + (records.front()->is_v4() ? 4 : 16)) >
             kClassicUdpLimit) {
    records.pop_back();
  }
  put16(out, static_cast<std::uint16_t>(records.size()));
  put16(out, 0);
  put16(out, 0);
  out.insert(out.end(), message.begin() + kHeader, message.begin() + query.question_end);
  for (const auto* address : records) {
    put16(out, 0xc000 | kHeader);  // the name: a pointer to the question's
    put16(out, address->is_v4() ? 1 : 28);
    put16(out, kClassIn);
    put32(out, ttl);
    const std::size_t length = address->is_v4() ? 4 : 16;
    put16(out, static_cast<std::uint16_t>(length));
    out.insert(out.end(), address->bytes.begin(), address->bytes.begin() + length);
  }
  return out;
}

std::vector<std::uint8_t> format_error(std::uint16_t id) {
  std::vector<std::uint8_t> out;
  put16(out, id);
  put16(out, 0x8000 | 0x0080 | static_cast<std::uint16_t>(ResponseCode::format_error));
  for (int i = 0; i < 4; ++i) {
    put16(out, 0);
  }
  return out;
}

std::optional<std::string> name_over_budget(std::string_view name) {
  constexpr std::size_t kMaxNameLength = 160;
  constexpr std::size_t kMaxLabel = 48;
  constexpr std::size_t kEntropyFrom = 28;
  constexpr double kMaxEntropy = 4.0;
  if (name.size() > kMaxNameLength) {
    return "the name is " + std::to_string(name.size()) + " characters long (over " +
           std::to_string(kMaxNameLength) + ")";
  }
  std::size_t start = 0;
  while (start <= name.size()) {
    const auto dot = name.find('.', start);
    const auto label =
        name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    start = dot == std::string_view::npos ? name.size() + 1 : dot + 1;
    if (label.size() > kMaxLabel) {
      return "a label of " + std::to_string(label.size()) + " characters (over " +
             std::to_string(kMaxLabel) + ")";
    }
    if (label.size() < kEntropyFrom) {
      continue;
    }
    std::array<unsigned, 256> counts{};
    for (char c : label) {
      ++counts[static_cast<unsigned char>(c)];
    }
    double entropy = 0;
    for (unsigned count : counts) {
      if (count != 0) {
        const double p = static_cast<double>(count) / static_cast<double>(label.size());
        entropy -= p * std::log2(p);
      }
    }
    if (entropy > kMaxEntropy) {
      char bits[16];
      std::snprintf(bits, sizeof bits, "%.2f", entropy);
      return "a label of " + std::to_string(label.size()) + " characters as varied as encoded " +
             "data (" + bits + " bits per character)";
    }
  }
  return std::nullopt;
}

}  // namespace sandgate::capture
