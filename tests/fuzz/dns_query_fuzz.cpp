// Fuzz target: the capture DNS server's query reader and response builder
// (proxy/capture/dns_wire.hpp), on whatever a confined command sends to port 53.
//
// Invariants, beyond "no out-of-bounds access and no undefined behaviour" (ASan, UBSan):
//   - a query that reads has a name of at most 253 characters in lower-case letters, digits,
//     '-', '_' and dots, with no empty label, and its question ends inside the message;
//   - every response built for it (each code, with addresses of both families) is at most 512
//     bytes, echoes the ID and the question byte for byte, and reads back as a response: QR set,
//     the code asked for, one question, and as many answers as its count says;
//   - a refused query names its problem, and carries the ID exactly when the header was there.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "proxy/capture/dns_wire.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace sandgate::capture;
using sandgate::fuzz::escaped;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> message(data, size);
  auto query = parse_query(message);
  if (!query) {
    FUZZ_CHECK(!query.error().problem.empty(), "refused without a problem");
    // The ID is given back (for a FORMERR) whenever there is a header, except for a message
    // that is itself a response (QR set), which is never answered.
    const bool response = size >= 3 && (data[2] & 0x80) != 0;
    FUZZ_CHECK(query.error().id.has_value() == (size >= 12 && !response),
               "ID presence differs from header");
    return 0;
  }
  const std::string& name = query->name;
  FUZZ_CHECK(name.size() <= 253, "name of " + std::to_string(name.size()));
  FUZZ_CHECK(name.empty() || (name.front() != '.' && name.back() != '.' &&
                              name.find("..") == std::string::npos),
             "empty label in " + escaped(name));
  for (char c : name) {
    FUZZ_CHECK((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.',
               "name byte in " + escaped(name));
  }
  FUZZ_CHECK(query->question_end > 12 && query->question_end <= size, "question end");

  std::vector<sandgate::rules::IpAddress> addresses;
  addresses.push_back(sandgate::rules::IpAddress::from_v4(0xc6120001));
  std::array<std::uint8_t, 16> v6{0xfd, 1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  for (int i = 0; i < 40; ++i) {
    addresses.push_back(sandgate::rules::IpAddress::from_v6(v6));
  }
  for (auto code : {ResponseCode::no_error, ResponseCode::refused, ResponseCode::name_error}) {
    const auto response = build_response(message, *query, code, addresses, 30);
    FUZZ_CHECK(response.size() <= kClassicUdpLimit || code != ResponseCode::no_error ||
                   query->question_end > kClassicUdpLimit,
               "response of " + std::to_string(response.size()) + " bytes");
    FUZZ_CHECK(response.size() >= query->question_end, "response shorter than the question");
    FUZZ_CHECK(response[0] == data[0] && response[1] == data[1], "ID not echoed");
    FUZZ_CHECK((response[2] & 0x80) != 0, "QR not set");
    FUZZ_CHECK((response[3] & 0x0f) == static_cast<int>(code), "code differs");
    FUZZ_CHECK(response[4] == 0 && response[5] == 1, "not one question");
    FUZZ_CHECK(std::equal(data + 12, data + query->question_end, response.begin() + 12),
               "question not echoed byte for byte");
    const std::size_t answers = (std::size_t{response[6]} << 8) | response[7];
    std::size_t at = query->question_end;
    for (std::size_t i = 0; i < answers; ++i) {
      FUZZ_CHECK(at + 12 <= response.size(), "answer header past the end");
      const std::size_t length = (std::size_t{response[at + 10]} << 8) | response[at + 11];
      at += 12 + length;
    }
    FUZZ_CHECK(at == response.size(), "answer count and bytes disagree");
  }
  return 0;
}
