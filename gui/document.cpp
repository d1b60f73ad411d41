// Loading documents (see document.h).
#include "gui/document.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <new>
#include <nlohmann/json.hpp>

#include "scenarios/output_files.h"
#include "sim/trace/chrome_trace.h"

namespace gui {

namespace {

// The warnings of the report.json beside `path`, when that report was written with this very
// timeline (its "timeline_digest" is the file's); none otherwise (no report, another run's).
std::vector<std::string> sibling_report_warnings(const std::string& path) {
  const std::filesystem::path report_path = std::filesystem::path(path).parent_path() / "report.json";
  std::ifstream report_file(report_path, std::ios::binary);
  if (!report_file) return {};
  try {
    const nlohmann::json report = nlohmann::json::parse(report_file);
    if (!report.contains("timeline_digest") || !report.contains("warnings")) return {};
    std::ifstream timeline(path, std::ios::binary);
    std::uint64_t digest = scenarios::kFnvOffsetBasis;
    std::vector<char> buffer(1 << 20);
    while (timeline.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || timeline.gcount() > 0) {
      digest = scenarios::fnv1a64(std::string_view(buffer.data(), static_cast<std::size_t>(timeline.gcount())), digest);
    }
    if (report["timeline_digest"] != scenarios::format_digest(digest)) return {};
    return report["warnings"].get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception&) {
    return {};  // not a dtsim report
  }
}

}  // namespace

std::shared_ptr<const Document> make_document(std::string title, std::string source, trace::Timeline timeline,
                                              std::vector<std::string> warnings) {
  auto document = std::make_shared<Document>();
  document->title = std::move(title);
  document->source = std::move(source);
  document->warnings = std::move(warnings);
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
    throw LoadError(fmt::format("{}: {:.1f} GB is more than the {:.1f} GB dtsim-view reads; trace fewer ranks or steps",
                                path, static_cast<double>(size) / 1e9, static_cast<double>(kMaxTraceBytes) / 1e9));
  }
  try {
    trace::Timeline timeline = trace::read_chrome_trace_file(path);
    if (timeline.spans.empty()) throw LoadError(fmt::format("{}: the trace holds no spans (no \"X\" or \"B\"/\"E\" events)", path));
    std::string title = timeline.title.empty() ? std::filesystem::path(path).filename().string() : timeline.title;
    return make_document(std::move(title), path, std::move(timeline), sibling_report_warnings(path));
  } catch (const trace::TraceFormatError& failure) {
    throw LoadError(failure.what());  // names the file
  } catch (const std::bad_alloc&) {
    throw LoadError(fmt::format("{}: not enough memory to load this trace", path));
  } catch (const std::length_error& failure) {
    throw LoadError(fmt::format("{}: {}", path, failure.what()));
  }
}

}  // namespace gui
