// `loadbench gen`: a model-shaped weight file with deterministic, incompressible content.
#include <fmt/format.h>

#include "harness/cli/commands.h"
#include "harness/gen/generator.h"
#include "harness/system/interrupt.h"
#include "loaders/base/units.h"

namespace loadbench::cli {
namespace {

int DryRun(const GenOptions& gen) {
  GenPlan plan;
  if (Status s = PlanGenerated(gen, &plan); !s.ok()) return ReportError("gen", s);
  fmt::print("{}\n{} tensors, {} of tensor data, {} file {} ({} bytes)\n", plan.model.description,
             plan.model.tensors.size(), FormatBytes(plan.model.tensor_bytes), gen.format,
             FormatBytes(plan.layout.file_size), plan.layout.file_size);
  return 0;
}

int Write(const GenOptions& gen) {
  InstallInterruptHandlers();
  GenResult r;
  if (Status s = Generate(gen, &r); !s.ok()) return Interrupted() ? 130 : ReportError("gen", s);
  if (r.reused) {
    fmt::print("{}: reusing existing file of the same spec ({}, {} tensors, checksum {:016x})\n",
               gen.out_path, FormatBytes(r.file_bytes), r.tensor_count, r.checksum);
  } else {
    fmt::print("{}: wrote {} ({} tensors, checksum {:016x}) in {:.2f} s, {:.0f} MB/s\n",
               gen.out_path, FormatBytes(r.file_bytes), r.tensor_count, r.checksum, r.seconds,
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
