// `sandgate watch`. See watch.hpp.
#include "proxy/commands/watch.hpp"

#include <curses.h>
#include <poll.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

#include "proxy/commands/run_sockets.hpp"
#include "proxy/watch_view/admin_client.hpp"
#include "proxy/watch_view/screen_model.hpp"

namespace sandgate::commands {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using watch_view::AdminAddress;
using watch_view::EventStream;
using watch_view::GateView;

// How often the documents (questions, budgets, traffic) are read again, and a lost stream is
// tried again.
constexpr auto kRefresh = 1s;

// One attached gate: where it is, what the view knows of it, and its live stream.
struct Attached {
  AdminAddress where;
  GateView view;
  std::optional<EventStream> stream;
  Clock::time_point next_refresh{};
};

std::string who() {
  if (const passwd* entry = ::getpwuid(::getuid()); entry != nullptr && entry->pw_name != nullptr) {
    return std::string(entry->pw_name) + " via sandgate watch";
  }
  return "uid " + std::to_string(::getuid()) + " via sandgate watch";
}

// The gates to attach to: the admin endpoint when one is set; else the run PID, or every run
// of this user. Empty, with the reason said on `err`, when there is none.
std::vector<Attached> targets(const settings::Settings& settings, std::optional<pid_t> pid,
                              std::ostream& err) {
  std::vector<Attached> out;
  if (settings.admin) {
    AdminAddress where;
    where.host = settings.admin->address;
    where.port = settings.admin->port;
    where.bearer = settings.admin_token.empty() ? settings.token : settings.admin_token;
    out.push_back({where, GateView("serve " + where.text()), std::nullopt, {}});
    return out;
  }
  for (const RunSocket& run : list_run_sockets()) {
    if (!pid || run.pid == *pid) {
      AdminAddress where;
      where.unix_path = run.path;
      out.push_back({where, GateView("run " + std::to_string(run.pid)), std::nullopt, {}});
    }
  }
  if (out.empty()) {
    err << "sandgate watch: "
        << (pid ? "no run with pid " + std::to_string(*pid) + " of this user"
                : std::string("no run of this user to watch"))
        << " (runs serve their socket in " << run_sockets_folder()
        << "); to watch a `serve`, give its --admin ADDR:PORT\n";
  }
  return out;
}

// Attaches the stream when it is not, and reads the documents when they are due.
void refresh_gate(Attached& gate, bool shown, Clock::time_point now) {
  if (now < gate.next_refresh) {
    return;
  }
  gate.next_refresh = now + kRefresh;
  if (!gate.stream || gate.stream->closed()) {
    auto stream = EventStream::open(gate.where, true);
    gate.stream.reset();
    if (!stream) {
      gate.view.set_attached(false);
      gate.view.set_status(stream.error());
      return;
    }
    gate.stream.emplace(std::move(*stream));
    gate.view.set_attached(true);
    gate.view.set_status({});
    if (auto about = watch_view::exchange(gate.where, "GET", "/about");
        about && about->status == 200) {
      if (auto name = watch_view::name_from_about(about->body)) {
        gate.view.set_name(*name);
      }
    }
  }
  if (auto pending = watch_view::exchange(gate.where, "GET", "/pending");
      pending && pending->status == 200) {
    gate.view.set_pending(pending->body);
  }
  if (!shown) {
    return;  // the other gates' question counts are enough
  }
  if (auto budgets = watch_view::exchange(gate.where, "GET", "/budgets");
      budgets && budgets->status == 200) {
    gate.view.set_budgets(budgets->body);
  }
  if (auto traffic = watch_view::exchange(gate.where, "GET", "/traffic");
      traffic && traffic->status == 200) {
    gate.view.set_traffic(traffic->body);
  }
}

void read_streams(std::vector<Attached>& gates) {
  for (Attached& gate : gates) {
    if (!gate.stream) {
      continue;
    }
    for (const std::string& line : gate.stream->read_lines()) {
      gate.view.add_event_line(line);
    }
    if (gate.stream->closed()) {
      gate.view.set_attached(false);
      gate.view.set_status("the gate closed the stream");
    }
  }
}

// Answers the chosen question of the shown gate, as POST /decide, and says how it went.
void answer(Attached& gate, std::size_t chosen, std::string_view answer_text) {
  const auto& questions = gate.view.questions();
  if (questions.empty()) {
    gate.view.set_status("no question to answer");
    return;
  }
  const auto& question = questions[std::min(chosen, questions.size() - 1)];
  auto reply = watch_view::exchange(gate.where, "POST", "/decide",
                                    watch_view::decide_form(question, answer_text, who()));
  std::string said = reply ? reply->body : reply.error();
  said = said.substr(0, said.find('\n'));
  gate.view.set_status(watch_view::printable(said));
  gate.next_refresh = {};  // read the questions again now
}

void draw(const std::vector<Attached>& gates, const watch_view::Selection& selection) {
  std::vector<GateView> views;
  views.reserve(gates.size());
  for (const Attached& gate : gates) {
    views.push_back(gate.view);
  }
  int rows = 0;
  int cols = 0;
  getmaxyx(stdscr, rows, cols);
  const auto lines = watch_view::render(views, selection, rows, cols);
  erase();
  for (std::size_t i = 0; i < lines.size(); ++i) {
    attr_t attributes = A_NORMAL;
    switch (lines[i].style) {
      case watch_view::Style::title:
      case watch_view::Style::alert:
      case watch_view::Style::denied:
        attributes = A_BOLD;
        break;
      case watch_view::Style::selected:
        attributes = A_REVERSE;
        break;
      case watch_view::Style::plain:
        break;
    }
    attron(attributes);
    mvaddnstr(static_cast<int>(i), 0, lines[i].text.c_str(), cols);
    attroff(attributes);
  }
  refresh();
}

// What a key does; false to quit.
bool on_key(int key, std::vector<Attached>& gates, watch_view::Selection& selection) {
  Attached& shown = gates[selection.gate];
  if (key == 'q' || key == 'Q') {
    return false;
  }
  if (key == '\t') {
    selection.gate = (selection.gate + 1) % gates.size();
    selection.question = 0;
    gates[selection.gate].next_refresh = {};
  } else if (key == KEY_UP || key == 'k') {
    selection.question = selection.question > 0 ? selection.question - 1 : 0;
  } else if (key == KEY_DOWN || key == 'j') {
    const std::size_t count = shown.view.questions().size();
    selection.question = count == 0 ? 0 : std::min(selection.question + 1, count - 1);
  } else if (auto answer_text = watch_view::answer_for_key(key)) {
    answer(shown, selection.question, *answer_text);
  }
  return true;
}

// Ends curses on every way out, so the terminal is given back as it was.
struct CursesSession {
  SCREEN* screen = nullptr;
  ~CursesSession() {
    if (screen != nullptr) {
      endwin();
      delscreen(screen);
    }
  }
};

}  // namespace

