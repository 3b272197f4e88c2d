// Fake TCP origins for tests: real listening sockets on loopback (IPv4 or IPv6, port 0), each
// connection served on its own thread with blocking I/O, behaving as the test needs:
//   echo   - echoes every byte; on the client's half-close it finishes echoing, then half-closes
//   banner - sends a greeting first (like an SSH server), then echoes
//   reset  - reads a little, then resets the connection (SO_LINGER 0)
//   flood  - ignores input and sends `flood_bytes` as fast as it can, then closes
// Counters let tests assert what reached the origin.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace sandgate::fakes {

class TcpOrigin {
 public:
  enum class Mode { echo, banner, reset, flood };
  enum class Family { v4, v6 };

  explicit TcpOrigin(Mode mode = Mode::echo, Family family = Family::v4);
  ~TcpOrigin();
  TcpOrigin(const TcpOrigin&) = delete;
  TcpOrigin& operator=(const TcpOrigin&) = delete;

  std::uint16_t port() const;
  // Set before clients connect.
  void set_banner(std::string banner);
  void set_flood_bytes(std::uint64_t bytes);

  std::size_t connections() const;       // accepted so far
  std::uint64_t bytes_received() const;  // from all clients

  struct State;  // shared with the serving threads, which may outlive this object briefly

 private:
  std::shared_ptr<State> state_;
};

}  // namespace sandgate::fakes
