// A minimal SVG writer for the algorithm pictures: elements appended to a string, every number
// written as a fixed-point decimal with one digit, so the output is byte-for-byte reproducible
// across compilers and machines (no floating-point formatting).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace rl::pictures {

// A coordinate in tenths of a pixel; printed as "12.3".
struct Px {
  int64_t tenths = 0;
};
inline Px PxOf(int64_t px) { return Px{px * 10}; }

class Svg {
 public:
  Svg(int64_t width, int64_t height, std::string_view title);
  void Rect(Px x, Px y, Px w, Px h, std::string_view style);
  void Line(Px x1, Px y1, Px x2, Px y2, std::string_view style);
  // `anchor`: start, middle or end. The text is XML-escaped.
  void Text(Px x, Px y, std::string_view text, std::string_view style = "",
            std::string_view anchor = "start");
  // A path from "M x y" commands etc. built by the caller with Num().
  void Path(std::string_view d, std::string_view style);
  // The finished document.
  std::string Finish();

  static std::string Num(Px v);

 private:
  std::string out_;
};

}  // namespace rl::pictures
