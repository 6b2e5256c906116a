#include "reflection/pod_reconcile.h"

#include <gtest/gtest.h>

#include "reflection/pod_forge.h"

namespace strait::reflection {
namespace {

using nlohmann::json;

json local(const std::string& uid = "u1") {
  return json::parse(R"({"metadata":{"name":"p","namespace":"web","uid":")" + uid +
                     R"("},"spec":{"containers":[{"name":"c","image":"i"}]},
                       "status":{"phase":"Running"}})");
}

json remoteOf(const json& l, const std::string& consumer = "c1") {
  PodForgeContext ctx;
  ctx.consumerId = consumer;
  ctx.remoteNamespace = "web-c1";
  return *forgeRemotePod(l, ctx);
}

PodDecision decide(const json* l, const json* r, bool resync = true, bool wasCreated = false) {
  PodReconcileInput in;
  in.local = l;
  in.remote = r;
  in.consumerId = "c1";
  in.resyncDone = resync;
  in.remoteWasCreated = wasCreated;
  return decidePod(in);
}

TEST(PodReconcile, CreatesMissingRemote) {
  json l = local();
  EXPECT_EQ(decide(&l, nullptr).action, PodAction::CreateRemote);
}

TEST(PodReconcile, OrphanDeletedOnlyAfterResync) {
  json r = remoteOf(local());
  EXPECT_EQ(decide(nullptr, &r, /*resync=*/false).action, PodAction::None);
  EXPECT_EQ(decide(nullptr, &r, /*resync=*/true).action, PodAction::DeleteRemote);
}

TEST(PodReconcile, ForeignRemoteIsNeverTouched) {
  json l = local();
  json r = remoteOf(l, "someone-else");
  EXPECT_EQ(decide(&l, &r).action, PodAction::Conflict);
  EXPECT_EQ(decide(nullptr, &r).action, PodAction::Conflict);
  json plain = json::parse(R"({"metadata":{"name":"p","namespace":"web-c1"}})");
  EXPECT_EQ(decide(nullptr, &plain).action, PodAction::Conflict);
}

TEST(PodReconcile, StaleIncarnationIsReplaced) {
  json l = local("u2");
  json r = remoteOf(local("u1"));
  PodDecision d = decide(&l, &r);
  EXPECT_EQ(d.action, PodAction::DeleteRemote);
  EXPECT_TRUE(d.requeue);
  EXPECT_EQ(d.gracePeriodSeconds, 0);
}

TEST(PodReconcile, DeletionHonoursGraceThenFinishesLocally) {
  json l = local();
  json r = remoteOf(l);
  l["metadata"]["deletionTimestamp"] = "2026-11-30T04:00:00Z";
  l["metadata"]["deletionGracePeriodSeconds"] = 17;
  PodDecision d = decide(&l, &r);
  EXPECT_EQ(d.action, PodAction::DeleteRemote);
  EXPECT_EQ(d.gracePeriodSeconds, 17);
  r["metadata"]["deletionTimestamp"] = "2026-11-30T04:00:01Z";
  EXPECT_EQ(decide(&l, &r).action, PodAction::None);  // wait for the remote to go
  EXPECT_EQ(decide(&l, nullptr).action, PodAction::DeleteLocal);
}

TEST(PodReconcile, TerminalIsNeverRecreated) {
  json l = local();
  l["status"]["phase"] = "Succeeded";
  EXPECT_EQ(decide(&l, nullptr, true, true).action, PodAction::None);
  json r = remoteOf(l);
  PodReconcileInput in;
  in.local = &l;
  in.remote = &r;
  in.consumerId = "c1";
  in.localStatusDiffers = true;
  in.remoteSpecDiffers = true;
  EXPECT_EQ(decidePod(in).action, PodAction::None);
}

TEST(PodReconcile, VanishedRemoteMarksLocalLostInsteadOfDuplicating) {
  json l = local();
  EXPECT_EQ(decide(&l, nullptr, true, /*wasCreated=*/true).action, PodAction::MarkLocalLost);
}

TEST(PodReconcile, UpdatesFlowBothWays) {
  json l = local();
  json r = remoteOf(l);
  PodReconcileInput in;
  in.local = &l;
  in.remote = &r;
  in.consumerId = "c1";
  EXPECT_EQ(decidePod(in).action, PodAction::None);
  in.localStatusDiffers = true;
  EXPECT_EQ(decidePod(in).action, PodAction::UpdateLocalStatus);
  in.remoteSpecDiffers = true;
  PodDecision d = decidePod(in);
  EXPECT_EQ(d.action, PodAction::UpdateRemote);
  EXPECT_TRUE(d.requeue);  // the status still has to be written
}

}  // namespace
}  // namespace strait::reflection
