// The terminal's input, told apart. See terminal_input.hpp.
#include "sandbox-profile/supervisor/terminal_input.hpp"

namespace sandgate::sandbox {
namespace {

constexpr unsigned char kEsc = 0x1b;
constexpr unsigned char kBel = 0x07;
constexpr unsigned char kCan = 0x18;
constexpr unsigned char kSub = 0x1a;
constexpr unsigned char kDel = 0x7f;

// 8-bit C1 controls that start a sequence.
constexpr unsigned kCsi8 = 0x9b;
constexpr unsigned kSs38 = 0x8f;
constexpr unsigned kDcs8 = 0x90;
constexpr unsigned kSos8 = 0x98;
constexpr unsigned kOsc8 = 0x9d;
constexpr unsigned kPm8 = 0x9e;
constexpr unsigned kApc8 = 0x9f;
constexpr unsigned kSt8 = 0x9c;

// A CSI's parameters are kept up to this length: "200" (a paste) is all that is looked at.
constexpr std::size_t kKeptParameters = 8;

bool in(unsigned char byte, unsigned char low, unsigned char high) {
  return byte >= low && byte <= high;
}
bool cancels(unsigned char byte) { return byte == kCan || byte == kSub; }
bool continuation(unsigned char byte) { return in(byte, 0x80, 0xbf); }

// The continuation bytes a UTF-8 lead byte announces (0: not a lead byte; C0, C1 and F5-FF
// never start a well-formed character).
unsigned utf8_length(unsigned char byte) {
  return in(byte, 0xc2, 0xdf) ? 1 : in(byte, 0xe0, 0xef) ? 2 : in(byte, 0xf0, 0xf4) ? 3 : 0;
}

}  // namespace

void TerminalInput::feed(std::string_view bytes) {
  for (const char c : bytes) {
    if (!burst_open_) {
      burst_open_ = true;
      began_in_ground_ = state_ == State::kGround;
    }
    step(static_cast<unsigned char>(c));
  }
}

TerminalInput::Burst TerminalInput::quiet() {
  Burst burst;
  if (!burst_open_) {
    return burst;
  }
  if (state_ == State::kEscape) {
    // A lone ESC followed by silence: the Escape key (a terminal writes ESC and the rest of a
    // sequence at once).
    state_ = State::kGround;
    emit(Token::kTyped);
  }
  const bool whole = began_in_ground_ && state_ == State::kGround;
  if (whole && tokens_ == 1 && first_key_) {
    burst.key = first_key_;
  } else if (whole && tokens_ == 1 && first_token_ == Token::kEnter) {
    burst.enter = true;
  } else if (whole && tokens_ == 1 && first_token_ == Token::kErase) {
    burst.erase = true;
  } else if (whole && tokens_ == 2 && first_key_ && last_token_ == Token::kEnter) {
    burst.key_then_enter = first_key_;
  } else {
    burst.typed = typed_;
  }
  burst_open_ = false;
  tokens_ = 0;
  first_key_.reset();
  typed_ = false;
  return burst;
}

void TerminalInput::step(unsigned char byte) {
  switch (state_) {
    case State::kGround:
      ground(byte);
      return;
    case State::kEscape:
    case State::kEscapeIntermediate:
      escape(byte);
      return;
    case State::kCsiParameters:
    case State::kCsiIntermediates:
    case State::kCsiIgnore:
    case State::kSs3:
      csi(byte);
      return;
    case State::kString:
    case State::kStringEscape:
      control_string(byte);
      return;
    case State::kUtf8:
      utf8(byte);
      return;
    case State::kMouse:
      mouse(byte);
      return;
    case State::kPaste:
      paste(byte);
      return;
  }
}

void TerminalInput::ground(unsigned char byte) {
  if (byte == kEsc) {
    state_ = State::kEscape;
  } else if (in(byte, 0x20, 0x7e)) {
    emit(Token::kPlainKey, static_cast<char>(byte));
  } else if (byte == '\r' || byte == '\n') {
    emit(Token::kEnter);
  } else if (byte == kDel || byte == '\b') {
    emit(Token::kErase);
  } else if (byte < 0x20) {
    emit(Token::kTyped);  // a control key: Tab, Ctrl+letter
  } else if (in(byte, 0x80, 0x9f)) {
    c1(byte);  // 8-bit form
  } else if (const unsigned due = utf8_length(byte); due > 0) {
    state_ = State::kUtf8;
    utf8_due_ = due;
    utf8_code_ = byte & (0x3fU >> due);
    utf8_least_ = due == 1 ? 0x80 : due == 2 ? 0x800 : 0x10000;
  } else {
    emit(Token::kTyped);  // a byte no well-formed input starts with
  }
}

void TerminalInput::c1(unsigned code) {
  switch (code) {
    case kCsi8:
      start_csi();
      return;
    case kSs38:
      state_ = State::kSs3;
      return;
    case kOsc8:
      start_string(true);
      return;
    case kDcs8:
    case kSos8:
    case kPm8:
    case kApc8:
      start_string(false);
      return;
    default:
      state_ = State::kGround;
      emit(Token::kSequence);  // a C1 control on its own (ST without a string, ...)
      return;
  }
}

void TerminalInput::start_csi() {
  state_ = State::kCsiParameters;
  csi_parameters_.clear();
  csi_intermediates_ = false;
}

void TerminalInput::start_string(bool osc) {
  state_ = State::kString;
  osc_ = osc;
  string_continuations_ = 0;
}

void TerminalInput::escape(unsigned char byte) {
  if (in(byte, 0x20, 0x2f)) {
    state_ = State::kEscapeIntermediate;
    return;
  }
  if (state_ == State::kEscape) {
    switch (byte) {
      case '[':
        start_csi();
        return;
      case 'O':
        state_ = State::kSs3;
        return;
      case ']':
        start_string(true);
        return;
      case 'P':
      case 'X':
      case '^':
      case '_':
        start_string(false);
        return;
      case kEsc:
        emit(Token::kSequence);  // ESC ESC: Alt+Escape; the second may start a sequence
        return;
      default:
        break;
    }
    if (byte < 0x20 || byte == kDel) {
      state_ = State::kGround;
      emit(Token::kSequence);  // Alt+control (Alt+Backspace is ESC DEL); CAN, SUB cancel
      return;
    }
  }
  if (in(byte, 0x30, 0x7e)) {
    state_ = State::kGround;
    emit(Token::kSequence);  // ESC x: Alt+x, or a two-byte sequence
    return;
  }
  abandon(byte);
}

void TerminalInput::csi(unsigned char byte) {
  if (in(byte, 0x40, 0x7e) && state_ != State::kSs3) {
    if (state_ == State::kCsiIgnore) {
      state_ = State::kGround;
      emit(Token::kSequence);
    } else {
      csi_final(byte);
    }
    return;
  }
  switch (state_) {
    case State::kCsiParameters:
      if (in(byte, 0x30, 0x3f)) {
        if (csi_parameters_.size() < kKeptParameters) {
          csi_parameters_ += static_cast<char>(byte);
        }
        return;
      }
      if (in(byte, 0x20, 0x2f)) {
        state_ = State::kCsiIntermediates;
        csi_intermediates_ = true;
        return;
      }
      break;
    case State::kCsiIntermediates:
      if (in(byte, 0x20, 0x2f)) {
        return;
      }
      if (in(byte, 0x30, 0x3f)) {
        state_ = State::kCsiIgnore;  // a parameter after an intermediate: malformed
        return;
      }
      break;
    case State::kCsiIgnore:
      if (in(byte, 0x20, 0x3f)) {
        return;
      }
      break;
    case State::kSs3:
      // SS3 and its final byte; some terminals put parameters before it (ESC O 2 P).
      if (in(byte, 0x30, 0x3f)) {
        return;
      }
      if (in(byte, 0x40, 0x7e)) {
        state_ = State::kGround;
        emit(Token::kSequence);
        return;
      }
      break;
    default:
      break;
  }
  abandon(byte);
}

void TerminalInput::csi_final(unsigned char byte) {
  if (byte == 'M' && csi_parameters_.empty() && !csi_intermediates_) {
    // An X10 mouse report: CSI M, then the button and the column and row, as characters.
    state_ = State::kMouse;
    mouse_due_ = 3;
    mouse_continuation_ = false;
    return;
  }
  if (byte == '~' && csi_parameters_ == "200" && !csi_intermediates_) {
    state_ = State::kPaste;
    paste_tail_.clear();
    return;
  }
  state_ = State::kGround;
  emit(Token::kSequence);
}

void TerminalInput::control_string(unsigned char byte) {
  if (state_ == State::kStringEscape) {
    state_ = State::kGround;
    emit(Token::kSequence);
    if (byte != '\\') {  // not ST: the ESC ended the string and starts what follows
      state_ = State::kEscape;
      escape(byte);
    }
    return;
  }
  if (byte == kEsc) {
    state_ = State::kStringEscape;
  } else if ((osc_ && byte == kBel) || cancels(byte) ||
             (byte == kSt8 && string_continuations_ == 0)) {
    state_ = State::kGround;
    emit(Token::kSequence);
  } else if (const unsigned due = utf8_length(byte); due > 0) {
    string_continuations_ = due;  // (0x9C inside a UTF-8 character is not ST)
  } else if (continuation(byte) && string_continuations_ > 0) {
    --string_continuations_;
  } else {
    string_continuations_ = 0;
  }
}

void TerminalInput::utf8(unsigned char byte) {
  if (!continuation(byte)) {
    state_ = State::kGround;
    emit(Token::kTyped);  // a character cut short
    step(byte);
    return;
  }
  utf8_code_ = (utf8_code_ << 6) | (byte & 0x3fU);
  if (--utf8_due_ > 0) {
    return;
  }
  state_ = State::kGround;
  const bool surrogate = utf8_code_ >= 0xd800 && utf8_code_ <= 0xdfff;
  if (utf8_code_ < utf8_least_ || utf8_code_ > 0x10ffff || surrogate) {
    emit(Token::kTyped);  // overlong or not a character: never the ASCII it may spell
  } else if (utf8_code_ >= 0x80 && utf8_code_ <= 0x9f) {
    c1(utf8_code_);  // a C1 control written in UTF-8
  } else {
    emit(Token::kTyped);  // a character beyond ASCII
  }
}

void TerminalInput::mouse(unsigned char byte) {
  // Each character is 32 plus a value: never a C0 control. In mode 1005 a value past 95 is
  // written in UTF-8 (two bytes), else as one raw byte.
  if (mouse_continuation_) {
    if (!continuation(byte)) {
      abandon(byte);
      return;
    }
    mouse_continuation_ = false;
  } else if (byte < 0x20) {
    abandon(byte);
    return;
  } else if (in(byte, 0xc2, 0xdf)) {
    mouse_continuation_ = true;
    return;
  }
  if (--mouse_due_ == 0) {
    state_ = State::kGround;
    emit(Token::kSequence);
  }
}

void TerminalInput::paste(unsigned char byte) {
  // Everything up to CSI 201 ~ (7-bit or 8-bit) is the paste: never a key press.
  constexpr std::string_view kEnd7 = "\x1b[201~";
  constexpr std::string_view kEnd8 =
      "\x9b"
      "201~";
  paste_tail_ += static_cast<char>(byte);
  if (paste_tail_.size() > kEnd7.size()) {
    paste_tail_.erase(0, paste_tail_.size() - kEnd7.size());
  }
  if (std::string_view(paste_tail_).ends_with(kEnd7) ||
      std::string_view(paste_tail_).ends_with(kEnd8)) {
    state_ = State::kGround;
    emit(Token::kSequence);
  }
}

void TerminalInput::abandon(unsigned char byte) {
  state_ = State::kGround;
  emit(Token::kSequence);
  if (!cancels(byte)) {
    step(byte);
  }
}

void TerminalInput::emit(Token token, char key) {
  ++tokens_;
  if (tokens_ == 1) {
    first_token_ = token;
  }
  last_token_ = token;
  if (token == Token::kPlainKey && tokens_ == 1) {
    first_key_ = key;
  }
  typed_ = typed_ || token != Token::kSequence;
}

}  // namespace sandgate::sandbox
