#include "loaders/checksum.h"

#include <memory>

#include <xxhash.h>

namespace loadbench {

uint64_t ChecksumTensors(const std::vector<TensorBytes>& views) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                 &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  for (const auto& v : views) XXH3_64bits_update(state.get(), v.data(), v.size());
  return XXH3_64bits_digest(state.get());
}

}  // namespace loadbench
