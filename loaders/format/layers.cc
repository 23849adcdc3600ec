#include "loaders/format/layers.h"

#include <algorithm>
#include <map>
#include <regex>

namespace loadbench {

std::optional<int> LayerOf(const std::string& name) {
  static const std::regex kLayer(
      R"((?:^|\.)(?:blk|layers|layer|h|block|blocks)\.(\d{1,6})(?:\.|$))");
  std::smatch m;
  if (!std::regex_search(name, m, kLayer)) return std::nullopt;
  return std::stoi(m[1].str());
}

namespace {

// Layer numbers of every tensor, and how many tensors come before the first one in a layer.
struct Layering {
  std::vector<std::optional<int>> layer;
  size_t first_layered = 0;
};

Layering LayeringOf(const TensorTable& table) {
  Layering l;
  l.layer.reserve(table.tensors.size());
  for (const TensorInfo& t : table.tensors) l.layer.push_back(LayerOf(t.name));
  l.first_layered = l.layer.size();
  for (size_t i = 0; i < l.layer.size(); ++i) {
    if (l.layer[i]) {
      l.first_layered = i;
      break;
    }
  }
  return l;
}

}  // namespace

std::vector<size_t> ForwardOrder(const TensorTable& table) {
  const Layering l = LayeringOf(table);
  std::vector<size_t> order;
  order.reserve(l.layer.size());
  std::map<int, std::vector<size_t>> layers;
  std::vector<size_t> after;
  for (size_t i = 0; i < l.layer.size(); ++i) {
    if (l.layer[i]) {
      layers[*l.layer[i]].push_back(i);
    } else if (i < l.first_layered) {
      order.push_back(i);
    } else {
      after.push_back(i);
    }
  }
  for (const auto& [n, idx] : layers) order.insert(order.end(), idx.begin(), idx.end());
  order.insert(order.end(), after.begin(), after.end());
  return order;
}

std::vector<bool> FirstUseSet(const TensorTable& table) {
  const Layering l = LayeringOf(table);
  std::vector<bool> set(l.layer.size(), false);
  if (l.first_layered == l.layer.size()) return set;
  int lowest = *l.layer[l.first_layered];
  for (const auto& n : l.layer) {
    if (n) lowest = std::min(lowest, *n);
  }
  for (size_t i = 0; i < l.layer.size(); ++i) {
    set[i] = i < l.first_layered ? !l.layer[i] : l.layer[i] == lowest;
  }
  return set;
}

std::vector<TensorGroup> LayerGroups(const TensorTable& table) {
  std::vector<TensorGroup> groups;
  for (size_t i = 0; i < table.tensors.size(); ++i) {
    const TensorInfo& t = table.tensors[i];
    const std::optional<int> layer = LayerOf(t.name);
    if (groups.empty() || groups.back().layer != layer) {
      groups.emplace_back();
      groups.back().layer = layer;
    }
    TensorGroup& g = groups.back();
    g.tensors.push_back(i);
    // Offsets are within a shard's file: a range never mixes two shards. The table lists its
    // tensors shard by shard, so a group's tensors of one shard are consecutive.
    if (g.ranges.empty() || g.ranges.back().shard != t.shard) {
      g.ranges.push_back(ShardRange{t.shard, t.offset, t.offset + t.size});
      continue;
    }
    ShardRange& r = g.ranges.back();
    if (t.size == 0) continue;
    if (r.begin == r.end) {
      r.begin = t.offset, r.end = t.offset + t.size;
    } else {
      r.begin = std::min(r.begin, t.offset);
      r.end = std::max(r.end, t.offset + t.size);
    }
  }
  for (TensorGroup& g : groups) g.begin = g.ranges.front().begin, g.end = g.ranges.front().end;
  return groups;
}

}  // namespace loadbench
