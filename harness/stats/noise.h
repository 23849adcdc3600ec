// The lines on noise under the summary table: the paired comparisons with the baseline, drift
// over the records' order (of the ceiling, or of every strategy together), and outliers.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace loadbench {

// The run summary's lines on noise: the paired comparisons with the baseline, a warning for each
// strategy whose median beat every ceiling read of its rounds (a ceiling that is not one), a drift
// of the ceiling (or of every strategy together) over the records' order, and the outliers (MAD
// rule, kept; each listed when `list_outliers`, else only counted). Comparisons with too few rounds
// for an interval share one line. Empty when there is nothing to say.
std::string NoiseSummary(const std::vector<nlohmann::ordered_json>& records,
                         const std::string& baseline, bool list_outliers = true);

}  // namespace loadbench
