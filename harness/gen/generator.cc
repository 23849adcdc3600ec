// The generator's front: the options checked and planned (the format's own rules are its
// encoder's, encoder.h), then the file written by the parallel writer (writer.h) under a
// temporary name and published (publish.h), or the model in shards (sharded.h); a file or
// model already there of the same spec is kept (reuse.h).
#include "harness/gen/generator.h"

#include <xxhash.h>

#include <chrono>

#include <fmt/format.h>

#include "harness/gen/encoder.h"
#include "harness/gen/presets.h"
#include "harness/gen/publish.h"
#include "harness/gen/reuse.h"
#include "harness/gen/sharded.h"
#include "harness/gen/shards.h"
#include "harness/gen/writer.h"
#include "harness/process/interrupt.h"
#include "harness/process/journal.h"

namespace loadbench {
namespace {

// The options that are new since v1 appear only when they differ from the old layout, so that
// every file written before them keeps its spec id and is still reused. A sharded model's spec
// holds its sharding: every shard and the index carry it.
std::string SpecString(const GenOptions& o) {
  return fmt::format(
      "loadbench-gen v1 format={} preset={} size={} dtype={} align={} seed={}{}{}{}{}", o.format,
      o.preset, o.size_bytes, o.dtype, o.align, o.seed, o.endian == "big" ? " endian=big" : "",
      o.misalign != 0 ? fmt::format(" misalign={}", o.misalign) : "",
      o.shards != 0 ? fmt::format(" shards={}", o.shards) : "",
      o.shard_size != 0 ? fmt::format(" shard_size={}", o.shard_size) : "");
}

// Checks the options that do not depend on the preset, in the order their messages are given,
// and resolves the alignment, byte order and misalignment into `p`.
Status CheckOptions(const GenOptions& opts, const GenEncoder& encoder, GenPlan* p) {
  if (opts.size_bytes == 0) return Status::BadInput("size must be greater than 0");
  if (opts.shards != 0 && opts.shard_size != 0) {
    return Status::BadInput(
        "shards and shard size exclude each other: give the number of shards or the largest "
        "shard size, not both");
  }
  LB_RETURN_IF_ERROR(encoder.Align(opts.align, &p->align));
  if (opts.endian != "little" && opts.endian != "big") {
    return Status::BadInput(fmt::format("unknown endian '{}' (use little or big)", opts.endian));
  }
  p->byte_order = opts.endian == "big" ? std::endian::big : std::endian::little;
  LB_RETURN_IF_ERROR(encoder.CheckByteOrder(p->byte_order));
  if (opts.misalign > 63) {
    return Status::BadInput(
        fmt::format("misalign {} must be 0 to 63 (bytes past a 64-byte boundary)", opts.misalign));
  }
  if (opts.misalign != 0) LB_RETURN_IF_ERROR(encoder.CheckMisalign(opts.misalign));
  p->misalign = opts.misalign;
  return Status::Ok();
}

// Generate for a plan of one file.
Status GenerateOne(const GenOptions& opts, const GenEncoder& encoder, const GenPlan& plan,
                   GenResult* result) {
  const FileLayout& layout = plan.layout;
  const std::string& out = opts.out_path;
  const std::string dir = DirOf(out);
  bool exists = false;
  uint64_t old_bytes = 0;
  LB_RETURN_IF_ERROR(CheckOutputPath(out, dir, &exists, &old_bytes));

  GenResult r;
  r.description = plan.model.description;
  r.tensor_count = plan.model.tensors.size();
  r.tensor_bytes = plan.model.tensor_bytes;
  r.model_path = out;
  r.files = {out};
  if (exists && ReuseExisting(out, plan, &r)) {
    *result = std::move(r);
    return Status::Ok();
  }
  LB_RETURN_IF_ERROR(MakeRoom(exists ? std::vector<std::string>{out} : std::vector<std::string>{},
                              dir, old_bytes, layout.file_size));

  const auto start = std::chrono::steady_clock::now();
  TempFile tmp(TempSibling(out));
  LB_RETURN_IF_ERROR(tmp.Open());
  LB_RETURN_IF_ERROR(Reserve(tmp, layout.file_size));
  uint64_t checksum = 0;
  Progress progress(opts.progress, layout.file_size);
  LB_RETURN_IF_ERROR(
      WriteData(opts, plan, layout, plan.model.tensors, 0, tmp, &progress, 0, nullptr, &checksum));
  if (Interrupted()) return Status::Failed("interrupted");
  progress.Update(layout.file_size, true);
  LB_RETURN_IF_ERROR(
      WriteHead(encoder, plan, {&plan.model.tensors, checksum}, layout, tmp.fd(), tmp.path()));
  LB_RETURN_IF_ERROR(Publish(&tmp, out, dir));

  r.file_bytes = layout.file_size;
  r.checksum = checksum;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  *result = std::move(r);
  return Status::Ok();
}

}  // namespace

Status PlanGenerated(const GenOptions& opts, GenPlan* out) {
  const GenEncoder* encoder = FindEncoder(opts.format);
  if (encoder == nullptr) {
    return Status::BadInput(
        fmt::format("unknown format '{}' (use {})", opts.format, EncoderNames()));
  }
  GenPlan p;
  LB_RETURN_IF_ERROR(CheckOptions(opts, *encoder, &p));
  WlfDType dtype;
  if (!WlfDTypeFromName(opts.dtype, &dtype)) {
    return Status::BadInput(fmt::format("unknown dtype '{}' (use bf16 or f16)", opts.dtype));
  }
  LB_RETURN_IF_ERROR(PlanPreset(opts.preset, opts.size_bytes, dtype, &p.model));
  GenOptions resolved = opts;
  resolved.align = p.align;
  const std::string spec = SpecString(resolved);
  p.spec_id = XXH3_64bits(spec.data(), spec.size());
  std::vector<std::byte> head;
  LB_RETURN_IF_ERROR(encoder->EncodeHead(p, {&p.model.tensors}, &p.layout, &head));
  p.model_path = opts.out_path;
  p.total_bytes = p.layout.file_size;
  if (opts.shards != 0 || opts.shard_size != 0) {
    LB_RETURN_IF_ERROR(PlanShards(opts, *encoder, &p));
  }
  *out = std::move(p);
  return Status::Ok();
}

std::string ModelPath(const GenOptions& opts) {
  if (opts.shards == 0 && opts.shard_size == 0) return opts.out_path;
  const GenEncoder* encoder = FindEncoder(opts.format);
  if (encoder == nullptr || encoder->indexed()) return IndexPath(opts.out_path);
  if (opts.shards != 0) return ShardPath(opts.out_path, opts.format, 0, opts.shards);
  GenPlan p;  // the first split's name holds the shard count
  return PlanGenerated(opts, &p).ok() ? p.model_path : "";
}

Status Generate(const GenOptions& opts, GenResult* result) {
  if (opts.out_path.empty()) return Status::BadInput("no output file given");
  if (opts.threads < 0) {
    return Status::BadInput(fmt::format("threads {} must be >= 0", opts.threads));
  }
  GenPlan plan;
  LB_RETURN_IF_ERROR(PlanGenerated(opts, &plan));
  const GenEncoder& encoder = *FindEncoder(opts.format);  // planned: a known format
  if (!plan.shards.empty()) return GenerateSharded(opts, encoder, plan, result);
  return GenerateOne(opts, encoder, plan, result);
}

}  // namespace loadbench
