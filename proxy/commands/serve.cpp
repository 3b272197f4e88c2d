// `sandgate serve`: start the gate, announce it, serve until a signal, drain.
#include "proxy/commands/serve.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "proxy/gate/gate.hpp"
#include "proxy/secrets/process_strings.hpp"
#include "proxy/settings/load.hpp"

namespace sandgate::commands {
namespace {

constexpr int kStartupError = 2;

// Writes the port through a temporary file and a rename: a reader sees the whole number or
// nothing.
bool write_port_file(const std::string& path, std::uint16_t port, std::string& error) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << port << "\n";
    out.close();
    if (!out) {
      error = "cannot write " + temporary;
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    error = "cannot rename " + temporary + " to " + path + ": " + ec.message();
    return false;
  }
  return true;
}

// The sentinels for the launcher that starts the sandboxed command: NAME=SENTINEL lines, in a
// file only the user may read, written whole (a temporary file and a rename) before the gate
// says it listens.
bool write_sentinels_file(const std::string& path, const secrets::MaskedSecrets& secrets,
                          std::string& error) {
  const std::string temporary = path + ".tmp";
  const int fd =
      ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = "cannot write " + temporary + ": " + std::strerror(errno);
    return false;
  }
  std::string text;
  for (const auto& secret : secrets.all()) {
    text += secret.spec.name + "=" + secret.sentinel + "\n";
  }
  const bool written = ::fchmod(fd, 0600) == 0 &&
                       ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  std::error_code ec;
  if (!written) {
    error = "cannot write " + temporary + ": " + std::strerror(errno);
    std::filesystem::remove(temporary, ec);
    return false;
  }
  std::filesystem::rename(temporary, path, ec);
  if (ec) {
    error = "cannot rename " + temporary + " to " + path + ": " + ec.message();
    return false;
  }
  return true;
}

int startup_error(const gate::GateError& error) {
  if (!error.logged) {
    std::cerr << "sandgate: " << error.message << "\n";
  }
  return kStartupError;
}

}  // namespace

int run_serve(const settings::Settings& settings, const settings::Sources& sources) {
  // A client that disconnects while we write must cost an error code, not the process.
  std::signal(SIGPIPE, SIG_IGN);
  // A SIGHUP (logrotate, `systemctl reload`) that comes before the server's own handler is
  // installed must not end the gate; the files are read at start anyway.
  std::signal(SIGHUP, SIG_IGN);

  auto opened = gate::Gate::open({settings, sources, settings::MissingDefaultBlocklist::create});
  if (!opened) {
    return startup_error(opened.error());
  }
  gate::Gate& gate = **opened;
  // The secrets are read: nothing of this process shows a real value from now on (`ps -E`,
  // /proc/PID/environ), before any thread of the gate's starts.
  secrets::mask_process_strings(gate.secrets());
  if (auto error = gate.start()) {
    return startup_error(*error);
  }
  if (!settings.port_file.empty()) {
    std::string error;
    if (!write_port_file(settings.port_file, gate.port(), error)) {
      gate.log().note("error", "port file: " + error);
      return kStartupError;
    }
  }
  if (!settings.sentinels_file.empty()) {
    std::string error;
    if (!write_sentinels_file(settings.sentinels_file, gate.secrets(), error)) {
      gate.log().note("error", "sentinels file: " + error);
      return kStartupError;
    }
  }
  gate.log().note("info", "blocklist " + gate.loaded().blocklist_path + ": " +
                              std::to_string(gate.loaded().policy->blocklist().size()) +
                              " entries; " + std::to_string(settings.threads) +
                              " worker thread(s) (" + settings.threads_note + ")");
  // The one line on standard output: scripts wait for it.
  std::cout << "sandgate listening on " << gate.listen_text() << std::endl;

  gate.serve(true);
  gate.stop();
  return 0;
}

}  // namespace sandgate::commands
