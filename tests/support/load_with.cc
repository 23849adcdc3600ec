#include "tests/support/load_with.h"

#include "loaders/format/format.h"

namespace loadbench::test {

Status LoadWith(const std::string& strategy_text, const std::string& path,
                std::unique_ptr<Loader>* loader, std::vector<TensorBytes>* views) {
  std::vector<StrategySpec> specs;
  LB_RETURN_IF_ERROR(ParseStrategyList(strategy_text, &specs));
  const StrategyInfo* info = FindStrategy(specs[0].name);
  Params params;
  LB_RETURN_IF_ERROR(Params::Resolve(info->name, info->options, specs[0].options, &params));
  TensorTable table;
  LB_RETURN_IF_ERROR(ReadTensorTableFromPath(path, &table));
  *loader = info->make(params);
  return (*loader)->Load(path, table, views);
}

}  // namespace loadbench::test
