// Category colour table (see category_palette.h).
#include "gui/category_palette.h"

#include <array>

namespace gui {

QColor category_color(trace::Category category) {
  static const std::array<QColor, trace::kCategoryCount> kColors = {
      QColor(0xE0, 0x8E, 0x2B),  // forward: orange
      QColor(0xC2, 0x4E, 0x2E),  // backward: brick red
      QColor(0xE8, 0xC1, 0x3A),  // recompute: yellow
      QColor(0x8E, 0x5B, 0x9E),  // optimizer: purple
      QColor(0xB0, 0x7A, 0x3C),  // gpu_kernel (compute, phase unknown): ochre
      QColor(0x2F, 0x7F, 0xC1),  // all_reduce: blue
      QColor(0x2F, 0xA5, 0x9C),  // all_gather: teal
      QColor(0x3A, 0x5B, 0xA8),  // reduce_scatter: indigo
      QColor(0x1F, 0x9E, 0xD8),  // all_to_all: sky
      QColor(0x5C, 0xB8, 0x6B),  // broadcast: green
      QColor(0x4B, 0x8F, 0x5A),  // reduce: dark green
      QColor(0xD6, 0x4F, 0x9A),  // barrier: magenta
      QColor(0x6D, 0xC6, 0xC9),  // send_recv: cyan
      QColor(0x3E, 0x9B, 0x8A),  // ps_push: sea green
      QColor(0x7F, 0xA9, 0xD4),  // ps_pull: light blue
      QColor(0xA8, 0x8F, 0x6C),  // memcpy: tan
      QColor(0xC8, 0xC8, 0xC8),  // idle: grey
      QColor(0x80, 0x80, 0x80),  // other: dark grey
  };
  return kColors[static_cast<std::size_t>(category)];
}

}  // namespace gui
