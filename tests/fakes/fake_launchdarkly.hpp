// A LaunchDarkly of the project's own for tests: HTTPS on 127.0.0.1 with a throw-away CA that it
// makes with the real `openssl` command, serving the client-side evaluation endpoint
// (REPORT /sdk/evalx/{id}/context) and the streaming endpoint (GET /eval/{id}/{context}).
//
// Tests tell it what to answer per context key (the domain, in per-domain mode), how to
// misbehave (slow, hang, refuse connections, HTTP errors with or without Retry-After, bad JSON,
// a wrong content type, the flag missing), and push stream events. Like LaunchDarkly, it keeps
// connections alive between evaluation requests. It counts what it was asked, and how many
// connections were made and open at once, so tests can check that lookups were merged, cached
// and capped, and that no credentials or extra data were sent.
//
// It runs on a thread of its own; every method is safe to call from the test's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sandgate::fakes {

// A client-side ID of LaunchDarkly's form (24 hex digits), for the tests' fakes and settings.
inline constexpr const char* kFakeClientId = "0123456789abcdef01234567";

class FakeLaunchDarkly {
 public:
  enum class Behaviour {
    normal,
    hang,    // accept, read the request, never answer
    refuse,  // close the listener: connections are refused
    status_404,
    status_500,
    bad_json,
    wrong_content_type,  // a JSON body labelled text/html
    no_flag,             // a valid reply without the flag
  };

  // `client_id` is the only ID it knows (others get 404). `flag` is the flag key it serves.
  explicit FakeLaunchDarkly(std::string client_id, std::string flag = "egress-allowlist");
  ~FakeLaunchDarkly();
  FakeLaunchDarkly(const FakeLaunchDarkly&) = delete;
  FakeLaunchDarkly& operator=(const FakeLaunchDarkly&) = delete;

  std::uint16_t port() const { return port_; }
  std::string base_uri() const;                            // https://localhost:PORT
  const std::string& ca_file() const { return ca_file_; }  // the CA to trust (SSL_CERT_FILE)

  // Per-domain mode: the flag's JSON value for a context key; others get `default_value`.
  void set_value(const std::string& key, const std::string& value_json);
  void set_default_value(const std::string& value_json);
  // The version reported with every value.
  void set_version(std::uint64_t version);

  void set_behaviour(Behaviour behaviour);
  // A delay before every answer (0: none).
  void set_delay(std::chrono::milliseconds delay);

  // Large replies: every normal evaluation reply is padded (a field of its own beside the
  // flags) to `body_size` bytes (0: unpadded), and sent with a Content-Length or chunked (in
  // 16 KiB chunks, without a length).
  enum class Framing { length, chunked };
  void set_reply_size(std::size_t body_size, Framing framing);
  // While holding, a padded reply's head (and, chunked, its first chunk) goes at once and the
  // rest of its body waits for release_replies(), which also ends holding; hold_replies(false)
  // ends holding for later replies only. held_replies() counts the replies that ever waited.
  void hold_replies(bool hold = true);
  void release_replies();
  int held_replies() const;

  // Streaming: sends an event to every open stream; closes every open stream.
  void push_event(const std::string& type, const std::string& data);
  void close_streams();
  // Waits until `count` streams have been opened in all (up to `timeout`).
  bool wait_for_streams(int count, std::chrono::milliseconds timeout);

  // The next `count` stream requests (or evaluation requests) are answered with `status`,
  // with a Retry-After field when `retry_after` is not empty.
  void fail_next_streams(int count, unsigned status, const std::string& retry_after = {});
  void fail_next_evaluations(int count, unsigned status, const std::string& retry_after = {});

  // What it was asked.
  int connections() const;           // TLS connections accepted in all
  int max_open_connections() const;  // the most open at once
  std::vector<std::chrono::steady_clock::time_point> stream_requests() const;  // when each came
  int evaluations() const;  // evaluation requests in all
  int evaluations_for(const std::string& key) const;
  int streams_opened() const;
  std::vector<std::string> request_heads() const;  // every request's head, for header checks
  std::vector<std::string> contexts() const;       // every evaluation request's body

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::uint16_t port_ = 0;
  std::string folder_;
  std::string ca_file_;
};

}  // namespace sandgate::fakes
