// `loadbench cache drop|warm|status FILE`: the runner's cache preparation on its own (over every
// shard of a sharded model), for tools that time something else (fio) against a checked
// page-cache state.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "harness/cache/cache.h"
#include "harness/cli/commands.h"
#include "harness/leftovers/leftovers.h"
#include "harness/process/interrupt.h"
#include "loaders/format/model.h"

namespace loadbench::cli {
namespace {

void Print(const CacheFlags& f, const ModelResidency& m, DropMethod drop, bool reached) {
  const Residency& r = m.total;
  const double frac = r.fraction();
  if (f.json) {
    nlohmann::ordered_json j{{"file", f.file},
                             {"action", f.action},
                             {"resident", frac},
                             {"resident_pages", r.resident_pages},
                             {"total_pages", r.total_pages},
                             {"method", ResidencyMethod()},
                             {"state_reached", reached},
                             {"unseen_shards", m.unseen_shards},
                             {"worst_shard_resident",
                              m.Worst(f.action == "drop" ? "cold" : "warm")}};
    if (f.action == "drop") j["drop_method"] = DropMethodName(drop);
    fmt::print("{}\n", j.dump());
    return;
  }
  if (m.unseen_shards > 0 && r.total_pages == 0) {
    fmt::print("{}: served from elsewhere: its server's page cache cannot be seen from here{}\n",
               f.file, f.action == "warm" ? " (read once through it)" : "");
    return;
  }
  fmt::print("{}: {:.2f}% resident ({} of {} pages, {}){}\n", f.file, frac * 100, r.resident_pages,
             r.total_pages, ResidencyMethod(),
             f.action == "drop" ? fmt::format(" after {}", DropMethodName(drop)) : "");
}

}  // namespace

int CacheCommand(const CacheFlags& f, const std::string& command_line) {
  const std::string cmd = "cache " + f.action;
  TensorTable model;
  Status s = ReadModel(f.file, &model);
  if (!s.ok()) return ReportError(cmd, s);
  // Dropping or warming the cache under another measurement would change what it measures;
  // a status only reads.
  HeldLock machine;
  if (f.action != "status") {
    s = BeginMeasurement("loadbench " + cmd, ThisProcess(command_line, ""), !f.no_wait, &machine);
    if (!s.ok()) {
      const int code = ReportError(cmd, s);
      return Interrupted() ? 130 : code;
    }
  }
  DropMethod drop = DropMethod::kDropCaches;
  if (f.action == "drop") s = DropModelCache(model, &drop);
  if (f.action == "warm") s = WarmModel(model);
  ModelResidency r;
  if (s.ok()) s = MeasureModelResidency(model, &r);
  if (!s.ok()) return ReportError(cmd, s);
  // Every shard must reach the state: the worst one decides.
  const double frac = r.Worst(f.action == "drop" ? "cold" : "warm");
  const bool reached = f.action == "drop"   ? frac <= kColdMaxResident
                       : f.action == "warm" ? frac >= kWarmMinResident
                                            : true;
  Print(f, r, drop, reached);
  if (!reached) {
    fmt::print(stderr, "loadbench {}: {}: {}{:.2f}% resident, the {} state was not reached\n", cmd,
               f.file, model.sharded() ? "a shard still " : "still ", frac * 100,
               f.action == "drop" ? "cold" : "warm");
    return 1;
  }
  return 0;
}

}  // namespace loadbench::cli
