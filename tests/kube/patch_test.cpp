#include "kube/patch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace strait::kube {
namespace {

using nlohmann::json;

json J(const char* text) { return json::parse(text); }

// ---------------------------------------------------------------------------------------------
// RFC 7386 JSON merge patch

TEST(MergePatchTest, Rfc7386Section3Example) {
  json target = J(R"({"title":"Goodbye!","author":{"givenName":"John","familyName":"Doe"},
                      "tags":["example","sample"],"content":"This will be unchanged"})");
  json patch = J(R"({"title":"Hello!","phoneNumber":"+01-123-456-7890",
                     "author":{"familyName":null},"tags":["example"]})");
  auto r = applyMergePatch(target, patch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, J(R"({"title":"Hello!","author":{"givenName":"John"},"tags":["example"],
                      "content":"This will be unchanged","phoneNumber":"+01-123-456-7890"})"));
}

struct MergeCase {
  const char* original;
  const char* patch;
  const char* result;
};

class MergePatchAppendixTest : public ::testing::TestWithParam<MergeCase> {};

TEST_P(MergePatchAppendixTest, MatchesRfc) {
  const MergeCase& c = GetParam();
  json original = J(c.original);
  const json before = original;
  auto r = applyMergePatch(original, J(c.patch));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, J(c.result)) << "original " << c.original << " patch " << c.patch;
  EXPECT_EQ(original, before);
}

// Every row of RFC 7386 Appendix A.
INSTANTIATE_TEST_SUITE_P(
    Rfc7386AppendixA, MergePatchAppendixTest,
    ::testing::Values(MergeCase{R"({"a":"b"})", R"({"a":"c"})", R"({"a":"c"})"},
                      MergeCase{R"({"a":"b"})", R"({"b":"c"})", R"({"a":"b","b":"c"})"},
                      MergeCase{R"({"a":"b"})", R"({"a":null})", R"({})"},
                      MergeCase{R"({"a":"b","b":"c"})", R"({"a":null})", R"({"b":"c"})"},
                      MergeCase{R"({"a":["b"]})", R"({"a":"c"})", R"({"a":"c"})"},
                      MergeCase{R"({"a":"c"})", R"({"a":["b"]})", R"({"a":["b"]})"},
                      MergeCase{R"({"a":{"b":"c"}})", R"({"a":{"b":"d","c":null}})",
                                R"({"a":{"b":"d"}})"},
                      MergeCase{R"({"a":[{"b":"c"}]})", R"({"a":[1]})", R"({"a":[1]})"},
                      MergeCase{R"(["a","b"])", R"(["c","d"])", R"(["c","d"])"},
                      MergeCase{R"({"a":"b"})", R"(["c"])", R"(["c"])"},
                      MergeCase{R"({"a":"foo"})", "null", "null"},
                      MergeCase{R"({"a":"foo"})", R"("bar")", R"("bar")"},
                      MergeCase{R"({"e":null})", R"({"a":1})", R"({"e":null,"a":1})"},
                      MergeCase{R"([1,2])", R"({"a":"b","c":null})", R"({"a":"b"})"},
                      MergeCase{R"({})", R"({"a":{"bb":{"ccc":null}}})", R"({"a":{"bb":{}}})"}));

TEST(MergePatchTest, ArraysAreReplacedNotMerged) {
  auto r = applyMergePatch(J(R"({"spec":{"containers":[{"name":"a"},{"name":"b"}]}})"),
                           J(R"({"spec":{"containers":[{"name":"b","image":"x"}]}})"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, J(R"({"spec":{"containers":[{"name":"b","image":"x"}]}})"));
}

TEST(MergePatchTest, RejectsOverDeepDocuments) {
  std::string deep(kMaxPatchNestingDepth + 5, '[');
  deep += std::string(kMaxPatchNestingDepth + 5, ']');
  auto r = applyMergePatch(J("{}"), json::parse(deep));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::BadRequest);
}

// ---------------------------------------------------------------------------------------------
// RFC 6902 JSON patch

struct JsonPatchCase {
  const char* name;
  const char* doc;
  const char* patch;
  const char* result;  // nullptr: the patch must fail with Invalid
};

class JsonPatchAppendixTest : public ::testing::TestWithParam<JsonPatchCase> {};

TEST_P(JsonPatchAppendixTest, MatchesRfc) {
  const JsonPatchCase& c = GetParam();
  json doc = J(c.doc);
  const json before = doc;
  auto r = applyJsonPatch(doc, J(c.patch));
  if (c.result == nullptr) {
    ASSERT_FALSE(r.ok()) << c.name << " unexpectedly gave " << r->dump();
    EXPECT_EQ(r.code(), Code::Invalid) << r.error().message;
    EXPECT_FALSE(r.error().message.empty());
  } else {
    ASSERT_TRUE(r.ok()) << c.name << ": " << r.error().message;
    EXPECT_EQ(*r, J(c.result)) << c.name;
  }
  EXPECT_EQ(doc, before);
}

