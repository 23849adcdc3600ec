#include "loaders/use/pipeline.h"

#include <algorithm>

#include <fmt/format.h>

#include "loaders/format/checksum.h"
#include "loaders/use/shard_by_shard.h"
#include "loaders/use/transform.h"

namespace loadbench {
namespace {

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A view of tensor `i` at its table slot: views handed out for a group go where a whole
// load's would.
std::vector<TensorBytes> Spread(size_t n, const std::vector<size_t>& idx,
                                const std::vector<TensorBytes>& group_views) {
  std::vector<TensorBytes> out(n);
  for (size_t k = 0; k < idx.size(); ++k) out[idx[k]] = group_views[k];
  return out;
}

}  // namespace

// One load of the file by the strategy, and its tensors after the transform.
struct UsePipeline::Model {
  std::unique_ptr<Loader> loader;
  std::vector<TensorBytes> views;    // as the strategy delivered them
  std::vector<TensorBytes> tensors;  // after the transform (the views themselves when none)
  TensorBuffers transformed;         // place=separate: the transform's output
  bool done_transform = false;
};

// A model instance: its load (perhaps shared) and the tensors it binds.
struct UsePipeline::Instance {
  std::shared_ptr<Model> model;
  TensorBuffers copies;  // bind=copy
  std::vector<TensorBytes> tensors;
};

UsePipeline::UsePipeline(const StrategyInfo& info, const Params& params, const UseOptions& use,
                         const std::string& path, const TensorTable& table)
    : info_(info),
      params_(params),
      use_(use),
      path_(path),
      table_(table),
      layer_hash_(XXH3_createState(), &XXH3_freeState) {
  bound_ = table;
  for (size_t i = 0; i < table.tensors.size(); ++i) {
    bound_.tensors[i] = Transformed(use.transform, table.tensors[i]);
    all_.push_back(i);
  }
  first_use_set_ = FirstUseSet(table);
  for (bool b : first_use_set_) first_use_left_ += b ? 1 : 0;
  XXH3_64bits_reset(layer_hash_.get());
}

UsePipeline::~UsePipeline() = default;

Status UsePipeline::Check() const {
  if (use_.transform != "none") return CheckTransform(use_.transform, table_, path_);
  if (table_.big_endian && use_.consume == "forward") {
    return Status::Unsupported(fmt::format(
        "{}: the file's elements are big-endian; consume=forward computes with host-order "
        "numbers, so it needs transform=byteswap",
        path_));
  }
  return Status::Ok();
}

Status UsePipeline::Run() {
  if (info_.flags & kDevice) return RunDevice();
  return (info_.flags & kStreams) ? RunStreaming() : RunWhole();
}

// The strategy does it all: into the GPU, then the checksum kernel there. Ready is when the
// last copy finished; done is when the device's checksum is back.
Status UsePipeline::RunDevice() {
  loader_ = MakeLoader();
  DeviceLoad d;
  Status s = loader_->LoadToDevice(path_, table_, &d);
  details_ = loader_->Details();
  LB_RETURN_IF_ERROR(s);
  ready_ = d.on_device;
  done_ = d.verified;
  consume_s_ = std::chrono::duration<double>(d.verified - d.on_device).count();
  results_.push_back(d.checksum);
  device_ = d;
  return Status::Ok();
}

nlohmann::ordered_json UsePipeline::DeviceJson(Clock::time_point t0) const {
  if (!device_) return nullptr;
  auto secs = [t0](Clock::time_point t) { return std::chrono::duration<double>(t - t0).count(); };
  return {{"on_device_s", secs(device_->on_device)},
          {"device_verify_s",
           std::chrono::duration<double>(device_->verified - device_->on_device).count()},
          {"device_bytes", device_->device_bytes},
          {"pinned_bytes", device_->pinned_bytes},
          {"copied_bytes", device_->copied_bytes}};
}

std::unique_ptr<Loader> UsePipeline::MakeLoader() const {
  std::unique_ptr<Loader> loader = MakeModelLoader(info_, params_, table_);
  if (part_) loader->SetPart(*part_);
  return loader;
}

Status UsePipeline::LoadModel(std::unique_ptr<Model>* out) {
  auto m = std::make_unique<Model>();
  m->loader = MakeLoader();
  if (use_.transform != "none" && use_.place == "inplace") m->loader->RequestWritable();
  m->views.reserve(table_.tensors.size());
  Status s = m->loader->Load(path_, table_, &m->views);
  // A load that goes on after Load returned (owned) says its figures once it is complete
  // (RunWhole); a failed one, now.
  if (!s.ok() && details_.empty()) details_ = m->loader->Details();
  LB_RETURN_IF_ERROR(s);
  m->tensors = m->views;
  *out = std::move(m);
  return Status::Ok();
}

BufferKind UsePipeline::BindBuffer() const {
  return use_.bind_buffer == "thp" ? BufferKind::kThp : BufferKind::kMalloc;
}

TensorTable UsePipeline::SubTable(const std::vector<size_t>& idx) const {
  TensorTable sub;
  for (size_t i : idx) sub.tensors.push_back(bound_.tensors[i]);
  return sub;
}

Status UsePipeline::TransformInto(const std::vector<size_t>& idx,
                                  const std::vector<TensorBytes>& src,
                                  std::vector<TensorBytes>* dst, TensorBuffers* out) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> hash(XXH3_createState(),
                                                                &XXH3_freeState);
  XXH3_64bits_reset(hash.get());
  XXH3_state_t* h = (info_.flags & kStreams) ? layer_hash_.get() : hash.get();
  const bool inplace = use_.place == "inplace";
  if (!inplace) {
    LB_RETURN_IF_ERROR(out->Allocate(BindBuffer(), SubTable(idx), path_));
  }
  for (size_t k = 0; k < idx.size(); ++k) {
    const size_t i = idx[k];
    // A view into a mapping asked writable (RequestWritable), or a buffer of the strategy's.
    std::byte* target = inplace ? const_cast<std::byte*>(src[i].data()) : out->at(k);
    TransformTensor(use_.transform, table_.tensors[i], src[i].data(), target, h);
    (*dst)[i] = TensorBytes(target, bound_.tensors[i].size);
    transformed_bytes_ += table_.tensors[i].size;
  }
  if (!(info_.flags & kStreams)) source_checksums_.push_back(XXH3_64bits_digest(hash.get()));
  return Status::Ok();
}

