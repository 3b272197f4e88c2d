// `sandgate watch [PID]`: a terminal view, for a second pane or window, of a gate at work: its
// live connections and decisions with their reasons, the questions waiting (answered with the
// keys `run`'s terminal takes: o once, s session, a always, d deny, n never), its budgets as
// bars against their amounts, and bytes per destination.
//
// Attaches to a `serve` through its admin endpoint (the admin setting, `--admin ADDR:PORT`,
// with the admin token, or the gate's token, as `sandgate decide` sends it), or else to this
// user's runs through their private sockets (commands/run_sockets.hpp): PID names one; without
// it, every run of the user is attached, shown one at a time (Tab switches). While attached to a
// run, that run's questions come here and its own terminal is left alone.
//
// ncurses, no mouse, no colours beyond bold and reverse: works in an 80x24 terminal and over
// ssh, and redraws when the terminal is resized. `q` quits.
#pragma once

#include <sys/types.h>
#include <optional>
#include <ostream>

#include "proxy/settings/settings.hpp"

namespace sandgate::commands {

inline constexpr int kWatchOk = 0;
inline constexpr int kWatchUsageError = 2;  // nothing to attach to, no terminal

int run_watch(const settings::Settings& settings, std::optional<pid_t> pid, std::ostream& err);

}  // namespace sandgate::commands