// Every example of RFC 6902 Appendix A (A.1 to A.16).
INSTANTIATE_TEST_SUITE_P(
    Rfc6902AppendixA, JsonPatchAppendixTest,
    ::testing::Values(
        JsonPatchCase{"A1_AddObjectMember", R"({"foo":"bar"})",
                      R"([{"op":"add","path":"/baz","value":"qux"}])",
                      R"({"baz":"qux","foo":"bar"})"},
        JsonPatchCase{"A2_AddArrayElement", R"({"foo":["bar","baz"]})",
                      R"([{"op":"add","path":"/foo/1","value":"qux"}])",
                      R"({"foo":["bar","qux","baz"]})"},
        JsonPatchCase{"A3_RemoveObjectMember", R"({"baz":"qux","foo":"bar"})",
                      R"([{"op":"remove","path":"/baz"}])", R"({"foo":"bar"})"},
        JsonPatchCase{"A4_RemoveArrayElement", R"({"foo":["bar","qux","baz"]})",
                      R"([{"op":"remove","path":"/foo/1"}])", R"({"foo":["bar","baz"]})"},
        JsonPatchCase{"A5_ReplaceValue", R"({"baz":"qux","foo":"bar"})",
                      R"([{"op":"replace","path":"/baz","value":"boo"}])",
                      R"({"baz":"boo","foo":"bar"})"},
        JsonPatchCase{"A6_MoveValue", R"({"foo":{"bar":"baz","waldo":"fred"},
                                          "qux":{"corge":"grault"}})",
                      R"([{"op":"move","from":"/foo/waldo","path":"/qux/thud"}])",
                      R"({"foo":{"bar":"baz"},"qux":{"corge":"grault","thud":"fred"}})"},
        JsonPatchCase{"A7_MoveArrayElement", R"({"foo":["all","grass","cows","eat"]})",
                      R"([{"op":"move","from":"/foo/1","path":"/foo/3"}])",
                      R"({"foo":["all","cows","eat","grass"]})"},
        JsonPatchCase{"A8_TestSuccess", R"({"baz":"qux","foo":["a",2,"c"]})",
                      R"([{"op":"test","path":"/baz","value":"qux"},
                          {"op":"test","path":"/foo/1","value":2}])",
                      R"({"baz":"qux","foo":["a",2,"c"]})"},
        JsonPatchCase{"A9_TestError", R"({"baz":"qux"})",
                      R"([{"op":"test","path":"/baz","value":"bar"}])", nullptr},
        JsonPatchCase{"A10_AddNestedMemberObject", R"({"foo":"bar"})",
                      R"([{"op":"add","path":"/child","value":{"grandchild":{}}}])",
                      R"({"foo":"bar","child":{"grandchild":{}}})"},
        JsonPatchCase{"A11_IgnoreUnrecognizedElements", R"({"foo":"bar"})",
                      R"([{"op":"add","path":"/baz","value":"qux","xyz":123}])",
                      R"({"foo":"bar","baz":"qux"})"},
        JsonPatchCase{"A12_AddToNonexistentTarget", R"({"foo":"bar"})",
                      R"([{"op":"add","path":"/baz/bat","value":"qux"}])", nullptr},
        // A.13: duplicate "op"; the parser keeps the last ("remove"), and /baz is absent.
        JsonPatchCase{"A13_InvalidPatchDocument", R"({"foo":"bar"})",
                      R"([{"op":"add","path":"/baz","value":"qux","op":"remove"}])", nullptr},
        JsonPatchCase{"A14_EscapeOrdering", R"({"/":9,"~1":10})",
                      R"([{"op":"test","path":"/~01","value":10}])", R"({"/":9,"~1":10})"},
        JsonPatchCase{"A15_StringsAndNumbersDiffer", R"({"/":9,"~1":10})",
                      R"([{"op":"test","path":"/~01","value":"10"}])", nullptr},
        JsonPatchCase{"A16_AddArrayValue", R"({"foo":["bar"]})",
                      R"([{"op":"add","path":"/foo/-","value":["abc","def"]}])",
                      R"({"foo":["bar",["abc","def"]]})"}),
    [](const auto& info) { return std::string(info.param.name); });

