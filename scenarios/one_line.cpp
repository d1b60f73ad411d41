// One-line, valid-UTF-8 echoes of user text (see one_line.h).
#include "scenarios/one_line.h"

#include <fmt/format.h>

#include <vector>

namespace scenarios {

namespace {

// The length of the valid UTF-8 sequence at text[at], or 0 if none starts there (RFC 3629,
// table 3-7 of the Unicode standard: no overlong forms, no surrogates, nothing above U+10FFFF).
std::size_t utf8_sequence_length(std::string_view text, std::size_t at) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[at + i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
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
    return 0;
  }
  if (at + length > text.size() || byte(1) < low || byte(1) > high) return 0;
  for (std::size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

}  // namespace

std::string one_line(std::string_view text, std::size_t longest, std::size_t kept) {
  std::vector<std::string> characters;  // each as it is echoed
  for (std::size_t at = 0; at < text.size();) {
    const auto byte = static_cast<unsigned char>(text[at]);
    const std::size_t length = utf8_sequence_length(text, at);
    if (byte == '\n') {
      characters.emplace_back("\\n");
    } else if (byte == '\r') {
      characters.emplace_back("\\r");
    } else if (byte == '\t') {
      characters.emplace_back("\\t");
    } else if (byte < 0x20 || byte == 0x7F || length == 0) {
      characters.push_back(fmt::format("\\x{:02x}", byte));
    } else {
      characters.emplace_back(text.substr(at, length));
    }
    at += length == 0 ? 1 : length;
  }
  const std::size_t count = characters.size();
  if (count > longest) characters.resize(kept);
  std::string out;
  for (const std::string& character : characters) out += character;
  if (count > longest) out += fmt::format("… ({} characters)", count);
  return out;
}

}  // namespace scenarios
