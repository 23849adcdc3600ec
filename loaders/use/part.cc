#include "loaders/use/part.h"

#include <algorithm>
#include <optional>
#include <set>
#include <vector>

#include <fmt/format.h>

#include "loaders/format/layers.h"

namespace loadbench {
namespace {

// [k * n / readers, (k + 1) * n / readers): reader k's share of n things, contiguous and as
// even as integers allow.
std::pair<uint64_t, uint64_t> Share(uint64_t n, int k, int readers) {
  return {n * static_cast<uint64_t>(k) / static_cast<uint64_t>(readers),
          n * static_cast<uint64_t>(k + 1) / static_cast<uint64_t>(readers)};
}

// How a tensor is cut along one dimension: `outer` pieces (one per index of the dimensions
// before it), each `len` indices long, `unit` bytes per index.
struct Cut {
  size_t dim = 0;
  uint64_t outer = 1, len = 1, unit = 0;
};

Status CutOf(const std::string& path, const TensorInfo& t, int dim, int readers, Cut* c) {
  const std::string tp = ReadPattern{ReadPattern::Kind::kTp, dim}.Text();
  if (t.shape.empty()) {
    return Status::BadInput(fmt::format("{}: {} cannot split tensor '{}' among {} readers: it "
                                        "is a scalar",
                                        path, tp, t.name, readers));
  }
  c->dim = std::min(static_cast<size_t>(dim), t.shape.size() - 1);
  c->outer = 1;
  for (size_t i = 0; i < c->dim; ++i) c->outer *= t.shape[i];
  c->len = t.shape[c->dim];
  if (c->len % static_cast<uint64_t>(readers) != 0) {
    return Status::BadInput(fmt::format(
        "{}: {} cannot split tensor '{}' among {} readers: its dimension {} is {}, not a "
        "multiple of {}",
        path, tp, t.name, readers, c->dim, c->len, readers));
  }
  const uint64_t indices = c->outer * c->len;
  if (indices == 0 || t.size % indices != 0) {
    return Status::BadInput(fmt::format(
        "{}: {} cannot split tensor '{}' ({}) along dimension {}: its {} bytes are stored in "
        "blocks that a slice would cut",
        path, tp, t.name, t.dtype, c->dim, t.size));
  }
  c->unit = t.size / indices;
  return Status::Ok();
}

// Reader k's slices of tensor `t`, appended to `out`.
void Slices(const TensorInfo& t, const Cut& c, int k, int readers, std::vector<TensorInfo>* out) {
  const auto [first, last] = Share(c.len, k, readers);
  std::vector<uint64_t> shape = {last - first};
  shape.insert(shape.end(), t.shape.begin() + static_cast<long>(c.dim) + 1, t.shape.end());
  for (uint64_t o = 0; o < c.outer; ++o) {
    TensorInfo s;
    s.name = t.name;
    s.dtype = t.dtype;
    s.shape = shape;
    s.offset = t.offset + (o * c.len + first) * c.unit;
    s.size = (last - first) * c.unit;
    s.shard = t.shard;
    out->push_back(std::move(s));
  }
}

// Which reader each tensor goes to under pp, or why the model cannot be split so.
Status PipelineStages(const std::string& path, const TensorTable& model, int readers,
                      std::vector<int>* stage) {
  std::set<int> layers;
  for (const TensorInfo& t : model.tensors) {
    if (auto l = LayerOf(t.name)) layers.insert(*l);
  }
  if (static_cast<int>(layers.size()) < readers) {
    return Status::BadInput(fmt::format(
        "{}: pp cannot split the model among {} readers: it has {} layers (by tensor name)", path,
        readers, layers.size()));
  }
  const std::vector<int> sorted(layers.begin(), layers.end());
  stage->assign(model.tensors.size(), readers - 1);
  bool seen_layer = false;
  for (size_t i = 0; i < model.tensors.size(); ++i) {
    const auto l = LayerOf(model.tensors[i].name);
    seen_layer = seen_layer || l.has_value();
    if (!l) {
      (*stage)[i] = seen_layer ? readers - 1 : 0;
      continue;
    }
    const auto at =
        static_cast<uint64_t>(std::lower_bound(sorted.begin(), sorted.end(), *l) - sorted.begin());
    for (int k = 0; k < readers; ++k) {
      const auto [first, last] = Share(sorted.size(), k, readers);
      if (at >= first && at < last) (*stage)[i] = k;
    }
  }
  return Status::Ok();
}

// The part's table: `pieces` (in the model's order), with the shards they lie in.
TensorTable Assemble(const TensorTable& model, std::vector<TensorInfo> pieces) {
  TensorTable t;
  t.format = model.format;
  t.layout = model.layout;
  t.big_endian = model.big_endian;
  t.header = nlohmann::ordered_json::object();
  std::vector<std::optional<uint32_t>> renumbered(model.shards.size());
  for (size_t i = 0; i < pieces.size(); ++i) {
    TensorInfo& p = pieces[i];
    if (!renumbered[p.shard]) {
      ShardInfo s = model.shards[p.shard];
      s.tensor_bytes = 0;
      s.first_tensor = i;
      s.tensor_count = 0;
      s.expected_checksum.reset();
      renumbered[p.shard] = static_cast<uint32_t>(t.shards.size());
      t.file_size += s.file_size;
      t.shards.push_back(std::move(s));
    }
    p.shard = *renumbered[p.shard];
    t.shards[p.shard].tensor_bytes += p.size;
    t.shards[p.shard].tensor_count += 1;
    t.tensor_bytes += p.size;
  }
  t.data_offset = t.shards.empty() ? model.data_offset : t.shards.front().data_offset;
  t.tensors = std::move(pieces);
  return t;
}

}  // namespace

std::string ReadPattern::Text() const {
  switch (kind) {
    case Kind::kReplicated:
      return "replicated";
    case Kind::kTp:
      return dim == 0 ? "tp" : fmt::format("tp:{}", dim);
    case Kind::kPp:
      return "pp";
    case Kind::kFiles:
      return "files";
  }
  return "replicated";
}

Status ParsePattern(const std::string& text, ReadPattern* out) {
  *out = ReadPattern{};
  if (text == "replicated") return Status::Ok();
  if (text == "pp") return out->kind = ReadPattern::Kind::kPp, Status::Ok();
  if (text == "files") return out->kind = ReadPattern::Kind::kFiles, Status::Ok();
  out->kind = ReadPattern::Kind::kTp;
  if (text == "tp") return Status::Ok();
  if (text.size() > 3 && text.size() < 6 && text.rfind("tp:", 0) == 0 &&
      std::all_of(text.begin() + 3, text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    out->dim = std::stoi(text.substr(3));
    return Status::Ok();
  }
  return Status::BadInput(fmt::format(
      "unknown read pattern '{}' (the patterns are: replicated, tp, tp:DIM, pp, files)", text));
}

Status CheckSplit(const std::string& path, const TensorTable& model, const ReadPattern& p,
                  int readers) {
  TensorTable part;
  return PartOf(path, model, p, 0, readers, &part);
}

Status PartOf(const std::string& path, const TensorTable& model, const ReadPattern& p, int index,
              int readers, TensorTable* out) {
  std::vector<TensorInfo> pieces;
  switch (p.kind) {
    case ReadPattern::Kind::kReplicated:
      pieces = model.tensors;
      break;
    case ReadPattern::Kind::kTp:
      for (const TensorInfo& t : model.tensors) {
        Cut c;
        LB_RETURN_IF_ERROR(CutOf(path, t, p.dim, readers, &c));
        Slices(t, c, index, readers, &pieces);
      }
      break;
    case ReadPattern::Kind::kPp: {
      std::vector<int> stage;
      LB_RETURN_IF_ERROR(PipelineStages(path, model, readers, &stage));
      for (size_t i = 0; i < model.tensors.size(); ++i) {
        if (stage[i] == index) pieces.push_back(model.tensors[i]);
      }
      break;
    }
    case ReadPattern::Kind::kFiles: {
      if (static_cast<int>(model.shards.size()) < readers) {
        return Status::BadInput(
            fmt::format("{}: files cannot split the model among {} readers: it has {} file{}", path,
                        readers, model.shards.size(), model.shards.size() == 1 ? "" : "s"));
      }
      const auto [first, last] = Share(model.shards.size(), index, readers);
      for (const TensorInfo& t : model.tensors) {
        if (t.shard >= first && t.shard < last) pieces.push_back(t);
      }
      break;
    }
  }
  *out = Assemble(model, std::move(pieces));
  return Status::Ok();
}

}  // namespace loadbench
