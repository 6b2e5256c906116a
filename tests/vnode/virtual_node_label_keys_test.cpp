// The provider strips selectors on the virtual node's own label keys from every Pod it
// receives (reflection::virtualNodeOwnLabelKeys): they must be the keys the virtual node
// really carries, or a consumer could pin a Pod to a provider node through one.
#include <gtest/gtest.h>

#include "reflection/pod_forge.h"
#include "vnode/node_builder.h"

namespace strait::vnode {
namespace {

TEST(VirtualNodeLabelKeysTest, TheProviderStripsEveryKeyTheVirtualNodeOwns) {
  EXPECT_EQ(virtualNodeOwnLabelKeys(), reflection::virtualNodeOwnLabelKeys());
}

}  // namespace
}  // namespace strait::vnode
