#include "harness/stats/ratio_text.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

namespace loadbench {
namespace {

enum class Rounding { kNearest, kDown, kUp };
constexpr int kMostDecimals = 6;

// Two from 0.1 up to 10 (and for what is not above 0, which no ratio of times is), none from 10
// up, below 0.1 two significant digits.
int DecimalsFor(double x) {
  if (x >= 10) return 0;
  if (x >= 0.1 || !(x > 0)) return 2;
  return std::min(kMostDecimals, 1 - static_cast<int>(std::floor(std::log10(x))));
}

// `x` with `decimals`, rounded as asked: the nearest text, stepped one unit outward when it
// moved the value the other way (by more than a billionth of a unit: 0.57 stays 0.57).
std::string Fixed(double x, int decimals, Rounding mode) {
  const std::string nearest = fmt::format("{:.{}f}", x, decimals);
  const double v = std::stod(nearest), unit = std::pow(10.0, -decimals), slack = 1e-9 * unit;
  if (mode == Rounding::kDown && v - x > slack) return fmt::format("{:.{}f}", v - unit, decimals);
  if (mode == Rounding::kUp && x - v > slack) return fmt::format("{:.{}f}", v + unit, decimals);
  return nearest;
}

std::string Rounded(double x, Rounding mode) {
  int decimals = DecimalsFor(x);
  std::string text = Fixed(x, decimals, mode);
  // The regime of the rounded value: 9.996 rounds to 10.00, which is printed "10".
  if (const int again = DecimalsFor(std::stod(text)); again != decimals) {
    decimals = again;
    text = Fixed(x, decimals, mode);
  }
  // An interval's end that is not 1 never reads as 1: it would say the interval holds 1.
  while (mode != Rounding::kNearest && x != 1.0 && std::stod(text) == 1.0 &&
         decimals < kMostDecimals) {
    text = Fixed(x, ++decimals, mode);
  }
  return text;
}

}  // namespace

std::string RatioFigure(double ratio) { return Rounded(ratio, Rounding::kNearest); }

std::string RatioText(double ratio, double low, double high) {
  const std::string interval =
      std::isfinite(low) && std::isfinite(high)
          ? Rounded(low, Rounding::kDown) + "–" + Rounded(high, Rounding::kUp)
          : "–";
  return fmt::format("{}× ({})", RatioFigure(ratio), interval);
}

std::string LevelText(double test_level) {
  const std::string text = fmt::format("{:.1f}%", 100 * (1 - test_level));
  return text == "95.0%" ? "95%" : text;
}

}  // namespace loadbench