int run_watch(const settings::Settings& settings, std::optional<pid_t> pid, std::ostream& err) {
  if (::isatty(STDIN_FILENO) != 1 || ::isatty(STDOUT_FILENO) != 1) {
    err << "sandgate watch: needs a terminal (standard input and output); use sandgate pending "
           "and sandgate decide in scripts\n";
    return kWatchUsageError;
  }
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<Attached> gates = targets(settings, pid, err);
  if (gates.empty()) {
    return kWatchUsageError;
  }
  CursesSession curses;
  curses.screen = newterm(nullptr, stdout, stdin);
  if (curses.screen == nullptr) {
    err << "sandgate watch: the terminal type (TERM) is not known to ncurses\n";
    return kWatchUsageError;
  }
  cbreak();
  noecho();
  nodelay(stdscr, TRUE);
  keypad(stdscr, TRUE);
  curs_set(0);

  watch_view::Selection selection;
  for (;;) {
    const auto now = Clock::now();
    for (std::size_t i = 0; i < gates.size(); ++i) {
      refresh_gate(gates[i], i == selection.gate, now);
    }
    read_streams(gates);
    draw(gates, selection);
    // Wait for a key, a line from a gate, or the next refresh. A resize interrupts the wait
    // (ncurses' SIGWINCH handler) and comes back from getch() as KEY_RESIZE.
    std::vector<pollfd> waits{{STDIN_FILENO, POLLIN, 0}};
    for (const Attached& gate : gates) {
      if (gate.stream && !gate.stream->closed()) {
        waits.push_back({gate.stream->fd(), POLLIN, 0});
      }
    }
    ::poll(waits.data(), waits.size(), 250);
    for (int key = getch(); key != ERR; key = getch()) {
      if (!on_key(key, gates, selection)) {
        return kWatchOk;
      }
    }
  }
}

}  // namespace sandgate::commands
