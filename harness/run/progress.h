// What a long command shows while it runs: a progress line redrawn in place on a terminal, and
// the time left, from what the runs so far took and the probe's estimates for the rest.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loadbench {

// "42 s", "3 min 05 s", "2 h 10 min".
std::string DurationText(double seconds);

// The progress line: runs done of the total, the current run, and the time left; redrawn in
// place on a terminal, absent otherwise.
class Progress {
 public:
  explicit Progress(bool on);
  bool on() const { return on_; }
  void Show(const std::string& text);
  void Clear();

 private:
  bool on_;
};

// The time left. A run whose combination (strategy and condition: all but the repetition) has
// been measured in this session is expected to take what it took on average (an order in rounds
// measures every combination in the first repetition). One not measured yet: what its strategy
// took in another condition, times how that condition compares with this one for the strategies
// measured in both (warm after cold: the same copy, the same first-touch faults, less I/O); else
// its estimate scaled by how the measured runs compared with theirs; without estimates, the
// mean time of a run so far.
class Eta {
 public:
  struct Item {
    std::string strategy;   // the strategy spec and file
    std::string condition;  // cache state, procs, read pattern, memory limit
    double estimate = 0;    // seconds; 0: none
  };
  explicit Eta(std::vector<Item> items) : items_(std::move(items)) {}

  void Done(size_t i, double actual);
  // The seconds left before item `next` starts; nullopt when nothing gives an estimate.
  std::optional<double> Seconds(size_t next) const;
  // The same as text: "unknown", "~3 min 05 s (estimate)" before any run, else "3 min 05 s".
  std::string Left(size_t next) const;

 private:
  using Key = std::pair<std::string, std::string>;  // strategy, condition
  double Mean(const Key& k) const;                  // of a measured combination
  std::optional<double> FromOtherCondition(const Item& item) const;

  std::vector<Item> items_;
  std::map<Key, std::pair<double, int>> measured_;  // sum, count
  double est_done_ = 0, actual_done_ = 0;
  int runs_ = 0;
};

}  // namespace loadbench