Status UsePipeline::Bind(const std::vector<size_t>& idx, const std::vector<TensorBytes>& src,
                         std::vector<TensorBytes>* dst, TensorBuffers* copies) {
  *dst = src;
  if (use_.bind == "view") return Status::Ok();
  LB_RETURN_IF_ERROR(copies->Allocate(BindBuffer(), SubTable(idx), path_));
  for (size_t k = 0; k < idx.size(); ++k) {
    const size_t i = idx[k];
    if (!src[i].empty()) std::memcpy(copies->at(k), src[i].data(), src[i].size());
    (*dst)[i] = TensorBytes(copies->at(k), src[i].size());
  }
  return Status::Ok();
}

Status UsePipeline::Consume(Consumer& c, const std::vector<size_t>& order,
                            const std::vector<TensorBytes>& tensors, bool time_first_use,
                            Loader* arriving) {
  for (size_t i : order) {
    if (arriving != nullptr) LB_RETURN_IF_ERROR(arriving->Arrived(i));
    c.Use(i, bound_.tensors[i], tensors[i]);
    if (time_first_use && first_use_set_[i] && --first_use_left_ == 0) {
      first_use_ = Clock::now();
    }
  }
  return Status::Ok();
}

Status UsePipeline::RunWhole() {
  instances_.resize(static_cast<size_t>(use_.instances));
  for (size_t n = 0; n < instances_.size(); ++n) {
    const std::string key = use_.registry ? "model" : fmt::format("model{}", n);
    LB_RETURN_IF_ERROR(registry_.Acquire(
        key, [this](std::unique_ptr<Model>* m) { return LoadModel(m); }, &instances_[n].model));
  }
  ready_ = Clock::now();
  if (use_.transform != "none" || use_.bind == "copy") {
    for (Instance& inst : instances_) LB_RETURN_IF_ERROR(inst.model->loader->AllArrived());
  }
  if (use_.transform != "none") {
    const auto t = Clock::now();
    for (Instance& inst : instances_) {
      Model& m = *inst.model;
      if (m.done_transform) continue;  // shared: converted once, in place or not
      LB_RETURN_IF_ERROR(TransformInto(all_, m.views, &m.tensors, &m.transformed));
      m.done_transform = true;
    }
    transform_s_ = Since(t);
  }
  if (use_.bind == "copy") {
    const auto t = Clock::now();
    for (Instance& inst : instances_) {
      LB_RETURN_IF_ERROR(Bind(all_, inst.model->tensors, &inst.tensors, &inst.copies));
    }
    bind_s_ = Since(t);
  } else {
    for (Instance& inst : instances_) inst.tensors = inst.model->tensors;
  }
  const auto t = Clock::now();
  const std::vector<size_t> order = UseOrder(use_.consume, table_, all_, true, use_.seed);
  for (size_t n = 0; n < instances_.size(); ++n) {
    std::unique_ptr<Consumer> c =
        MakeConsumer(use_.consume, table_.tensors.size(), use_.unaligned == "copy");
    // A view handed out before its bytes arrived is waited for tensor by tensor when used as
    // the strategy delivered it, and whole before a transform or a copy reads it.
    Loader* arriving = instances_[n].model->loader.get();
    LB_RETURN_IF_ERROR(Consume(*c, order, instances_[n].tensors, n == 0, arriving));
    results_.push_back(c->Result());
    if (n == 0) stats_ = c->stats();
  }
  done_ = Clock::now();
  consume_s_ = std::chrono::duration<double>(done_ - t).count();
  // The strategy's own figures as they stand when the load is complete, not when Load returned
  // (mmap_prefetch's thread is still reading then).
  details_ = instances_.front().model->loader->Details();
  return Status::Ok();
}

