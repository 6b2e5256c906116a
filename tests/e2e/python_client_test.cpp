// The official Python client (Debian's python3-kubernetes) against a minicluster process:
// runs tests/e2e/python/client_smoke.py, which exits non-zero with a message on a failure.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "e2e/cluster_fixture.h"

namespace strait::e2e {
namespace {

namespace fs = std::filesystem;


// Debian's interpreter, which has python3-kubernetes, rather than a python3 from a
// version manager that may come first in PATH.
std::string python() {
  if (access("/usr/bin/python3", X_OK) == 0) {
    return "/usr/bin/python3";
  }
  return "python3";
}

class PythonClientTest : public ClusterTest {};

TEST_F(PythonClientTest, ClientSmoke) {
  std::string script = pythonScript("client_smoke.py");
  ASSERT_TRUE(fs::exists(script)) << script;
  CommandResult r = runCommand({python(), script, cluster().kubeconfig()}, clientEnv(), 90s);
  EXPECT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_THAT(r.out, ::testing::HasSubstr("client_smoke: OK")) << r.describe();
}

}  // namespace
}  // namespace strait::e2e
