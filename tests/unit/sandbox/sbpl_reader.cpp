// The test SBPL reader. See sbpl_reader.hpp.
#include "tests/unit/sandbox/sbpl_reader.hpp"

namespace sandgate::testing {
namespace {

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  Expected<std::vector<Sexp>, std::string> all() {
    std::vector<Sexp> forms;
    for (;;) {
      skip_space();
      if (at_end()) {
        return forms;
      }
      if (peek() == ')') {
        return fail("')' without '('");
      }
      auto form = one();
      if (!form) {
        return Unexpected{form.error()};
      }
      forms.push_back(std::move(*form));
    }
  }

 private:
  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }

  Unexpected<std::string> fail(const std::string& what) const {
    return Unexpected{"offset " + std::to_string(pos_) + ": " + what};
  }

  void skip_space() {
    while (!at_end()) {
      const char c = peek();
      if (c == ';') {
        while (!at_end() && peek() != '\n') {
          ++pos_;
        }
      } else if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
        ++pos_;
      } else {
        return;
      }
    }
  }

  Expected<Sexp, std::string> one() {
    const char c = peek();
    if (c == '(') {
      ++pos_;
      Sexp list;
      for (;;) {
        skip_space();
        if (at_end()) {
          return fail("unclosed '('");
        }
        if (peek() == ')') {
          ++pos_;
          return list;
        }
        auto item = one();
        if (!item) {
          return item;
        }
        list.items.push_back(std::move(*item));
      }
    }
    if (c == '"') {
      ++pos_;
      Sexp string{Sexp::Kind::string, {}, {}};
      for (;;) {
        if (at_end()) {
          return fail("unclosed string");
        }
        const char d = text_[pos_++];
        if (d == '"') {
          return string;
        }
        if (d == '\\') {
          if (at_end()) {
            return fail("unclosed string");
          }
          const char e = text_[pos_++];
          if (e != '\\' && e != '"') {
            return fail(std::string("unexpected escape \\") + e);
          }
          string.text += e;
        } else if (static_cast<unsigned char>(d) < 0x20 || d == 0x7f) {
          return fail("raw control character in a string");
        } else {
          string.text += d;
        }
      }
    }
    if (c == '#') {
      if (pos_ + 1 >= text_.size() || text_[pos_ + 1] != '"') {
        return fail("'#' not followed by '\"'");
      }
      pos_ += 2;
      const auto end = text_.find('"', pos_);
      if (end == std::string_view::npos) {
        return fail("unclosed regex");
      }
      Sexp regex{Sexp::Kind::regex, std::string(text_.substr(pos_, end - pos_)), {}};
      pos_ = end + 1;
      return regex;
    }
    const std::size_t start = pos_;
    while (!at_end()) {
      const char d = peek();
      if (d == ' ' || d == '\n' || d == '\t' || d == '\r' || d == '(' || d == ')' || d == '"' ||
          d == ';') {
        break;
      }
      ++pos_;
    }
    if (pos_ == start) {
      return fail("unexpected character");
    }
    return Sexp{Sexp::Kind::symbol, std::string(text_.substr(start, pos_ - start)), {}};
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

void collect_strings(const Sexp& form, std::vector<std::string>& out) {
  if (form.kind == Sexp::Kind::string) {
    out.push_back(form.text);
  }
  for (const auto& item : form.items) {
    collect_strings(item, out);
  }
}

}  // namespace

std::string Sexp::print() const {
  switch (kind) {
    case Kind::symbol:
      return text;
    case Kind::regex:
      return "#\"" + text + "\"";
    case Kind::string: {
      std::string out = "\"";
      for (char c : text) {
        if (c == '"' || c == '\\') {
          out += '\\';
        }
        out += c;
      }
      return out + "\"";
    }
    case Kind::list: {
      std::string out = "(";
      for (std::size_t i = 0; i < items.size(); ++i) {
        out += (i == 0 ? "" : " ") + items[i].print();
      }
      return out + ")";
    }
  }
  return {};
}

Expected<std::vector<Sexp>, std::string> read_sbpl(std::string_view text) {
  return Reader(text).all();
}

std::vector<std::string> all_strings(const std::vector<Sexp>& forms) {
  std::vector<std::string> out;
  for (const auto& form : forms) {
    collect_strings(form, out);
  }
  return out;
}

}  // namespace sandgate::testing
