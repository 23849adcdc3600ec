// The machine's state: every kernel setting that changes a load's time, read (`loadbench system
// show`, env.json `system`), and the few that a measurement should not leave to chance set and
// restored (`system tune` / `system reset`, an experiment's `[system] tune = true`), as
// pyperf's `system show|tune|reset` does for CPU benchmarks.
//
// What tune sets, and why only that (docs/design.md, "The machine's state"):
// - free page reporting, held off (or kept, by the user's choice): a balloon that hands freed
//   memory back to the host makes the next first touch of that memory pay a host fault, a
//   cost that depends on how long ago the memory was freed. page_reporting_order is raised above
//   the largest free block order (/proc/buddyinfo), so that no free block is ever large enough
//   to be reported; a kernel that caps the order lower refuses, and tune says so;
// - the CPU frequency governor, `performance` where there is one and it is offered, so that
//   the clock does not ramp up during a load;
// - DAMON's pageout, stopped (harness/machine/damon.h): a kdamond with a pageout scheme, or
//   DAMON_RECLAIM, takes page cache away with no memory pressure, and a warm run's file with it.
// Everything else (THP, swappiness, dirty limits and writeback, read-ahead, the I/O scheduler,
// the balloon, DAMON that only monitors) is recorded, never changed: THP and read-ahead are what
// strategies are compared under, and a change would have to be part of the experiment, not of the
// machine.
//
// Every write goes into the leftovers journal (harness/leftovers/leftovers.h) first, with the
// value it replaces, so that a command killed while the machine is tuned has its settings
// restored by the next command that measures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loaders/base/status.h"

namespace loadbench {

// Where settings are read and written: the real /sys and /proc, or (tests) folders that stand in
// for them.
struct SystemRoot {
  std::string sys = "/sys";
  std::string proc = "/proc";
};

// One setting, as read now.
struct SystemSetting {
  std::string name;                  // "vm.swappiness", "page_reporting.page_reporting_order"
  std::string path;                  // where it is read (a pattern for one file per CPU)
  std::optional<std::string> value;  // as read; a bracketed choice as the chosen word; nullopt:
                                     // there is none here
  std::string note;                  // what the value means, or why there is none ("" if plain)
};

// Every setting that changes a load's time, in a fixed order: transparent huge pages and, read
// only, whether a huge page can be had now (HugePageState), free page reporting's parameters,
// swappiness, dirty limits and writeback, the read-ahead and I/O scheduler of the block device
// holding `data_path` (or of its nearest existing parent), the CPU frequency governor, the virtio
// balloon, DAMON's kdamonds and DAMON_RECLAIM.
std::vector<SystemSetting> ReadSystemSettings(const std::string& data_path,
                                              const SystemRoot& root = {});

// Whether a huge page can be had now, as the kernel counts it: read only (it changes by itself,
// and tune never sets it). Each nullopt where it cannot be read.
struct HugePageState {
  // Free memory in blocks of 2 MiB and up (order 9 and up of 4 KiB pages), summed over every
  // zone of /proc/buddyinfo: what a THP fault can have without compaction.
  std::optional<uint64_t> free_2mib_blocks_bytes;
  // hugetlb's pool, /proc/meminfo HugePages_Total and HugePages_Free (pages of
  // Hugepagesize): set aside for hugetlbfs and MAP_HUGETLB, never for THP.
  std::optional<uint64_t> hugetlb_total, hugetlb_free, hugetlb_page_bytes;
};
HugePageState ReadHugePageState(const SystemRoot& root = {});

// "696 MiB free in blocks of 2 MiB and up; hugetlb: 0 of 0 pages of 2 MiB free", with
// "unknown" for what cannot be read.
std::string DescribeHugePages(const HugePageState& h);

// Free page reporting under tune: held off, or kept as it is (and recorded).
enum class PageReportingChoice { kOff, kKeep };
// "off" or "keep"; kBadInput naming `what` otherwise.
Status ParsePageReportingChoice(const std::string& text, const std::string& what,
                                PageReportingChoice* out);
const char* PageReportingChoiceName(PageReportingChoice c);

// One setting tune writes: where, what was there, what it sets, and why.
struct SettingChange {
  std::string path, before, after, why;
};

// What tune would change on this machine now: empty when it is in the tuned state already.
// kBadInput when a setting cannot be read.
Status PlanTune(PageReportingChoice c, const SystemRoot& root, std::vector<SettingChange>* plan);

// Applies PlanTune's changes, each journalled before it is written and read back after; `done`
// gets them. When one cannot be set (not root, not writable, refused or capped by the kernel),
// those already set are restored, *done is empty and the kBadInput message names the setting
// and the reason: nothing is left half-set.
Status TuneSystem(PageReportingChoice c, const SystemRoot& root, std::vector<SettingChange>* done);

// Writes every change's `before` back, the last one first, each read back and struck off the
// journal; `said` gets a line per setting ("PATH: 11 -> 9"). Goes on past a failure; returns
// the first (kBadInput, naming the setting and the reason).
Status RestoreSystem(const std::vector<SettingChange>& changes, std::vector<std::string>* said);

// Strikes the changes off this process's journal without restoring them: for `system tune`,
// whose state file keeps them for `system reset` instead.
void ForgetChanges(const std::vector<SettingChange>& changes);

// Whether `path` is a setting tune may write and `value` a value it may hold: what a journal or
// state file names is restored only then (both are files another user could have written).
bool IsTunableSetting(const std::string& path, const std::string& value);

// Writes `value` to the tunable setting `path` and reads it back (IsTunableSetting first).
Status WriteTunableSetting(const std::string& path, const std::string& value);

// A tune made and in force: by `system tune` (its state file) or by the command itself.
struct TuneRecord {
  std::string by;     // "system tune", "experiment" or "run --tune"
  std::string since;  // UTC, "YYYY-MM-DDTHH:MM:SSZ"
  PageReportingChoice page_reporting = PageReportingChoice::kOff;
  std::vector<SettingChange> changes;  // as TuneSystem made them (before: what was there first)
};

// env.json's `system`: `settings` (NAME: {path, value, note}), `page_reporting` ("on", "off"
// or "absent"), `damon_pageout` (the same, for DAMON's pageout), `tune` (the TuneRecord in force,
// or null), `tuned` (whether PlanTune under that tune's choice, or "off" without one, would change
// nothing) and `not_tuned_because`.
nlohmann::ordered_json SystemEnv(const std::string& data_path, const TuneRecord* tune,
                                 const SystemRoot& root = {});

}  // namespace loadbench
