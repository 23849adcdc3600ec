// loadbench: how do multi-GB model weights get from disk into memory fastest, and at what cost?
// The command line: gen, inspect, run, list, and the internal worker.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "loadbench_commit.h"
#include "harness/gen/generator.h"
#include "harness/gen/presets.h"
#include "harness/interrupt.h"
#include "harness/runner.h"
#include "harness/worker.h"
#include "loaders/format/format.h"
#include "loaders/loader.h"
#include "loaders/units.h"

namespace loadbench {
namespace {

int Fail(const char* cmd, const Status& s) {
  fmt::print(stderr, "loadbench {}: {}\n", cmd, s.message());
  return s.exit_code();
}

std::string JoinArgs(int argc, char** argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) out += (i ? " " : "") + std::string(argv[i]);
  return out;
}

int Inspect(const std::string& path, bool json) {
  TensorTable t;
  Status s = ReadTensorTableFromPath(path, &t);
  if (!s.ok()) return Fail("inspect", s);
  if (json) {
    nlohmann::ordered_json j;
    j["file"] = path;
    j["format"] = t.format;
    j["file_bytes"] = t.file_size;
    j["data_offset"] = t.data_offset;
    j["tensor_bytes"] = t.tensor_bytes;
    j["header"] = t.header;
    j["tensors"] = nlohmann::ordered_json::array();
    for (const auto& x : t.tensors) {
      j["tensors"].push_back(nlohmann::ordered_json{{"name", x.name},
                                                    {"dtype", x.dtype},
                                                    {"shape", x.shape},
                                                    {"offset", x.offset},
                                                    {"size", x.size}});
    }
    fmt::print("{}\n", j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    return 0;
  }
  fmt::print("file: {}\nformat: {}\nsize: {} ({} bytes)\n", path, t.format,
             FormatBytes(t.file_size), t.file_size);
  for (const auto& [k, v] : t.header.items()) {
    fmt::print("  {}: {}\n", k, v.is_string() ? v.get<std::string>() : v.dump());
  }
  fmt::print("tensors: {}, {} in all\n", t.tensors.size(), FormatBytes(t.tensor_bytes));
  size_t width = 4;
  for (const auto& x : t.tensors) width = std::max(width, x.name.size());
  fmt::print("{:>6}  {:<{}}  {:<7} {:<22} {:>14} {:>14}\n", "#", "name", width, "dtype", "shape",
             "offset", "bytes");
  for (size_t i = 0; i < t.tensors.size(); ++i) {
    const auto& x = t.tensors[i];
    std::string shape = "[";
    for (size_t d = 0; d < x.shape.size(); ++d) shape += (d ? ", " : "") + std::to_string(x.shape[d]);
    shape += "]";
    fmt::print("{:>6}  {:<{}}  {:<7} {:<22} {:>14} {:>14}\n", i, x.name, width, x.dtype, shape,
               x.offset, x.size);
  }
  return 0;
}

int List() {
  for (const StrategyInfo* s : Strategies()) {
    const std::string why = s->unsupported_reason();
    fmt::print("{:<10} {}\n", s->name, s->summary);
    fmt::print("{:<10} supported here: {}\n", "", why.empty() ? "yes" : "no: " + why);
    for (const auto& o : s->options) {
      fmt::print("{:<10}   {}={} ({}): {}\n", "", o.name, o.default_value,
                 o.kind == OptionSpec::Kind::kBytes ? "bytes" : "integer", o.help);
    }
  }
  return 0;
}

}  // namespace
}  // namespace loadbench

