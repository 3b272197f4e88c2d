// Sentinels, loading values and cleaning responses of them (masked_secrets.hpp, redaction.hpp).
#include "proxy/secrets/masked_secrets.hpp"
#include "rules/base64.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

#include "proxy/secrets/echo_spellings.hpp"
#include "proxy/secrets/redaction.hpp"

namespace sandgate::secrets {
namespace {

std::function<std::uint8_t()> seeded(unsigned seed) {
  auto engine = std::make_shared<std::mt19937>(seed);
  return [engine] { return static_cast<std::uint8_t>((*engine)() & 0xff); };
}

bool same_kind(char a, char b) {
  const auto kind = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ? 'a' : c;
  };
  return kind(a) == kind(b);
}

TEST(Sentinel, KeepsTheValuesShapeAndNothingElse) {
  const std::string token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
  const std::string sentinel = make_sentinel(token, seeded(1));
  ASSERT_EQ(sentinel.size(), token.size());
  EXPECT_NE(sentinel, token);
  EXPECT_TRUE(sentinel.starts_with("ghp_"));
  std::size_t same = 0;
  for (std::size_t i = 0; i < token.size(); ++i) {
    EXPECT_TRUE(same_kind(token[i], sentinel[i])) << i;
    same += token[i] == sentinel[i] ? 1 : 0;
  }
  EXPECT_LT(same, 12u);  // the prefix and chance
  // Two runs, two sentinels.
  EXPECT_NE(make_sentinel(token, seeded(2)), sentinel);

  // An AWS secret key: '/' and '+' stay where they are; the letters and digits are drawn.
  const std::string key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  const std::string masked = make_sentinel(key, seeded(3));
  ASSERT_EQ(masked.size(), key.size());
  EXPECT_EQ(masked[13], '/');
  EXPECT_EQ(masked[21], '+');
  // Digits only when the value has digits: a hex value stays hex-like, lower case stays lower.
  const std::string hex = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  const std::string masked_hex = make_sentinel(hex, seeded(4));
  for (const char c : masked_hex) {
    EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')) << masked_hex;
  }
}

TEST(Sentinel, RefusesValuesTooShortOrTooPlainToMask) {
  EXPECT_EQ(make_sentinel("short", seeded(1)), "");
  EXPECT_EQ(make_sentinel("abcdefgh", seeded(1)), "");          // 8 lower-case letters: 37 bits
  EXPECT_EQ(make_sentinel("----------------", seeded(1)), "");  // nothing to draw
  EXPECT_NE(make_sentinel("abcdefghij", seeded(1)), "");        // 47 bits
}

TEST(MaskedSecretsLoad, ReadsEachSourceAndSaysWhatFailedWithoutTheValue) {
  char folder[] = "/tmp/secrets-XXXXXX";
  ASSERT_NE(::mkdtemp(folder), nullptr);
  const std::string file = std::string(folder) + "/token";
  std::ofstream(file) << "file-value-0123456789abcdef\n";
  const auto environment = [](const std::string& name) -> std::optional<std::string> {
    if (name == "FROM_ENV") {
      return "env-value-0123456789abcdef";
    }
    if (name == "BAD") {
      return "has\nline";
    }
    return std::nullopt;
  };
  std::vector<SecretSpec> specs = {*parse_secret_spec("FROM_ENV=a.example"),
                                   *parse_secret_spec("FROM_FILE=b.example=@" + file),
                                   *parse_secret_spec("FROM_COMMAND=c.example=!printf "
                                                      "'cmd-value-0123456789abcdef\\r\\n'")};
  auto loaded = MaskedSecrets::load(specs, environment);
  ASSERT_TRUE(loaded) << loaded.error();
  ASSERT_EQ((*loaded)->all().size(), 3u);
  EXPECT_EQ((*loaded)->all()[0].value, "env-value-0123456789abcdef");
  EXPECT_EQ((*loaded)->all()[1].value, "file-value-0123456789abcdef");
  EXPECT_EQ((*loaded)->all()[2].value, "cmd-value-0123456789abcdef");
  const MaskedSecret& first = (*loaded)->all()[0];
  EXPECT_EQ((*loaded)->sentinel_in("Bearer " + first.sentinel), &first);
  EXPECT_EQ((*loaded)->sentinel_in("Bearer " + first.value), nullptr);
  EXPECT_TRUE((*loaded)->any_bound_to("b.example"));
  EXPECT_FALSE((*loaded)->any_bound_to("d.example"));

  const auto fails = [&](const std::string& entry, const std::string& expected) {
    auto result = MaskedSecrets::load({*parse_secret_spec(entry)}, environment);
    ASSERT_FALSE(result) << entry;
    EXPECT_NE(result.error().find(expected), std::string::npos) << result.error();
    EXPECT_EQ(result.error().find("value-0123"), std::string::npos) << result.error();
  };
  fails("MISSING=a.example", "the variable MISSING is not set");
  fails("BAD=a.example", "control character");
  fails("X=a.example=@" + std::string(folder) + "/none", "cannot read");
  fails("X=a.example=!exit 3", "exit status 3");
  fails("X=a.example=!echo short", "too short");
  auto twice = MaskedSecrets::load({specs[0], specs[0]}, environment);
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().find("given twice"), std::string::npos);
  std::system(("rm -rf " + std::string(folder)).c_str());
}

