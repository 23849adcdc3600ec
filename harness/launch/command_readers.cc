// The command launcher's readers: one exec command per reader of a run, all started together
// (RunCommands), each told its place among the readers as a rank of a distributed job is told
// its rank, each record filled from its outcome and judged against its own part.
#include <fmt/format.h>

#include "harness/launch/command.h"
#include "loaders/blocks/peers.h"

namespace loadbench {
namespace {

// What reader `reader` of `readers` finds in its environment beside the harness's own
// (docs/exec.md): its place, the run's token, and the read pattern when it is one of several.
// LOADBENCH_FLEET_PEERS, set on a cluster's nodes, is inherited as it is.
std::vector<std::string> CommandVars(const LaunchRequest& req, int reader, int readers) {
  std::vector<std::string> vars = {fmt::format("{}={}/{}", kReaderVar, reader, readers)};
  if (!req.peer_token.empty()) vars.push_back(fmt::format("{}={}", kTokenVar, req.peer_token));
  if (readers > 1) vars.push_back(fmt::format("{}={}", kPatternVar, req.worker.pattern.Text()));
  return vars;
}

// The checksum reader `reader` must send: its part's, or the model's.
std::optional<uint64_t> ExpectedChecksum(const LaunchRequest& req, int reader) {
  if (req.part_checksums.empty()) return req.worker.expect_checksum;
  return req.part_checksums.at(static_cast<size_t>(reader));
}

// The tensor bytes reader `reader` needs: its part's, or the whole model's; 0 when unknown.
uint64_t NeededBytes(const LaunchRequest& req, int reader) {
  if (req.part_checksums.empty()) return req.model_bytes;
  if (req.part_bytes.size() != req.part_checksums.size()) return 0;
  return req.part_bytes.at(static_cast<size_t>(reader));
}

class Command final : public Launcher {
 public:
  std::string NotOffered(int, uint64_t) const override { return ""; }
  bool measuring_cgroup() const override { return true; }
  bool checks_warm_reads() const override { return false; }
  bool checks_cold_reads() const override { return true; }
  std::string unprofiled(size_t) const override { return kExecUnprofiled; }
  std::vector<ReaderOutcome> Launch(const LaunchRequest& req, const HostSteps& host,
                                    bool* interrupted) override {
    return LaunchHere(req, host, interrupted, [&](const HostState& h) {
      return RunCommandReaders(req, h, 0, {}, interrupted);
    });
  }
};

}  // namespace

std::vector<ReaderOutcome> RunCommandReaders(const LaunchRequest& req, const HostState& h,
                                             int first, const std::function<void()>& all_ready,
                                             bool* interrupted) {
  const int readers = req.all_readers > 0 ? req.all_readers : req.readers;
  std::vector<ExecRequest> execs;
  for (int i = 0; i < req.readers; ++i) {
    execs.push_back({req.program, req.argv, req.file_paths, h.cgroup_procs, h.cgroup_dir,
                     req.timeout_s, req.sample_s, CommandVars(req, first + i, readers)});
  }
  std::vector<ExecOutcome> done = RunCommands(execs, all_ready, interrupted);
  std::vector<ReaderOutcome> out(done.size());
  if (*interrupted) return out;
  const ExecMeasured how = {h.cgroup, h.cgroup.empty() && h.no_cgroup.empty()
                                          ? "no memory cgroup was made for it"
                                          : h.no_cgroup};
  for (size_t i = 0; i < done.size(); ++i) {
    const int reader = first + static_cast<int>(i);
    ReaderOutcome& o = out[i];
    FillExecRecord(done[i], ExpectedChecksum(req, reader), req.timed, how, &o.record);
    if (const uint64_t need = NeededBytes(req, reader); need > 0) o.record.needed_bytes = need;
    o.signal = done[i].signal;
    o.usage = done[i].usage;
    o.process_s = done[i].process_s;
    o.timeline = std::move(done[i].timeline);
  }
  return out;
}

std::unique_ptr<Launcher> CommandLauncher() { return std::make_unique<Command>(); }

}  // namespace loadbench
