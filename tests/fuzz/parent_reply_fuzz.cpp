// Fuzz target: what a parent proxy (or whatever answers on its address) sends back to the gate's
// CONNECT (parent::read_reply_head), and the exclusion list an operator writes
// (parent::ExcludeList::parse), from proxy/parent/parent_proxy.hpp.
//
// Invariants, beyond "no out-of-bounds access and no undefined behaviour" (ASan, UBSan):
//   - a complete head ends inside the input and within the head limit, with a final status
//     (200..599) and a printable reason phrase; every proper prefix of it needs more;
//   - malformed is final (more bytes never make it valid) and names its problem;
//   - need_more never holds more than the limit;
//   - an exclusion list that parses matches deterministically, and "*" in it matches everything.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "proxy/parent/parent_proxy.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using namespace sandgate::parent;
using sandgate::fuzz::escaped;

ReplyHead read(std::string_view text) { return read_reply_head({text.data(), text.size()}); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto head = read(input);
  switch (head.status) {
    case ReplyHead::Status::complete:
      FUZZ_CHECK(head.head_length <= input.size() && head.head_length <= kReplyHeadLimit + 1,
                 "head of " + std::to_string(head.head_length) + " bytes");
      FUZZ_CHECK(head.code >= 200 && head.code <= 599, "status " + std::to_string(head.code));
      for (char c : head.reason_phrase) {
        FUZZ_CHECK(c >= 0x20 && c < 0x7f, "unprintable reason: " + escaped(head.reason_phrase));
      }
      for (std::size_t n = 0; n < head.head_length; n += 1 + n / 64) {
        FUZZ_CHECK(read(input.substr(0, n)).status == ReplyHead::Status::need_more,
                   "prefix of " + std::to_string(n) + " bytes is not need_more");
      }
      break;
    case ReplyHead::Status::malformed: {
      FUZZ_CHECK(!head.problem.empty(), "malformed without a problem");
      const std::string longer = std::string(input) + "\r\n\r\nHTTP/1.1 200 OK\r\n\r\n";
      FUZZ_CHECK(read(longer).status == ReplyHead::Status::malformed, "more bytes made it valid");
      break;
    }
    case ReplyHead::Status::need_more:
      FUZZ_CHECK(input.size() <= kReplyHeadLimit, "need_more past the limit");
      break;
  }

  auto list = ExcludeList::parse(input);
  if (list) {
    for (std::string_view name : {"example.com", "a.b.example.com", "10.1.2.3", "fd00::1"}) {
      auto host = sandgate::rules::parse_host(name);
      FUZZ_CHECK(host.has_value(), "fixture host");
      const bool once = list->excludes(*host, 443);
      FUZZ_CHECK(once == list->excludes(*host, 443), "not deterministic");
    }
    auto star = ExcludeList::parse(std::string(input) + ",*");
    if (star) {
      auto host = sandgate::rules::parse_host("anything.example");
      FUZZ_CHECK(star->excludes(*host, 1), "'*' did not match everything");
    }
  }
  return 0;
}
