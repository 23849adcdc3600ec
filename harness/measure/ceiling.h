// The disk's ceiling: the device's limit over the bytes a load reads (every shard, whole), read
// cold by the recipes of harness/probe/read_recipes.h, in this process (launch/ceiling.h), in
// every cold round (record/record.h kCeiling). Which recipe: the one the cached probe of this
// boot found fastest on the file's device; without one, every recipe in the command's first
// ceiling run of the file (the fastest gives the figure), and that fastest in the later ones.
#pragma once

#include <map>
#include <string>

#include "harness/launch/ceiling.h"

namespace loadbench {

class DiskCeiling final : public CeilingRead {
 public:
  void Read(const LaunchRequest& req, RunRecord* r) override;

 private:
  // The read recipe each file's later ceiling runs repeat, by file: the fastest of the
  // command's first ceiling run of it, which measured them all.
  std::map<std::string, std::string> recipe_of_file_;
};

}  // namespace loadbench
