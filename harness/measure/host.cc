#include "harness/measure/host.h"

#include <unistd.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "harness/cache/cache.h"
#include "harness/cache/served.h"
#include "loaders/base/proc_fields.h"
#include "loaders/remote/url.h"

namespace loadbench {

Status CleanUpAfter(const StrategyInfo& info, const std::string& file, const std::string& who) {
  if (info.cleanup == nullptr) return Status::Ok();
  std::vector<std::string> removed;
  Status c = info.cleanup(file, &removed);
  if (!c.ok() && !who.empty()) {
    fmt::print(stderr, "{}: cleaning up after {}: {}\n", who, info.name, c.message());
  }
  return c;
}

HostSteps Host::Steps() {
  return {[this] { return Prepare(); }, [this](HostState* h) { After(h); }};
}

void Host::CleanUp(const std::string& who) const {
  if (plan_.info != nullptr) (void)CleanUpAfter(*plan_.info, plan_.path, who);
}

// The cgroup first: where none can be made under a limit, the run is unsupported before any
// work. The drop method: drop_caches as root (DropsWholeCache), else posix_fadvise.
Status Host::Make(HostState* h) {
  if (plan_.table == nullptr) return Status::Failed("the file was not prepared");
  if (plan_.memory_limit > 0)
    LB_RETURN_IF_ERROR(MemoryCgroup::Create(plan_.memory_limit, &cgroup_));
  DropMethod drop = DropsWholeCache() ? DropMethod::kDropCaches : DropMethod::kFadvise;
  if (plan_.cache == "cold" && plan_.info != nullptr) {
    LB_RETURN_IF_ERROR(CleanUpAfter(*plan_.info, plan_.path, ""));
  }
  // A warm start is read in again while the cache has lost part of the file before the check
  // (a machine that pages out page cache by itself, DAMON's pageout for one), up to
  // kWarmReads times; the record says how many it took, and a start still short is invalid.
  // A cold start is dropped again, 100 ms later, while pages arrive after the drop: a server's
  // read-ahead for the run before (nginx's sendfile) can still be in flight when it ends.
  ModelResidency before;
  for (int reads = 1; reads <= kWarmReads; ++reads) {
    if (plan_.cache == "cold") {
      if (reads > 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      LB_RETURN_IF_ERROR(DropModelCache(*plan_.table, &drop));
      h->drop_method = DropMethodName(drop);
    }
    if (plan_.cache == "warm") {
      LB_RETURN_IF_ERROR(WarmModel(*plan_.table));
      h->warm_reads = reads;
    }
    // The tool's own code (dropped by drop_caches, or by an earlier command's) back in before
    // the file is checked, so that the reader does not page it in on the clock: its reads would
    // count as the load's, and a warm run that reads from storage is invalid.
    ReadBackOwnCode();
    LB_RETURN_IF_ERROR(MeasureModelResidency(*plan_.table, &before));
    if (StartStateProblem(plan_.cache, before.Worst(plan_.cache)).empty()) break;
  }
  h->resident_before = before.total.fraction();
  const std::string& first = plan_.table->shards.at(0).path;
  h->remote = IsRemote(first) || LocalFileOf(first) != first;
  if (h->remote && before.unseen_shards == 0) h->server_resident_before = h->resident_before;
  h->worst = before.Worst(plan_.cache);
  h->pages_before = before.total.resident_pages;
  return Status::Ok();
}

HostState Host::Prepare() {
  HostState h;
  if (Status s = Make(&h); !s.ok()) {
    h.unsupported = s.code() == Status::Code::kUnsupported;
    h.error = s.message();
    return h;
  }
  // Without a memory limit a cgroup is only for measuring: where none can be made the run goes
  // on, and its record says so.
  if (!cgroup_ && plan_.measuring_cgroup) {
    if (Status c = MemoryCgroup::Create(0, &cgroup_); !c.ok()) h.no_cgroup = c.message();
  }
  if (cgroup_) {
    h.cgroup_procs = cgroup_->procs_path();
    h.cgroup_dir = cgroup_->path();
    h.cgroup = fmt::format("cgroup {}", cgroup_->version());
  }
  h.cached_before = MeminfoBytes("Cached");
  h.oom_before = SystemOomKills();
  h.ok = true;
  return h;
}

// Kills by the OOM killer since the run started (its cgroup's count when it had one, else the
// machine's), the page cache, the model's residency, the cgroup's peak.
void Host::After(HostState* h) const {
  h->cached_after = MeminfoBytes("Cached");
  const std::optional<uint64_t> now = cgroup_ ? cgroup_->OomKills() : SystemOomKills();
  if (now) h->oom_kills = *now - (cgroup_ ? 0 : h->oom_before.value_or(*now));
  if (ModelResidency after; plan_.table && MeasureModelResidency(*plan_.table, &after).ok()) {
    h->resident_after = after.total.fraction();
    h->pages_after = after.total.resident_pages;
  }
  if (cgroup_) h->cgroup_peak_bytes = cgroup_->PeakBytes();
}

}  // namespace loadbench
