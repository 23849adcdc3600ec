// Statistics of the paired comparison, figure for figure the same as analysis/paired.py (both
// are checked against analysis/tests/fixtures/paired_stats.json). A strategy is compared with
// the baseline through the log ratios of its and the baseline's times within each round, so
// the machine's drift between rounds cancels; the Wilcoxon signed-rank interval on those
// ratios is exact and distribution-free, and its Hodges–Lehmann centre shrugs off a few wild
// rounds. Its false positive rate in an A/A comparison is at most alpha by construction,
// because the within-round differences of two identical groups are symmetric about 0.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

namespace loadbench::paired {

inline constexpr double kAlpha = 0.05;

// On the log scale: d = ln(time_S / time_B).
struct Interval {
  int n = 0;
  double estimate = std::numeric_limits<double>::quiet_NaN();  // Hodges–Lehmann; NaN if n == 0
  double low = -std::numeric_limits<double>::infinity();
  double high = std::numeric_limits<double>::infinity();
  bool bounded = false;
  // The achieved two-sided level 2 P(T+ <= t*) (coverage is 1 - level); NaN when unbounded.
  double level = std::numeric_limits<double>::quiet_NaN();
};

// The Hodges–Lehmann estimate (median of the Walsh averages (d_i + d_j) / 2, i <= j) and the
// exact signed-rank interval [W_(k), W_(M+1-k)], k = t* + 1, t* the largest t with
// P(T+ <= t) <= alpha / 2 under the null. Unbounded when even t = 0 exceeds it (n <= 5 at
// alpha = 0.05). `d` must be finite; zeros and ties are kept as they are.
Interval SignedRankInterval(std::vector<double> d, double alpha = kAlpha);

// Bounded and leaves out 0: the exact two-sided signed-rank test rejects at `level`.
bool Significant(const Interval& i);

// max(exp(high - estimate) - 1, 1 - exp(low - estimate)): the interval's reach as a fraction
// of the estimated time ratio; +inf when unbounded.
double HalfWidth(const Interval& i);

// Kendall's tau-b of `y` (in time order) against its index, with the tie-corrected normal
// approximation: z = S / sqrt(var(S)), p = erfc(|z| / sqrt 2), as scipy's
// kendalltau(method="asymptotic"). NaNs when n < 3 or y is constant.
struct Trend {
  int n = 0;
  double tau = std::numeric_limits<double>::quiet_NaN();
  double z = std::numeric_limits<double>::quiet_NaN();
  double p = std::numeric_limits<double>::quiet_NaN();
};
Trend KendallTrend(const std::vector<double>& y);

// 0.6745 (x - median) / MAD; all 0 when MAD == 0 (no scale to measure against).
std::vector<double> ModifiedZ(const std::vector<double>& x);

// |ModifiedZ| > threshold; none flagged when x has fewer than min_n values.
std::vector<bool> MadOutliers(const std::vector<double>& x, double threshold = 3.5,
                              size_t min_n = 5);

// The middle value, or the mean of the two middle values; NaN for an empty vector.
double Median(std::vector<double> v);

}  // namespace loadbench::paired