TEST(Redaction, FindsTheValueRawBase64EncodedAtAnyAlignmentAndPercentEncoded) {
  const std::string value = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  const std::string sentinel = make_sentinel(value, seeded(9));
  const auto redactions = redactions_of(value, sentinel);
  for (const auto& redaction : redactions) {
    EXPECT_EQ(redaction.real.size(), redaction.masked.size()) << redaction.real;
  }
  // A Basic header of any user name, and a JSON echo of it: no trace of the value is left in
  // any of them, and each keeps its length.
  for (const std::string user : {"", "a", "ab", "abc", "x-access-token"}) {
    std::string text = "Authorization: Basic " + rules::base64_encoded(user + ":" + value) + "\n" +
                       "{\"key\":\"" + value + "\",\"url\":\"k%3D" +
                       std::string("wJalrXUtnFEMI%2FK7MDENG%2BbPxRfiCYEXAMPLEKEY") +
                       "\",\"j\":\"wJalrXUtnFEMI\\/K7MDENG+bPxRfiCYEXAMPLEKEY\"}";
    const std::size_t size = text.size();
    EXPECT_GE(redact(text, redactions), 4u) << user;
    EXPECT_EQ(text.size(), size);
    EXPECT_EQ(text.find("EXAMPLEKEY"), std::string::npos) << text;
    EXPECT_EQ(text.find(rules::base64_encoded(user + ":" + value).substr(8, 24)), std::string::npos)
        << text;
  }
}

// What echo endpoints write of a value with punctuation (hostile review F1): JSON as Python and
// Go write it, HTML and XML entities, %-encoding in either case, a form decoder's space for '+'.
// The table of the spellings an echo may give punctuation is made with a set of forms, not by the
// first body an echo may be in: made there, on the thread relaying a streamed reply, it held the
// reply back past the origin's next event on a loaded machine. (Each test runs in a process of
// its own: nothing here has cleaned anything yet.)
TEST(Redaction, WhatCleaningLooksUpIsMadeWithTheForms) {
  const auto forms = redactions_of("sk-Real/Token+Value=", "sk-Mask/Token+Value=");
  EXPECT_FALSE(forms.empty());
  EXPECT_TRUE(echo_spellings_made());
}

