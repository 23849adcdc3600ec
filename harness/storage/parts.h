// Inside harness/storage: a storage's state as it is made (storage.cc), what each kind family
// does to make it (filesystems.cc, images.cc, overlay.cc, fuse.cc), and the steps they share:
// programs run, progress said, files copied, mounts made and undone. Every thing made is added
// to `undo` the moment it is journaled, so that a failure half-way removes exactly what was
// made, in reverse order.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "harness/storage/storage.h"
#include "loaders/base/status.h"

namespace loadbench {

// One thing made outside the process, journaled (process/journal.h), undone in reverse order.
struct MadeThing {
  enum Kind { kFolder, kLoop, kMount, kProcess };
  Kind kind = kFolder;
  std::string what = {};     // the folder, "/dev/loopN", the mount point, "PGID\tSTARTTIME"
  std::string backing = {};  // kLoop: the file it is bound to
  pid_t pid = -1;  // kProcess: the group's first process (a child of ours, reaped at the end)
};

// A program run and its arguments, as Env() reports them.
struct ProgramUsed {
  std::string program = {};            // "mkfs.xfs"
  std::string version = {};            // "6.1.0"
  std::vector<std::string> args = {};  // after the program's name
};

struct StorageParts {
  std::string who;  // progress prefix: "loadbench run: storage xfs"
  std::vector<MadeThing> undo;
  std::string folder;       // the backing folder (/tmp/loadbench-storage-*): the file, the image
  std::string root;         // where the model's files are (a mount point)
  std::string served_root;  // fuse: the local folder the server serves
  std::string backing;      // the backing file or image ("" for tmpfs, fuse)
  std::string loop;         // "loop3": the loop device reads of the model go through
  std::string fs;           // "xfs", "squashfs", "overlay", "tmpfs", "fuse.rclone"
  std::string lower_fs;     // overlay: its lower layer's ("ext4")
  std::string cached_in;    // overlay: the lower layer's folder, whose files hold the page cache
  ProgramUsed maker;        // mkfs, mksquashfs, mkfs.erofs, rclone
  std::string mount_options;
  uint64_t bytes = 0;  // the backing file's, the image's or the tmpfs's size
  double made_s = 0;
  // Enter(): the throttling group made, and the one this process was in.
  std::string cgroup, cgroup_from;
  bool cgroup_v2 = false;
};

// "{who}: STEP (S s)" on stderr, when who is not empty.
void SayStep(const StorageParts& p, const std::string& step, double seconds);
// Seconds since `t0` (a steady clock's now(), as a double of seconds).
double SecondsSince(double t0);
double SteadyNow();

// `argv` run to its end (argv[0] a program's name, found on PATH or in /usr/sbin, /sbin; a
// missing one names `package`), its output in *out when given; kIOError with its last lines.
Status RunTool(const std::vector<std::string>& argv, const std::string& package,
               std::string* out = nullptr);
// The program `name`'s path: PATH, then /usr/sbin, /sbin (a root tool's place). kUnsupported
// naming the Debian `package` when it is nowhere.
Status FindTool(const std::string& name, const std::string& package, std::string* path);
// The first "N.N[.N]" in `name --version`'s (or `flag`'s) output; "" when none.
std::string ToolVersion(const std::string& name, const std::string& flag);
// The first "N.N[.N]" in `text`; "" when none.
std::string FirstVersion(const std::string& text);

// A folder of the storage's own, /tmp/loadbench-PREFIX-XXXXXX, journaled and to be undone.
Status MakeFolder(StorageParts* p, const std::string& prefix, std::string* dir);
// `file` bound to a free loop device with direct I/O (read-only when asked): journaled (kLoop)
// before, and to be undone; p->loop names it. A device taken by another process between the
// pick and losetup is picked again.
Status AttachJournaledLoop(StorageParts* p, const std::string& file, bool read_only);
// `source` mounted on `dir` (a folder MakeFolder made) with mount(2): journaled (kMount) before,
// and to be undone. The options the kernel shows for it go to p->mount_options.
Status MountOn(StorageParts* p, const std::string& source, const std::string& dir,
               const std::string& type, unsigned long flags, const std::string& data);
// The options /proc/self/mounts shows for the mount at `dir`; "" when none is there.
std::string MountOptionsAt(const std::string& dir);
bool MountedAt(const std::string& dir);

// The model's files copied into `dir` (by name), each fsync'ed and dropped from the page cache,
// then the file system synced: the copy is on the device. Their bytes in *bytes.
Status CopyFiles(const StorageParts& p, const std::vector<std::string>& files,
                 const std::string& dir, uint64_t* bytes);
// The sum of the files' sizes.
Status FilesBytes(const std::vector<std::string>& files, uint64_t* bytes);
// Whether /tmp has `need` bytes free; kUnsupported saying how much is needed and free.
Status CheckTmpSpace(uint64_t need, const std::string& what);
// Where the storage's folders are made.
inline constexpr const char* kStorageTmp = "/tmp";

// What each kind family makes (p->root set to where the files are; p->loop for a loop device).
Status MakeLoopFilesystem(const StorageSpec& spec, const Storage::Made& how, StorageParts* p);
Status MakeImage(const StorageSpec& spec, const Storage::Made& how, StorageParts* p);
Status MakeOverlay(const StorageSpec& spec, const Storage::Made& how, StorageParts* p);
Status MakeTmpfs(const StorageSpec& spec, const Storage::Made& how, StorageParts* p);
Status MakeFuse(const StorageSpec& spec, const Storage::Made& how, StorageParts* p);

// The file system of `kind` made on a new backing file of `bytes` in p->folder, attached to a
// loop device and mounted on a new mount folder (set in *mount): ext4, xfs, btrfs (with
// `compress`, "" for none). Used by MakeLoopFilesystem and by the overlay's lower layer.
Status LoopFilesystem(StorageParts* p, const std::string& kind, const std::string& compress,
                      uint64_t bytes, std::string* mount);
// The backing file's size for `model_bytes` on `kind`: the model, its slack and the file
// system's own, at least what mkfs takes.
uint64_t BackingBytes(const std::string& kind, uint64_t model_bytes);

// The value of option `key` in `spec` ("" when not given).
std::string OptionOf(const StorageSpec& spec, const std::string& key);
// The compression a kind uses when none is given: squashfs zstd, erofs and btrfs none.
std::string DefaultCompress(const std::string& kind);

// The process group of `pid` (a child of ours: rclone) ended: SIGTERM, then SIGKILL after 2 s,
// reaped; kIOError when some process of the group outlives it.
Status EndProcessGroup(pid_t pid);

// Where `path` (one of the model's files) is on the storage: its name relative to the folder
// the server serves, under the mount point, for fuse; its name under the mount point else.
std::string PathOnStorage(const StorageParts& p, const std::string& kind, const std::string& path);

// Undoes one thing made (unmount, detach, end, remove) and strikes it off the journal; on
// failure it stays journaled and the status says why.
Status UndoThing(const MadeThing& t);

}  // namespace loadbench
