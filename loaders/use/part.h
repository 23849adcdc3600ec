// Read patterns: what each of N readers loading one model together reads, as a tensor table of
// its own (its part). Readers are the workers of a run with procs > 1 on one machine, or the
// ranks of an MPI job (harness/launch/job.h). A reader loads its part with the run's strategy,
// as it would load a model, and verifies it against the part's own checksum.
//
//   replicated  every reader loads the whole model (an autoscaler's N servers)
//   tp[:D]      each reader loads its 1/N slice of every tensor along dimension D (default 0),
//               as a tensor-parallel rank does: along dimension 0 a slice is one contiguous
//               range of rows; along a later one it is one strided piece per index of the
//               dimensions before it. A tensor with fewer dimensions is split along its last.
//   pp          each reader loads a contiguous range of layers (by tensor name, as the
//               layered strategy groups them), a pipeline stage; the tensors before the first
//               layer (embeddings) go to the first reader, the others outside the layers
//               (final norm, output) to the last
//   files       a sharded model's files divided among the readers in contiguous ranges
//
// Every pattern but replicated delivers each tensor byte of the model exactly once over all
// readers; replicated delivers it N times.
#pragma once

#include <cstdint>
#include <string>

#include "loaders/base/status.h"
#include "loaders/format/tensor_table.h"

namespace loadbench {

struct ReadPattern {
  enum class Kind { kReplicated, kTp, kPp, kFiles };
  Kind kind = Kind::kReplicated;
  int dim = 0;  // tp only
  // "replicated", "tp", "tp:1", "pp", "files": as written in experiments and records.
  std::string Text() const;
  bool replicated() const { return kind == Kind::kReplicated; }
  bool operator==(const ReadPattern& o) const { return kind == o.kind && dim == o.dim; }
  bool operator!=(const ReadPattern& o) const { return !(*this == o); }
};

// kBadInput naming the word and the patterns there are.
Status ParsePattern(const std::string& text, ReadPattern* out);

// Whether `p` splits `model` (read from `path`) among `readers`: kBadInput with one line naming
// the model, the pattern and why not (more readers than layers or files, a dimension that does
// not divide, a tensor stored in blocks that a slice would cut).
Status CheckSplit(const std::string& path, const TensorTable& model, const ReadPattern& p,
                  int readers);

// Reader `index`'s part (0 <= index < readers): its tensors (or slices) in the model's table
// order, each with its own file offset and size; only the shards it reads, with their files'
// sizes; no stored checksum (the runner gives the part's). Errors as CheckSplit.
Status PartOf(const std::string& path, const TensorTable& model, const ReadPattern& p, int index,
              int readers, TensorTable* out);

}  // namespace loadbench
