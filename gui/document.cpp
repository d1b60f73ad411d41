// Loading documents (see document.h).
#include "gui/document.h"

#include <filesystem>
#include <fmt/format.h>
#include <new>

#include "sim/trace/chrome_trace.h"

namespace gui {

std::shared_ptr<const Document> make_document(std::string title, std::string source, trace::Timeline timeline) {
  auto document = std::make_shared<Document>();
  document->title = std::move(title);
  document->source = std::move(source);
  auto shared = std::make_shared<const trace::Timeline>(std::move(timeline));
  document->stats = trace::timeline_stats(*shared);
  document->index = std::make_shared<const TimelineIndex>(std::move(shared));
  return document;
}

std::shared_ptr<const Document> load_document(const std::string& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  if (error) throw LoadError(fmt::format("{}: cannot read: {}", path, error.message()));
  if (size > kMaxTraceBytes) {
    throw LoadError(fmt::format("{}: {:.1f} GiB is more than the {} GiB dtsim-view reads; trace fewer ranks or steps",
                                path, static_cast<double>(size) / (1 << 30), kMaxTraceBytes >> 30));
  }
  try {
    trace::Timeline timeline = trace::read_chrome_trace_file(path);
    if (timeline.spans.empty()) throw LoadError(fmt::format("{}: the trace holds no spans (no \"X\" or \"B\"/\"E\" events)", path));
    std::string title = timeline.title.empty() ? std::filesystem::path(path).filename().string() : timeline.title;
    return make_document(std::move(title), path, std::move(timeline));
  } catch (const trace::TraceFormatError& failure) {
    throw LoadError(failure.what());  // names the file
  } catch (const std::bad_alloc&) {
    throw LoadError(fmt::format("{}: not enough memory to load this trace", path));
  } catch (const std::length_error& failure) {
    throw LoadError(fmt::format("{}: {}", path, failure.what()));
  }
}

}  // namespace gui
