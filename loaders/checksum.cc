#include "loaders/checksum.h"

#include <memory>

#include <xxhash.h>

namespace loadbench {

uint64_t ChecksumTensors(const std::vector<TensorBytes>& views,
                         const std::function<void()>& after_first) {
  std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                 &XXH3_freeState);
  XXH3_64bits_reset(state.get());
  for (size_t i = 0; i < views.size(); ++i) {
    XXH3_64bits_update(state.get(), views[i].data(), views[i].size());
    if (i == 0 && after_first) after_first();
  }
  return XXH3_64bits_digest(state.get());
}

}  // namespace loadbench
