// See svg.h.
#include "svg.h"

namespace rl::pictures {
namespace {

void AppendEscaped(std::string_view text, std::string* out) {
  for (char c : text) {
    switch (c) {
      case '&':
        *out += "&amp;";
        break;
      case '<':
        *out += "&lt;";
        break;
      case '>':
        *out += "&gt;";
        break;
      case '"':
        *out += "&quot;";
        break;
      default:
        out->push_back(c);
    }
  }
}

}  // namespace

std::string Svg::Num(Px v) {
  std::string s;
  int64_t t = v.tenths;
  if (t < 0) {
    s.push_back('-');
    t = -t;
  }
  s += std::to_string(t / 10);
  if (t % 10 != 0) {
    s.push_back('.');
    s += std::to_string(t % 10);
  }
  return s;
}

Svg::Svg(int64_t width, int64_t height, std::string_view title) {
  out_ += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) +
          "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) +
          " " + std::to_string(height) +
          "\" font-family=\"DejaVu Sans, Arial, sans-serif\" font-size=\"12\">\n<title>";
  AppendEscaped(title, &out_);
  out_ += "</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
}

void Svg::Rect(Px x, Px y, Px w, Px h, std::string_view style) {
  out_ += "<rect x=\"" + Num(x) + "\" y=\"" + Num(y) + "\" width=\"" + Num(w) + "\" height=\"" +
          Num(h) + "\" ";
  out_ += style;
  out_ += "/>\n";
}

void Svg::Line(Px x1, Px y1, Px x2, Px y2, std::string_view style) {
  out_ += "<line x1=\"" + Num(x1) + "\" y1=\"" + Num(y1) + "\" x2=\"" + Num(x2) + "\" y2=\"" +
          Num(y2) + "\" ";
  out_ += style;
  out_ += "/>\n";
}

void Svg::Text(Px x, Px y, std::string_view text, std::string_view style, std::string_view anchor) {
  out_ += "<text x=\"" + Num(x) + "\" y=\"" + Num(y) + "\"";
  if (anchor != "start") {
    out_ += " text-anchor=\"";
    out_ += anchor;
    out_ += "\"";
  }
  if (!style.empty()) {
    out_ += " ";
    out_ += style;
  }
  out_ += ">";
  AppendEscaped(text, &out_);
  out_ += "</text>\n";
}

void Svg::Path(std::string_view d, std::string_view style) {
  out_ += "<path d=\"";
  out_ += d;
  out_ += "\" ";
  out_ += style;
  out_ += "/>\n";
}

std::string Svg::Finish() { return out_ + "</svg>\n"; }

}  // namespace rl::pictures
