#include "harness/stats/paired_stats.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace loadbench::paired {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// P(T+ = t), t = 0..n(n+1)/2, for ranks 1..n each counted with probability 1/2. Probabilities
// rather than counts, because the counts pass 2^64 long before n reaches a few hundred.
std::vector<double> SignedRankNull(size_t n) {
  std::vector<double> p(n * (n + 1) / 2 + 1, 0.0);
  p[0] = 1.0;
  for (size_t rank = 1; rank <= n; ++rank) {
    for (size_t t = rank * (rank + 1) / 2; t >= rank; --t) p[t] = 0.5 * (p[t] + p[t - rank]);
    for (size_t t = 0; t < rank; ++t) p[t] *= 0.5;
  }
  return p;
}

}  // namespace

double Median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  return (*std::max_element(v.begin(), v.begin() + mid) + v[mid]) / 2;
}

Interval SignedRankInterval(std::vector<double> d, double alpha) {
  Interval out;
  const size_t n = d.size();
  out.n = static_cast<int>(n);
  if (n == 0) return out;

  std::vector<double> walsh;
  walsh.reserve(n * (n + 1) / 2);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i; j < n; ++j) walsh.push_back((d[i] + d[j]) / 2);
  }
  std::sort(walsh.begin(), walsh.end());
  const size_t m = walsh.size();
  out.estimate = m % 2 == 1 ? walsh[m / 2] : (walsh[m / 2 - 1] + walsh[m / 2]) / 2;

  const std::vector<double> null = SignedRankNull(n);
  double cdf = 0;
  size_t k = 0;  // t* + 1 once some t qualifies
  for (size_t t = 0; t < null.size(); ++t) {
    cdf += null[t];
    if (cdf > alpha / 2) break;
    k = t + 1;
    out.level = 2 * cdf;
  }
  if (k == 0) return out;
  out.bounded = true;
  out.low = walsh[k - 1];
  out.high = walsh[m - k];
  return out;
}

bool Significant(const Interval& i) { return i.bounded && (i.low > 0 || i.high < 0); }

double HalfWidth(const Interval& i) {
  if (!i.bounded) return kInf;
  return std::max(std::expm1(i.high - i.estimate), -std::expm1(i.low - i.estimate));
}

Trend KendallTrend(const std::vector<double>& y) {
  Trend out;
  const size_t n = y.size();
  out.n = static_cast<int>(n);
  if (n < 3) return out;

  // The index has no ties, so each pair is concordant or discordant unless its y values tie.
  double s = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) s += (y[j] > y[i]) - (y[j] < y[i]);
  }
  std::map<double, size_t> groups;
  for (double v : y) ++groups[v];
  double tied_pairs = 0, tie_var = 0;
  for (const auto& [value, t] : groups) {
    const double td = static_cast<double>(t);
    tied_pairs += td * (td - 1) / 2;
    tie_var += td * (td - 1) * (2 * td + 5);
  }
  const double nd = static_cast<double>(n);
  const double pairs = nd * (nd - 1) / 2;
  if (tied_pairs == pairs) return out;  // constant: no order to measure

  out.tau = s / std::sqrt(pairs * (pairs - tied_pairs));
  out.z = s / std::sqrt((nd * (nd - 1) * (2 * nd + 5) - tie_var) / 18);
  out.p = std::erfc(std::abs(out.z) / std::sqrt(2.0));
  return out;
}

std::vector<double> ModifiedZ(const std::vector<double>& x) {
  const double med = Median(x);
  std::vector<double> dev(x.size());
  for (size_t i = 0; i < x.size(); ++i) dev[i] = std::abs(x[i] - med);
  const double mad = Median(dev);
  std::vector<double> z(x.size(), 0.0);
  if (!(mad > 0)) return z;
  for (size_t i = 0; i < x.size(); ++i) z[i] = 0.6745 * (x[i] - med) / mad;
  return z;
}

std::vector<bool> MadOutliers(const std::vector<double>& x, double threshold, size_t min_n) {
  std::vector<bool> flags(x.size(), false);
  if (x.size() < min_n) return flags;
  const std::vector<double> z = ModifiedZ(x);
  for (size_t i = 0; i < x.size(); ++i) flags[i] = std::abs(z[i]) > threshold;
  return flags;
}

}  // namespace loadbench::paired
