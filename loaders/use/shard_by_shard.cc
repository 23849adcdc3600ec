#include "loaders/use/shard_by_shard.h"

#include <optional>

#include <fmt/format.h>

#include "loaders/format/model.h"

namespace loadbench {
namespace {

class ShardByShard final : public Loader {
 public:
  ShardByShard(const StrategyInfo& info, const Params& params) : info_(info), params_(params) {}

  Status Load(const std::string&, const TensorTable& table,
              std::vector<TensorBytes>* views) override {
    for (size_t k = 0; k < table.shards.size(); ++k) {
      loaders_.push_back(info_.make(params_));
      if (writable_) loaders_.back()->RequestWritable();
      if (part_) loaders_.back()->SetPart(*part_);
      LB_RETURN_IF_ERROR(loaders_.back()->Load(table.shards[k].path, ShardTable(table, k), views));
    }
    return Status::Ok();
  }

  // Each shard's loader is told the same: its table is this part's tensors in that shard.
  void SetPart(const PartPlace& place) override { part_ = place; }

  Status LoadToDevice(const std::string& path, const TensorTable&, DeviceLoad*) override {
    return Status::Unsupported(fmt::format(
        "{}: a sharded model; '{}' packs one file into GPU memory and does not load shards yet",
        path, info_.name));
  }

  // Every shard's details, in shard order, when the strategy reports any.
  nlohmann::json Details() const override {
    nlohmann::json shards = nlohmann::json::array();
    bool any = false;
    for (const auto& l : loaders_) {
      shards.push_back(l->Details());
      any = any || !shards.back().empty();
    }
    if (!any) return nlohmann::json::object();
    return {{"shards", shards}};
  }

  std::vector<TimeSpan> released() const override {
    std::vector<TimeSpan> spans;
    for (const auto& l : loaders_) {
      const std::vector<TimeSpan> more = l->released();
      spans.insert(spans.end(), more.begin(), more.end());
    }
    return spans;
  }

 private:
  const StrategyInfo& info_;
  Params params_;
  std::optional<PartPlace> part_;
  std::vector<std::unique_ptr<Loader>> loaders_;
};

}  // namespace

std::unique_ptr<Loader> MakeModelLoader(const StrategyInfo& info, const Params& params,
                                        const TensorTable& table) {
  if (!table.sharded() || (info.flags & kModel)) return info.make(params);
  return std::make_unique<ShardByShard>(info, params);
}

}  // namespace loadbench