TEST(Redaction, FindsEverySpellingAnEchoGivesThePunctuation) {
  const std::string value = "Pa\"ss\\wo<rd>&/+=Xy7Qz9Kp3Lm2Nv8Rt";
  const std::string sentinel = make_sentinel(value, seeded(11));
  ASSERT_FALSE(sentinel.empty());
  const auto redactions = redactions_of(value, sentinel);
  for (const std::string echo : {
           "{\"v\": \"Pa\\\"ss\\\\wo<rd>&/+=Xy7Qz9Kp3Lm2Nv8Rt\"}",
           "{\"v\": \"Pa\\\"ss\\\\wo\\u003crd\\u003e\\u0026/+=Xy7Qz9Kp3Lm2Nv8Rt\"}",
           "Pa&quot;ss\\wo&lt;rd&gt;&amp;/+=Xy7Qz9Kp3Lm2Nv8Rt",
           "<a v=\"Pa&quot;ss\\wo&lt;rd>&amp;/+=Xy7Qz9Kp3Lm2Nv8Rt\"/>",
           "Pa%22ss%5cwo%3crd%3e%26%2f%2b%3dXy7Qz9Kp3Lm2Nv8Rt",
           "Pa%22ss%5Cwo%3Crd%3E%26%2F%2B%3DXy7Qz9Kp3Lm2Nv8Rt",
           "Pa&#34;ss&#92;wo&#x3C;rd&#x3e;&#38;&#x2F;+=Xy7Qz9Kp3Lm2Nv8Rt",
           "q=Pa\"ss\\wo<rd>&/ =Xy7Qz9Kp3Lm2Nv8Rt",
       }) {
    std::string text = echo;
    EXPECT_EQ(redact(text, redactions), 1u) << echo;
    EXPECT_EQ(text.size(), echo.size());
    EXPECT_EQ(text.find("Xy7Qz9Kp3Lm2Nv8Rt"), std::string::npos) << text;
    EXPECT_EQ(text.find("Pa"), std::string::npos) << text;
  }
}

// A spelling the matcher does not know (`\x2f`, `&plus;`, double %-encoding): every long run of
// the value's letters and digits is replaced on its own all the same, so at most the punctuation
// and the short runs (here K7MDENG) remain.
// The spellings the second review found leaking (finding 01): two layers of escaping, padded and
// unterminated references, HTML5's named ones, C's \xHH; and (finding 02) base64 wrapped by MIME,
// base64 of a JSON document, hexadecimal.
TEST(Redaction, LayeredAndOtherEchoSpellingsAreCleanedWhole) {
  const std::string value = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY=";
  const std::string sentinel = make_sentinel(value, seeded(14));
  const auto redactions = redactions_of(value, sentinel);
  const auto hex = [](const std::string& text) {
    std::string out;
    for (const unsigned char c : text) {
      out += "0123456789abcdef"[c >> 4];
      out += "0123456789abcdef"[c & 15];
    }
    return out;
  };
  std::string mime = rules::base64_encoded("x:" + value + "!");
  mime.insert(20, "\r\n");
  for (const std::string& echo : std::vector<std::string>{
           "next=wJalrXUtnFEMI%252FK7MDENG%252BbPxRfiCYEXAMPLEKEY%253D",
           "q=wJalrXUtnFEMI%5C%2FK7MDENG%2BbPxRfiCYEXAMPLEKEY%3D",
           "{\"a\": \"{\\\"k\\\": \\\"wJalrXUtnFEMI\\\\/K7MDENG+bPxRfiCYEXAMPLEKEY=\\\"}\"}",
           "wJalrXUtnFEMI&#x002F;K7MDENG&#043;bPxRfiCYEXAMPLEKEY&#61;",
           "wJalrXUtnFEMI&#x2fK7MDENG&#43bPxRfiCYEXAMPLEKEY&#61 ",
           "wJalrXUtnFEMI&sol;K7MDENG&plus;bPxRfiCYEXAMPLEKEY&equals;",
           "wJalrXUtnFEMI\\x2fK7MDENG\\x2BbPxRfiCYEXAMPLEKEY\\x3d",
           "wJalrXUtnFEMI&amp;#x2F;K7MDENG&amp;#x2B;bPxRfiCYEXAMPLEKEY&amp;#x3D;",
           mime,
           rules::base64_encoded("{\"secret\": \"wJalrXUtnFEMI\\/K7MDENG+bPxRfiCYEXAMPLEKEY=\"}"),
           hex(value),
       }) {
    std::string text = echo;
    EXPECT_GE(redact(text, redactions), 1u) << echo;
    EXPECT_EQ(text.size(), echo.size());
    EXPECT_EQ(text.find("K7MDENG"), std::string::npos) << echo << " -> " << text;
    EXPECT_EQ(text.find("EXAMPLEKEY"), std::string::npos) << echo << " -> " << text;
  }
}

