// Fuzz target: the Server-Sent Events parser (proxy/sse/sse_parser.hpp) that reads
// LaunchDarkly's stream, on arbitrary bytes in arbitrary chunks.
//
// Invariants, beyond "no out-of-bounds access and no undefined behaviour" (ASan, UBSan):
//   - chunking never matters: the input fed whole, byte by byte, and split at a point the input
//     chooses gives the same events (type, data, id), the same heartbeat count and the same
//     failure;
//   - bounds hold: no event's data is larger than the event limit, and a parser that failed
//     stays failed and emits nothing more.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/sse/sse_parser.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace {

using sandgate::fuzz::escaped;
using sandgate::sse::SseEvent;
using sandgate::sse::SseParser;

// Small limits, so that the fuzzer reaches them.
constexpr std::size_t kMaxLine = 256;
constexpr std::size_t kMaxEvent = 512;

struct Run {
  std::vector<SseEvent> events;
  int comments = 0;
  bool failed = false;
};

Run parse(std::string_view input, const std::vector<std::size_t>& cuts) {
  Run run;
  SseParser parser(kMaxLine, kMaxEvent);
  SseParser::Handlers handlers;
  handlers.on_event = [&run, &parser](SseEvent&& event) {
    FUZZ_CHECK(!parser.failed(), "an event after failure");
    FUZZ_CHECK(event.data.size() <= kMaxEvent, std::to_string(event.data.size()));
    run.events.push_back(std::move(event));
  };
  handlers.on_comment = [&run] { ++run.comments; };
  std::size_t at = 0;
  for (std::size_t cut : cuts) {
    if (!parser.feed(input.substr(at, cut - at), handlers)) {
      run.failed = true;
      break;
    }
    at = cut;
  }
  if (!run.failed && !parser.feed(input.substr(at), handlers)) {
    run.failed = true;
  }
  return run;
}

void same(const Run& a, const Run& b, std::string_view input, const char* how) {
  const std::string where = std::string(how) + " on '" + escaped(input) + "'";
  FUZZ_CHECK(a.failed == b.failed, where);
  if (a.failed) {
    // Where a failure happens may differ by up to one line's worth of events; only agreement
    // on failing is required.
    return;
  }
  FUZZ_CHECK(a.events.size() == b.events.size(), where);
  FUZZ_CHECK(a.comments == b.comments, where);
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    FUZZ_CHECK(a.events[i].type == b.events[i].type, where);
    FUZZ_CHECK(a.events[i].data == b.events[i].data, where);
    FUZZ_CHECK(a.events[i].id == b.events[i].id, where);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 4096) {
    return 0;
  }
  const std::size_t split = data[0] % size;
  const std::string input(reinterpret_cast<const char*>(data) + 1, size - 1);

  const Run whole = parse(input, {});
  std::vector<std::size_t> every;
  for (std::size_t i = 1; i < input.size(); ++i) {
    every.push_back(i);
  }
  same(whole, parse(input, every), input, "byte by byte");
  if (split > 0 && split < input.size()) {
    same(whole, parse(input, {split}), input, "split in two");
  }
  return 0;
}
