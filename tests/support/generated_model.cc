#include "tests/support/generated_model.h"

#include <stdexcept>

#include "harness/gen/generator.h"
#include "harness/launch/worker.h"
#include "harness/record/record.h"

namespace loadbench::test {

void WriteModel(const ModelFile& m) {
  GenOptions g;
  g.preset = m.preset;
  g.size_bytes = m.size;
  g.format = m.format;
  g.out_path = m.path;
  g.seed = m.seed;
  g.endian = m.endian;
  g.threads = 1;
  GenResult r;
  if (const Status s = Generate(g, &r); !s.ok()) {
    throw std::runtime_error(m.path + ": " + s.message());
  }
}

nlohmann::ordered_json WorkerRecord(const std::string& file, const std::string& strategy) {
  std::vector<StrategySpec> specs;
  WorkerRequest req;
  req.file = file;
  if (!ParseStrategyList(strategy, &specs).ok() || specs.size() != 1 ||
      !ResolveSpec(specs[0], &req.strategy).ok()) {
    throw std::runtime_error("not one strategy that resolves: " + strategy);
  }
  req.result_fd = -1;
  return RecordJson(RunWorker(req));
}

}  // namespace loadbench::test
