#include "harness/gen/sharded.h"

#include <xxhash.h>

#include <chrono>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "harness/gen/publish.h"
#include "harness/gen/reuse.h"
#include "harness/gen/shards.h"
#include "harness/gen/writer.h"
#include "harness/process/interrupt.h"
#include "harness/process/journal.h"
#include "loaders/base/file_io.h"

namespace loadbench {
namespace {

// Every shard of a sharded plan written and synced under a temporary name (into *tmps, in
// shard order), the first shard's head last: a GGUF split's first file holds the model's
// checksum, which is known only once every tensor is written (*model_sum).
Status WriteShards(const GenOptions& opts, const GenEncoder& encoder, const GenPlan& plan,
                   Progress* progress, std::vector<std::unique_ptr<TempFile>>* tmps,
                   uint64_t* model_sum) {
  std::unique_ptr<XXH3_state_t, XxhFree> model_state(XXH3_createState());
  if (!model_state || XXH3_64bits_reset(model_state.get()) == XXH_ERROR) {
    return Status::IOError("xxh3: cannot create hash state");
  }
  uint64_t first_sum = 0, done = 0;
  for (size_t k = 0; k < plan.shards.size(); ++k) {
    if (Interrupted()) return Status::Failed("interrupted");
    const GenShard& s = plan.shards[k];
    tmps->push_back(std::make_unique<TempFile>(TempSibling(s.path)));
    TempFile& tmp = *tmps->back();
    LB_RETURN_IF_ERROR(tmp.Open());
    LB_RETURN_IF_ERROR(Reserve(tmp, s.layout.file_size));
    const std::vector<WlfTensorSpec> tensors = ShardTensors(plan, s);
    uint64_t sum = 0;
    LB_RETURN_IF_ERROR(WriteData(opts, plan, s.layout, tensors, s.first_tensor, tmp, progress, done,
                                 model_state.get(), &sum));
    if (Interrupted()) return Status::Failed("interrupted");
    done += s.layout.file_size;
    if (k == 0) {
      first_sum = sum;  // its head once the model's checksum is known; its file stays open
      continue;
    }
    LB_RETURN_IF_ERROR(
        WriteHead(encoder, plan, {&tensors, sum, k, 0}, s.layout, tmp.fd(), tmp.path()));
    LB_RETURN_IF_ERROR(Finish(&tmp));
  }
  *model_sum = XXH3_64bits_digest(model_state.get());
  const std::vector<WlfTensorSpec> first = ShardTensors(plan, plan.shards[0]);
  TempFile& tmp = *(*tmps)[0];
  LB_RETURN_IF_ERROR(WriteHead(encoder, plan, {&first, first_sum, 0, *model_sum},
                               plan.shards[0].layout, tmp.fd(), tmp.path()));
  return Finish(&tmp);
}

// The index of a sharded safetensors or WLF plan, written and synced under a temporary name.
Status WriteIndex(const GenPlan& plan, uint64_t model_sum, std::unique_ptr<TempFile>* out) {
  const std::string text = ShardIndexText(PlanIndexJson(plan, model_sum));
  if (text.size() != plan.index_bytes) {
    return Status::Failed(
        fmt::format("the index is {} bytes, the plan expects {}", text.size(), plan.index_bytes));
  }
  *out = std::make_unique<TempFile>(TempSibling(plan.index_path));
  LB_RETURN_IF_ERROR((*out)->Open());
  LB_RETURN_IF_ERROR(PwriteExact((*out)->fd(), (*out)->path(), text.data(), text.size(), 0));
  return Finish(out->get());
}

// The files of a sharded plan that are already there (*old) and the disk they hold.
Status OldFiles(const std::vector<std::string>& files, const std::string& dir,
                std::vector<std::string>* old, uint64_t* old_bytes) {
  for (const std::string& path : files) {
    bool exists = false;
    uint64_t bytes = 0;
    LB_RETURN_IF_ERROR(CheckOutputPath(path, dir, &exists, &bytes));
    if (!exists) continue;
    old->push_back(path);
    *old_bytes += bytes;
  }
  return Status::Ok();
}

}  // namespace

Status GenerateSharded(const GenOptions& opts, const GenEncoder& encoder, const GenPlan& plan,
                       GenResult* result) {
  const std::string dir = DirOf(opts.out_path);
  GenResult r;
  r.description = plan.model.description;
  r.tensor_count = plan.model.tensors.size();
  r.tensor_bytes = plan.model.tensor_bytes;
  r.model_path = plan.model_path;
  r.shard_count = plan.shards.size();
  for (const GenShard& s : plan.shards) r.files.push_back(s.path);
  if (!plan.index_path.empty()) r.files.push_back(plan.index_path);

  std::vector<std::string> old;
  uint64_t old_bytes = 0;
  LB_RETURN_IF_ERROR(OldFiles(r.files, dir, &old, &old_bytes));
  if (old.size() == r.files.size() && ReuseSharded(encoder, plan, &r)) {
    *result = std::move(r);
    return Status::Ok();
  }
  LB_RETURN_IF_ERROR(MakeRoom(old, dir, old_bytes, plan.total_bytes));

  const auto start = std::chrono::steady_clock::now();
  Progress progress(opts.progress, plan.total_bytes);
  std::vector<std::unique_ptr<TempFile>> tmps;  // removed, unless renamed, when this returns
  uint64_t model_sum = 0;
  LB_RETURN_IF_ERROR(WriteShards(opts, encoder, plan, &progress, &tmps, &model_sum));
  std::unique_ptr<TempFile> index_tmp;
  if (!plan.index_path.empty()) LB_RETURN_IF_ERROR(WriteIndex(plan, model_sum, &index_tmp));
  progress.Update(plan.total_bytes, true);

  if (Interrupted()) return Status::Failed("interrupted");
  for (size_t k = tmps.size(); k-- > 0;) {
    LB_RETURN_IF_ERROR(Rename(tmps[k].get(), plan.shards[k].path));
  }
  if (index_tmp) LB_RETURN_IF_ERROR(Rename(index_tmp.get(), plan.index_path));
  LB_RETURN_IF_ERROR(FsyncDir(dir));

  r.file_bytes = plan.total_bytes;
  r.checksum = model_sum;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  *result = std::move(r);
  return Status::Ok();
}

}  // namespace loadbench
