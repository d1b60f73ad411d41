// one_line: user text echoed in an error message is one line of valid UTF-8, cut on a
// character boundary.
#include "scenarios/one_line.h"

#include <gtest/gtest.h>

namespace {

using scenarios::one_line;

std::string repeated(const std::string& text, int times) {
  std::string out;
  for (int i = 0; i < times; ++i) out += text;
  return out;
}

TEST(OneLineTest, ControlCharactersAreEscaped) {
  EXPECT_EQ(one_line("a\nb\r\tc"), "a\\nb\\r\\tc");
  EXPECT_EQ(one_line(std::string("x\0y\x1b[31m\x7f", 9)), "x\\x00y\\x1b[31m\\x7f");
  EXPECT_EQ(one_line("plain ascii: 100 % (ok)"), "plain ascii: 100 % (ok)");
  EXPECT_EQ(one_line("a\u0085b\u009b2J\u2028c\u2029"), "a\\u0085b\\u009b2J\\u2028c\\u2029");  // C1, separators
  EXPECT_EQ(one_line("\u00a0\u00ff"), "\u00a0\u00ff");  // printable, kept
}

TEST(OneLineTest, ValidUtf8StaysAndInvalidBytesAreEscaped) {
  EXPECT_EQ(one_line("é → 😀 Ω"), "é → 😀 Ω");
  EXPECT_EQ(one_line("\xff\xfe"), "\\xff\\xfe");                    // never UTF-8
  EXPECT_EQ(one_line("\xc0\x80"), "\\xc0\\x80");                    // an overlong NUL
  EXPECT_EQ(one_line("\xed\xa0\x80"), "\\xed\\xa0\\x80");           // a surrogate, U+D800
  EXPECT_EQ(one_line("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
  EXPECT_EQ(one_line("ab\xe2\x82"), "ab\\xe2\\x82");                // a sequence cut short
  EXPECT_EQ(one_line("\xe2\x82\xac"), "€");
}

TEST(OneLineTest, LongTextIsCutOnACharacterBoundary) {
  EXPECT_EQ(one_line(repeated("é", 240)), repeated("é", 240));
  EXPECT_EQ(one_line(repeated("é", 241)), repeated("é", 200) + "… (241 characters)");
  EXPECT_EQ(one_line(repeated("😀", 10), 5, 3), "😀😀😀… (10 characters)");
  EXPECT_EQ(one_line(repeated("\n", 10), 5, 3), "\\n\\n\\n… (10 characters)");
  EXPECT_EQ(one_line(std::string(10'000'000, 'k')), std::string(200, 'k') + "… (10000000 characters)");
  EXPECT_EQ(one_line(""), "");
}

}  // namespace