TEST(Redaction, UnknownSpellingsKeepNoLongRunOfTheValue) {
  const std::string value = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
  const auto redactions = redactions_of(value, make_sentinel(value, seeded(13)));
  for (const std::string echo : {"wJalrXUtnFEMI\\x2fK7MDENG&plus;bPxRfiCYEXAMPLEKEY",
                                 "wJalrXUtnFEMI%252FK7MDENG%252BbPxRfiCYEXAMPLEKEY",
                                 "wJalrXUtnFEMI&sol;K7MDENG\\053bPxRfiCYEXAMPLEKEY"}) {
    std::string text = echo;
    redact(text, redactions);
    EXPECT_EQ(text.size(), echo.size());
    EXPECT_EQ(text.find("wJalrXUtnFEMI"), std::string::npos) << text;
    EXPECT_EQ(text.find("bPxRfiCYEXAMPLEKEY"), std::string::npos) << text;
  }
}

// Basic credentials echoed back whatever the user name's length: every base64 character that
// holds bits of the value is rewritten, the ones it shares with its neighbours included (hostile
// review F2), and the neighbours' bits are kept.
TEST(Redaction, Base64EchoesKeepNoBitOfTheValueAtAnyAlignment) {
  const std::string value = "Sup3rRealT0kenValueXYZ1234567890abcd";
  const std::string sentinel = make_sentinel(value, seeded(12));
  const auto redactions = redactions_of(value, sentinel);
  for (const std::string user : {"", "u", "us", "use", "user", "x-access-token"}) {
    for (const std::string after : {"", "!", "!!", "!!!"}) {
      const std::string credentials = user + ":" + value + after;
      std::string text = rules::base64_encoded(credentials);
      redact(text, redactions);
      // Decoded, the echo holds the user name, the sentinel and what followed: not one byte of
      // the value.
      const auto decoded = rules::base64_decoded(text);
      ASSERT_TRUE(decoded) << text;
      EXPECT_EQ(*decoded, user + ":" + sentinel + after) << user << after;
    }
  }
}

// What a client receives of `body` streamed through a StreamRedaction in pieces of `piece`
// bytes; `paused_after(i)`: the origin pauses after piece i.
struct Streamed {
  std::string sent;
  std::vector<std::size_t> sent_by_piece;  // how much had gone after each piece (and its pause)
  std::size_t replaced = 0;
};
Streamed stream(const std::vector<Redaction>& redactions, const std::string& body,
                std::size_t piece, const std::function<bool(std::size_t)>& paused_after) {
  StreamRedaction redaction(redactions);
  std::vector<char> buffer(redaction.front_limit() + piece);
  Streamed out;
  for (std::size_t at = 0, index = 0; at < body.size(); ++index) {
    const std::size_t fresh = std::min(piece, body.size() - at);
    std::copy_n(body.data() + at, fresh, buffer.data() + redaction.carried());
    at += fresh;
    const auto ready = redaction.pass(buffer.data(), fresh, at == body.size());
    out.sent.append(buffer.data() + ready.from, ready.size);
    if (at < body.size() && paused_after(index)) {
      const auto released = redaction.on_pause();
      out.sent.append(buffer.data() + released.from, released.size);
    }
    redaction.to_front(buffer.data());
    out.sent_by_piece.push_back(out.sent.size());
  }
  out.replaced = redaction.replaced();
  return out;
}

TEST(Redaction, AValueSplitAcrossBodyPiecesIsFoundWhereverThePiecesBreak) {
  const std::string value = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
  const std::string sentinel = make_sentinel(value, seeded(5));
  const auto redactions = redactions_of(value, sentinel);
  const std::string body = "{\"token\": \"" + value + "\", \"again\": \"" + value + "\"}";
  for (std::size_t piece = 1; piece <= body.size(); ++piece) {
    const Streamed out = stream(redactions, body, piece, [](std::size_t) { return false; });
    ASSERT_EQ(out.sent.size(), body.size()) << piece;
    EXPECT_EQ(out.sent.find(value), std::string::npos) << piece;
    EXPECT_EQ(out.replaced, 2u) << piece;
    EXPECT_NE(out.sent.find(sentinel), std::string::npos) << piece;
  }
}

