// Colours of span categories for the timeline viewer (dtsim-view): one distinct, stable
// colour per trace::Category, compute in warm hues, communication in cool ones, idle grey.
// The only Qt type outside gui/ never sees it.
#pragma once

#include <QColor>

#include "sim/trace/category.h"

namespace gui {

QColor category_color(trace::Category category);

}  // namespace gui