// Further cases: pointers, bounds and malformed operations.
INSTANTIATE_TEST_SUITE_P(
    EdgeCases, JsonPatchAppendixTest,
    ::testing::Values(
        JsonPatchCase{"SlashEscapeInKey", R"({"metadata":{"labels":{}}})",
                      R"([{"op":"add","path":"/metadata/labels/app.kubernetes.io~1name",
                           "value":"web"}])",
                      R"({"metadata":{"labels":{"app.kubernetes.io/name":"web"}}})"},
        JsonPatchCase{"AddRootReplacesDocument", R"({"a":1})",
                      R"([{"op":"add","path":"","value":{"b":2}}])", R"({"b":2})"},
        JsonPatchCase{"ReplaceRoot", R"({"a":1})", R"([{"op":"replace","path":"","value":[1]}])",
                      "[1]"},
        JsonPatchCase{"AddAtArrayEnd", R"({"a":[1]})", R"([{"op":"add","path":"/a/1","value":2}])",
                      R"({"a":[1,2]})"},
        JsonPatchCase{"AddReplacesExistingMember", R"({"a":1})",
                      R"([{"op":"add","path":"/a","value":2}])", R"({"a":2})"},
        JsonPatchCase{"CopyValue", R"({"a":{"b":1}})", R"([{"op":"copy","from":"/a","path":"/c"}])",
                      R"({"a":{"b":1},"c":{"b":1}})"},
        JsonPatchCase{"MoveToSamePathIsNoop", R"({"a":1})",
                      R"([{"op":"move","from":"/a","path":"/a"}])", R"({"a":1})"},
        JsonPatchCase{"TestNumbersCompareByValue", R"({"a":1})",
                      R"([{"op":"test","path":"/a","value":1.0}])", R"({"a":1})"},
        JsonPatchCase{"TestWholeDocument", R"({"a":[1,{"b":null}]})",
                      R"([{"op":"test","path":"","value":{"a":[1,{"b":null}]}}])",
                      R"({"a":[1,{"b":null}]})"},
        JsonPatchCase{"DashNamesObjectMember", R"({"a":{}})",
                      R"([{"op":"add","path":"/a/-","value":1}])", R"({"a":{"-":1}})"},
        JsonPatchCase{"EmptyKeyMember", R"({"":1})", R"([{"op":"replace","path":"/","value":2}])",
                      R"({"":2})"},
        JsonPatchCase{"AddIndexOutOfBounds", R"({"a":[1]})",
                      R"([{"op":"add","path":"/a/2","value":2}])", nullptr},
        JsonPatchCase{"LeadingZeroIndex", R"({"a":[1,2]})",
                      R"([{"op":"replace","path":"/a/01","value":3}])", nullptr},
        JsonPatchCase{"NegativeIndex", R"({"a":[1,2]})", R"([{"op":"remove","path":"/a/-1"}])",
                      nullptr},
        JsonPatchCase{"HugeIndex", R"({"a":[1,2]})",
                      R"([{"op":"add","path":"/a/99999999999999999999999","value":1}])", nullptr},
        JsonPatchCase{"RemoveDashFails", R"({"a":[1]})", R"([{"op":"remove","path":"/a/-"}])",
                      nullptr},
        JsonPatchCase{"RemoveMissingMember", R"({"a":1})", R"([{"op":"remove","path":"/b"}])",
                      nullptr},
        JsonPatchCase{"RemoveRoot", R"({"a":1})", R"([{"op":"remove","path":""}])", nullptr},
        JsonPatchCase{"ReplaceMissingMember", R"({"a":1})",
                      R"([{"op":"replace","path":"/b","value":1}])", nullptr},
        JsonPatchCase{"PathThroughScalar", R"({"a":1})",
                      R"([{"op":"add","path":"/a/b","value":1}])", nullptr},
        JsonPatchCase{"MoveIntoOwnChild", R"({"a":{"b":{}}})",
                      R"([{"op":"move","from":"/a","path":"/a/b/c"}])", nullptr},
        JsonPatchCase{"MoveFromMissing", R"({"a":1})", R"([{"op":"move","from":"/x","path":"/y"}])",
                      nullptr},
        JsonPatchCase{"CopyWithoutFrom", R"({"a":1})", R"([{"op":"copy","path":"/y"}])", nullptr},
        JsonPatchCase{"UnknownOp", R"({"a":1})", R"([{"op":"frobnicate","path":"/a"}])", nullptr},
        JsonPatchCase{"MissingOp", R"({"a":1})", R"([{"path":"/a"}])", nullptr},
        JsonPatchCase{"NonStringOp", R"({"a":1})", R"([{"op":1,"path":"/a"}])", nullptr},
        JsonPatchCase{"MissingPath", R"({"a":1})", R"([{"op":"remove"}])", nullptr},
        JsonPatchCase{"MissingValue", R"({"a":1})", R"([{"op":"add","path":"/b"}])", nullptr},
        JsonPatchCase{"PointerWithoutSlash", R"({"a":1})",
                      R"([{"op":"replace","path":"a","value":2}])", nullptr},
        JsonPatchCase{"BadEscape", R"({"a":1})", R"([{"op":"remove","path":"/~2"}])", nullptr},
        JsonPatchCase{"TrailingTilde", R"({"a":1})", R"([{"op":"remove","path":"/a~"}])", nullptr},
        JsonPatchCase{"TestMissingPath", R"({"a":1})",
                      R"([{"op":"test","path":"/b","value":null}])", nullptr}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(JsonPatchTest, NullValueIsAValue) {
  auto r = applyJsonPatch(J(R"({"a":1})"), J(R"([{"op":"add","path":"/b","value":null}])"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, J(R"({"a":1,"b":null})"));
}

TEST(JsonPatchTest, OperationsApplyInSequence) {
  auto r = applyJsonPatch(J(R"({"spec":{"replicas":1}})"),
                          J(R"([{"op":"test","path":"/spec/replicas","value":1},
                                {"op":"replace","path":"/spec/replicas","value":3},
                                {"op":"add","path":"/spec/paused","value":true},
                                {"op":"copy","from":"/spec/replicas","path":"/spec/min"},
                                {"op":"test","path":"/spec/min","value":3}])"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(*r, J(R"({"spec":{"replicas":3,"paused":true,"min":3}})"));
}

TEST(JsonPatchTest, FailureInLaterOperationLeavesNoPartialResult) {
  const json doc = J(R"({"a":1})");
  auto r = applyJsonPatch(doc, J(R"([{"op":"replace","path":"/a","value":2},
                                     {"op":"test","path":"/a","value":1}])"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::Invalid);
  EXPECT_NE(r.error().message.find("operation 1"), std::string::npos) << r.error().message;
  EXPECT_EQ(doc, J(R"({"a":1})"));
}

TEST(JsonPatchTest, ErrorNamesOperationAndPath) {
  auto r = applyJsonPatch(J(R"({"a":1})"), J(R"([{"op":"remove","path":"/nope"}])"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("operation 0"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("/nope"), std::string::npos) << r.error().message;
}

TEST(JsonPatchTest, NonArrayDocumentIsBadRequest) {
  for (const char* p : {R"({"op":"add","path":"/a","value":1})", "null", "1", R"("x")"}) {
    auto r = applyJsonPatch(J("{}"), J(p));
    ASSERT_FALSE(r.ok()) << p;
    EXPECT_EQ(r.code(), Code::BadRequest) << p;
  }
}

TEST(JsonPatchTest, NonObjectOperationIsBadRequest) {
  auto r = applyJsonPatch(J("{}"), J(R"([{"op":"add","path":"/a","value":1}, 5])"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::BadRequest);
}

TEST(JsonPatchTest, EmptyPatchIsIdentity) {
  auto r = applyJsonPatch(J(R"({"a":[1]})"), J("[]"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, J(R"({"a":[1]})"));
}

TEST(JsonPatchTest, TooManyOperationsIsRequestEntityTooLarge) {
  json ops = json::array();
  for (size_t i = 0; i <= kMaxJsonPatchOperations; ++i) {
    ops.push_back({{"op", "test"}, {"path", ""}, {"value", json::object()}});
  }
  auto r = applyJsonPatch(json::object(), ops);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::RequestEntityTooLarge);
}

// ---------------------------------------------------------------------------------------------
// Strategic merge patch, generic semantics on a schema shaped like upstream's test struct.

std::shared_ptr<const PatchSchema> node(
    bool mergeList, std::string key,
    std::map<std::string, std::shared_ptr<const PatchSchema>> fields = {}) {
  auto n = std::make_shared<PatchSchema>();
  n->mergeList = mergeList;
  n->mergeKey = std::move(key);
  n->fields = std::move(fields);
  return n;
}

const PatchSchema& testSchema() {
  static const PatchSchema schema = [] {
    PatchSchema s;
    auto inner = node(true, "name",
                      {{"mergingIntList", node(true, "")}, {"nonMergingList", node(false, "")}});
    s.fields["mergingList"] = node(true, "name",
                                   {{"mergingList", inner},
                                    {"mergingIntList", node(true, "")},
                                    {"nonMergingList", node(false, "")}});
    s.fields["mergingIntList"] = node(true, "");
    s.fields["nonMergingList"] = node(false, "");
    s.fields["nonMergingIntList"] = node(false, "");
    auto retain = std::make_shared<PatchSchema>();
    retain->retainKeys = true;
    retain->fields["mergingList"] = node(true, "name");
    s.fields["retainKeysMap"] = retain;
    auto replaceMap = std::make_shared<PatchSchema>();
    replaceMap->replaceObject = true;
    s.fields["replaceMap"] = replaceMap;
    return s;
  }();
  return schema;
}

json smp(const char* original, const char* patch) {
  auto r = applyStrategicMergePatch(J(original), J(patch), testSchema());
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : json();
}

Result<json> smpResult(const char* original, const char* patch) {
  return applyStrategicMergePatch(J(original), J(patch), testSchema());
}

TEST(StrategicMergePatchTest, MergesListOfMapsByKey) {
  EXPECT_EQ(smp(R"({"mergingList":[{"name":"1","value":"a"},{"name":"2","value":"b"}]})",
                R"({"mergingList":[{"name":"2","value":"c","other":"x"}]})"),
            J(R"({"mergingList":[{"name":"1","value":"a"},
                                 {"name":"2","value":"c","other":"x"}]})"));
}

TEST(StrategicMergePatchTest, NewItemsWithoutOrderDirectiveGoFirst) {
  // Upstream's interleaving puts patch items not found in the live list before the
  // server-only ones when no $setElementOrder is given.
  EXPECT_EQ(
      smp(R"({"mergingList":[{"name":"1"},{"name":"2"}]})", R"({"mergingList":[{"name":"3"}]})"),
      J(R"({"mergingList":[{"name":"3"},{"name":"1"},{"name":"2"}]})"));
}

TEST(StrategicMergePatchTest, EmptyMergingListPatchKeepsItems) {
  EXPECT_EQ(smp(R"({"mergingList":[{"name":"1"}]})", R"({"mergingList":[]})"),
            J(R"({"mergingList":[{"name":"1"}]})"));
}

TEST(StrategicMergePatchTest, NonMergingListIsReplaced) {
  EXPECT_EQ(smp(R"({"nonMergingList":[{"name":"1"},{"name":"2"}]})",
                R"({"nonMergingList":[{"name":"3"}]})"),
            J(R"({"nonMergingList":[{"name":"3"}]})"));
}

TEST(StrategicMergePatchTest, MergesPrimitiveListsAsSets) {
  EXPECT_EQ(smp(R"({"mergingIntList":[1,2]})", R"({"mergingIntList":[2,3]})"),
            J(R"({"mergingIntList":[1,2,3]})"));
}

TEST(StrategicMergePatchTest, DeleteFromPrimitiveList) {
  EXPECT_EQ(
      smp(R"({"mergingIntList":[1,2,3,2]})", R"({"$deleteFromPrimitiveList/mergingIntList":[2]})"),
      J(R"({"mergingIntList":[1,3]})"));
  // Works on non-merging lists too, and never adds the list or its items.
  EXPECT_EQ(smp(R"({"nonMergingIntList":[1,2]})",
                R"({"$deleteFromPrimitiveList/nonMergingIntList":[1]})"),
            J(R"({"nonMergingIntList":[2]})"));
  EXPECT_EQ(smp(R"({"mergingIntList":[1]})", R"({"$deleteFromPrimitiveList/mergingIntList":[9]})"),
            J(R"({"mergingIntList":[1]})"));
  EXPECT_EQ(smp(R"({})", R"({"$deleteFromPrimitiveList/mergingIntList":[1]})"), J("{}"));
}

TEST(StrategicMergePatchTest, AddAndDeleteInPrimitiveList) {
  EXPECT_EQ(smp(R"({"mergingIntList":[1,2]})",
                R"({"$setElementOrder/mergingIntList":[1,3],
                    "$deleteFromPrimitiveList/mergingIntList":[2],"mergingIntList":[3]})"),
            J(R"({"mergingIntList":[1,3]})"));
}

TEST(StrategicMergePatchTest, DeleteDirectiveRemovesAllMatchingEntries) {
  EXPECT_EQ(smp(R"({"mergingList":[{"name":"1"},{"name":"1"},{"name":"2","value":"a"},
                                   {"name":"3"},{"name":"3"}]})",
                R"({"mergingList":[{"name":"1","$patch":"delete"},
                                   {"name":"3","$patch":"delete"}]})"),
            J(R"({"mergingList":[{"name":"2","value":"a"}]})"));
}