Status UsePipeline::RunStreaming() {
  loader_ = MakeLoader();
  if (use_.transform != "none" && use_.place == "inplace") loader_->RequestWritable();
  std::unique_ptr<Consumer> c =
      MakeConsumer(use_.consume, table_.tensors.size(), use_.unaligned == "copy");
  bool first = true;
  double transform_s = 0, bind_s = 0, verify_s = 0;
  std::vector<TimeSpan> verified;  // the per-layer checks
  auto use = [&](const TensorGroup& g, const std::vector<TensorBytes>& views) -> Status {
    if (first) ready_ = Clock::now(), first = false;
    std::vector<TensorBytes> tensors = Spread(table_.tensors.size(), g.tensors, views);
    TensorBuffers transformed, copies;
    const std::vector<TensorBytes> delivered = tensors;
    if (use_.transform != "none") {
      const auto t = Clock::now();
      LB_RETURN_IF_ERROR(TransformInto(g.tensors, tensors, &tensors, &transformed));
      transform_s += Since(t);
    }
    if (use_.bind == "copy") {
      const auto t = Clock::now();
      LB_RETURN_IF_ERROR(Bind(g.tensors, tensors, &tensors, &copies));
      bind_s += Since(t);
    }
    const auto t = Clock::now();
    LB_RETURN_IF_ERROR(Consume(*c, UseOrder(use_.consume, table_, g.tensors, false, use_.seed),
                               tensors, true, nullptr));
    consume_s_ += Since(t);
    if (use_.transform == "none" && use_.consume != "checksum") {
      // The layer is gone after this call: its bytes are checked now or never. After the
      // consumer, so that the consumer meets the layer's first faults and I/O, as it would
      // without the check, and the check reads resident pages.
      const auto v = Clock::now();
      for (size_t i : g.tensors) {
        XXH3_64bits_update(layer_hash_.get(), delivered[i].data(), delivered[i].size());
      }
      verified.push_back({v, Clock::now()});
      verify_s += SpanSeconds({verified.back()});
    }
    return Status::Ok();
  };
  Status s = loader_->LoadGroups(path_, table_, LayerGroups(table_), use);
  details_ = loader_->Details();
  LB_RETURN_IF_ERROR(s);
  if (first) ready_ = Clock::now();
  done_ = Clock::now();
  // The layers' checks and releases happened on the way; other strategies do both afterwards.
  kept_out_ = loader_->released();
  kept_out_.insert(kept_out_.end(), verified.begin(), verified.end());
  std::sort(kept_out_.begin(), kept_out_.end(),
            [](const TimeSpan& a, const TimeSpan& b) { return a.begin < b.begin; });
  results_.push_back(c->Result());
  stats_ = c->stats();
  if (use_.transform != "none") transform_s_ = transform_s;
  if (use_.bind == "copy") bind_s_ = bind_s;
  if (use_.transform != "none" || use_.consume != "checksum") {
    source_checksums_.push_back(XXH3_64bits_digest(layer_hash_.get()));
  }
  if (use_.transform == "none" && use_.consume != "checksum") verify_s_ = verify_s;
  return Status::Ok();
}

void UsePipeline::Verify(std::vector<uint64_t>* checksums, std::string* how) {
  if (use_.transform != "none") {
    *how = "transform";
    *checksums = source_checksums_;
  } else if (info_.flags & kDevice) {
    *how = "device";
    *checksums = results_;
  } else if (use_.consume == "checksum") {
    *how = "consumer";
    *checksums = results_;
  } else if (info_.flags & kStreams) {
    *how = "per-layer";
    *checksums = source_checksums_;
  } else {
    *how = "after";
    const auto t = Clock::now();
    checksums->clear();
    for (const Instance& inst : instances_) checksums->push_back(ChecksumTensors(inst.tensors));
    verify_s_ = Since(t);
  }
}

std::vector<TimeSpan> UsePipeline::Timed(Clock::time_point start) const {
  std::vector<TimeSpan> spans;
  Clock::time_point from = start;
  for (const TimeSpan& out : kept_out_) {
    if (out.begin > from) spans.push_back({from, out.begin});
    from = std::max(from, out.end);
  }
  if (done_ > from) spans.push_back({from, done_});
  return spans;
}

double UsePipeline::Release() {
  const auto t = Clock::now();
  const double in_load = loader_ ? SpanSeconds(loader_->released()) : 0;
  instances_.clear();
  loader_.reset();
  return Since(t) + in_load;
}

size_t UsePipeline::loads() const {
  if (info_.flags & (kStreams | kDevice)) return 1;
  std::vector<const Model*> seen;
  for (const Instance& inst : instances_) {
    if (std::find(seen.begin(), seen.end(), inst.model.get()) == seen.end()) {
      seen.push_back(inst.model.get());
    }
  }
  return seen.size();
}

nlohmann::json UsePipeline::Details() const { return details_; }

}  // namespace loadbench
