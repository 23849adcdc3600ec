// The checksum consumer: reads every byte of every tensor once, in table order, and computes
// the xxh3-64 the file stores. Running it is what makes a load complete.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "loaders/format/tensor_table.h"
#include "loaders/loader.h"
#include "loaders/status.h"

namespace loadbench {

// `after_first`, when given, is called once the first tensor has been read: the moment the
// consumer could have started using the model's first tensor.
uint64_t ChecksumTensors(const std::vector<TensorBytes>& views,
                         const std::function<void()>& after_first = nullptr);

// The same checksum read straight from the file with plain preads, in table order: the
// reference a file without a stored checksum is checked against.
Status ChecksumFile(int fd, const std::string& path, const TensorTable& table, uint64_t* out);

}  // namespace loadbench
