// Text from the user (values, keys, paths, command-line arguments) made safe to echo in a
// one-line error message: one line of valid UTF-8 of bounded length.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace scenarios {

// `text` with every control character escaped (\n, \r, \t, or \xNN; DEL too; the C1 controls
// and the line and paragraph separators as \uNNNN) and every byte that is not part of valid
// UTF-8 written as \xNN; a text of more than `longest` characters
// (after escaping) is cut after `kept` of them, on a character boundary, with
// "… (N characters)" appended, N counting the original's.
std::string one_line(std::string_view text, std::size_t longest = 240, std::size_t kept = 200);

// Whether `text` is valid UTF-8 throughout: what dtsim's JSON outputs can hold.
bool valid_utf8(std::string_view text);

}  // namespace scenarios
