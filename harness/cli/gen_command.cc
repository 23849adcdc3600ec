// `loadbench gen`: a model-shaped weight file with deterministic, incompressible content.
#include <fmt/format.h>

#include "harness/cli/command.h"
#include "harness/gen/generator.h"
#include "harness/gen/presets.h"
#include "harness/system/interrupt.h"
#include "loaders/base/units.h"

namespace loadbench::cli {
namespace {

class Gen final : public Command {
 public:
  CLI::App* Add(CLI::App& app) override {
    auto* cmd = app.add_subcommand(
        "gen", "Generate a model-shaped weight file with deterministic, incompressible content "
               "(reuses an existing file of the same spec)");
    std::string presets;
    for (const auto& p : PresetNames()) presets += (presets.empty() ? "" : "|") + p;
    cmd->add_option("--preset", gen_.preset, "Model shape: " + presets)->capture_default_str();
    cmd->add_option("--size", size_, "Target size of the tensor data, e.g. 2GiB, 512MiB")
        ->required();
    cmd->add_option("--format", gen_.format,
                    "File format: wlf, safetensors or gguf (the same tensors and bytes in "
                    "each for the same preset, size, dtype and seed)")
        ->capture_default_str();
    cmd->add_option("--out", gen_.out_path, "Output file")->required();
    cmd->add_option("--seed", gen_.seed, "Content seed")->capture_default_str();
    cmd->add_option("--align", align_,
                    "Tensor alignment in bytes, a power of two: WLF >= 64 (default 4096), "
                    "GGUF (default 32, as llama.cpp writes); safetensors has none");
    cmd->add_option("--dtype", gen_.dtype, "Element type: bf16 or f16")->capture_default_str();
    cmd->add_option("--endian", gen_.endian,
                    "Byte order: little or big (WLF only; every field and tensor element "
                    "byte-swapped, the same numbers as the little-endian file)")
        ->capture_default_str();
    cmd->add_option("--misalign", gen_.misalign,
                    "Start every tensor this many bytes (0 to 63) past a 64-byte boundary "
                    "(safetensors only)")
        ->capture_default_str();
    cmd->add_option("--threads", gen_.threads, "Generator threads (0: one per core)")
        ->capture_default_str();
    cmd->add_flag("--quiet", quiet_, "No progress output");
    cmd->add_flag("--dry-run", dry_run_, "Print the model shape and file size; write nothing");
    return cmd;
  }

  int Run(const std::string&) override {
    Status s = ParseBytes(size_, "--size", &gen_.size_bytes);
    uint64_t align = 0;
    if (s.ok() && !align_.empty()) s = ParseBytes(align_, "--align", &align);
    if (!s.ok()) return ReportError("gen", s);
    gen_.align = align;
    gen_.progress = !quiet_;
    return dry_run_ ? DryRun() : Write();
  }

 private:
  int DryRun() {
    GenPlan plan;
    if (Status s = PlanGenerated(gen_, &plan); !s.ok()) return ReportError("gen", s);
    fmt::print("{}\n{} tensors, {} of tensor data, {} file {} ({} bytes)\n",
               plan.model.description, plan.model.tensors.size(),
               FormatBytes(plan.model.tensor_bytes), gen_.format,
               FormatBytes(plan.layout.file_size), plan.layout.file_size);
    return 0;
  }

  int Write() {
    InstallInterruptHandlers();
    GenResult r;
    if (Status s = Generate(gen_, &r); !s.ok()) {
      return Interrupted() ? 130 : ReportError("gen", s);
    }
    if (r.reused) {
      fmt::print("{}: reusing existing file of the same spec ({}, {} tensors, checksum {:016x})\n",
                 gen_.out_path, FormatBytes(r.file_bytes), r.tensor_count, r.checksum);
    } else {
      fmt::print("{}: wrote {} ({} tensors, checksum {:016x}) in {:.2f} s, {:.0f} MB/s\n",
                 gen_.out_path, FormatBytes(r.file_bytes), r.tensor_count, r.checksum, r.seconds,
                 r.seconds > 0 ? r.file_bytes / r.seconds / 1e6 : 0.0);
    }
    fmt::print("{}\n", r.description);
    return 0;
  }

  GenOptions gen_;
  std::string size_, align_;
  bool quiet_ = false, dry_run_ = false;
};

}  // namespace

std::unique_ptr<Command> GenCommand() { return std::make_unique<Gen>(); }

}  // namespace loadbench::cli
