// Ratios and interval levels as every table, the verdict, compare and the console print them
// (analysis/results.py ratio_text is the same rule; analysis/tests/fixtures/ratio_text.json
// holds texts written by hand that both must give).
#pragma once

#include <string>

namespace loadbench {

// A ratio rounded to the nearest: two decimals; two significant digits below 0.1 (trailing
// zeros kept: 0.090); none from 10 up, the regime chosen by the rounded value (9.996: "10").
std::string RatioFigure(double ratio);

// "0.61× (0.38–0.65)": the ratio (RatioFigure) and its interval, the low end rounded down and
// the high end up, and an end that is not exactly 1 never printed as 1 (it gains digits:
// 0.996 is "0.996", not "1.00"); "0.61× (–)" when an end is not finite.
std::string RatioText(double ratio, double low, double high);

// An exact interval's level from its two-sided test level: "96.9%" (6 rounds), "95%" where it
// rounds to 95.0%.
std::string LevelText(double test_level);

}  // namespace loadbench
