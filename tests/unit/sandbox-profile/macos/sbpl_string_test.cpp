// SBPL string literals: what is escaped, what is refused, and how refused paths are printed.
#include "sandbox-profile/macos/sbpl_string.hpp"

#include <gtest/gtest.h>

#include "tests/unit/sandbox-profile/macos/sbpl_reader.hpp"

namespace sandgate::sandbox {
namespace {

TEST(SbplPath, EscapesBackslashAndQuoteOnly) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"/Users/ada", "\"/Users/ada\""},         {"/Users/a b", "\"/Users/a b\""},
      {"/Users/a\"b", "\"/Users/a\\\"b\""},     {"/Users/a\\b", "\"/Users/a\\\\b\""},
      {"/Users/\\\"", "\"/Users/\\\\\\\"\""},   {"/Users/zoë", "\"/Users/zoë\""},
      {"/Users/(x);y#z", "\"/Users/(x);y#z\""}, {"/", "\"/\""},
  };
  for (const auto& [path, quoted] : cases) {
    auto result = sbpl_path(path);
    ASSERT_TRUE(result) << path;
    EXPECT_EQ(*result, quoted);
    // And the reader gets the path back.
    auto forms = testing::read_sbpl("(literal " + *result + ")");
    ASSERT_TRUE(forms) << forms.error();
    ASSERT_EQ(forms->size(), 1u);
    EXPECT_EQ((*forms)[0].items[1].text, path);
  }
}

TEST(SbplPath, RefusesWhatCannotBeRepresented) {
  const std::vector<std::pair<std::string, PathProblem>> cases = {
      {"", PathProblem::empty},
      {"relative", PathProblem::not_absolute},
      {"/a/", PathProblem::not_normal},
      {"/a//b", PathProblem::not_normal},
      {"/a/./b", PathProblem::not_normal},
      {"/a/../b", PathProblem::not_normal},
      {"/..", PathProblem::not_normal},
      {std::string("/a\0b", 4), PathProblem::nul},
      {"/a\nb", PathProblem::control_character},
      {"/a\rb", PathProblem::control_character},
      {"/a\x7f", PathProblem::control_character},
      {"/a\x80", PathProblem::invalid_utf8},
      {"/a\xf5\x80\x80\x80", PathProblem::invalid_utf8},  // above U+10FFFF
      {"/a\xf4\x90\x80\x80", PathProblem::invalid_utf8},  // above U+10FFFF
      {"/a\xe0\x80\xaf", PathProblem::invalid_utf8},      // overlong
      {"/a\xe2\x82", PathProblem::invalid_utf8},          // cut short
  };
  for (const auto& [path, problem] : cases) {
    auto result = sbpl_path(path);
    ASSERT_FALSE(result) << printable(path);
    EXPECT_EQ(result.error(), problem) << printable(path);
    EXPECT_FALSE(describe(problem).empty());
  }
  // Valid multi-byte UTF-8 of every length passes.
  for (const std::string path :
       {"/\xc2\xa9", "/\xe2\x82\xac", "/\xf0\x9f\x99\x82", "/\xf4\x8f\xbf\xbf"}) {
    EXPECT_TRUE(sbpl_path(path)) << printable(path);
  }
}

TEST(SbplPath, PrintableShowsBadBytesAsHex) {
  EXPECT_EQ(printable("/a\nb"), "/a\\x0ab");
  EXPECT_EQ(printable(std::string("/a\0", 3)), "/a\\x00");
  EXPECT_EQ(printable("/\xff"), "/\\xff");
  EXPECT_EQ(printable("/zoë"), "/zoë");
  EXPECT_EQ(printable("/a\\b"), "/a\\\\b");
}

}  // namespace
}  // namespace sandgate::sandbox
