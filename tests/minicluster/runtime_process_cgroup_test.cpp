// The pure parts of the process runtime's cgroups: where this process's hierarchies are, the
// parent's name, the limits of a container, the stat files' fields, and sampling /proc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "minicluster/netns.h"
#include "minicluster/runtime_process_cgroup.h"

namespace strait::minicluster {
namespace {

using json = nlohmann::json;

// This machine's layout: cgroup v1 for cpu/cpuacct/memory (memory delegated to a sub-cgroup),
// an empty cgroup2 at /sys/fs/cgroup/unified.
const char* kHybridCgroup =
    "9:name=systemd:/\n"
    "4:memory:/process_api/f811\n"
    "2:cpuacct:/\n"
    "1:cpu:/\n"
    "0::/\n";
const char* kHybridMountinfo =
    "30 25 0:26 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "31 30 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "32 30 0:28 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
    "34 30 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "40 30 0:36 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

TEST(CgroupMountsTest, HybridLayoutFindsEachV1ControllerAtOurPath) {
  CgroupMounts m = parseCgroupMounts(kHybridCgroup, kHybridMountinfo);
  EXPECT_EQ(m.unifiedDir, "/sys/fs/cgroup/unified");
  EXPECT_EQ(m.v1Dirs["memory"], "/sys/fs/cgroup/memory/process_api/f811");
  EXPECT_EQ(m.v1Dirs["cpu"], "/sys/fs/cgroup/cpu");
  EXPECT_EQ(m.v1Dirs["cpuacct"], "/sys/fs/cgroup/cpuacct");
  // Where a sweep looks for a predecessor's parent: the hierarchies in use, not the tmpfs.
  EXPECT_EQ(m.mountPoints, (std::vector<std::string>{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuacct",
                                                     "/sys/fs/cgroup/memory",
                                                     "/sys/fs/cgroup/unified"}));
}

TEST(CgroupMountsTest, CoMountedControllersAndUnifiedOnly) {
  CgroupMounts v1 = parseCgroupMounts(
      "3:cpu,cpuacct:/kubepods/x\n4:memory:/kubepods/x\n",
      "31 30 0:27 / /sys/fs/cgroup/cpu,cpuacct rw shared:9 - cgroup cgroup rw,cpu,cpuacct\n"
      "34 30 0:30 / /sys/fs/cgroup/memory rw shared:10 - cgroup cgroup rw,memory\n");
  EXPECT_EQ(v1.v1Dirs["cpu"], "/sys/fs/cgroup/cpu,cpuacct/kubepods/x");
  EXPECT_EQ(v1.v1Dirs["cpuacct"], "/sys/fs/cgroup/cpu,cpuacct/kubepods/x");
  EXPECT_TRUE(v1.unifiedDir.empty());
  // A pure cgroup2 machine, inside a container whose cgroup namespace root is mounted.
  CgroupMounts v2 = parseCgroupMounts(
      "0::/user.slice/session-1.scope\n",
      "25 1 0:23 /user.slice /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n");
  EXPECT_EQ(v2.unifiedDir, "/sys/fs/cgroup/session-1.scope");
  EXPECT_TRUE(v2.v1Dirs.empty());
}

TEST(CgroupMountsTest, MalformedTextGivesNothing) {
  CgroupMounts m = parseCgroupMounts("garbage\n::\n", "1 2 3\n - \n");
  EXPECT_TRUE(m.unifiedDir.empty());
  EXPECT_TRUE(m.v1Dirs.empty());
}

TEST(CgroupNameTest, ParentCarriesTheClusterMarkerSoTwoClustersNeverShare) {
  std::string a = cgroupParentName("alpha");
  EXPECT_EQ(a, "strait-" + networkMarker("alpha") + "-alpha");
  EXPECT_NE(a, cgroupParentName("beta"));
}

TEST(ContainerLimitsTest, AsTheKubeletComputesThem) {
  json c = {{"resources",
             {{"limits", {{"cpu", "500m"}, {"memory", "32Mi"}}},
              {"requests", {{"cpu", "250m"}, {"memory", "16Mi"}}}}}};
  ContainerLimits l = containerLimits(c);
  EXPECT_EQ(l.memoryBytes, 32 * 1024 * 1024);
  EXPECT_EQ(l.cpuQuotaUs, 50000);
  EXPECT_EQ(l.cpuPeriodUs, 100000);
  EXPECT_EQ(l.cpuShares, 256);
  EXPECT_EQ(l.cpuWeight(), 1 + (254 * 9999) / 262142);
}

TEST(ContainerLimitsTest, NoRequestTakesTheLimitAndNothingMeansNoLimit) {
  ContainerLimits onlyLimit = containerLimits(json{{"resources", {{"limits", {{"cpu", "2"}}}}}});
  EXPECT_EQ(onlyLimit.cpuShares, 2048);
  EXPECT_EQ(onlyLimit.cpuQuotaUs, 200000);
  EXPECT_FALSE(onlyLimit.memoryBytes);
  ContainerLimits none = containerLimits(json{{"name", "c"}});
  EXPECT_FALSE(none.memoryBytes);
  EXPECT_FALSE(none.cpuQuotaUs);
  EXPECT_EQ(none.cpuShares, 2);
  EXPECT_EQ(none.cpuWeight(), 1);
  // Tiny CPU limits keep the kernel's 1 ms minimum quota; garbage is ignored.
  EXPECT_EQ(containerLimits(json{{"resources", {{"limits", {{"cpu", "1m"}}}}}}).cpuQuotaUs, 1000);
  EXPECT_FALSE(containerLimits(json{{"resources", {{"limits", {{"memory", "lots"}}}}}}).memoryBytes);
}

TEST(StatFieldTest, ReadsKeyedLines) {
  const char* stat = "cache 4096\nrss 123\ntotal_rss 456\ntotal_inactive_file 8192\n";
  EXPECT_EQ(statField(stat, "rss"), 123u);
  EXPECT_EQ(statField(stat, "total_rss"), 456u);
  EXPECT_EQ(statField(stat, "total_inactive_file"), 8192u);
  EXPECT_FALSE(statField(stat, "anon"));
  EXPECT_EQ(statField("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", "oom_kill"), 2u);
  EXPECT_FALSE(statField("oom_kill x\n", "oom_kill"));
}

TEST(SampleSessionTest, CountsTheSessionsProcessesFromProc) {
  // This test process leads no session of its own in general; ask for the session it is in.
  UsageSample s = sampleSession(::getsid(0));
  ASSERT_TRUE(s.cpuNs.has_value());
  ASSERT_TRUE(s.rss.has_value());
  EXPECT_GT(*s.rss, 0u);
  EXPECT_EQ(s.workingSet, s.rss);
  EXPECT_FALSE(sampleSession(999999999).cpuNs.has_value());
}

}  // namespace
}  // namespace strait::minicluster
