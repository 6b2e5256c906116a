// vnode/offloading.h: what a Namespace says about its offloading.
#include "vnode/offloading.h"

#include <gtest/gtest.h>

namespace strait::vnode {
namespace {

using nlohmann::json;

TEST(OffloadingTest, ReadsTheMarksOfANamespace) {
  Offloading o = offloadingOf(json::parse(R"({"metadata":{"name":"demo",
    "labels":{"strait.io/offloaded":"true"},
    "annotations":{"strait.io/offload-providers":"cloud","strait.io/namespace-naming":"same"}}})"));
  EXPECT_TRUE(o.offloaded);
  EXPECT_EQ(o.provider, "cloud");
  EXPECT_EQ(o.naming, reflection::NamingStrategy::SameName);

  Offloading any = offloadingOf(json::parse(
      R"({"metadata":{"name":"demo","labels":{"strait.io/offloaded":"true"}}})"));
  EXPECT_TRUE(any.offloaded);
  EXPECT_EQ(any.provider, "");
  EXPECT_EQ(any.naming, reflection::NamingStrategy::Default);
}

TEST(OffloadingTest, MalformedOrAbsentMarksMeanNotOffloaded) {
  for (const char* text :
       {R"({"metadata":{"name":"x"}})", R"({"metadata":{"labels":{"strait.io/offloaded":"yes"}}})",
        R"({"metadata":{"labels":7,"annotations":[1]}})", R"([])", R"(null)",
        R"({"metadata":{"labels":{"strait.io/offloaded":"true"},
            "annotations":{"strait.io/namespace-naming":"weird","strait.io/offload-providers":3}}})"}) {
    Offloading o = offloadingOf(json::parse(text));
    EXPECT_EQ(o.naming, reflection::NamingStrategy::Default) << text;
    EXPECT_EQ(o.provider, "") << text;
    if (std::string(text).find("\"true\"") == std::string::npos) EXPECT_FALSE(o.offloaded) << text;
  }
}

}  // namespace
}  // namespace strait::vnode
