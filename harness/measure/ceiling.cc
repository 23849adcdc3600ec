// The ceiling run: the device's limit over the bytes a load reads (every shard, whole), read
// cold by the recipes of harness/probe/read_recipes.h, in this process, beside the strategies'
// runs of a round (record/record.h kCeiling). Which recipe: the one the cached probe of this
// boot found fastest on the file's device; without one, every recipe in the command's first
// ceiling run of the file (the fastest gives the figure), and that fastest in the later ones.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "harness/measure/measure.h"
#include "harness/probe/probe.h"
#include "harness/probe/read_recipes.h"
#include "harness/cache/cache.h"
#include "harness/process/interrupt.h"

namespace loadbench {
namespace {

using Json = nlohmann::ordered_json;

// On this kind of VM a cold run that comes right after the ceiling's O_DIRECT read is slow: 1.39x
// its group's median against 0.93x after another run (40 A/A experiments, docs/rounds.md). A
// buffered read of the files in between takes most of that (1.12x against 0.90x over 12), so
// that the strategies' runs pay less for the ceiling. Its seconds, or nullopt when it failed.
std::optional<double> Settle(const std::vector<std::string>& paths) {
  const auto t0 = std::chrono::steady_clock::now();
  for (const std::string& path : paths) {
    if (Status s = WarmFile(path); !s.ok()) {
      fmt::print(stderr, "loadbench: the read after the ceiling: {}\n", s.message());
      return std::nullopt;
    }
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The recipe a ceiling run of `file` repeats, and *by where it was chosen ("first_ceiling":
// the command's first ceiling run of the file; "probe": the cached probe of this boot, made on
// the file's device); nullptr where neither chose one.
const probe::ReadRecipe* Chosen(const MeasureSettings& s, const PreparedFile& file,
                                std::string* by) {
  if (const auto it = s.ceilings->recipe_of_file.find(file.path);
      it != s.ceilings->recipe_of_file.end()) {
    *by = "first_ceiling";
    return probe::FindRecipe(it->second);
  }
  std::string why;
  const std::optional<Json> cached = CachedProbe(file.table.shards.at(0).path, &why);
  if (!cached || cached->value("same_device", Json()) != true) return nullptr;
  const Json limit = (*cached)["ceilings"].value("device_limit", Json());
  const Json name = limit.is_object() ? limit.value("recipe", Json()) : Json();
  const probe::ReadRecipe* recipe =
      name.is_string() ? probe::FindRecipe(name.get<std::string>()) : nullptr;
  if (recipe != nullptr) *by = "probe";
  return recipe;  // a probe's recipe this build does not know: measure them all
}

// Every recipe's figure, by name: {"gb_per_s": x} or {"gb_per_s": null, "reason": why}.
Json Figures(const std::vector<Json>& measured) {
  Json out = Json::object();
  for (const Json& m : measured) {
    Json f = {{"gb_per_s", m["gb_per_s"]}};
    if (m.contains("reason")) f["reason"] = m["reason"];
    out[m["recipe"].get<std::string>()] = std::move(f);
  }
  return out;
}

// The record of the measured recipes: the fastest's figure and params, or why none gave one
// ("unsupported" when none can run here).
void Fill(const std::vector<Json>& measured, const std::string& by, RunRecord* r) {
  const Json* best = nullptr;
  std::vector<std::string> reasons;
  bool all_unsupported = true;
  for (const Json& m : measured) {
    if (m["gb_per_s"].is_number()) {
      if (best == nullptr || m["gb_per_s"] > (*best)["gb_per_s"]) best = &m;
      continue;
    }
    reasons.push_back(
        fmt::format("{}: {}", m["recipe"].get<std::string>(), m.value("reason", "no figure")));
    all_unsupported = all_unsupported && m.value("unsupported", false);
  }
  if (measured.size() > 1) r->ceiling_recipes = Figures(measured);
  if (best == nullptr) {
    r->status = all_unsupported ? "unsupported" : "failed";
    r->error = fmt::format("{}", fmt::join(reasons, "; "));
    return;
  }
  const auto bytes = (*best)["bytes"].get<uint64_t>();
  r->status = "ok";
  r->params = (*best)["params"];
  r->params["chosen"] = by;
  r->gb_per_s = (*best)["gb_per_s"].get<double>();
  r->wall_s = static_cast<double>(bytes) / (*r->gb_per_s * 1e9);
  r->ceiling_bytes = bytes;
}

}  // namespace

Status MeasureCeiling(const MeasureSettings& s, RunRecord r, Reporter& out,
                      const PreparedFile& file, bool* interrupted) {
  std::vector<std::string> paths;
  for (const ShardInfo& shard : file.table.shards) paths.push_back(shard.path);
  std::string by = "measured";
  std::vector<Json> measured;
  if (const probe::ReadRecipe* chosen = Chosen(s, file, &by)) {
    measured.push_back(probe::ColdRecipeRead(*chosen, paths, 1));
  } else {
    for (const probe::ReadRecipe& recipe : probe::kReadRecipes) {
      if (Interrupted()) break;
      measured.push_back(probe::ColdRecipeRead(recipe, paths, 1));
    }
  }
  if (Interrupted()) {
    *interrupted = true;
    return Status::Ok();  // no record: the run did not finish
  }
  Fill(measured, by, &r);
  if (r.status == "ok") {
    if (by == "measured") s.ceilings->recipe_of_file[file.path] = r.params["recipe"];
    r.settle_s = Settle(paths);
  }
  std::vector<RunRecord> batch = {std::move(r)};
  return out.Write(batch);
}

}  // namespace loadbench
