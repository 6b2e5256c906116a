// setHttpIoThreads (kube/client.h): the HTTP clients' shared I/O pool is sized once per
// process; zero threads and a second sizing are refused with Invalid, leaving the pool as it is.
#include <gtest/gtest.h>

#include "kube/client.h"

namespace strait::kube {
namespace {

TEST(HttpIoThreads, ZeroAndASecondSizingAreRefused) {
  Status zero = setHttpIoThreads(0);
  EXPECT_EQ(zero.code(), Code::Invalid);
  EXPECT_NE(zero.error().message.find("positive"), std::string::npos);
  // The first sizing in this process, or the pool already runs (another test made a request).
  (void)setHttpIoThreads(2);
  Status again = setHttpIoThreads(2);
  EXPECT_EQ(again.code(), Code::Invalid);
  EXPECT_NE(again.error().message.find("HTTP I/O threads"), std::string::npos);
}

}  // namespace
}  // namespace strait::kube
