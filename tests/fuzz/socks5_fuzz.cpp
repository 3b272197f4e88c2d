// Fuzz target: SOCKS5 on the wire (proxy/socks/socks5_wire.hpp), the greeting, the username and
// password and the request a hostile client sends before anything is relayed.
//
// Invariants, beyond "no out-of-bounds access and no undefined behaviour" (ASan, UBSan):
//   - a complete message uses at least its fixed part and never more than the input or
//     kLongestMessage bytes, and reading exactly its bytes gives the same message;
//   - every proper prefix of a complete message needs more (so a reader that waits for more on
//     need_more can never stop early or read past the message);
//   - malformed is final: more bytes after a malformed input never make it valid;
//   - a complete request has a port, a domain of 1..255 bytes or an address of its type, and
//     a malformed one names its problem.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "proxy/socks/socks5_wire.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace sandgate::socks;

template <typename Reader>
void check_reader(std::span<const std::uint8_t> input, std::size_t fixed_part, Reader reader) {
  const auto read = reader(input);
  switch (read.status) {
    case ReadStatus::complete: {
      FUZZ_CHECK(
          read.used >= fixed_part && read.used <= input.size() && read.used <= kLongestMessage,
          "complete message of " + std::to_string(read.used) + " bytes");
      const auto again = reader(input.first(read.used));
      FUZZ_CHECK(again.status == ReadStatus::complete && again.used == read.used,
                 "the message's own bytes do not read the same");
      for (std::size_t n = 0; n < read.used; ++n) {
        FUZZ_CHECK(reader(input.first(n)).status == ReadStatus::need_more,
                   "a prefix of " + std::to_string(n) + " bytes is not need_more");
      }
      break;
    }
    case ReadStatus::malformed: {
      FUZZ_CHECK(!read.problem.empty(), "malformed without a problem");
      std::vector<std::uint8_t> longer(input.begin(), input.end());
      longer.push_back(0);
      longer.push_back(0xff);
      FUZZ_CHECK(reader(longer).status == ReadStatus::malformed, "more bytes made it valid");
      break;
    }
    case ReadStatus::need_more:
      FUZZ_CHECK(input.size() < kLongestMessage, "need_more after the longest message");
      break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> input(data, size);
  check_reader(input, 3, [](auto b) { return read_greeting(b); });
  check_reader(input, 5, [](auto b) { return read_credentials(b); });
  check_reader(input, 8, [](auto b) { return read_request(b); });
  const auto request = read_request(input);
  if (request.status == ReadStatus::complete) {
    const Request& r = request.message;
    FUZZ_CHECK(r.port != 0, "a complete request with port 0");
    if (r.address_type == Request::AddressType::domain) {
      FUZZ_CHECK(!r.domain.empty() && r.domain.size() <= 255, "domain of a bad length");
    } else {
      FUZZ_CHECK(r.address.is_v4() == (r.address_type == Request::AddressType::ipv4),
                 "address family differs from its type");
    }
  }
  return 0;
}