TEST(StrategicMergePatchTest, DeleteMissingItemIsNoop) {
  EXPECT_EQ(smp(R"({"mergingList":[{"name":"1"}]})",
                R"({"mergingList":[{"name":"9","$patch":"delete"}]})"),
            J(R"({"mergingList":[{"name":"1"}]})"));
}

TEST(StrategicMergePatchTest, ReplaceDirectiveInList) {
  EXPECT_EQ(smp(R"({"mergingList":[{"name":"1"},{"name":"2"}]})",
                R"({"mergingList":[{"$patch":"replace"}]})"),
            J(R"({"mergingList":[]})"));
  EXPECT_EQ(smp(R"({"mergingList":[{"name":"1","value":"a"},{"name":"2"}]})",
                R"({"mergingList":[{"name":"1","other":"b"},{"$patch":"replace"}]})"),
            J(R"({"mergingList":[{"name":"1","other":"b"}]})"));
}

TEST(StrategicMergePatchTest, ReplaceAndDeleteDirectivesOnMaps) {
  EXPECT_EQ(smp(R"({"simpleMap":{"key1":1,"key2":1}})", R"({"simpleMap":{"$patch":"delete"}})"),
            J(R"({"simpleMap":{}})"));
  EXPECT_EQ(smp(R"({"name":1,"value":1})", R"({"$patch":"replace"})"), J("{}"));
  EXPECT_EQ(smp(R"({"name":1,"value":1})", R"({"other":"a","$patch":"replace"})"),
            J(R"({"other":"a"})"));
  EXPECT_EQ(smp(R"({"m":{"a":1,"b":{"c":1}}})", R"({"m":{"$patch":"replace","b":{"d":2}}})"),
            J(R"({"m":{"b":{"d":2}}})"));
  // Deleting a map that does not exist leaves no trace.
  EXPECT_EQ(smp(R"({"a":1})", R"({"simpleMap":{"$patch":"delete"}})"), J(R"({"a":1})"));
}

TEST(StrategicMergePatchTest, ReplaceStrategyObjectIsReplaced) {
  EXPECT_EQ(smp(R"({"replaceMap":{"a":1,"b":2}})", R"({"replaceMap":{"c":3}})"),
            J(R"({"replaceMap":{"c":3}})"));
}

TEST(StrategicMergePatchTest, NullDeletesAndIsDroppedFromNewValues) {
  EXPECT_EQ(
      smp(R"({"a":1,"b":{"c":1,"d":2}})", R"({"a":null,"b":{"c":null},"e":{"f":null,"g":1}})"),
      J(R"({"b":{"d":2},"e":{"g":1}})"));
  EXPECT_EQ(smp(R"({})", R"({"missing":null})"), J("{}"));
}

TEST(StrategicMergePatchTest, TypeChangeReplacesValue) {
  EXPECT_EQ(smp(R"({"a":{"b":1},"c":[1],"d":"x"})", R"({"a":"s","c":{"k":1},"d":[1]})"),
            J(R"({"a":"s","c":{"k":1},"d":[1]})"));
}

// (New primitive 2 lands before server-only 1, upstream's order without $setElementOrder.)
TEST(StrategicMergePatchTest, NestedMergingListsMergeRecursively) {
  EXPECT_EQ(smp(R"({"mergingList":[{"name":"1","mergingList":[{"name":"a","v":1}],
                                    "mergingIntList":[1],"nonMergingList":[1,2]}]})",
                R"({"mergingList":[{"name":"1","mergingList":[{"name":"a","w":2}],
                                    "mergingIntList":[2],"nonMergingList":[3]}]})"),
            J(R"({"mergingList":[{"name":"1","mergingList":[{"name":"a","v":1,"w":2}],
                                  "mergingIntList":[2,1],"nonMergingList":[3]}]})"));
}

TEST(StrategicMergePatchTest, DeleteFieldInsideMergingListItem) {
  EXPECT_EQ(smp(R"({"mergingList":[{"name":"1","value":"a","other":"b"}]})",
                R"({"mergingList":[{"name":"1","value":null}]})"),
            J(R"({"mergingList":[{"name":"1","other":"b"}]})"));
}

