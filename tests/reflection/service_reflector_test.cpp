// What the Service and EndpointSlice reflectors of one peering share
// (ServiceReflectionState): the per-Service state the slice reflector waits on, the
// conflicts (one Event each), and the counts `strait status` shows.
#include "reflection/service_reflector.h"

#include <gtest/gtest.h>

namespace strait::reflection {
namespace {

using State = ServiceReflectionState::ServiceState;

TEST(ServiceReflectionStateTest, AServiceIsUnknownUntilLookedAtAndForgottenWhenDeleted) {
  ServiceReflectionState s;
  EXPECT_EQ(s.service("shop/web"), State::Unknown);
  EXPECT_TRUE(s.setService("shop/web", State::Reflected));
  EXPECT_FALSE(s.setService("shop/web", State::Reflected));  // no change: slices not requeued
  EXPECT_EQ(s.service("shop/web"), State::Reflected);
  EXPECT_TRUE(s.setService("shop/web", State::NotReflected));
  EXPECT_EQ(s.service("shop/web"), State::NotReflected);  // kept: its slices need not wait
  EXPECT_TRUE(s.setService("shop/web", State::Unknown));
  EXPECT_EQ(s.service("shop/web"), State::Unknown);
  EXPECT_FALSE(s.setService("shop/web", State::Unknown));
}

TEST(ServiceReflectionStateTest, AConflictIsNewOnceAndCountedUntilItIsGone) {
  ServiceReflectionState s;
  EXPECT_TRUE(s.setConflict("Service/shop/taken", true));
  EXPECT_FALSE(s.setConflict("Service/shop/taken", true));  // the Event is not repeated
  EXPECT_TRUE(s.setConflict("EndpointSlice/shop/taken-abc", true));
  EXPECT_EQ(s.counts().conflicts, 2u);
  s.setConflict("Service/shop/taken", false);
  EXPECT_EQ(s.counts().conflicts, 1u);
  EXPECT_TRUE(s.setConflict("Service/shop/taken", true));  // a new conflict is reported again
}

TEST(ServiceReflectionStateTest, CountsReflectedServicesAndSlices) {
  ServiceReflectionState s;
  s.setService("shop/web", State::Reflected);
  s.setService("shop/db", State::Reflected);
  s.setService("shop/private", State::NotReflected);
  s.setService("shop/taken", State::Conflict);
  s.setSliceReflected("shop/web-abcde", true);
  s.setSliceReflected("shop/db-xyz12", true);
  s.setSliceReflected("shop/db-xyz12", false);
  EXPECT_TRUE(s.sliceReflected("shop/web-abcde"));
  EXPECT_FALSE(s.sliceReflected("shop/db-xyz12"));
  ServiceReflectionCounts want;
  want.services = 2;
  want.endpointSlices = 1;
  EXPECT_EQ(s.counts(), want);
}

}  // namespace
}  // namespace strait::reflection
