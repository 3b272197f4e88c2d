// What cleaning a bound host's response of masked secrets costs (proxy/secrets/redaction.hpp),
// per 64 KiB body piece, against the floor of looking at the piece at all: one memmem for the raw
// value (what any search must do) and a memcpy. Bodies: random text (a JSON-ish API answer with
// no secret in it) and the same with the value echoed in it every 4 KiB. Compare the ratios in
// one run: the machine is shared and noisy.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>
#include <string>

#include "proxy/secrets/masked_secrets.hpp"
#include "proxy/secrets/redaction.hpp"

namespace {

using namespace sandgate::secrets;

constexpr std::size_t kPiece = 64 * 1024;

std::string text_body(std::uint32_t seed) {
  std::mt19937 engine(seed);
  const std::string alphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \"{}:,/_-.\n";
  std::string body(kPiece, ' ');
  for (char& c : body) {
    c = alphabet[engine() % alphabet.size()];
  }
  return body;
}

const std::string kToken = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
const std::string kAwsKey = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

std::vector<Redaction> forms(const std::string& value) {
  std::mt19937 engine(7);
  const std::string sentinel =
      make_sentinel(value, [&] { return static_cast<std::uint8_t>(engine()); });
  return redactions_of(value, sentinel);
}

void BM_Memcpy(benchmark::State& state) {
  const std::string body = text_body(1);
  std::string out(kPiece, '\0');
  for (auto _ : state) {
    std::memcpy(out.data(), body.data(), kPiece);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kPiece));
}
BENCHMARK(BM_Memcpy);

void BM_MemmemRawValue(benchmark::State& state) {
  const std::string body = text_body(1);
  for (auto _ : state) {
    benchmark::DoNotOptimize(::memmem(body.data(), body.size(), kToken.data(), kToken.size()));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kPiece));
}
BENCHMARK(BM_MemmemRawValue);

// arg 0: a GitHub token (letters, digits, one '_'); 1: an AWS key ('/' and '+'). arg 1: echoes
// of the value in the piece (0, or one every 4 KiB).
void BM_Redact(benchmark::State& state) {
  const std::string& value = state.range(0) == 0 ? kToken : kAwsKey;
  const auto redactions = forms(value);
  std::string body = text_body(2);
  if (state.range(1) > 0) {
    for (std::size_t at = 100; at + value.size() < body.size(); at += 4096) {
      body.replace(at, value.size(), value);
    }
  }
  std::string piece;
  for (auto _ : state) {
    state.PauseTiming();
    piece = body;
    state.ResumeTiming();
    benchmark::DoNotOptimize(redact(piece, redactions));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * kPiece));
  state.counters["forms"] = static_cast<double>(redactions.size());
}
BENCHMARK(BM_Redact)->Args({0, 0})->Args({1, 0})->Args({0, 1})->Args({1, 1});

// A streamed reply (issue 42): one server-sent event of about 150 bytes per piece, as a model
// API sends a token at a time, through a StreamRedaction with an Anthropic key's forms bound:
// the cost of each event's pass, context included, against a memcpy of the event.
void BM_StreamedEvent(benchmark::State& state) {
  const std::string key = "sk-ant-api03-Zq8XkW2mVt7RbN4cLp9HsDf6GyJ3uAeK1oQwErTyUiOp0123456789ab";
  const auto redactions = forms(key);
  StreamRedaction redaction(redactions);
  std::vector<char> buffer(redaction.front_limit() + 4096);
  std::size_t index = 0;
  std::size_t held = 0;
  for (auto _ : state) {
    const std::string event =
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
        "\"delta\":{\"type\":\"text_delta\",\"text\":\" word" +
        std::to_string(index++) + "\"}}\n\n";
    std::memcpy(buffer.data() + redaction.carried(), event.data(), event.size());
    const auto ready = redaction.pass(buffer.data(), event.size(), false);
    benchmark::DoNotOptimize(ready);
    if (redaction.held() > 0) {
      ++held;
      redaction.on_pause();
    }
    redaction.to_front(buffer.data());
  }
  state.counters["held_share"] =
      static_cast<double>(held) / static_cast<double>(std::max<std::size_t>(index, 1));
}
BENCHMARK(BM_StreamedEvent);

}  // namespace
