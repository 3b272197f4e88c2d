// The spellings an echo may give punctuation. See echo_spellings.hpp.
#include "proxy/secrets/echo_spellings.hpp"

#include <algorithm>
#include <array>
#include <atomic>

#include "rules/ascii.hpp"

namespace sandgate::secrets {
namespace {

using rules::is_ascii_alnum;

// Whether spellings_of()'s table is made (echo_spellings_made()).
std::atomic<bool> spellings_table_made{false};

// The spellings of `c` (not a letter or digit) in one layer of escaping: itself, %-encoded,
// JSON's, HTML's and XML's references (named, hexadecimal and decimal, zero-padded, with or
// without the closing `;`), C's and JavaScript's `\xHH`, a form decoder's space for `+`.
Spellings first_layer(char c) {
  const auto byte = static_cast<unsigned char>(c);
  const std::string upper = {kUpperHex[byte >> 4], kUpperHex[byte & 15]};
  const std::string lower = {kLowerHex[byte >> 4], kLowerHex[byte & 15]};
  const std::string decimal = std::to_string(byte);
  Spellings out = {
      {std::string(1, c), Family::literal},
      {"%" + upper, Family::percent_upper},
      {"%" + lower, Family::percent_lower},
      {"\\u00" + upper, Family::json_upper},
      {"\\u00" + lower, Family::json_lower},
      {"&#x" + upper + ";", Family::entity_hex_upper},
      {"&#x" + lower + ";", Family::entity_hex_lower},
  };
  for (const std::string& hex : {upper, lower}) {
    for (const char* x : {"x", "X"}) {
      for (const char* zeros : {"", "0", "00"}) {
        for (const char* end : {";", ""}) {
          out.emplace_back(std::string("&#") + x + zeros + hex + end, Family::other);
        }
      }
    }
    out.emplace_back("\\x" + hex, Family::other);
  }
  for (const char* zeros : {"", "0", "00"}) {
    for (const char* end : {";", ""}) {
      out.emplace_back("&#" + std::string(zeros) + decimal + end, Family::other);
    }
  }
  if (c == '"' || c == '\\' || c == '/') {
    out.emplace_back(std::string("\\") + c, Family::other);
  }
  static constexpr std::array<std::pair<char, std::string_view>, 35> kNamed = {{
      {'"', "&quot;"},   {'"', "&QUOT;"},   {'&', "&amp;"},   {'&', "&AMP;"},   {'<', "&lt;"},
      {'<', "&LT;"},     {'>', "&gt;"},     {'>', "&GT;"},    {'\'', "&apos;"}, {'/', "&sol;"},
      {'+', "&plus;"},   {'=', "&equals;"}, {'!', "&excl;"},  {'#', "&num;"},   {'$', "&dollar;"},
      {'%', "&percnt;"}, {'(', "&lpar;"},   {')', "&rpar;"},  {'*', "&ast;"},   {',', "&comma;"},
      {'.', "&period;"}, {':', "&colon;"},  {';', "&semi;"},  {'?', "&quest;"}, {'@', "&commat;"},
      {'[', "&lsqb;"},   {']', "&rsqb;"},   {'\\', "&bsol;"}, {'^', "&Hat;"},   {'_', "&lowbar;"},
      {'`', "&grave;"},  {'{', "&lcub;"},   {'}', "&rcub;"},  {'|', "&vert;"},  {'|', "&verbar;"},
  }};
  for (const auto& [named, text] : kNamed) {
    if (named == c) {
      out.emplace_back(std::string(text), Family::other);
    }
  }
  if (c == '+') {
    out.emplace_back(" ", Family::other);
  }
  return out;
}

// A second layer over a spelling: %-encoded again (`%252F`, or every character of it: `%5C%2F`),
// JSON-escaped again (`\\\\/`, `\\\"`), HTML-escaped again (`&amp;quot;`).
std::vector<std::string> second_layer(const std::string& spelling) {
  std::vector<std::string> out;
  const auto replaced = [&](char from, std::string_view to) {
    if (spelling.find(from) == std::string::npos) {
      return;
    }
    std::string text;
    for (const char c : spelling) {
      if (c == from) {
        text += to;
      } else {
        text += c;
      }
    }
    out.push_back(std::move(text));
  };
  replaced('%', "%25");
  replaced('\\', "\\\\");
  replaced('"', "\\\"");
  replaced('&', "&amp;");
  for (const char* hex : {kUpperHex, kLowerHex}) {
    std::string text;
    for (const char c : spelling) {
      if (is_ascii_alnum(c)) {
        text += c;
      } else {
        const auto byte = static_cast<unsigned char>(c);
        text += '%';
        text += hex[byte >> 4];
        text += hex[byte & 15];
      }
    }
    out.push_back(std::move(text));
  }
  return out;
}

}  // namespace

const Spellings& spellings_of(char c) {
  static const std::array<Spellings, 256> table = [] {
    std::array<Spellings, 256> made;
    for (int byte = 0; byte < 256; ++byte) {
      const char c = static_cast<char>(byte);
      if (is_ascii_alnum(c)) {
        continue;
      }
      Spellings all = first_layer(c);
      const std::size_t first = all.size();
      for (std::size_t i = 0; i < first; ++i) {
        for (auto& twice : second_layer(all[i].first)) {
          all.emplace_back(std::move(twice), Family::other);
        }
      }
      // Each once; the families of the first layer win.
      Spellings unique;
      for (auto& spelling : all) {
        if (std::none_of(unique.begin(), unique.end(),
                         [&](const auto& u) { return u.first == spelling.first; })) {
          unique.push_back(std::move(spelling));
        }
      }
      made[static_cast<std::size_t>(byte)] = std::move(unique);
    }
    spellings_table_made = true;
    return made;
  }();
  return table[static_cast<unsigned char>(c)];
}

void make_echo_spellings() { spellings_of('\0'); }

bool echo_spellings_made() { return spellings_table_made; }

}  // namespace sandgate::secrets
