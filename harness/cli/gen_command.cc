// `loadbench gen`: a model-shaped weight file with deterministic, incompressible content, or
// the same model in shards.
#include <algorithm>

#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/gen/generator.h"
#include "harness/process/interrupt.h"
#include "loaders/base/units.h"

namespace loadbench::cli {
namespace {

// The shard plan: the count, the range of bytes per shard, and a line per shard (the first and
// last ones of a long list).
void PrintShards(const GenPlan& plan) {
  const auto& shards = plan.shards;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (const GenShard& s : shards) {
    lo = std::min(lo, s.tensor_bytes);
    hi = std::max(hi, s.tensor_bytes);
  }
  fmt::print("{} shards of {} to {} of tensor data{}\n", shards.size(), FormatBytes(lo),
             FormatBytes(hi),
             plan.index_path.empty() ? "" : fmt::format(", index {} bytes", plan.index_bytes));
  constexpr size_t kHead = 8, kTail = 2;
  for (size_t k = 0; k < shards.size(); ++k) {
    if (shards.size() > kHead + kTail + 1 && k == kHead) {
      fmt::print("  ... {} more shards ...\n", shards.size() - kHead - kTail);
      k = shards.size() - kTail - 1;
      continue;
    }
    const GenShard& s = shards[k];
    fmt::print("  {}  tensors {}-{} ({}), {} of tensor data, file {}\n", s.path, s.first_tensor,
               s.first_tensor + s.tensor_count - 1, s.tensor_count, FormatBytes(s.tensor_bytes),
               FormatBytes(s.layout.file_size));
  }
}

int DryRun(const GenOptions& gen) {
  GenPlan plan;
  if (Status s = PlanGenerated(gen, &plan); !s.ok()) return ReportError("gen", s);
  if (plan.shards.empty()) {
    fmt::print("{}\n{} tensors, {} of tensor data, {} file {} ({} bytes)\n", plan.model.description,
               plan.model.tensors.size(), FormatBytes(plan.model.tensor_bytes), gen.format,
               FormatBytes(plan.layout.file_size), plan.layout.file_size);
    return 0;
  }
  fmt::print("{}\n{} tensors, {} of tensor data, {} in {} files {} ({} bytes)\n",
             plan.model.description, plan.model.tensors.size(),
             FormatBytes(plan.model.tensor_bytes), gen.format,
             plan.shards.size() + (plan.index_path.empty() ? 0 : 1), FormatBytes(plan.total_bytes),
             plan.total_bytes);
  PrintShards(plan);
  fmt::print("model: {}\n", plan.model_path);
  return 0;
}

int Write(const GenOptions& gen) {
  InstallInterruptHandlers();
  GenResult r;
  if (Status s = Generate(gen, &r); !s.ok()) return Interrupted() ? 130 : ReportError("gen", s);
  const std::string what = r.shard_count == 0
                               ? ""
                               : fmt::format("{} shards{}, ", r.shard_count,
                                             r.files.size() > r.shard_count ? " and index" : "");
  if (r.reused) {
    fmt::print("{}: reusing existing {} of the same spec ({}{}, {} tensors, checksum {:016x})\n",
               r.model_path, r.shard_count == 0 ? "file" : "model", what, FormatBytes(r.file_bytes),
               r.tensor_count, r.checksum);
  } else {
    fmt::print("{}: wrote {}{} ({} tensors, checksum {:016x}) in {:.2f} s, {:.0f} MB/s\n",
               r.model_path, what, FormatBytes(r.file_bytes), r.tensor_count, r.checksum, r.seconds,
               r.seconds > 0 ? r.file_bytes / r.seconds / 1e6 : 0.0);
  }
  fmt::print("{}\n", r.description);
  return 0;
}

}  // namespace

int GenCommand(GenFlags& f) {
  Status s = ParseBytes(f.size, "--size", &f.gen.size_bytes);
  uint64_t align = 0;
  if (s.ok() && !f.align.empty()) s = ParseBytes(f.align, "--align", &align);
  if (!s.ok()) return ReportError("gen", s);
  f.gen.align = align;
  f.gen.progress = !f.quiet;
  return f.dry_run ? DryRun(f.gen) : Write(f.gen);
}

}  // namespace loadbench::cli
