// Chrome trace event format (the JSON that chrome://tracing and ui.perfetto.dev open) for
// trace::Timeline: one process per rank, one thread per stream, both named by metadata
// events; every span a complete ("X") event with its attributes in `args`; memory use a
// counter ("C") track per rank, with the op that changed it in an extra "dtsim_cause" field
// that other viewers ignore. Times are microseconds with picosecond resolution.
//
// The reader accepts what the writer writes and, more generally, Chrome/Perfetto traces of
// other tools (a bare event array or an object with "traceEvents"; pids and tids as numbers
// or strings; "X" events and matched "B"/"E" pairs). Categories it does not know become
// Category::kOther.
#pragma once

#include <iosfwd>
#include <stdexcept>
#include <string>

#include "sim/trace/timeline.h"

namespace trace {

class TraceFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void write_chrome_trace(const Timeline& timeline, std::ostream& out);
// Throws TraceFormatError with a message saying what is wrong and where.
Timeline read_chrome_trace(std::istream& in);
// The same from a file; the message starts with the file's path.
Timeline read_chrome_trace_file(const std::string& path);

}  // namespace trace
