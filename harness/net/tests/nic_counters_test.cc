// A namespace's interface counters as /proc/net/dev gives them.
#include "harness/net/nic_counters.h"

#include <gtest/gtest.h>

namespace loadbench {
namespace {

// A cluster node's namespace: its loopback and its one NIC.
constexpr const char* kNodeNetDev =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
    "drop fifo colls carrier compressed\n"
    "    lo:   23456      12    0    0    0     0          0         0    23456      12    0    "
    "0    0     0       0          0\n"
    "   nic: 18446744073709551000 1070968    0    0    0     0          0         0 1084230   "
    "12561    0    0    0     0       0          0\n";

TEST(ParseNetDev, SumsTheNamespacesInterfacesButTheLoopback) {
  NicCounters c;
  ASSERT_TRUE(ParseNetDev(kNodeNetDev, &c).ok());
  EXPECT_EQ(c.rx_bytes, 18446744073709551000ULL);
  EXPECT_EQ(c.tx_bytes, 1084230u);
  EXPECT_EQ(c.interfaces, 1);
  // ifb devices carry a shaped interface's ingress again: not counted twice.
  const std::string more = std::string(kNodeNetDev) +
                           "  eth1:100 1 0 0 0 0 0 0 200 2 0 0 0 0 0 0\n"
                           "  ifb0:100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n";
  NicCounters two;
  ASSERT_TRUE(ParseNetDev(more, &two).ok());
  EXPECT_EQ(two.rx_bytes, 18446744073709551100ULL);
  EXPECT_EQ(two.tx_bytes, 1084430u);
  EXPECT_EQ(two.interfaces, 2);
}

TEST(ParseNetDev, NamesWhatItCannotRead) {
  NicCounters c;
  Status s = ParseNetDev("    lo: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n", &c);
  EXPECT_EQ(s.message(), "/proc/net/dev: no interface but the loopback in this namespace");
  s = ParseNetDev("  eth0: 1 2 3\n", &c);
  EXPECT_EQ(s.message(), "/proc/net/dev: interface eth0 has 3 counters, not 16");
  s = ParseNetDev("garbage\n", &c);
  EXPECT_EQ(s.message(), "/proc/net/dev: line 'garbage' is not an interface's");
}

TEST(ReadNicCounters, ReadsThisNamespace) {
  NicCounters c;
  const Status s = ReadNicCounters(&c);
  if (!s.ok()) GTEST_SKIP() << s.message();  // a namespace with only its loopback
  EXPECT_GE(c.interfaces, 1);
}

}  // namespace
}  // namespace loadbench