// Hostile review (issue 39, 1): S3 answers a bad signature with the canonical request as text and
// again as bytes in hexadecimal, a space after each (`<CanonicalRequestBytes>78 2d 61 ...`); other
// echoes put `:`, `,`, line breaks, `\x`, `0x` or `\u00` between a form's characters, or write
// each byte in decimal. Every such echo is cleaned, and keeps its length.
TEST(Redaction, AFormWithSeparatorsBetweenItsCharactersIsCleaned) {
  const std::string value = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD6";
  const std::string sentinel = make_sentinel(value, seeded(21));
  ASSERT_FALSE(sentinel.empty());
  const auto redactions = redactions_of(value, sentinel);
  const auto bytes = [&](const char* format, const char* between) {
    std::string out;
    for (std::size_t i = 0; i < value.size(); ++i) {
      char one[16];
      std::snprintf(one, sizeof one, format, static_cast<unsigned char>(value[i]));
      out += (i > 0 ? between : "") + std::string(one);
    }
    return out;
  };
  const std::string header = "x-amz-security-token:" + value + "\n";
  std::string canonical;
  for (const unsigned char c : header) {
    char one[4];
    std::snprintf(one, sizeof one, "%02x", c);
    canonical += (canonical.empty() ? "" : " ") + std::string(one);
  }
  for (const std::string& echo : std::vector<std::string>{
           "<CanonicalRequestBytes>" + canonical + "</CanonicalRequestBytes>",
           bytes("%02x", " "),
           bytes("%02X", ":"),
           bytes("%02x", "-"),
           bytes("%02x", ",\n"),
           bytes("\\x%02x", ""),
           bytes("0x%02x", ", "),
           bytes("0x%02X", ","),
           bytes("\\u%04x", ""),
           bytes("&#x%02x;", ""),
           "[" + bytes("%u", ", ") + "]",
           bytes("%c", " "),
           bytes("%c", "\r\n"),
       }) {
    std::string text = echo;
    EXPECT_GE(redact(text, redactions), 1u) << echo;
    EXPECT_EQ(text.size(), echo.size());
    EXPECT_NE(text, echo);
    // No run of the value's bytes, in any of these spellings, is left.
    for (const std::string& piece :
         {canonical.substr(60, 24), bytes("%02x", " ").substr(30, 24),
          bytes("%c", " ").substr(20, 12), bytes("%u", ", ").substr(20, 16)}) {
      EXPECT_EQ(text.find(piece), std::string::npos) << echo << " -> " << text;
    }
  }
}

// Issue 42: a reply from a bound host streams. Server-sent events go on with the piece they came
// in, and a real echo cut by pauses lets out at most its first kHoldBits: the rest is cleaned.
TEST(Redaction, AStreamedReplyGoesOnAsItComesAndHoldsBackOnlyWhatMayBeginASecret) {
  const std::string value = "sk-ant-api03-Zq8XkW2mVt7RbN4cLp9HsDf6GyJ3uAeK1oQwErTyUiOp";
  const std::string sentinel = make_sentinel(value, seeded(23));
  const auto redactions = redactions_of(value, sentinel);
  std::string body;
  std::vector<std::size_t> event_ends;
  for (int i = 0; i < 40; ++i) {
    body +=
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
        "\"delta\":{\"type\":\"text_delta\",\"text\":\"word " +
        std::to_string(i) + "\"}}\n\n";
    event_ends.push_back(body.size());
  }
  // One piece per event: each event reaches the client with its own piece.
  {
    StreamRedaction redaction(redactions);
    std::vector<char> buffer(redaction.front_limit() + 4096);
    std::size_t from = 0;
    std::size_t delayed = 0;
    for (const std::size_t end : event_ends) {
      std::copy(body.begin() + static_cast<std::ptrdiff_t>(from),
                body.begin() + static_cast<std::ptrdiff_t>(end),
                buffer.begin() + static_cast<std::ptrdiff_t>(redaction.carried()));
      const auto ready = redaction.pass(buffer.data(), end - from, false);
      EXPECT_EQ(ready.from + ready.size + redaction.held(), redaction.carried() + (end - from));
      if (const std::size_t held = redaction.held(); held > 0) {
        ++delayed;  // a chance resemblance: let go when the origin pauses
        EXPECT_EQ(redaction.on_pause().size, held);
      }
      redaction.to_front(buffer.data());
      EXPECT_EQ(redaction.held(), 0u);
      from = end;
    }
    EXPECT_EQ(delayed, 0u) << "each event goes out with its own piece";
  }
  // A real echo, the origin pausing inside it after every 3 bytes: the client never gets more
  // than kPauseHold - 1 letters or digits of it in a row.
  const std::string echoed = "data: {\"key\":\"" + value + "\"}\n\n";
  for (std::size_t piece = 1; piece <= 8; ++piece) {
    const Streamed out = stream(redactions, echoed, piece, [](std::size_t) { return true; });
    ASSERT_EQ(out.sent.size(), echoed.size());
    // The sentinel keeps the value's `sk-ant-`; of the rest at most the first kHoldBits (6
    // characters of 62 kinds: `api03-Z`) go before the rest is held and cleaned.
    for (std::size_t at = 14; at + 4 <= value.size(); ++at) {
      EXPECT_EQ(out.sent.find(value.substr(at, 4)), std::string::npos)
          << "piece " << piece << ": " << out.sent;
    }
  }
}

