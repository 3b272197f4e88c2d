// The terminal's input told apart (terminal_input.hpp): only a single plain key press, alone in
// its burst, is a key; a terminal's reports, pastes, escape sequences and characters beyond
// ASCII never are, whatever letters they hold, however the terminal splits them (bar right after
// a report's ESC, see the header), and whatever random input surrounds them.
#include "sandbox-profile/supervisor/terminal_input.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

namespace sandgate::sandbox {
namespace {

// Feeds `bursts`, each followed by a quiet moment; returns the keys they answered with.
std::string keys_of(const std::vector<std::string>& bursts) {
  TerminalInput input;
  std::string keys;
  for (const auto& burst : bursts) {
    input.feed(burst);
    if (const auto key = input.quiet().key) {
      keys += *key;
    }
  }
  return keys;
}

// What a terminal writes besides key presses, each holding the letters of answers.
const std::vector<std::string>& reports() {
  static const std::vector<std::string> kReports = {
      "\x1b[M o!",                      // X10 mouse: button, column 'o', row
      "\x1b[M#an",                      // X10 mouse release, column 'a', row 'n'
      "\x1b[M \xc3\xb6n",               // X10 mouse, mode 1005: a UTF-8 column
      "\x9bM sa",                       // X10 mouse after an 8-bit CSI
      "\x1b[<0;111;115M",               // SGR mouse press
      "\x1b[<0;111;115m",               // SGR mouse release
      "\x1b[I",                         // focus in
      "\x1b[O",                         // focus out
      "\x9bO",                          // focus out, 8-bit
      "\xc2\x9bO",                      // focus out, CSI written in UTF-8
      "\x1b[200~o\x1b[201~",            // a pasted answer
      "\x1b[200~always\r\nd\x1b[201~",  // a pasted line or two
      "\x9b"
      "200~s\x9b"
      "201~",                              // a paste, 8-bit
      "\x1b[200~\x1b[A\x1bo\x1b[201~",     // a paste holding escape sequences
      "\x1b[24;80R",                       // cursor position report
      "\x1b[?62;22c",                      // primary device attributes
      "\x1b[>1;6500;0c",                   // secondary device attributes
      "\x1b]11;rgb:0000/0000/0000\x1b\\",  // background colour report, ST
      "\x1b]10;rgb:aaaa/ssss/oooo\x07",    // foreground colour report, BEL
      "\x1b]lsandgate: allow? o\x1b\\",    // title report, text the command set
      "\x9d"
      "52;c;b25jZQ==\x9c",     // clipboard report, 8-bit OSC and ST
      "\x1bP1$r0;1m\x1b\\",    // DECRQSS reply
      "\x90>|xterm(390)\x9c",  // XTVERSION, 8-bit DCS
      "\x1b_Gi=1;OK\x1b\\",    // kitty graphics reply (APC)
      "\x1b^privacy o\x1b\\",  // PM
      "\x1bXsos o\x1b\\",      // SOS
      "\x1b[?2004;1$y",        // DECRQM reply
      "\x1bOP",                // F1 (SS3)
      "\x1bO2P",               // Shift+F1, old xterm
      "\x8f"
      "A",                 // SS3 A, 8-bit
      "\x1b[1;5A",         // Ctrl+Up
      "\x1b[15~",          // F5
      "\x1bo",             // Alt+o
      "\x1b\x1b[A",        // Alt+Up
      "\x1b(B",            // ESC with an intermediate
      "\xc3\xb6",          // o with umlaut
      "\xe2\x80\x99",      // a quote beyond ASCII
      "\xf0\x9f\x98\x80",  // an emoji
      "\xc1\xaf",          // overlong 'o' (2 bytes)
      "\xe0\x81\xaf",      // overlong 'o' (3 bytes)
      "\xf0\x80\x81\xaf",  // overlong 'o' (4 bytes)
      "\xed\xa0\x80",      // a surrogate
  };
  return kReports;
}

TEST(TerminalInput, ASinglePlainKeyPressIsAKeyInItsCase) {
  EXPECT_EQ(keys_of({"o"}), "o");
  EXPECT_EQ(keys_of({"O"}), "O");
  EXPECT_EQ(keys_of({"d", "s", "n"}), "dsn");
  EXPECT_EQ(keys_of({"o"}), "o");
  TerminalInput input;
  EXPECT_FALSE(input.in_burst());
  EXPECT_FALSE(input.quiet().key);  // nothing fed
  input.feed("a");
  EXPECT_TRUE(input.in_burst());
  EXPECT_EQ(input.quiet().key, std::optional<char>('a'));
  EXPECT_FALSE(input.in_burst());
}

TEST(TerminalInput, SeveralKeysInOneBurstAreNoKeyAndWantABeep) {
  for (const std::string burst : {"so", "xo", "oo", "o\r", "\ro", "o\x1b[A", "\x1b[Ao", "\x1bo"}) {
    TerminalInput input;
    input.feed(burst);
    const auto result = input.quiet();
    EXPECT_FALSE(result.key) << burst;
  }
  TerminalInput input;
  input.feed("so");
  EXPECT_TRUE(input.quiet().typed);
  input.feed("\x1b[I");
  EXPECT_FALSE(input.quiet().typed);  // a report: no beep
  input.feed("\r");
  EXPECT_TRUE(input.quiet().enter);  // Enter alone: told apart, not a key
}

TEST(TerminalInput, EnterBackspaceAndAKeyWithItsEnterAreToldApart) {
  TerminalInput input;
  input.feed("\r");
  EXPECT_TRUE(input.quiet().enter);
  input.feed("\n");
  EXPECT_TRUE(input.quiet().enter);
  input.feed("\x7f");
  EXPECT_TRUE(input.quiet().erase);
  input.feed("o\r");
  auto both = input.quiet();
  EXPECT_EQ(both.key_then_enter, std::optional<char>('o'));
  EXPECT_FALSE(both.key);
  EXPECT_FALSE(both.enter);
  for (const std::string burst : {"\ro", "oo\r", "o\r\r", "\x1b[Ao\r", "\r\r", "\x1b[I\r"}) {
    input.feed(burst);
    const auto result = input.quiet();
    EXPECT_FALSE(result.key_then_enter) << burst;
    EXPECT_FALSE(result.enter) << burst;
    EXPECT_FALSE(result.key) << burst;
  }
  // A paste holding a key and Enter is a paste.
  input.feed("\x1b[200~o\r\x1b[201~");
  const auto paste = input.quiet();
  EXPECT_FALSE(paste.key_then_enter);
  EXPECT_FALSE(paste.enter);
}

TEST(TerminalInput, NoReportIsAKeyAndTheNextKeyPressStillIs) {
  for (const auto& report : reports()) {
    EXPECT_EQ(keys_of({report}), "") << ::testing::PrintToString(report);
    EXPECT_EQ(keys_of({report, "d"}), "d") << ::testing::PrintToString(report);
    EXPECT_EQ(keys_of({report + "d"}), "") << ::testing::PrintToString(report);
  }
}

TEST(TerminalInput, ALoneEscapeIsTheEscapeKey) {
  EXPECT_EQ(keys_of({"\x1b", "o"}), "o");
  EXPECT_EQ(keys_of({"\x1b", "\x1b", "n"}), "n");
}

// A sequence the terminal wrote in parts stays one: its letters are not keys even alone in a
// burst (a CSI waits for its final byte, a string for its ST, a paste for its end).
TEST(TerminalInput, ASequenceSplitIntoBurstsIsNoKey) {
  EXPECT_EQ(keys_of({"\x1b[", "O"}), "");             // focus out in two writes
  EXPECT_EQ(keys_of({"\x9b", "I"}), "");              // 8-bit
  EXPECT_EQ(keys_of({"\x1b[M", "o", "a", "n"}), "");  // X10 mouse
  EXPECT_EQ(keys_of({"\x1b]0;", "o", "\x07", "d"}), "d");
  EXPECT_EQ(keys_of({"\x1b[200~", "o", "\x1b[201~", "a"}), "a");
  EXPECT_EQ(keys_of({"\x1b[200~", "o", "\x1b", "[201~", "a"}), "a");
  EXPECT_EQ(keys_of({"\xc3", "\xb6", "n"}), "n");
  // A paste is not ended by the Escape key or a cancel, only by its end.
  EXPECT_EQ(keys_of({"\x1b[200~", "\x1b", "o", "\x18", "s", "\x1b[201~", "d"}), "d");
}

TEST(TerminalInput, CancelAndEscapeEndASequence) {
  EXPECT_EQ(keys_of({"\x1b[12\x18", "o"}), "o");       // CAN
  EXPECT_EQ(keys_of({"\x1b]0;title\x1a", "o"}), "o");  // SUB
  // ESC inside a string may be its ST's first half, even after a quiet moment: the next byte
  // says (here Alt+x), and then keys are keys again.
  EXPECT_EQ(keys_of({"\x1b]0;title\x1b", "x", "o"}), "o");
  EXPECT_EQ(keys_of({"\x1b[12\x1b[A", "o"}), "o");
}

// Fuzz: random reports, random contents, random chunks within a burst: never a key; then a
// single key press still is one.
TEST(TerminalInput, RandomReportsInOneBurstAreNeverAKey) {
  std::mt19937 random(20261206);
  const auto pick = [&random](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(random);
  };
  const std::string letters = "osadnOSADN;:0123456789 \r\x7f";
  const auto text = [&](std::size_t most) {
    std::string out;
    for (std::size_t n = pick(most + 1); n > 0; --n) {
      out += letters[pick(letters.size())];
    }
    return out;
  };
  const auto parameters = [&]() {
    std::string out;
    for (std::size_t n = pick(6); n > 0; --n) {
      out += static_cast<char>(0x30 + pick(16));
    }
    return out;
  };
  const auto random_report = [&]() -> std::string {
    const std::string csi = pick(2) == 0 ? "\x1b[" : "\x9b";
    const std::string st = pick(2) == 0 ? "\x1b\\" : "\x9c";
    switch (pick(9)) {
      case 0: {  // CSI: parameters, maybe an intermediate, a final (not a mouse report's or
                 // a paste's start: those have their own cases)
        const std::string intermediate =
            pick(3) == 0 ? std::string(1, static_cast<char>(0x20 + pick(16))) : "";
        std::string final_byte(1, static_cast<char>(0x40 + pick(63)));
        if (final_byte == "M" || final_byte == "~") {
          final_byte = "R";
        }
        return csi + parameters() + intermediate + final_byte;
      }
      case 1:  // X10 mouse: three raw characters
        return csi + "M" + static_cast<char>(0x20 + pick(96)) +
               static_cast<char>(0x20 + pick(224)) + static_cast<char>(0x20 + pick(96));
      case 2:  // SGR mouse
        return csi + "<" + std::to_string(pick(64)) + ";" + std::to_string(pick(300)) + ";" +
               std::to_string(pick(300)) + (pick(2) == 0 ? "M" : "m");
      case 3:  // a paste of anything but its end
        return csi + "200~" + text(40) + reports()[pick(reports().size())] + text(5) + csi + "201~";
      case 4:  // OSC, ended by ST or BEL
        return (pick(2) == 0 ? "\x1b]" : "\x9d") + text(30) + (pick(2) == 0 ? st : "\x07");
      case 5:  // DCS, SOS, PM, APC
        return std::string("\x1b") + "PX^_"[pick(4)] + text(30) + st;
      case 6:  // SS3
        return (pick(2) == 0 ? "\x1bO" : "\x8f") + parameters() +
               static_cast<char>(0x40 + pick(63));
      case 7:  // a listed report
        return reports()[pick(reports().size())];
      default: {  // a character beyond ASCII
        const char32_t code = static_cast<char32_t>(0xa0 + pick(0xf000));
        std::string out;
        if (code < 0x800) {
          out += static_cast<char>(0xc0 | (code >> 6));
        } else {
          out += static_cast<char>(0xe0 | (code >> 12));
          out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
        }
        out += static_cast<char>(0x80 | (code & 0x3f));
        return code >= 0xd800 && code <= 0xdfff ? "\xc3\xb6" : out;
      }
    }
  };
  for (int round = 0; round < 20000; ++round) {
    std::string burst;
    for (std::size_t n = 1 + pick(4); n > 0; --n) {
      burst += random_report();
    }
    TerminalInput input;
    for (std::size_t at = 0; at < burst.size();) {
      const std::size_t chunk = 1 + pick(8);
      input.feed(std::string_view(burst).substr(at, chunk));
      at += chunk;
    }
    const auto key = input.quiet().key;
    ASSERT_FALSE(key) << ::testing::PrintToString(burst) << " read as " << *key;
    input.feed("s");
    ASSERT_EQ(input.quiet().key, std::optional<char>('s')) << ::testing::PrintToString(burst);
  }
}

// Fuzz: a paste or a control string split into bursts at random places: no burst is a key.
TEST(TerminalInput, PastesAndStringsSplitAnywhereAreNeverAKey) {
  std::mt19937 random(4021);
  const auto pick = [&random](std::size_t n) {
    return std::uniform_int_distribution<std::size_t>(0, n - 1)(random);
  };
  const std::vector<std::pair<std::string, std::string>> frames = {{"\x1b[200~", "\x1b[201~"},
                                                                   {"\x9b"
                                                                    "200~",
                                                                    "\x9b"
                                                                    "201~"},
                                                                   {"\x1b]", "\x07"},
                                                                   {"\x1b]", "\x1b\\"},
                                                                   {"\x1bP", "\x9c"},
                                                                   {"\x1b_", "\x1b\\"}};
  const std::string letters = "osadn OSADN\r\n\t";
  for (int round = 0; round < 20000; ++round) {
    const auto& [open, close] = frames[pick(frames.size())];
    std::string inside;
    for (std::size_t n = pick(24); n > 0; --n) {
      inside += letters[pick(letters.size())];
    }
    const std::string whole = open + inside + close;
    // Split anywhere after the opening's ESC (see the header).
    std::vector<std::string> bursts;
    std::size_t at = 0;
    while (at < whole.size()) {
      std::size_t chunk = 1 + pick(4);
      if (at == 0 && whole[0] == '\x1b' && chunk == 1) {
        chunk = 2;
      }
      bursts.push_back(whole.substr(at, chunk));
      at += chunk;
    }
    bursts.push_back("n");
    ASSERT_EQ(keys_of(bursts), "n") << ::testing::PrintToString(bursts);
  }
}

// Fuzz: any burst of two bytes or more is no key, whatever the bytes.
TEST(TerminalInput, RandomBurstsOfTwoBytesOrMoreAreNeverAKey) {
  std::mt19937 random(77);
  TerminalInput input;
  for (int round = 0; round < 50000; ++round) {
    std::string burst(2 + std::uniform_int_distribution<std::size_t>(0, 14)(random), '\0');
    for (auto& byte : burst) {
      byte = static_cast<char>(std::uniform_int_distribution<int>(0, 255)(random));
    }
    input.feed(burst);
    const auto key = input.quiet().key;
    ASSERT_FALSE(key) << ::testing::PrintToString(burst) << " read as " << *key;
  }
}

}  // namespace
}  // namespace sandgate::sandbox
