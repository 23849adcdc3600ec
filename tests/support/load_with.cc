#include "tests/support/load_with.h"

#include "loaders/format/format.h"
#include "loaders/use/use.h"

namespace loadbench::test {

namespace {

// What a streaming strategy handed out, copied: a Loader only in that it owns the views' bytes.
class CopiedTensors final : public Loader {
 public:
  Status Load(const std::string&, const TensorTable&, std::vector<TensorBytes>*) override {
    return Status::Ok();
  }
  std::vector<std::vector<std::byte>> bytes;
};

}  // namespace

Status LoadWith(const std::string& strategy_text, const std::string& path,
                std::unique_ptr<Loader>* loader, std::vector<TensorBytes>* views) {
  std::vector<StrategySpec> specs;
  LB_RETURN_IF_ERROR(ParseStrategyList(strategy_text, &specs));
  const StrategyInfo* info = FindStrategy(specs[0].name);
  Params params;
  UseOptions use;  // the strategy alone: what follows the load is the worker's
  LB_RETURN_IF_ERROR(ResolveSpec(*info, specs[0], &params, &use));
  TensorTable table;
  LB_RETURN_IF_ERROR(ReadTensorTableFromPath(path, &table));
  *loader = info->make(params);
  if (!(info->flags & kStreams)) {
    LB_RETURN_IF_ERROR((*loader)->Load(path, table, views));
    return (*loader)->AllArrived();
  }
  // A streaming strategy holds one group at a time: keep a copy of each as it passes.
  auto copies = std::make_unique<CopiedTensors>();
  copies->bytes.resize(table.tensors.size());
  LB_RETURN_IF_ERROR((*loader)->LoadGroups(
      path, table, LayerGroups(table),
      [&](const TensorGroup& g, const std::vector<TensorBytes>& group_views) {
        for (size_t k = 0; k < g.tensors.size(); ++k) {
          copies->bytes[g.tensors[k]].assign(group_views[k].begin(), group_views[k].end());
        }
        return Status::Ok();
      }));
  views->clear();
  for (const auto& b : copies->bytes) views->emplace_back(b.data(), b.size());
  *loader = std::move(copies);
  return Status::Ok();
}

}  // namespace loadbench::test
