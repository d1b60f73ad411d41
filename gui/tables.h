// The viewer's tables (summary, per-rank peak memory, compare, search results) as one
// read-only Qt table model filled with text, and the functions that build each table from
// documents. Numbers are formatted here; the raw value of a cell, when it has one, is under
// Qt::UserRole so the table sorts numerically.
#pragma once

#include <QAbstractTableModel>
#include <QStringList>
#include <QVariant>

#include <memory>
#include <vector>

#include "gui/document.h"
#include "gui/timeline_painter.h"

namespace gui {

struct TableCell {
  QString text;
  QVariant value;  // for sorting; invalid: sort by text
};

struct Table {
  QStringList headers;
  std::vector<std::vector<TableCell>> rows;
  std::vector<SpanRef> spans;  // search results: the span of each row
};

class TableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  using QAbstractTableModel::QAbstractTableModel;
  void set_table(Table table);
  const Table& table() const { return table_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  Table table_;
};

using Documents = std::vector<std::shared_ptr<const Document>>;

// Step time, R, overlap, exposed communication and time per category, a column per document.
Table summary_table(const Documents& documents);
// Peak memory of each rank, a column per document.
Table peak_memory_table(const Documents& documents);
// The figures of `a` and `b` side by side with their difference.
Table compare_table(const Document& a, const Document& b);
// The spans of `document` (index `document_index`) that `query` finds, at most `limit`.
Table search_table(const Document& document, std::size_t document_index, const SpanQuery& query, std::size_t limit);

}  // namespace gui