// The $setElementOrder cases below carry upstream's test data semantics
// ("set elements order in a list with server-only items", 1 to 3, and their int variants).
TEST(StrategicMergePatchTest, SetElementOrderWithServerOnlyItems) {
  EXPECT_EQ(smp(R"({"mergingList":[{"name":1,"other":"a"},{"name":3,"value":3},
                                   {"name":4,"value":4},{"name":2,"value":2},{"name":9}]})",
                R"({"$setElementOrder/mergingList":[{"name":4},{"name":2},{"name":3},
                                                    {"name":1}]})"),
            J(R"({"mergingList":[{"name":4,"value":4},{"name":2,"value":2},
                                 {"name":3,"value":3},{"name":1,"other":"a"},{"name":9}]})"));
}

TEST(StrategicMergePatchTest, SetElementOrderKeepsServerOnlyItemsInPlace) {
  EXPECT_EQ(smp(R"({"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2},{"name":9},
                                   {"name":3,"value":3},{"name":4,"value":4}]})",
                R"({"$setElementOrder/mergingList":[{"name":2},{"name":1},{"name":4},
                                                    {"name":3}]})"),
            J(R"({"mergingList":[{"name":2,"value":2},{"name":1,"other":"a"},{"name":9},
                                 {"name":4,"value":4},{"name":3,"value":3}]})"));
  EXPECT_EQ(smp(R"({"mergingList":[{"name":1},{"name":2},{"name":7},{"name":9},{"name":8},
                                   {"name":3},{"name":4}]})",
                R"({"$setElementOrder/mergingList":[{"name":2},{"name":1},{"name":4},
                                                    {"name":3}]})"),
            J(R"({"mergingList":[{"name":2},{"name":1},{"name":7},{"name":9},{"name":8},
                                 {"name":4},{"name":3}]})"));
}

TEST(StrategicMergePatchTest, SetElementOrderWithAddedItems) {
  EXPECT_EQ(smp(R"({"mergingList":[{"name":1,"other":"a"},{"name":2,"value":2,"other":"b"}]})",
                R"({"$setElementOrder/mergingList":[{"name":1},{"name":4},{"name":2},
                                                    {"name":3}],
                    "mergingList":[{"name":4,"value":4},{"name":3,"value":3}]})"),
            J(R"({"mergingList":[{"name":1,"other":"a"},{"name":4,"value":4},
                                 {"name":2,"value":2,"other":"b"},{"name":3,"value":3}]})"));
}

TEST(StrategicMergePatchTest, SetElementOrderOnPrimitiveList) {
  EXPECT_EQ(smp(R"({"mergingIntList":[1,2,4]})",
                R"({"$setElementOrder/mergingIntList":[1,2,3],"mergingIntList":[3]})"),
            J(R"({"mergingIntList":[1,2,3,4]})"));
  EXPECT_EQ(smp(R"({"mergingIntList":[1,2,7,9,8,3,4]})",
                R"({"$setElementOrder/mergingIntList":[2,1,4,3]})"),
            J(R"({"mergingIntList":[2,1,7,9,8,4,3]})"));
}

TEST(StrategicMergePatchTest, SetElementOrderForNewList) {
  EXPECT_EQ(smp(R"({})", R"({"$setElementOrder/mergingList":[{"name":"b"},{"name":"a"}],
                             "mergingList":[{"name":"b"},{"name":"a","x":null}]})"),
            J(R"({"mergingList":[{"name":"b"},{"name":"a"}]})"));
}

TEST(StrategicMergePatchTest, SetElementOrderMismatchIsBadRequest) {
  auto r = smpResult(R"({"mergingList":[{"name":1},{"name":2}]})",
                     R"({"$setElementOrder/mergingList":[{"name":1},{"name":2}],
                         "mergingList":[{"name":2},{"name":1}]})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::BadRequest);
  r = smpResult(R"({"mergingList":[{"name":1}]})",
                R"({"$setElementOrder/mergingList":[{"name":1}],"mergingList":[{"name":3}]})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::BadRequest);
}

TEST(StrategicMergePatchTest, RetainKeysClearsUnlistedFields) {
  EXPECT_EQ(smp(R"({"retainKeysMap":{"name":"foo","value":"bar","other":"x"}})",
                R"({"retainKeysMap":{"$retainKeys":["name","value"],"value":"baz"}})"),
            J(R"({"retainKeysMap":{"name":"foo","value":"baz"}})"));
  EXPECT_EQ(smp(R"({"retainKeysMap":{"name":"foo","value":"bar"}})",
                R"({"retainKeysMap":{"$retainKeys":[]}})"),
            J(R"({"retainKeysMap":{}})"));
}

TEST(StrategicMergePatchTest, RetainKeysRejectsPatchedFieldOutsideList) {
  auto r = smpResult(R"({"retainKeysMap":{"name":"foo"}})",
                     R"({"retainKeysMap":{"$retainKeys":["name"],"value":"x"}})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::BadRequest);
  EXPECT_NE(r.error().message.find("value"), std::string::npos) << r.error().message;
  r = smpResult(R"({"retainKeysMap":{}})", R"({"retainKeysMap":{"$retainKeys":"name"}})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::BadRequest);
}

TEST(StrategicMergePatchTest, RetainKeysInMergingListItem) {
  EXPECT_EQ(smp(R"({"mergingList":[{"name":"1","value":"a","other":"b"}]})",
                R"({"mergingList":[{"name":"1","$retainKeys":["name","value"]}]})"),
            J(R"({"mergingList":[{"name":"1","value":"a"}]})"));
}

TEST(StrategicMergePatchTest, DirectivesNeverLeakIntoResult) {
  json r = smp(R"({"mergingList":[{"name":"1"}]})",
               R"({"mergingList":[{"name":"2","$retainKeys":["name","mergingList"],
                                   "$setElementOrder/mergingList":[{"name":"x"}],
                                   "mergingList":[{"name":"x","$patch":"delete"}],
                                   "$deleteFromPrimitiveList/mergingIntList":[1]}],
                   "fresh":{"$retainKeys":["a"],"a":{"$patch":"replace","b":1}}})");
  EXPECT_EQ(r, J(R"({"mergingList":[{"name":"2","mergingList":[]},{"name":"1"}],
                     "fresh":{"a":{"b":1}}})"));
}

struct BadSmpCase {
  const char* name;
  const char* original;
  const char* patch;
  Code code;
};

class StrategicMergePatchErrorTest : public ::testing::TestWithParam<BadSmpCase> {};

