#include "vnode/vkubelet_manager.h"

#include <gtest/gtest.h>

namespace strait::vnode {
namespace {

TEST(ChooseKubeletPortTest, ZeroMeansAnyPortFixedMeansTheLowestFreeFromThere) {
  EXPECT_EQ(chooseKubeletPort(0, {10250}), 0);
  EXPECT_EQ(chooseKubeletPort(10250, {}), 10250);
  EXPECT_EQ(chooseKubeletPort(10250, {10250}), 10251);
  EXPECT_EQ(chooseKubeletPort(10250, {10250, 10252}), 10251);
  EXPECT_EQ(chooseKubeletPort(10250, {10250, 10251, 10252}), 10253);
  EXPECT_EQ(chooseKubeletPort(10250, {10249}), 10250);
  EXPECT_EQ(chooseKubeletPort(65535, {}), 65535);
  EXPECT_EQ(chooseKubeletPort(65535, {65535}), 0);  // none left: any free port
}

}  // namespace
}  // namespace strait::vnode