// Hostile review of the streaming redaction, 1: a long run of letters and digits (200 kB of `a`,
// a hexadecimal blob) once grew the held tail past the buffer the caller sized by front_limit().
// Every hold stays within the window, whatever the pieces hold.
TEST(Redaction, NoHoldOutgrowsTheWindow) {
  const std::string value = "ghp_Zq7VxK2mN9pLw4RtY8sB3cHd6FjGa1Ue5Xo0";
  const auto redactions = redactions_of(value, make_sentinel(value, seeded(31)));
  for (const std::string& body : {std::string(200 * 1024, 'a'), std::string(130 * 1024, '7'), [&] {
                                    std::string hex;
                                    for (int i = 0; i < 40000; ++i) {
                                      hex += "0123456789abcdef"[i % 16];
                                    }
                                    return hex + value;
                                  }()}) {
    StreamRedaction redaction(redactions);
    std::vector<char> buffer(redaction.front_limit() + 64 * 1024);
    std::string sent;
    for (std::size_t at = 0; at < body.size();) {
      ASSERT_LE(redaction.carried(), redaction.front_limit());
      const std::size_t fresh = std::min<std::size_t>(64 * 1024, body.size() - at);
      std::copy_n(body.data() + at, fresh, buffer.data() + redaction.carried());
      at += fresh;
      const auto ready = redaction.pass(buffer.data(), fresh, at == body.size());
      sent.append(buffer.data() + ready.from, ready.size);
      redaction.to_front(buffer.data());
    }
    EXPECT_EQ(sent.size(), body.size());
    EXPECT_EQ(sent.find(value), std::string::npos);
  }
}

// Hostile review of the streaming redaction, 3: what the gate holds must not tell a client that
// its guess of a secret's first characters is right. A line echoing a guess of the token's
// first characters is held, or let go, alike whether the guess is right or wrong, up to
// kHoldBits of the secret: a guess worth more is out of reach.
TEST(Redaction, WhatIsHeldBackDoesNotTellARightGuessFromAWrongOne) {
  const std::string value = "ghp_Zq7VxK2mN9pLw4RtY8sB3cHd6FjGa1Ue5Xo0";
  const auto redactions = redactions_of(value, make_sentinel(value, seeded(32)));
  const auto held_after = [&](const std::string& line, bool pause) {
    StreamRedaction redaction(redactions);
    std::vector<char> buffer(redaction.front_limit() + 4096);
    std::copy(line.begin(), line.end(), buffer.begin());
    redaction.pass(buffer.data(), line.size(), false);
    if (pause) {
      redaction.on_pause();
    }
    return redaction.held();
  };
  // `ghp_` and 6 characters of 62 kinds: 35.7 bits.
  for (std::size_t known = 5; known <= 10; ++known) {
    const std::string right = value.substr(0, known);
    std::string wrong = right;
    wrong.back() = wrong.back() == 'Q' ? 'R' : 'Q';
    for (const std::string end : {"", "\n", "\"}\n\n", " 6"}) {
      for (const bool pause : {false, true}) {
        EXPECT_EQ(held_after("data: " + right + end, pause),
                  held_after("data: " + wrong + end, pause))
            << known << " '" << end << "' pause " << pause;
      }
    }
  }
}

