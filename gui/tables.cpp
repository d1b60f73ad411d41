// Table model and table builders (see tables.h).
#include "gui/tables.h"

#include <fmt/format.h>

#include "gui/core/time_axis.h"
#include "sim/trace/comparison.h"

namespace gui {
namespace {

TableCell seconds_cell(double seconds) { return {QString::fromStdString(format_duration(seconds * 1e12)), seconds}; }
TableCell number_cell(double value, const char* format) { return {QString::fromStdString(fmt::format(fmt::runtime(format), value)), value}; }
TableCell text_cell(const std::string& text) { return {QString::fromStdString(text), {}}; }

}  // namespace

void TableModel::set_table(Table table) {
  beginResetModel();
  table_ = std::move(table);
  endResetModel();
}

int TableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(table_.rows.size());
}

int TableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : static_cast<int>(table_.headers.size()); }

QVariant TableModel::data(const QModelIndex& index, int role) const {
  if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
  const auto& row = table_.rows[static_cast<std::size_t>(index.row())];
  if (static_cast<std::size_t>(index.column()) >= row.size()) return {};
  const TableCell& cell = row[static_cast<std::size_t>(index.column())];
  if (role == Qt::DisplayRole) return cell.text;
  if (role == Qt::UserRole) return cell.value.isValid() ? cell.value : QVariant(cell.text);
  if (role == Qt::TextAlignmentRole && cell.value.isValid()) return QVariant(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}

QVariant TableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  return section >= 0 && section < table_.headers.size() ? QVariant(table_.headers[section]) : QVariant();
}

Table summary_table(const Documents& documents) {
  Table table;
  table.headers << "figure";
  for (const auto& document : documents) table.headers << QString::fromStdString(document->title);
  auto add_row = [&](const std::string& what, auto cell_of) {
    std::vector<TableCell> row{text_cell(what)};
    for (const auto& document : documents) row.push_back(cell_of(document->stats));
    table.rows.push_back(std::move(row));
  };
  add_row("step time", [](const trace::TimelineStats& s) { return seconds_cell(s.step_s); });
  add_row("R = comm / compute", [](const trace::TimelineStats& s) { return number_cell(s.comm_compute_ratio, "{:.3f}"); });
  add_row("overlap ratio", [](const trace::TimelineStats& s) { return number_cell(s.overlap_ratio, "{:.3f}"); });
  add_row("exposed communication / step", [](const trace::TimelineStats& s) { return seconds_cell(s.exposed_comm_s); });
  for (std::size_t c = 0; c < trace::kCategoryCount; ++c) {
    bool any = false;
    for (const auto& document : documents) any = any || document->stats.seconds_by_category[c] > 0;
    if (!any) continue;
    add_row(std::string(trace::category_name(static_cast<trace::Category>(c))) + " / step / rank",
            [c](const trace::TimelineStats& s) { return seconds_cell(s.seconds_by_category[c]); });
  }
  return table;
}

Table peak_memory_table(const Documents& documents) {
  Table table;
  table.headers << "rank";
  std::size_t ranks = 0;
  for (const auto& document : documents) {
    table.headers << QString::fromStdString(document->title + " (GB)");
    ranks = std::max(ranks, document->stats.peak_memory_bytes.size());
  }
  for (std::size_t rank = 0; rank < ranks; ++rank) {
    std::vector<TableCell> row{{QString::number(rank), static_cast<qulonglong>(rank)}};
    bool any = false;  // a rank no trace holds (one of some ranks of a large job) gets no row
    for (const auto& document : documents) {
      const auto& peaks = document->stats.peak_memory_bytes;
      const bool known = rank < peaks.size() && peaks[rank] > 0;
      any = any || known;
      row.push_back(known ? number_cell(static_cast<double>(peaks[rank]) / 1e9, "{:.2f}")
                          : text_cell("—"));
    }
    if (any) table.rows.push_back(std::move(row));
  }
  return table;
}

Table compare_table(const Document& first, const Document& second) {
  // dtsim compare's convention: error = (predicted − measured) / measured. The reference (the
  // "measured" side) is the measured run when one of the two is; between two predictions, or two
  // measurements, the first opened (the baseline of a what-if), the other being B.
  const trace::Timeline& first_timeline = first.index->timeline();
  const trace::Timeline& second_timeline = second.index->timeline();
  const bool first_measured = trace::is_measured(first_timeline), second_measured = trace::is_measured(second_timeline);
  const bool predicted_vs_measured = first_measured != second_measured;
  const Document& reference = predicted_vs_measured && second_measured ? second : first;
  const Document& other = &reference == &first ? second : first;
  const std::string other_label = predicted_vs_measured ? "predicted" : "B";
  const std::string reference_label = predicted_vs_measured ? "measured" : "A";
  Table table;
  table.headers << "figure" << QString::fromStdString(fmt::format("{}: {}", other_label, other.title))
                << QString::fromStdString(fmt::format("{}: {}", reference_label, reference.title))
                << QString::fromStdString(fmt::format("{} − {}", other_label, reference_label))
                << QString::fromStdString(fmt::format("error ({0} − {1}) / {1}", other_label, reference_label));
  for (const trace::Difference& difference : trace::compare_timelines(reference.stats, other.stats)) {
    const auto relative = difference.relative();  // (other − reference) / reference
    table.rows.push_back({text_cell(difference.what), seconds_cell(difference.b_s), seconds_cell(difference.a_s),
                          seconds_cell(difference.delta_s()),
                          relative ? number_cell(*relative * 100, "{:+.1f} %") : text_cell("—")});
  }
  for (const std::string& warning :
       trace::comparability_warnings(other.index->timeline(), reference.index->timeline(), other_label + " (" + other.title + ")",
                                     reference_label + " (" + reference.title + ")")) {
    table.rows.push_back({text_cell("⚠ warning"), text_cell(warning), text_cell(""),
                          text_cell(""), text_cell("")});
  }
  return table;
}

Table search_table(const Document& document, std::size_t document_index, const SpanQuery& query, std::size_t limit) {
  Table table;
  table.headers << "op" << "rank" << "stream" << "start" << "duration";
  const trace::Timeline& timeline = document.index->timeline();
  const double origin = document.index->extent().begin_ps;
  for (const std::uint32_t index : query.find(timeline, limit)) {
    const trace::Span& span = timeline.spans[index];
    table.rows.push_back({text_cell(timeline.strings.at(span.name)), {QString::number(span.rank), span.rank},
                          text_cell(span.stream < timeline.streams.size() ? timeline.streams[span.stream] : ""),
                          {QString::fromStdString(format_duration(static_cast<double>(span.start_ps) - origin)),
                           static_cast<double>(span.start_ps)},
                          {QString::fromStdString(format_duration(static_cast<double>(span.duration_ps()))),
                           static_cast<double>(span.duration_ps())}});
    table.spans.push_back({document_index, index});
  }
  return table;
}

}  // namespace gui
