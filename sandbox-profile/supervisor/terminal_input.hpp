// What a terminal sends, told apart: the keys a person presses, and everything else a terminal
// writes to its input (its reports: cursor position, device attributes, focus, mouse, colours,
// the title; pasted text; escape sequences of keys that are not plain: arrows, function keys,
// Alt+key; characters beyond ASCII). The terminal asker (terminal_asker.hpp) takes an answer
// from it: only a single plain key press, alone in a burst of input, answers; anything else
// never does, whatever letters it holds.
//
// The input is parsed as ECMA-48 writes it, with xterm's additions for input:
// - ESC sequences: ESC, intermediates 0x20-0x2F, a final 0x30-0x7E (ESC x is Alt+x);
// - CSI (ESC [ or 8-bit 0x9B): parameters 0x30-0x3F, intermediates 0x20-0x2F, a final
//   0x40-0x7E; SS3 (ESC O or 0x8F): parameters, then a final;
// - control strings to their ST (ESC \ or 0x9C): OSC (ESC ] or 0x9D; a BEL ends it too), DCS,
//   SOS, PM, APC;
// - other C1 controls in 8-bit form, and any C1 control written as a UTF-8 character;
// - UTF-8 characters (an overlong or otherwise malformed one is never taken for ASCII);
// - X10 mouse reports: CSI M and three raw (or, in mode 1005, UTF-8) characters;
// - bracketed paste: CSI 200 ~ to CSI 201 ~, everything between included, is one event.
// CAN and SUB cancel a sequence; ESC inside one ends it and starts the next.
//
// Bursts: a person's key press arrives alone, and then the input is quiet; a report or a paste
// arrives in one burst (the terminal writes it at once). The caller feeds what it reads and
// calls quiet() once nothing more has come for a while: the burst answers when it was exactly
// one plain key (printable ASCII) that began and ended outside any sequence. A lone ESC at a
// quiet moment was the Escape key; every other unfinished sequence, control string or paste
// stays open across the quiet moment (a terminal may write a long one in parts), so none of its
// bytes is ever taken for a key press. (A report the terminal split right after its ESC, with a
// quiet moment between, would read as Escape and then keys; terminals write a report at once.)
//
// Not thread-safe: one reader, on one thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sandgate::sandbox {

class TerminalInput {
 public:
  // What the input since the last quiet moment was.
  struct Burst {
    // The key, when the burst was a single plain key press (printable ASCII, as typed: its
    // case kept); nothing otherwise.
    std::optional<char> key;
    // Whether the burst held something a person typed that is not a plain key alone (a control
    // key, a character beyond ASCII, several keys at once): worth a beep when it answers
    // nothing. Reports, pastes and escape sequences are not.
    bool typed = false;
    // The burst was a plain key and then Enter, typed together (a fast typist's answer and its
    // Enter): that key. `key` is empty then.
    std::optional<char> key_then_enter;
    bool enter = false;  // the burst was Enter alone (CR or LF)
    bool erase = false;  // the burst was Backspace alone (DEL or BS)
  };

  // Takes bytes as read from the terminal, in order, in chunks of any size.
  void feed(std::string_view bytes);
  // The input has been quiet for a while: what the burst since the last quiet() was. Nothing
  // (an empty burst) when nothing was fed since.
  Burst quiet();
  // Whether bytes were fed since the last quiet().
  bool in_burst() const { return burst_open_; }

 private:
  enum class State {
    kGround,
    kEscape,              // after ESC
    kEscapeIntermediate,  // ESC and intermediates
    kCsiParameters,
    kCsiIntermediates,
    kCsiIgnore,  // a malformed CSI, read to its final byte
    kSs3,
    kString,        // a control string, to its ST
    kStringEscape,  // ESC inside a control string: ST, or the start of the next sequence
    kUtf8,          // within a UTF-8 character
    kMouse,         // the three characters of an X10 mouse report
    kPaste,         // inside a bracketed paste
  };
  // What a finished token was, for the burst.
  enum class Token {
    kPlainKey,  // printable ASCII, alone
    kTyped,     // a control key, a character beyond ASCII, a malformed byte
    kSequence,  // an escape sequence, control string, report or paste
    kEnter,     // CR or LF
    kErase,     // DEL or BS
  };

  void step(unsigned char byte);
  void ground(unsigned char byte);
  void escape(unsigned char byte);
  void csi(unsigned char byte);
  void control_string(unsigned char byte);
  void utf8(unsigned char byte);
  void mouse(unsigned char byte);
  void paste(unsigned char byte);
  // A C1 control (8-bit, or decoded from UTF-8): starts its sequence or is one.
  void c1(unsigned code);
  void start_csi();
  void start_string(bool osc);
  void csi_final(unsigned char byte);
  // Ends the sequence under way as malformed, then reads `byte` afresh (CAN and SUB, which
  // cancel it, are consumed).
  void abandon(unsigned char byte);
  void emit(Token token, char key = 0);

  State state_ = State::kGround;
  // CSI: its parameters (the first few: enough to know a paste's start and a mouse report) and
  // whether it had intermediates.
  std::string csi_parameters_;
  bool csi_intermediates_ = false;
  bool osc_ = false;                   // the control string is an OSC (a BEL ends it)
  unsigned string_continuations_ = 0;  // UTF-8 continuation bytes due inside a control string
  unsigned utf8_due_ = 0;              // continuation bytes due in the UTF-8 character
  unsigned utf8_code_ = 0;
  unsigned utf8_least_ = 0;          // its smallest code point (a smaller one is overlong)
  unsigned mouse_due_ = 0;           // characters due in the mouse report
  bool mouse_continuation_ = false;  // within one of them (UTF-8, mode 1005)
  std::string paste_tail_;           // the paste's last bytes, to find its end
  // The burst since the last quiet().
  bool burst_open_ = false;
  bool began_in_ground_ = false;
  std::size_t tokens_ = 0;
  std::optional<char> first_key_;
  Token first_token_ = Token::kSequence;
  Token last_token_ = Token::kSequence;
  bool typed_ = false;
};

}  // namespace sandgate::sandbox