TEST_P(StrategicMergePatchErrorTest, FailsWithCode) {
  const BadSmpCase& c = GetParam();
  auto r = smpResult(c.original, c.patch);
  ASSERT_FALSE(r.ok()) << c.name << " gave " << r->dump();
  EXPECT_EQ(r.code(), c.code) << c.name << ": " << r.error().message;
  EXPECT_FALSE(r.error().message.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, StrategicMergePatchErrorTest,
    ::testing::Values(
        BadSmpCase{"PatchNotObject", "{}", "[1]", Code::BadRequest},
        BadSmpCase{"PatchNull", "{}", "null", Code::BadRequest},
        BadSmpCase{"OriginalNotObject", "[]", "{}", Code::BadRequest},
        BadSmpCase{"MissingMergeKey", R"({"mergingList":[{"name":1}]})",
                   R"({"mergingList":[{"value":1}]})", Code::BadRequest},
        BadSmpCase{"DeleteWithoutMergeKey", R"({"mergingList":[{"name":1}]})",
                   R"({"mergingList":[{"$patch":"delete"}]})", Code::BadRequest},
        BadSmpCase{"MergeDirectiveInList", R"({"mergingList":[{"name":1}]})",
                   R"({"mergingList":[{"$patch":"merge"}]})", Code::BadRequest},
        BadSmpCase{"MergeDirectiveOnMap", R"({"m":{"a":1}})", R"({"m":{"$patch":"merge"}})",
                   Code::BadRequest},
        BadSmpCase{"UnknownDirectiveOnMap", R"({"m":{"a":1}})", R"({"m":{"$patch":"zap"}})",
                   Code::BadRequest},
        BadSmpCase{"UnknownDirectiveInList", R"({"mergingList":[{"name":1}]})",
                   R"({"mergingList":[{"name":1,"$patch":7}]})", Code::BadRequest},
        BadSmpCase{"ListOfLists", R"({"mergingIntList":[[1]]})", R"({"mergingIntList":[[2]]})",
                   Code::Invalid},
        BadSmpCase{"MixedElementTypes", R"({"mergingIntList":[1]})", R"({"mergingIntList":["a"]})",
                   Code::BadRequest},
        BadSmpCase{"MapsInPrimitiveMergeList", R"({"mergingList":[1]})",
                   R"({"mergingList":[{"name":1}]})", Code::BadRequest},
        BadSmpCase{"SetElementOrderNotList", R"({})", R"({"$setElementOrder/mergingList":5})",
                   Code::BadRequest},
        BadSmpCase{"SetElementOrderWithoutSlash", R"({})", R"({"$setElementOrdermergingList":[]})",
                   Code::BadRequest},
        BadSmpCase{"SetElementOrderTargetsScalar", R"({"mergingList":1})",
                   R"({"$setElementOrder/mergingList":[{"name":1}]})", Code::BadRequest},
        BadSmpCase{"SetElementOrderWithNullList", R"({"mergingList":[]})",
                   R"({"$setElementOrder/mergingList":[],"mergingList":null})", Code::BadRequest},
        BadSmpCase{"DeleteListWithoutSlash", R"({})", R"({"$deleteFromPrimitiveList":[1]})",
                   Code::BadRequest},
        BadSmpCase{"DeleteListOfMaps", R"({"mergingList":[{"name":1}]})",
                   R"({"$deleteFromPrimitiveList/mergingList":[{"name":1}]})", Code::BadRequest}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(StrategicMergePatchTest, RejectsOverDeepDocuments) {
  json deep = json::object();
  for (int i = 0; i < kMaxPatchNestingDepth + 5; ++i) {
    deep = json{{"a", std::move(deep)}};
  }
  auto r = applyStrategicMergePatch(json::object(), deep, testSchema());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::BadRequest);
}

// ---------------------------------------------------------------------------------------------
// Strategic merge patch with the built-in kind schemas.

Result<json> smpKind(const char* group, const char* kind, const json& original, const json& patch) {
  const PatchSchema* schema = schemaForKind(group, kind);
  EXPECT_NE(schema, nullptr) << group << "/" << kind;
  if (schema == nullptr) {
    return makeError(Code::Internal, "no schema");
  }
  return applyStrategicMergePatch(original, patch, *schema);
}

// helm upgrade's three-way patch of a MutatingWebhookConfiguration whose caBundle an agent
// wrote: the webhooks merge by name, so the caBundle the patch does not mention stays.
TEST(StrategicMergePatchKindsTest, WebhookConfigurationsMergeWebhooksByName) {
  for (const char* kind : {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}) {
    json live = {{"webhooks",
                  {{{"name", "a.example.com"},
                    {"timeoutSeconds", 5},
                    {"clientConfig", {{"url", "https://x/a"}, {"caBundle", "Q0E="}}}},
                   {{"name", "b.example.com"}, {"timeoutSeconds", 5}}}}};
    json patch = {{"$setElementOrder/webhooks", {{{"name", "a.example.com"}, {"name", "b.example.com"}}}},
                  {"webhooks", {{{"name", "a.example.com"}, {"timeoutSeconds", 10}}}}};
    auto r = smpKind("admissionregistration.k8s.io", kind, live, patch);
    ASSERT_TRUE(r.ok()) << kind << ": " << r.error().message;
    ASSERT_EQ((*r)["webhooks"].size(), 2u) << r->dump();
    EXPECT_EQ((*r)["webhooks"][0]["timeoutSeconds"], 10) << r->dump();
    EXPECT_EQ((*r)["webhooks"][0]["clientConfig"]["caBundle"], "Q0E=") << r->dump();
    EXPECT_EQ((*r)["webhooks"][1]["name"], "b.example.com") << r->dump();
  }
}

TEST(StrategicMergePatchKindsTest, KnownAndUnknownKinds) {
  for (auto [group, kind] :
       std::vector<std::pair<const char*, const char*>>{{"", "Pod"},
                                                        {"apps", "Deployment"},
                                                        {"apps", "ReplicaSet"},
                                                        {"apps", "StatefulSet"},
                                                        {"apps", "DaemonSet"},
                                                        {"batch", "Job"},
                                                        {"batch", "CronJob"},
                                                        {"", "Service"},
                                                        {"", "Node"},
                                                        {"", "Namespace"},
                                                        {"", "ConfigMap"},
                                                        {"", "Secret"},
                                                        {"", "ServiceAccount"},
                                                        {"", "Endpoints"},
                                                        {"discovery.k8s.io", "EndpointSlice"},
                                                        {"", "Event"},
                                                        {"events.k8s.io", "Event"},
                                                        {"coordination.k8s.io", "Lease"},
                                                        {"rbac.authorization.k8s.io", "Role"},
                                                        {"rbac.authorization.k8s.io", "ClusterRole"},
                                                        {"rbac.authorization.k8s.io", "RoleBinding"},
                                                        {"rbac.authorization.k8s.io", "ClusterRoleBinding"},
                                                        {"admissionregistration.k8s.io", "MutatingWebhookConfiguration"},
                                                        {"admissionregistration.k8s.io", "ValidatingWebhookConfiguration"}}) {
    const PatchSchema* s = schemaForKind(group, kind);
    ASSERT_NE(s, nullptr) << group << "/" << kind;
    ASSERT_NE(s->field("metadata"), nullptr) << kind;
    EXPECT_EQ(s->field("metadata")->field("ownerReferences")->mergeKey, "uid") << kind;
    EXPECT_TRUE(s->field("metadata")->field("finalizers")->mergeList) << kind;
  }
  EXPECT_EQ(schemaForKind("example.com", "Widget"), nullptr);
  EXPECT_EQ(schemaForKind("apps", "Pod"), nullptr);
  EXPECT_EQ(schemaForKind("", "Deployment"), nullptr);
}

// What `kubectl apply` sends when only container b's image changed.
TEST(StrategicMergePatchKindsTest, KubectlReapplyKeepsOtherContainers) {
  json deployment = J(R"({
    "apiVersion":"apps/v1","kind":"Deployment",
    "metadata":{"name":"web","namespace":"default","annotations":{
      "kubectl.kubernetes.io/last-applied-configuration":"old"}},
    "spec":{"replicas":2,"template":{"metadata":{"labels":{"app":"web"}},"spec":{
      "containers":[
        {"name":"a","image":"busybox:1.36","env":[{"name":"X","value":"1"}]},
        {"name":"b","image":"nginx:1.25","ports":[{"containerPort":80}]}]}}}})");
  json patch = J(R"({"metadata":{"annotations":{
      "kubectl.kubernetes.io/last-applied-configuration":"..."}},
    "spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],
      "containers":[{"image":"nginx:1.26","name":"b"}]}}}})");
  auto r = smpKind("apps", "Deployment", deployment, patch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  json expected = deployment;
  expected["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = "...";
  expected["spec"]["template"]["spec"]["containers"][1]["image"] = "nginx:1.26";
  EXPECT_EQ(*r, expected);
}

TEST(StrategicMergePatchKindsTest, KubectlApplyAddsContainerInDeclaredOrder) {
  json deployment = J(R"({"spec":{"template":{"spec":{"containers":[
      {"name":"a","image":"x"},{"name":"c","image":"z"}]}}}})");
  json patch = J(R"({"spec":{"template":{"spec":{
      "$setElementOrder/containers":[{"name":"a"},{"name":"b"},{"name":"c"}],
      "containers":[{"name":"b","image":"y"}]}}}})");
  auto r = smpKind("apps", "Deployment", deployment, patch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["spec"]["template"]["spec"]["containers"],
            J(R"([{"name":"a","image":"x"},{"name":"b","image":"y"},{"name":"c","image":"z"}])"));
}

