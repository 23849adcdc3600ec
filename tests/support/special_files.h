// Test support: files that are not regular files (a FIFO, a socket) where a model's file or
// shard is expected, and a guard that lets a test that opens one fail instead of hang. Every
// helper throws std::runtime_error when the system refuses.
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace loadbench::test {

// A FIFO (named pipe) at `path`: an open(2) of it for reading blocks until a writer comes.
void MakeFifo(const std::string& path);

// A Unix socket bound at `path` (the socket itself closed; its file stays).
void MakeSocketFile(const std::string& path);

// Runs `fn` on a thread of its own and waits up to `limit`. True when it returned in time. When
// it did not, opens the FIFO `fifo` for writing, which releases an open(2) blocked on it, waits
// for `fn` to end, and returns false: the test fails rather than hangs.
bool ReturnsWithin(std::chrono::milliseconds limit, const std::string& fifo,
                   const std::function<void()>& fn);

// The limit that tells a call that refuses a FIFO (it returns in microseconds) from one blocked
// in open(2) on it (it never returns until a writer comes): 10 s, slack for the slowest, most
// loaded machine, not a measure of speed.
inline constexpr std::chrono::milliseconds kBlockedOnFifo{10000};

}  // namespace loadbench::test
