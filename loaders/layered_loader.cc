// layered: one layer at a time. The file range of a layer's tensors is mapped, handed to the
// consumer, then advised MADV_DONTNEED and unmapped before the next layer is mapped, while the
// next layer's range is read ahead (POSIX_FADV_WILLNEED). Peak RSS is bounded by the largest
// layer instead of the file: the way to use a model larger than memory. A sharded model is
// walked as one: a layer whose tensors lie in several shards is one mapping per shard, each
// read ahead and released likewise.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>

#include <fmt/format.h>

#include "loaders/base/file_io.h"
#include "loaders/loader.h"

namespace loadbench {
namespace {

class LayeredLoader final : public Loader {
 public:
  explicit LayeredLoader(const Params& p)
      : advice_(p.Choice("advice")), ahead_(p.On("ahead")), drop_(p.On("drop")) {}

  Status Load(const std::string& path, const TensorTable&, std::vector<TensorBytes>*) override {
    return Status::Unsupported(fmt::format(
        "{}: layered hands out one layer at a time (LoadGroups); it never holds every tensor",
        path));
  }

  Status LoadGroups(const std::string& path, const TensorTable& table,
                    const std::vector<TensorGroup>& groups, const GroupUse& use) override {
    // One descriptor per file of the model: a single file is the model's path, a sharded
    // model's files are its shards'.
    const size_t files = table.sharded() ? table.shards.size() : 1;
    std::vector<std::string> paths(files);
    std::vector<UniqueFd> fds(files);
    for (size_t k = 0; k < files; ++k) {
      paths[k] = table.sharded() ? table.shards[k].path : path;
      const uint64_t expected = table.sharded() ? table.shards[k].file_size : table.file_size;
      LB_RETURN_IF_ERROR(OpenReadOnly(paths[k], 0, &fds[k]));
      uint64_t size;
      LB_RETURN_IF_ERROR(FileSize(fds[k].get(), paths[k], &size));
      if (size != expected) {
        return Status::BadInput(fmt::format("{}: file changed size since it was validated "
                                            "({} -> {})",
                                            paths[k], expected, size));
      }
    }
    for (const TensorGroup& g : groups) {
      for (const ShardRange& r : g.ranges) {
        if (r.shard >= files) {
          return Status::BadInput(fmt::format(
              "{}: a layer's tensors lie in shard {}, the model has {}", path, r.shard, files));
        }
      }
    }
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const int advice = advice_ == "willneed"     ? MADV_WILLNEED
                       : advice_ == "sequential" ? MADV_SEQUENTIAL
                                                 : -1;
    auto empty = [](const ShardRange& r) { return r.end == r.begin; };
    for (size_t n = 0; n < groups.size(); ++n) {
      const TensorGroup& g = groups[n];
      if (ahead_) {
        for (size_t k = n + 1; k < groups.size(); ++k) {
          if (std::all_of(groups[k].ranges.begin(), groups[k].ranges.end(), empty)) continue;
          for (const ShardRange& r : groups[k].ranges) {
            if (empty(r)) continue;
            // Advice only: the read-ahead may be refused or cut short without harm.
            ::posix_fadvise(fds[r.shard].get(), static_cast<off_t>(r.begin),
                            static_cast<off_t>(r.end - r.begin), POSIX_FADV_WILLNEED);
          }
          break;
        }
      }
      std::vector<TensorBytes> views(g.tensors.size());
      if (std::all_of(g.ranges.begin(), g.ranges.end(), empty)) {
        LB_RETURN_IF_ERROR(use(g, views));
        continue;
      }
      // One mapping per shard the layer touches; `starts[j]` is where mappings[j] begins.
      std::vector<Mapping> mappings(g.ranges.size());
      std::vector<uint64_t> starts(g.ranges.size(), 0);
      uint64_t group_bytes = 0;
      for (size_t j = 0; j < g.ranges.size(); ++j) {
        const ShardRange& r = g.ranges[j];
        if (empty(r)) continue;
        starts[j] = r.begin / page * page;
        const uint64_t len = r.end - starts[j];
        LB_RETURN_IF_ERROR(MapPrivate(fds[r.shard].get(), paths[r.shard], starts[j], len, 0,
                                      writable_, &mappings[j]));
        if (advice >= 0 && ::madvise(mappings[j].mutable_data(), len, advice) != 0) {
          return Status::FromErrno(fmt::format("{}: madvise on layer {}", paths[r.shard], n),
                                   errno);
        }
        group_bytes += len;
      }
      for (size_t k = 0; k < g.tensors.size(); ++k) {
        const TensorInfo& t = table.tensors[g.tensors[k]];
        if (t.size == 0) continue;
        size_t j = 0;
        while (j < g.ranges.size() && g.ranges[j].shard != t.shard) ++j;
        if (j == g.ranges.size() || empty(g.ranges[j])) {
          return Status::BadInput(fmt::format(
              "{}: tensor {} of layer {} lies outside the layer's ranges", path, t.name, n));
        }
        views[k] = TensorBytes(mappings[j].data() + (t.offset - starts[j]), t.size);
      }
      Status s = use(g, views);
      const auto release = std::chrono::steady_clock::now();
      for (size_t j = 0; j < g.ranges.size(); ++j) {
        Mapping& m = mappings[j];
        if (m.size() == 0) continue;
        const uint64_t len = m.size();
        // Private pages (a transform in place) are freed here, not at some later reclaim.
        ::madvise(m.mutable_data(), len, MADV_DONTNEED);
        m.reset();
        if (drop_) {
          ::posix_fadvise(fds[g.ranges[j].shard].get(), static_cast<off_t>(starts[j]),
                          static_cast<off_t>(len), POSIX_FADV_DONTNEED);
        }
      }
      released_s_ +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - release).count();
      LB_RETURN_IF_ERROR(s);
      ++layers_;
      largest_ = std::max(largest_, group_bytes);
    }
    return Status::Ok();
  }

  nlohmann::json Details() const override {
    return {{"groups_mapped", layers_}, {"largest_group_bytes", largest_}};
  }
  double released_s() const override { return released_s_; }

 private:
  std::string advice_;
  bool ahead_;
  bool drop_;
  uint64_t layers_ = 0;
  uint64_t largest_ = 0;
  double released_s_ = 0;
};

}  // namespace

LOADBENCH_REGISTER_STRATEGY((StrategyInfo{
    .name = "layered",
    .summary = "map one layer's range, consume it, MADV_DONTNEED and unmap it, then the next; "
               "peak RSS bounded by the largest layer",
    .options =
        {
            {"advice", OptionSpec::Kind::kChoice, "willneed",
             "madvise on each layer's mapping", {"none", "sequential", "willneed"}},
            {"ahead", OptionSpec::Kind::kChoice, "on",
             "read the next layer ahead (POSIX_FADV_WILLNEED) while this one is used", kOnOff},
            {"drop", OptionSpec::Kind::kChoice, "off",
             "also drop each used layer from the page cache (POSIX_FADV_DONTNEED)", kOnOff},
        },
    .make = [](const Params& p) -> std::unique_ptr<Loader> {
      return std::make_unique<LayeredLoader>(p);
    },
    .flags = kMapsFile | kStreams | kModel,
}));

}  // namespace loadbench
