// One-line, valid-UTF-8 echoes of user text (see one_line.h).
#include "scenarios/one_line.h"

#include <fmt/format.h>

#include <string>

namespace scenarios {

namespace {

// The valid UTF-8 sequence at text[at]: its length and code point; length 0 if none starts
// there (RFC 3629, table 3-7 of the Unicode standard: no overlong forms, no surrogates, nothing
// above U+10FFFF).
struct Sequence {
  std::size_t length = 0;
  char32_t code_point = 0;
};

Sequence utf8_sequence(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[at + i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return {1, lead};
  std::size_t length = 0;
  unsigned char low = 0x80, high = 0xBF;  // the range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return {};
  }
  if (at + length > text.size() || byte(1) < low || byte(1) > high) return {};
  char32_t code_point = lead & (0xFF >> (length + 1));
  for (std::size_t i = 1; i < length; ++i) {
    if (i > 1 && (byte(i) < 0x80 || byte(i) > 0xBF)) return {};
    code_point = (code_point << 6) | (byte(i) & 0x3F);
  }
  return {length, code_point};
}

// Calls echo(text) for each character of `text` as it is echoed, until it returns false.
template <typename Echo>
void for_each_character(std::string_view text, Echo&& echo) {
  for (std::size_t at = 0; at < text.size();) {
    const Sequence sequence = utf8_sequence(text, at);
    const char32_t c = sequence.code_point;
    std::string shown;
    if (sequence.length == 0) {
      shown = fmt::format("\\x{:02x}", static_cast<unsigned char>(text[at]));  // not UTF-8
    } else if (c == '\n') {
      shown = "\\n";
    } else if (c == '\r') {
      shown = "\\r";
    } else if (c == '\t') {
      shown = "\\t";
    } else if (c < 0x20 || c == 0x7F) {
      shown = fmt::format("\\x{:02x}", static_cast<unsigned>(c));
    } else if ((c >= 0x80 && c <= 0x9F) || c == 0x2028 || c == 0x2029) {
      shown = fmt::format("\\u{:04x}", static_cast<unsigned>(c));  // C1 controls, line and paragraph separators
    } else {
      shown = std::string(text.substr(at, sequence.length));
    }
    if (!echo(shown)) return;
    at += sequence.length == 0 ? 1 : sequence.length;
  }
}

}  // namespace

bool valid_utf8(std::string_view text) {
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t length = utf8_sequence(text, at).length;
    if (length == 0) return false;
    at += length;
  }
  return true;
}

std::string one_line(std::string_view text, std::size_t longest, std::size_t kept) {
  std::size_t count = 0;  // counted first, so that a huge text is never built whole
  for_each_character(text, [&](const std::string&) { return ++count, true; });
  const std::size_t shown = count > longest ? kept : count;
  std::string out;
  std::size_t echoed = 0;
  for_each_character(text, [&](const std::string& character) {
    if (echoed == shown) return false;
    out += character;
    return ++echoed < shown;
  });
  if (count > longest) out += fmt::format("… ({} characters)", count);
  return out;
}

}  // namespace scenarios