int main(int argc, char** argv) {
  using namespace loadbench;
  CLI::App app{
      "loadbench: measures how model weight files get from disk into memory, and what each way "
      "costs in time, memory, page faults and CPU."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string(LOADBENCH_VERSION " (" LOADBENCH_COMMIT ")"));

  // gen
  GenOptions gen;
  std::string gen_size, gen_align = "4096";
  auto* gen_cmd = app.add_subcommand(
      "gen", "Generate a model-shaped weight file with deterministic, incompressible content "
             "(reuses an existing file of the same spec)");
  std::string presets;
  for (const auto& p : PresetNames()) presets += (presets.empty() ? "" : "|") + p;
  gen_cmd->add_option("--preset", gen.preset, "Model shape: " + presets)->capture_default_str();
  gen_cmd->add_option("--size", gen_size, "Target size of the tensor data, e.g. 2GiB, 512MiB")
      ->required();
  gen_cmd->add_option("--format", gen.format, "File format (wlf)")->capture_default_str();
  gen_cmd->add_option("--out", gen.out_path, "Output file")->required();
  gen_cmd->add_option("--seed", gen.seed, "Content seed")->capture_default_str();
  gen_cmd->add_option("--align", gen_align, "Tensor alignment in bytes (power of two, >= 64)")
      ->capture_default_str();
  gen_cmd->add_option("--dtype", gen.dtype, "Element type: bf16 or f16")->capture_default_str();
  gen_cmd->add_option("--threads", gen.threads, "Generator threads (0: one per core)")
      ->capture_default_str();
  bool gen_quiet = false, gen_dry_run = false;
  gen_cmd->add_flag("--quiet", gen_quiet, "No progress output");
  gen_cmd->add_flag("--dry-run", gen_dry_run, "Print the model shape and file size; write nothing");

  // inspect
  std::string inspect_file;
  bool inspect_json = false;
  auto* inspect_cmd =
      app.add_subcommand("inspect", "Validate a weight file and print its header and tensor table");
  inspect_cmd->add_option("file", inspect_file, "Weight file")->required();
  inspect_cmd->add_flag("--json", inspect_json, "Print JSON");

  // run
  RunOptions run;
  std::string run_strategies = "fread,mmap,mmap_seq", run_cache = "both";
  auto* run_cmd = app.add_subcommand(
      "run", "Load a file with each strategy in a fresh worker process, cold and/or warm, "
             "verify every load by checksum, and record the runs");
  run_cmd->add_option("--file", run.file, "Weight file")->required();
  run_cmd->add_option("--strategies", run_strategies,
                      "Comma-separated strategies, each with optional :key=value options, "
                      "e.g. fread:chunk=4MiB,mmap (see `loadbench list`)")
      ->capture_default_str();
  run_cmd->add_option("--cache", run_cache, "Cache state: cold, warm or both")
      ->check(CLI::IsMember({"cold", "warm", "both"}))
      ->capture_default_str();
  run_cmd->add_option("--reps", run.reps, "Repetitions of every strategy and cache state")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  run_cmd->add_option("--out", run.out_dir,
                      "Results folder (default: results/run-<UTC time>); must not hold runs yet");
  run_cmd->add_option("--experiment", run.experiment, "Name recorded in every run")
      ->capture_default_str();
  run_cmd->add_option("--timeout", run.timeout_s, "Seconds before a run is killed (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();

  auto* list_cmd =
      app.add_subcommand("list", "List the strategies, their options, and whether each runs here");

  // worker (internal: the runner's child process)
  WorkerRequest worker;
  int worker_fd = 1;
  auto* worker_cmd = app.add_subcommand("worker", "Internal: one load in a worker process");
  worker_cmd->group("");  // hidden from --help
  worker_cmd->add_option("--file", worker.file)->required();
  worker_cmd->add_option("--strategy", worker.strategy)->required();
  worker_cmd->add_option("--result-fd", worker_fd)->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and exit 0; a usage error is one line and exit code 2.
    if (e.get_exit_code() == 0) return app.exit(e);
    fmt::print(stderr, "loadbench: {} (see --help)\n", e.what());
    return 2;
  }

  if (*gen_cmd) {
    Status s = ParseBytes(gen_size, "--size", &gen.size_bytes);
    uint64_t align = 0;
    if (s.ok()) s = ParseBytes(gen_align, "--align", &align);
    if (!s.ok()) return Fail("gen", s);
    gen.align = align;
    gen.progress = !gen_quiet;
    if (gen_dry_run) {
      WlfDType dtype;
      ModelPlan plan;
      WlfLayout layout;
      if (!WlfDTypeFromName(gen.dtype, &dtype)) {
        return Fail("gen", Status::BadInput(fmt::format("--dtype: unknown dtype '{}'", gen.dtype)));
      }
      s = PlanPreset(gen.preset, gen.size_bytes, dtype, &plan);
      if (s.ok()) s = PlanWlf(plan.tensors, gen.align, &layout);
      if (!s.ok()) return Fail("gen", s);
      fmt::print("{}\n{} tensors, {} of tensor data, file {} ({} bytes)\n", plan.description,
                 plan.tensors.size(), FormatBytes(plan.tensor_bytes), FormatBytes(layout.file_size),
                 layout.file_size);
      return 0;
    }
    InstallInterruptHandlers();
    GenResult r;
    s = Generate(gen, &r);
    if (!s.ok()) return Interrupted() ? 130 : Fail("gen", s);
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
  if (*inspect_cmd) return Inspect(inspect_file, inspect_json);
  if (*list_cmd) return List();
  if (*worker_cmd) return WorkerMain(worker, worker_fd);
  if (*run_cmd) {
    Status s = ParseStrategyList(run_strategies, &run.strategies);
    if (!s.ok()) return Fail("run", s);
    if (run_cache == "both") {
      run.caches = {"cold", "warm"};
    } else {
      run.caches = {run_cache};
    }
    run.command_line = JoinArgs(argc, argv);
    return RunBenchmark(run);
  }
  return 2;
}
