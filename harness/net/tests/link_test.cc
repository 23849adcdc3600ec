// Links: rates and delays as tc and netem take them, checked before anything is made; and, as
// root with iproute2, a link made, shaped both ways, measured by iperf3 within 5% of its rate,
// and removed with nothing left in the namespaces, the devices or the leftovers journal.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "harness/net/iperf.h"
#include "harness/net/link.h"
#include "harness/process/child.h"

namespace loadbench {
namespace {

TEST(LinkRate, TakesTcUnitsAndRefusesWhatIsNoRate) {
  uint64_t bits = 0;
  ASSERT_TRUE(ParseLinkRate("1gbit", &bits).ok());
  EXPECT_EQ(bits, 1'000'000'000u);
  ASSERT_TRUE(ParseLinkRate("2.5gbit", &bits).ok());
  EXPECT_EQ(bits, 2'500'000'000u);
  ASSERT_TRUE(ParseLinkRate("100mbps", &bits).ok());  // tc's bps: bytes per second
  EXPECT_EQ(bits, 800'000'000u);
  ASSERT_TRUE(ParseLinkRate("unshaped", &bits).ok());
  EXPECT_EQ(bits, 0u);
  for (const char* bad : {"", "1", "1 gbit", "1Gbit", "gbit", "-1gbit", "1gbit/s"}) {
    const Status s = ParseLinkRate(bad, &bits);
    EXPECT_EQ(s.code(), Status::Code::kBadInput) << bad;
    EXPECT_NE(s.message().find("not a rate"), std::string::npos) << s.message();
  }
  EXPECT_NE(ParseLinkRate("500kbit", &bits).message().find("1mbit to 1tbit"), std::string::npos);
  EXPECT_NE(ParseLinkRate("2tbit", &bits).message().find("1mbit to 1tbit"), std::string::npos);
}

TEST(LinkDelay, TakesNetemUnits) {
  uint64_t us = 0;
  ASSERT_TRUE(ParseLinkDelay("2ms", &us).ok());
  EXPECT_EQ(us, 2000u);
  ASSERT_TRUE(ParseLinkDelay("150us", &us).ok());
  EXPECT_EQ(us, 150u);
  EXPECT_EQ(ParseLinkDelay("2", &us).code(), Status::Code::kBadInput);
  EXPECT_EQ(ParseLinkDelay("11s", &us).code(), Status::Code::kBadInput);
}

bool CanMakeLinks(std::string* why) {
  std::string ip;
  if (::geteuid() != 0) *why = "needs root";
  if (why->empty() && !FindProgram("iperf3", "", &ip).ok()) *why = "no iperf3";
  if (why->empty() && ::access("/usr/sbin/tc", X_OK) != 0) *why = "no tc";
  return why->empty();
}

TEST(Link, IsShapedBothWaysMeasuredAndRemoved) {
  std::string why;
  if (!CanMakeLinks(&why)) GTEST_SKIP() << why;
  std::unique_ptr<Link> link;
  ASSERT_TRUE(Link::Make({"200mbit", "unshaped"}, "", &link).ok());
  const std::string netns = link->netns_path();
  EXPECT_TRUE(std::filesystem::exists(netns));
  std::unique_ptr<LinkMeter> meter;
  ASSERT_TRUE(LinkMeter::Start(*link, &meter).ok());
  ASSERT_TRUE(link->Shape("200mbit").ok());
  nlohmann::ordered_json m;
  const uint64_t rx = link->ClientRxBytes();
  ASSERT_TRUE(meter->Measure(2, 2, &m).ok());
  // TBF counts frames; iperf3 the payload: 1448 of every 1514 bytes, 0.956 of the rate.
  EXPECT_NEAR(m["gb_per_s"].get<double>(), 0.2 / 8 * 0.956, 0.2 / 8 * 0.05) << m.dump();
  EXPECT_GE(link->ClientRxBytes() - rx, m["bytes"].get<uint64_t>());
  const nlohmann::ordered_json env = link->Env();
  EXPECT_EQ(env["client"]["mtu"], 1500);
  EXPECT_NE(env["tc"]["200mbit"]["client_ingress_ifb"].get<std::string>().find("tbf"),
            std::string::npos);
  meter.reset();
  const std::string dev = env["client"]["dev"];
  link.reset();
  EXPECT_FALSE(std::filesystem::exists(netns));
  EXPECT_FALSE(std::filesystem::exists("/sys/class/net/" + dev));
}

}  // namespace
}  // namespace loadbench
