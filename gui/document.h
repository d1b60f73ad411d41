// gui::Document — one timeline open in the viewer: where it came from, its drawing index and
// its summary figures, built once when it is loaded (off the UI thread for files).
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gui/core/timeline_index.h"
#include "sim/trace/timeline_stats.h"

namespace gui {

// The largest trace file the viewer reads: at about 250 bytes of JSON and 100 bytes of memory
// per span, 4 GiB is ~16 million spans and ~2 GB of memory.
inline constexpr std::uintmax_t kMaxTraceBytes = std::uintmax_t{4} << 30;

// A file that cannot be opened as a timeline; what() is the message shown to the user.
class LoadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Document {
  std::string title;   // shown above its lanes in compare mode and in panel headers
  std::string source;  // the file it came from, or the scenario it was simulated from
  std::shared_ptr<const TimelineIndex> index;
  trace::TimelineStats stats;
  // The report's warnings (OOM, R > 1, stragglers, implausible inputs): from the run that made
  // it in the app, or from the report.json dtsim wrote beside the file (when its digest names
  // this timeline).
  std::vector<std::string> warnings;
};

std::shared_ptr<const Document> make_document(std::string title, std::string source, trace::Timeline timeline,
                                              std::vector<std::string> warnings = {});

// Reads a dtsim timeline or any Chrome/Perfetto JSON trace (PyTorch profiler traces
// included). Throws LoadError naming the file and what is wrong with it.
std::shared_ptr<const Document> load_document(const std::string& path);

}  // namespace gui
