// The ceiling run: the probe's cold direct read of the model's first file, in this process
// (its buffers are 32 MiB), beside the strategies' runs of a round (record/record.h kCeiling).
#include <fcntl.h>

#include <chrono>
#include <optional>

#include <fmt/format.h>

#include "harness/measure/measure.h"
#include "harness/probe/probe_measure.h"
#include "harness/system/cache.h"
#include "harness/system/interrupt.h"
#include "loaders/base/file_io.h"

namespace loadbench {
namespace {

// On this kind of VM a cold run that comes right after the ceiling's O_DIRECT read is slow: 1.39x
// its group's median against 0.93x after another run (40 A/A experiments, docs/rounds.md). A
// buffered read of the file in between takes most of that (1.12x against 0.90x over 12), so
// that the strategies' runs pay less for the ceiling. Its seconds, or nullopt when it failed.
std::optional<double> Settle(const std::string& path) {
  const auto t0 = std::chrono::steady_clock::now();
  if (Status s = WarmFile(path); !s.ok()) {
    fmt::print(stderr, "loadbench: the read after the ceiling: {}\n", s.message());
    return std::nullopt;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The ceiling run, in this process (its buffers are 32 MiB): the probe's cold direct read of
// the file's whole MiBs, which drops the file's pages and checks them gone first.
}  // namespace

Status MeasureCeiling(RunRecord r, Reporter& out, const PreparedFile& file, bool* interrupted) {
  r.params = {
      {"queue_depth", probe::kQueueDepth}, {"block_bytes", probe::kBlockBytes}, {"direct", "on"}};
  // A sharded model's ceiling is its first shard's: the device's speed, read the same way.
  const std::string& path = file.table.shards.at(0).path;
  const uint64_t bytes = file.table.shards[0].file_size / probe::kBlockBytes * probe::kBlockBytes;
  UniqueFd direct;
  if (bytes == 0) {
    r.status = "unsupported";
    r.error = "the file is smaller than one 1 MiB request";
  } else if (Status s = OpenReadOnly(path, O_DIRECT, &direct); !s.ok()) {
    r.status = "unsupported";
    r.error = fmt::format("O_DIRECT: {}", s.message());
  } else {
    direct.reset();
    const nlohmann::ordered_json m = probe::ColdDirectRead(path, bytes, 1);
    if (Interrupted()) {
      *interrupted = true;
      return Status::Ok();  // no record: the run did not finish
    }
    const auto g = m.find("gb_per_s");
    if (g != m.end() && g->is_number() && g->get<double>() > 0) {
      r.status = "ok";
      r.wall_s = static_cast<double>(bytes) / (g->get<double>() * 1e9);
      r.ceiling_bytes = bytes;
      r.gb_per_s = g->get<double>();
      r.settle_s = Settle(path);
    } else {
      r.error = m.value("reason", "the ceiling read gave no figure");
    }
  }
  std::vector<RunRecord> batch = {std::move(r)};
  return out.Write(batch);
}

}  // namespace loadbench