// The body ends in the middle of an echo worth holding (an origin that cuts it short): what
// there is of it is cleaned, not let out.
TEST(Redaction, AnEchoTheBodyEndsInIsCleanedAsFarAsItGoes) {
  const std::string value = "ghp_Zq7VxK2mN9pLw4RtY8sB3cHd6FjGa1Ue5Xo0";
  const std::string sentinel = make_sentinel(value, seeded(33));
  const auto redactions = redactions_of(value, sentinel);
  const std::string body = "token: " + value.substr(0, 30);
  const Streamed out = stream(redactions, body, 5, [](std::size_t) { return true; });
  ASSERT_EQ(out.sent.size(), body.size());
  EXPECT_EQ(out.sent.find(value.substr(14, 8)), std::string::npos) << out.sent;
  EXPECT_NE(out.sent.find(sentinel.substr(14, 8)), std::string::npos) << out.sent;
}

// A secret too short to spare kHoldBits does not stream: a fixed window of every piece waits,
// whatever it holds.
TEST(Redaction, AShortSecretKeepsAFixedWindow) {
  const std::string value = "Pw7Kq2Zx9Lm4";  // 12 characters of 62 kinds: 71 bits
  const auto redactions = redactions_of(value, make_sentinel(value, seeded(34)));
  StreamRedaction redaction(redactions);
  EXPECT_FALSE(redaction.streams());
  std::vector<char> buffer(redaction.front_limit() + 4096);
  const std::string line = "data: {\"text\":\"hello\"}\n\n";
  std::copy(line.begin(), line.end(), buffer.begin());
  redaction.pass(buffer.data(), line.size(), false);
  EXPECT_EQ(redaction.held(), line.size());
  EXPECT_EQ(redaction.on_pause().size, 0u);
  const std::string long_value = "ghp_Zq7VxK2mN9pLw4RtY8sB3cHd6FjGa1Ue5Xo0";
  const auto long_forms = redactions_of(long_value, make_sentinel(long_value, seeded(35)));
  EXPECT_TRUE(StreamRedaction(long_forms).streams());
}

// Whatever the pieces and pauses, an echo lets out at most the first kHoldBits of the secret
// it spells: 20,000 random ways to cut a line holding the value (one to six cuts, a pause or
// not after each piece); of the characters after the sentinel's kept `ghp_`, at most six (35.7
// bits) may be the value's own where the sentinel's differ, never a seventh (41.7).
TEST(Redaction, NoWayOfCuttingAnEchoLetsOutMoreThanItsFirstHoldBits) {
  const std::string value = "ghp_Zq7VxK2mN9pLw4RtY8sB3cHd6FjGa1Ue5Xo0";
  const std::string sentinel = make_sentinel(value, seeded(31));
  const auto redactions = redactions_of(value, sentinel);
  const std::string lead = "message cut 9 ";
  const std::string body = lead + value + "\n";
  std::mt19937 random(7);
  for (int trial = 0; trial < 20000; ++trial) {
    std::vector<std::size_t> cuts;
    for (auto n = 1 + random() % 6; n > 0; --n) {
      cuts.push_back(1 + random() % (body.size() - 1));
    }
    cuts.push_back(body.size());
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    const auto pauses = random();
    StreamRedaction redaction(redactions);
    std::vector<char> buffer(redaction.front_limit() + body.size());
    std::string sent;
    std::string how;  // the cuts, `p` after a pause
    for (std::size_t i = 0, at = 0; i < cuts.size(); ++i) {
      const std::size_t fresh = cuts[i] - at;
      std::copy_n(body.data() + at, fresh, buffer.data() + redaction.carried());
      at = cuts[i];
      const auto ready = redaction.pass(buffer.data(), fresh, at == body.size());
      sent.append(buffer.data() + ready.from, ready.size);
      how += std::to_string(at);
      if (at < body.size() && ((pauses >> i) & 1) != 0) {
        const auto released = redaction.on_pause();
        sent.append(buffer.data() + released.from, released.size);
        how += "p";
      }
      how += " ";
      redaction.to_front(buffer.data());
    }
    ASSERT_EQ(sent.size(), body.size()) << how;
    std::size_t told = 0;  // characters of the value's own, where the sentinel's differ
    for (std::size_t k = 4; k < value.size(); ++k) {
      if (value[k] != sentinel[k]) {
        ASSERT_TRUE(sent[lead.size() + k] == sentinel[k] || ++told <= 6) << how << "\n"
                                                                         << sent << "\n"
                                                                         << sentinel;
      }
    }
  }
}

}  // namespace
}  // namespace sandgate::secrets
