// The disk's ceiling: the device's limit over the bytes a load reads (every shard, whole), read
// cold by the recipes of harness/probe/read_recipes.h, in this process (launch/ceiling.h), in
// every cold round (record/record.h kCeiling). Which recipe: the one the cached probe of this
// boot found fastest on the file's device; without one (the probe measured another device: a
// storage's file is never on the machine probe's), every recipe in the command's first ceiling
// run of the file (the fastest gives the figure), and that fastest in the later ones. "The
// file" is the file as it is now (FileKey): for the same model on another storage, the recipe
// is chosen again.
#pragma once

#include <map>
#include <string>

#include "harness/launch/ceiling.h"

namespace loadbench {

class DiskCeiling final : public CeilingRead {
 public:
  void Read(const LaunchRequest& req, RunRecord* r) override;

  // What the recipe of a run's files is kept by: the model's name (req.worker.file), then every
  // file's path, device (major:minor), inode and change time (ctime, in ns). A file made again
  // (copied onto another storage, or onto the same loop device and mount point anew) has another.
  static std::string FileKey(const LaunchRequest& req);

 private:
  // The read recipe each file's later ceiling runs repeat, by FileKey: the fastest of the
  // command's first ceiling run of it, which measured them all.
  std::map<std::string, std::string> recipe_of_file_;
};

}  // namespace loadbench