TEST(StrategicMergePatchKindsTest, KubectlApplyRemovesContainer) {
  json deployment = J(R"({"spec":{"template":{"spec":{"containers":[
      {"name":"a","image":"x"},{"name":"b","image":"y"}]}}}})");
  json patch = J(R"({"spec":{"template":{"spec":{"$setElementOrder/containers":[{"name":"a"}],
      "containers":[{"$patch":"delete","name":"b"}]}}}})");
  auto r = smpKind("apps", "Deployment", deployment, patch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["spec"]["template"]["spec"]["containers"], J(R"([{"name":"a","image":"x"}])"));
}

TEST(StrategicMergePatchKindsTest, PodContainerFieldsMergeByTheirKeys) {
  json pod = J(R"({"spec":{"containers":[{"name":"app","image":"i",
      "env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],
      "ports":[{"containerPort":80,"name":"http"}],
      "volumeMounts":[{"name":"data","mountPath":"/data"}],
      "envFrom":[{"configMapRef":{"name":"x"}}]}],
      "tolerations":[{"key":"k1","operator":"Exists"}],
      "volumes":[{"name":"data","emptyDir":{}}]}})");
  json patch = J(R"({"spec":{"containers":[{"name":"app",
      "env":[{"name":"B","value":"3"}],
      "ports":[{"containerPort":443,"name":"https"}],
      "volumeMounts":[{"name":"data","mountPath":"/data","readOnly":true}],
      "envFrom":[{"secretRef":{"name":"y"}}]}],
      "tolerations":[{"key":"k2","operator":"Exists"}]}})");
  auto r = smpKind("", "Pod", pod, patch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const json& c = (*r)["spec"]["containers"][0];
  EXPECT_EQ(c["image"], "i");
  EXPECT_EQ(c["env"], J(R"([{"name":"A","value":"1"},{"name":"B","value":"3"}])"));
  EXPECT_EQ(c["ports"], J(R"([{"containerPort":443,"name":"https"},
                              {"containerPort":80,"name":"http"}])"));
  EXPECT_EQ(c["volumeMounts"], J(R"([{"name":"data","mountPath":"/data","readOnly":true}])"));
  // Untagged lists are replaced.
  EXPECT_EQ(c["envFrom"], J(R"([{"secretRef":{"name":"y"}}])"));
  EXPECT_EQ((*r)["spec"]["tolerations"], J(R"([{"key":"k2","operator":"Exists"}])"));
  EXPECT_EQ((*r)["spec"]["volumes"], pod["spec"]["volumes"]);
}

TEST(StrategicMergePatchKindsTest, VolumeSourceSwitchWithRetainKeys) {
  json pod = J(R"({"spec":{"volumes":[{"name":"v","emptyDir":{}},{"name":"w","emptyDir":{}}]}})");
  json patch = J(R"({"spec":{"$setElementOrder/volumes":[{"name":"v"},{"name":"w"}],
      "volumes":[{"$retainKeys":["configMap","name"],"configMap":{"name":"cm"},"name":"v"}]}})");
  auto r = smpKind("", "Pod", pod, patch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["spec"]["volumes"],
            J(R"([{"name":"v","configMap":{"name":"cm"}},{"name":"w","emptyDir":{}}])"));
}

TEST(StrategicMergePatchKindsTest, DeploymentStrategySwitchWithRetainKeys) {
  json d = J(R"({"spec":{"strategy":{"type":"RollingUpdate",
      "rollingUpdate":{"maxSurge":1,"maxUnavailable":0}}}})");
  json patch = J(R"({"spec":{"strategy":{"$retainKeys":["type"],"type":"Recreate"}}})");
  auto r = smpKind("apps", "Deployment", d, patch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["spec"]["strategy"], J(R"({"type":"Recreate"})"));
}

