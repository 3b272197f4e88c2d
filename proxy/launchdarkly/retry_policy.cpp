#include "proxy/launchdarkly/retry_policy.hpp"

#include <time.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <ctime>
#include <random>

#include "rules/ascii.hpp"

namespace sandgate::launchdarkly {

bool is_http_error_recoverable(unsigned status) {
  if (status >= 400 && status < 500) {
    return status == 400 || status == 408 || status == 429;
  }
  return true;
}

std::string describe_http_status(unsigned status) {
  std::string text = "HTTP " + std::to_string(status);
  switch (status) {
    case 400:
      return text + " (is secure mode on for the environment?)";
    case 401:
      return text +
             " (LaunchDarkly does not accept this client-side ID: is it the environment's "
             "client-side ID?)";
    case 403:
      return text +
             " (LaunchDarkly refuses this client-side ID: is secure mode on, or the "
             "environment's access restricted?)";
    case 404:
      return text + " (unknown client-side ID?)";
    case 408:
      return text + " (LaunchDarkly timed out)";
    case 429:
      return text + " (too many requests)";
    default:
      return text;
  }
}

std::optional<std::chrono::milliseconds> parse_retry_after(
    std::string_view value, std::chrono::system_clock::time_point now) {
  value = rules::trim_ows(value);
  if (value.empty()) {
    return std::nullopt;
  }
  std::chrono::milliseconds delay;
  if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    std::uint64_t seconds = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (ec == std::errc::result_out_of_range) {
      seconds = UINT64_MAX;
    } else if (ec != std::errc{} || end != value.data() + value.size()) {
      return std::nullopt;
    }
    const auto cap = std::chrono::duration_cast<std::chrono::seconds>(kMaxRetryAfter).count();
    delay = std::chrono::seconds(std::min<std::uint64_t>(seconds, static_cast<std::uint64_t>(cap)));
  } else {
    // An HTTP-date (IMF-fixdate, the only form senders may generate): "Sun, 06 Nov 1994 08:49:37
    // GMT".
    if (value.size() > 64) {
      return std::nullopt;
    }
    const std::string text(value);
    std::tm parts{};
    const char* end = ::strptime(text.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &parts);
    if (end == nullptr || *end != '\0') {
      return std::nullopt;
    }
    // Compared in whole seconds first: system_clock counts nanoseconds in 64 bits, so a date
    // after 2262 (any year up to 9999 is valid here) would overflow from_time_t() and read as
    // "retry now" instead of the cap.
    const std::int64_t at = static_cast<std::int64_t>(::timegm(&parts));
    const std::int64_t now_s = static_cast<std::int64_t>(std::chrono::system_clock::to_time_t(now));
    const std::int64_t cap_s =
        std::chrono::duration_cast<std::chrono::seconds>(kMaxRetryAfter).count();
    if (at - now_s > cap_s) {
      return kMaxRetryAfter;
    }
    if (at <= now_s - 1) {
      return std::chrono::milliseconds(0);  // past (a year before 1678 would underflow too)
    }
    const auto when = std::chrono::system_clock::from_time_t(static_cast<std::time_t>(at));
    delay = when > now ? std::chrono::duration_cast<std::chrono::milliseconds>(when - now)
                       : std::chrono::milliseconds(0);
  }
  return std::min<std::chrono::milliseconds>(delay, kMaxRetryAfter);
}

Backoff::Backoff(const Timing& timing, std::uint64_t seed) : timing_(timing), seed_(seed) {}

void Backoff::opened(Clock::time_point now) { good_since_ = now; }

void Backoff::succeeded() {
  attempts_ = 0;
  good_since_.reset();
}

std::chrono::milliseconds Backoff::next(Clock::time_point now) {
  if (good_since_ && now - *good_since_ >= timing_.healthy_connection) {
    attempts_ = 0;
  }
  good_since_.reset();
  auto delay = timing_.first_backoff;
  for (unsigned i = 0; i < attempts_ && delay < timing_.max_backoff; ++i) {
    delay *= 2;
  }
  delay = std::min(delay, timing_.max_backoff);
  attempts_ = std::min(attempts_ + 1, 64u);
  if (!timing_.jitter || delay.count() < 2) {
    return delay;
  }
  // Up to half of the delay off, so that many gates restarted together spread out.
  std::mt19937_64 random(seed_++);
  const auto off = std::uniform_int_distribution<long long>(0, delay.count() / 2)(random);
  return std::chrono::milliseconds(delay.count() - off);
}

}  // namespace sandgate::launchdarkly