TEST(StrategicMergePatchKindsTest, MetadataFinalizersAndOwnerReferences) {
  json cm = J(R"({"metadata":{"name":"x","finalizers":["a","b"],
      "ownerReferences":[{"uid":"u1","kind":"Deployment","name":"d"}],
      "labels":{"keep":"1","drop":"2"}},"data":{"k":"v"}})");
  json patch = J(R"({"metadata":{"finalizers":["c"],
      "$deleteFromPrimitiveList/finalizers":["a"],
      "ownerReferences":[{"uid":"u2","kind":"ReplicaSet","name":"r"},
                         {"uid":"u1","controller":true}],
      "labels":{"drop":null}}})");
  auto r = smpKind("", "ConfigMap", cm, patch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  std::vector<std::string> finalizers = (*r)["metadata"]["finalizers"];
  std::sort(finalizers.begin(), finalizers.end());
  EXPECT_EQ(finalizers, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ((*r)["metadata"]["ownerReferences"], J(R"([{"uid":"u2","kind":"ReplicaSet","name":"r"},
                  {"uid":"u1","kind":"Deployment","name":"d","controller":true}])"));
  EXPECT_EQ((*r)["metadata"]["labels"], J(R"({"keep":"1"})"));
  EXPECT_EQ((*r)["data"], J(R"({"k":"v"})"));
}

TEST(StrategicMergePatchKindsTest, PodStatusConditionsMergeContainerStatusesReplace) {
  json pod = J(R"({"status":{"phase":"Pending",
      "conditions":[{"type":"PodScheduled","status":"True"},{"type":"Ready","status":"False"}],
      "containerStatuses":[{"name":"a","ready":false},{"name":"b","ready":false}]}})");
  json patch = J(R"({"status":{"phase":"Running",
      "conditions":[{"type":"Ready","status":"True"}],
      "containerStatuses":[{"name":"a","ready":true}]}})");
  auto r = smpKind("", "Pod", pod, patch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["status"]["conditions"],
            J(R"([{"type":"PodScheduled","status":"True"},{"type":"Ready","status":"True"}])"));
  EXPECT_EQ((*r)["status"]["containerStatuses"], J(R"([{"name":"a","ready":true}])"));
}

TEST(StrategicMergePatchKindsTest, ServicePortsMergeByPort) {
  json svc = J(R"({"spec":{"type":"ClusterIP","ports":[{"port":80,"targetPort":8080},
                                                       {"port":443}]}})");
  json patch = J(R"({"spec":{"ports":[{"port":80,"targetPort":9090}]}})");
  auto r = smpKind("", "Service", svc, patch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["spec"]["ports"], J(R"([{"port":80,"targetPort":9090},{"port":443}])"));
}

TEST(StrategicMergePatchKindsTest, NodeStatusMergesTaintsReplace) {
  json node =
      J(R"({"spec":{"taints":[{"key":"a","effect":"NoSchedule"}],"podCIDRs":["10.0.0.0/24"]},
      "status":{"conditions":[{"type":"Ready","status":"False"},{"type":"DiskPressure","status":"False"}],
                "addresses":[{"type":"InternalIP","address":"10.0.0.1"},
                             {"type":"Hostname","address":"n1"}]}})");
  json patch = J(R"({"spec":{"taints":[{"key":"b","effect":"NoExecute"}],"podCIDRs":["fd00::/64"]},
      "status":{"conditions":[{"type":"Ready","status":"True"}],
                "addresses":[{"type":"InternalIP","address":"10.0.0.2"}]}})");
  auto r = smpKind("", "Node", node, patch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["spec"]["taints"], J(R"([{"key":"b","effect":"NoExecute"}])"));
  EXPECT_EQ((*r)["spec"]["podCIDRs"], J(R"(["fd00::/64","10.0.0.0/24"])"));
  EXPECT_EQ((*r)["status"]["conditions"],
            J(R"([{"type":"Ready","status":"True"},{"type":"DiskPressure","status":"False"}])"));
  EXPECT_EQ((*r)["status"]["addresses"], J(R"([{"type":"InternalIP","address":"10.0.0.2"},
                                                {"type":"Hostname","address":"n1"}])"));
}

TEST(StrategicMergePatchKindsTest, CronJobTemplateContainersMergeByName) {
  json cj = J(R"({"spec":{"schedule":"* * * * *","jobTemplate":{"spec":{"template":{"spec":{
      "containers":[{"name":"a","image":"x","args":["1"]},{"name":"b","image":"y"}]}}}}}})");
  json patch = J(R"({"spec":{"jobTemplate":{"spec":{"template":{"spec":{
      "containers":[{"name":"a","image":"x2"}]}}}}}})");
  auto r = smpKind("batch", "CronJob", cj, patch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"],
            J(R"([{"name":"a","image":"x2","args":["1"]},{"name":"b","image":"y"}])"));
}

TEST(StrategicMergePatchKindsTest, StatefulSetTemplateAndTopologySpread) {
  json sts = J(R"({"spec":{"template":{"spec":{"topologySpreadConstraints":[
      {"topologyKey":"zone","maxSkew":1,"whenUnsatisfiable":"DoNotSchedule"},
      {"topologyKey":"host","maxSkew":1,"whenUnsatisfiable":"ScheduleAnyway"}]}}}})");
  json patch = J(R"({"spec":{"template":{"spec":{"topologySpreadConstraints":[
      {"topologyKey":"zone","maxSkew":2}]}}}})");
  auto r = smpKind("apps", "StatefulSet", sts, patch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["spec"]["template"]["spec"]["topologySpreadConstraints"][0]["maxSkew"], 2);
  EXPECT_EQ((*r)["spec"]["template"]["spec"]["topologySpreadConstraints"].size(), 2u);
}

TEST(StrategicMergePatchKindsTest, ServiceAccountSecretsMergeByName) {
  json sa = J(R"({"secrets":[{"name":"a"}],"imagePullSecrets":[{"name":"p"}]})");
  json patch = J(R"({"secrets":[{"name":"b"}],"imagePullSecrets":[{"name":"q"}]})");
  auto r = smpKind("", "ServiceAccount", sa, patch);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["secrets"], J(R"([{"name":"b"},{"name":"a"}])"));
  EXPECT_EQ((*r)["imagePullSecrets"], J(R"([{"name":"q"}])"));
}

TEST(StrategicMergePatchKindsTest, MalformedPodPatchesFailCleanly) {
  json pod = J(R"({"spec":{"containers":[{"name":"a","image":"x","env":[{"name":"E"}]}]}})");
  for (
      const char* p : {
          R"({"spec":{"containers":[{"image":"no-name"}]}})",
          R"({"spec":{"containers":[1,2]}})",
          R"({"spec":{"$setElementOrder/containers":[{"image":"x"}],"containers":[{"name":"a"}]}})",
          R"({"spec":{"$setElementOrder/containers":{"name":"a"}}})",
          R"({"spec":{"containers":[{"name":"a","env":[[1]]}]}})",
          R"({"spec":{"containers":[{"name":"a","$patch":"merge"}]}})",
          R"({"spec":{"$retainKeys":5}})",
      }) {
    auto r = smpKind("", "Pod", pod, J(p));
    EXPECT_FALSE(r.ok()) << p << " gave " << (r.ok() ? r->dump() : "");
  }
}

}  // namespace
}  // namespace strait::kube
