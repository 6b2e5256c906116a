#include "kube/selector.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strait::kube {
namespace {

LabelSelector sel(std::string_view s) {
  auto r = LabelSelector::parse(s);
  EXPECT_TRUE(r.ok()) << s << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? r.value() : LabelSelector::nothing();
}

TEST(LabelSelectorTest, ParsesAndPrintsCanonically) {
  struct Case {
    std::string in;
    std::string out;
  };
  const std::vector<Case> cases = {
      {"", ""},
      {"   ", ""},
      {"x=a", "x=a"},
      {"x==a", "x==a"},
      {"x!=a", "x!=a"},
      {"x=a,y=b", "x=a,y=b"},
      {"y=b,x=a", "x=a,y=b"},  // sorted by key
      {" x = a , y != b ", "x=a,y!=b"},
      {"x in (a)", "x in (a)"},
      {"x in (b,a)", "x in (a,b)"},
      {"x in (a,a,b)", "x in (a,b)"},
      {"x notin (a,b)", "x notin (a,b)"},
      {"x in (foo,,baz),y,z notin ()", "x in (,baz,foo),y,z notin ()"},
      {"x in (,a)", "x in (,a)"},
      {"x in (a,)", "x in (,a)"},
      {"x", "x"},
      {"!x", "!x"},
      {"! x", "!x"},
      {"x,!y", "x,!y"},
      {"!b,a", "a,!b"},
      {"x=", "x="},
      {"x=,y=b", "x=,y=b"},
      {"x>1", "x>1"},
      {"x<10", "x<10"},
      {"example.com/app=web", "example.com/app=web"},
      {"a.b-c_d=e.f-g_h", "a.b-c_d=e.f-g_h"},
      {"x=in", "x=in"},
      {"x in (in,notin)", "x in (in,notin)"},
      {"x\tin\t(a)", "x in (a)"},
  };
  for (const auto& c : cases) {
    auto r = LabelSelector::parse(c.in);
    ASSERT_TRUE(r.ok()) << c.in << ": " << r.error().message;
    EXPECT_EQ(r->toString(), c.out) << c.in;
    // The printed form parses to the same selector.
    auto again = LabelSelector::parse(r->toString());
    ASSERT_TRUE(again.ok()) << r->toString();
    EXPECT_EQ(again->toString(), c.out);
  }
}

TEST(LabelSelectorTest, MalformedSelectorsAreErrors) {
  const std::vector<std::string> bad = {"x=a||y=b",
                                        "x==a==b",
                                        "!x=a",
                                        "x<a",
                                        "x>1.5",
                                        "x in a",
                                        "x in (a",
                                        "x in (a,b",
                                        "x in a)",
                                        "x notin",
                                        "x=a,",
                                        ",x=a",
                                        "x=a,,y=b",
                                        "x=(a)",
                                        "x y",
                                        "x=a b",
                                        "=a",
                                        "!",
                                        "!!x",
                                        "(",
                                        ")",
                                        "x in ((a))",
                                        "x in (a b)",
                                        "x=a=b",
                                        "-x=a",
                                        "x-=a",
                                        "x=-a",
                                        "x=a-",
                                        "a/b/c=d",
                                        "/b=c",
                                        "a/=c",
                                        "Example.com/a=b",
                                        "x!a",
                                        "x===a",
                                        "x in ()a",
                                        "x in (a),",
                                        std::string(64, 'a') + "=b",
                                        "x=" + std::string(64, 'a'),
                                        "x=a\xff",
                                        "x@y=z",
                                        "x<-1",
                                        "x>",
                                        "x in (a,b))"};
  for (const auto& s : bad) {
    auto r = LabelSelector::parse(s);
    EXPECT_FALSE(r.ok()) << "parsed unexpectedly: " << s << " -> " << (r.ok() ? r->toString() : "");
    if (!r.ok()) {
      EXPECT_EQ(r.code(), Code::BadRequest) << s;
      EXPECT_FALSE(r.error().message.empty());
    }
  }
}

TEST(LabelSelectorTest, ErrorMessagesSayWhatIsWrong) {
  auto r = LabelSelector::parse("x=a b");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "found 'b', expected: ',' or 'end of string'");

  r = LabelSelector::parse("x in a");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "unable to parse requirement: found 'a' expected: '('");

  r = LabelSelector::parse("x=a,");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "found '', expected: identifier after ','");

  r = LabelSelector::parse("x y");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message,
            "unable to parse requirement: found 'y', expected: in, notin, =, ==, !=, gt, lt");

  r = LabelSelector::parse("-x=a");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("unable to parse requirement: Invalid value: \"-x\": name "
                                   "part must consist of alphanumeric characters"),
            std::string::npos)
      << r.error().message;

  r = LabelSelector::parse("x=-a");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("a valid label must be an empty string"), std::string::npos)
      << r.error().message;

  r = LabelSelector::parse("x>a");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("the value must be an integer"), std::string::npos);

  r = LabelSelector::parse(")");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "found ')', expected: !, identifier, or 'end of string'");
}

TEST(LabelSelectorTest, Matches) {
  LabelSet labels = {{"app", "web"}, {"tier", "frontend"}, {"replicas", "3"}, {"empty", ""}};
  struct Case {
    std::string selector;
    bool match;
  };
  const std::vector<Case> cases = {
      {"", true},
      {"app=web", true},
      {"app==web", true},
      {"app=db", false},
      {"app!=db", true},
      {"app!=web", false},
      {"missing!=x", true},
      {"missing=x", false},
      {"app in (web,db)", true},
      {"app in (db)", false},
      {"missing in (x)", false},
      {"app notin (db)", true},
      {"app notin (web)", false},
      {"missing notin (x)", true},
      {"app", true},
      {"missing", false},
      {"!app", false},
      {"!missing", true},
      {"app=web,tier=frontend", true},
      {"app=web,tier=backend", false},
      {"empty=", true},
      {"empty", true},
      {"empty in ()", true},
      {"missing=", false},
      {"replicas>2", true},
      {"replicas>3", false},
      {"replicas<4", true},
      {"replicas<3", false},
      {"app>1", false},  // not an integer
      {"missing>1", false},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(sel(c.selector).matches(labels), c.match) << c.selector;
  }
}

TEST(LabelSelectorTest, EmptyNothingAndExactMatch) {
  EXPECT_TRUE(sel("").empty());
  EXPECT_TRUE(LabelSelector().empty());
  EXPECT_TRUE(LabelSelector().matches({}));
  EXPECT_FALSE(sel("a").empty());
  LabelSelector nothing = LabelSelector::nothing();
  EXPECT_FALSE(nothing.empty());
  EXPECT_TRUE(nothing.matchesNothing());
  EXPECT_FALSE(nothing.matches({}));
  EXPECT_FALSE(nothing.matches({{"a", "b"}}));

  EXPECT_EQ(sel("a=b,c=d").requiresExactMatch("a"), "b");
  EXPECT_EQ(sel("a in (b)").requiresExactMatch("a"), "b");
  EXPECT_EQ(sel("a in (b,c)").requiresExactMatch("a"), std::nullopt);
  EXPECT_EQ(sel("a!=b").requiresExactMatch("a"), std::nullopt);
  EXPECT_EQ(sel("a=b").requiresExactMatch("c"), std::nullopt);

  auto reqs = sel("b in (y,x),a").requirements();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].key, "a");
  EXPECT_EQ(reqs[0].op, SelectorOp::Exists);
  EXPECT_EQ(reqs[1].key, "b");
  EXPECT_EQ(reqs[1].op, SelectorOp::In);
  EXPECT_EQ(reqs[1].values, (std::vector<std::string>{"x", "y"}));
}

TEST(LabelSelectorTest, FromSet) {
  auto s = LabelSelector::fromSet({{"b", "2"}, {"a", "1"}});
  EXPECT_EQ(s.toString(), "a=1,b=2");
  EXPECT_TRUE(s.matches({{"a", "1"}, {"b", "2"}, {"c", "3"}}));
  EXPECT_FALSE(s.matches({{"a", "1"}}));
  EXPECT_TRUE(LabelSelector::fromSet({}).empty());
}

TEST(LabelSelectorTest, FromJson) {
  auto j = nlohmann::json::parse(R"({
    "matchLabels": {"app": "web"},
    "matchExpressions": [
      {"key": "tier", "operator": "In", "values": ["frontend", "cache"]},
      {"key": "env", "operator": "NotIn", "values": ["prod"]},
      {"key": "team", "operator": "Exists"},
      {"key": "legacy", "operator": "DoesNotExist", "values": []}
    ]})");
  auto r = LabelSelector::fromJson(j);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->toString(), "app=web,env notin (prod),!legacy,team,tier in (cache,frontend)");
  EXPECT_TRUE(r->matches({{"app", "web"}, {"tier", "cache"}, {"team", "a"}}));
  EXPECT_FALSE(r->matches({{"app", "web"}, {"tier", "cache"}, {"team", "a"}, {"legacy", ""}}));
  EXPECT_FALSE(r->matches({{"app", "web"}, {"tier", "cache"}, {"team", "a"}, {"env", "prod"}}));
  EXPECT_FALSE(r->matches({{"app", "web"}, {"tier", "db"}, {"team", "a"}}));

  auto empty = LabelSelector::fromJson(nlohmann::json::object());
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_TRUE(empty->matches({{"x", "y"}}));

  auto null = LabelSelector::fromJson(nlohmann::json());
  ASSERT_TRUE(null.ok());
  EXPECT_TRUE(null->matchesNothing());
  EXPECT_FALSE(null->matches({}));
}

TEST(LabelSelectorTest, FromJsonErrorsNameTheField) {
  struct Case {
    const char* json;
    const char* field;
  };
  const Case cases[] = {
      {R"({"matchExpressions":[{"key":"a","operator":"Equals","values":["b"]}]})",
       "matchExpressions[0].operator"},
      {R"({"matchExpressions":[{"key":"a","operator":"In","values":[]}]})", "matchExpressions[0]"},
      {R"({"matchExpressions":[{"key":"a","operator":"In"}]})", "matchExpressions[0]"},
      {R"({"matchExpressions":[{"key":"a","operator":"Exists","values":["x"]}]})",
       "matchExpressions[0]"},
      {R"({"matchExpressions":[{"operator":"Exists"}]})", "matchExpressions[0].key"},
      {R"({"matchExpressions":[{"key":"-a","operator":"Exists"}]})", "matchExpressions[0]"},
      {R"({"matchExpressions":[{"key":"a","operator":"In","values":[1]}]})",
       "matchExpressions[0].values"},
      {R"({"matchExpressions":{}})", "matchExpressions"},
      {R"({"matchExpressions":[1]})", "matchExpressions[0]"},
      {R"({"matchLabels":{"a":"b c"}})", "matchLabels[a]"},
      {R"({"matchLabels":{"a b":"c"}})", "matchLabels[a b]"},
      {R"({"matchLabels":{"a":1}})", "matchLabels[a]"},
      {R"({"matchLabels":[]})", "matchLabels"},
  };
  for (const auto& c : cases) {
    auto r = LabelSelector::fromJson(nlohmann::json::parse(c.json));
    ASSERT_FALSE(r.ok()) << c.json;
    EXPECT_EQ(r.code(), Code::Invalid) << c.json;
    EXPECT_EQ(r.error().field, c.field) << c.json << ": " << r.error().message;
  }
  auto r = LabelSelector::fromJson(nlohmann::json::parse(
      R"({"matchExpressions":[{"key":"a","operator":"Equals","values":["b"]}]})"));
  EXPECT_NE(r.error().message.find("\"Equals\" is not a valid label selector operator"),
            std::string::npos);
  EXPECT_FALSE(LabelSelector::fromJson(nlohmann::json::array()).ok());
  EXPECT_FALSE(LabelSelector::fromJson("a=b").ok());
}

TEST(FieldSelectorTest, ParsesAndMatches) {
  auto r = FieldSelector::parse("metadata.name=foo,status.phase!=Running");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_FALSE(r->empty());
  EXPECT_EQ(r->toString(), "metadata.name=foo,status.phase!=Running");
  ASSERT_EQ(r->requirements().size(), 2u);
  EXPECT_EQ(r->requirements()[0], (FieldRequirement{"metadata.name", SelectorOp::Equals, "foo"}));
  EXPECT_EQ(r->requirements()[1],
            (FieldRequirement{"status.phase", SelectorOp::NotEquals, "Running"}));
  EXPECT_TRUE(r->matches({{"metadata.name", "foo"}, {"status.phase", "Pending"}}));
  EXPECT_FALSE(r->matches({{"metadata.name", "foo"}, {"status.phase", "Running"}}));
  EXPECT_FALSE(r->matches({{"metadata.name", "bar"}}));
  EXPECT_TRUE(r->matches({{"metadata.name", "foo"}}));  // missing field is ""
  EXPECT_EQ(r->requiresExactMatch("metadata.name"), "foo");
  EXPECT_EQ(r->requiresExactMatch("status.phase"), std::nullopt);
}

TEST(FieldSelectorTest, Forms) {
  struct Case {
    std::string in;
    std::string out;
  };
  const std::vector<Case> cases = {
      {"", ""},
      {",", ""},
      {"a=b", "a=b"},
      {"a==b", "a=b"},
      {"a!=b", "a!=b"},
      {"b=1,a=2", "a=2,b=1"},  // terms sorted
      {"a=", "a="},
      {"a!=", "a!="},
      {"spec.nodeName=", "spec.nodeName="},
      {"a=b\\,c", "a=b\\,c"},
      {"a=b\\=c", "a=b\\=c"},
      {"a=b\\\\c", "a=b\\\\c"},
      {"a=b,,c=d", "a=b,c=d"},
  };
  for (const auto& c : cases) {
    auto r = FieldSelector::parse(c.in);
    ASSERT_TRUE(r.ok()) << c.in << ": " << r.error().message;
    EXPECT_EQ(r->toString(), c.out) << c.in;
  }
  auto esc = FieldSelector::parse("a=x\\,y\\=z\\\\w");
  ASSERT_TRUE(esc.ok());
  EXPECT_EQ(esc->requirements()[0].value, "x,y=z\\w");
  EXPECT_TRUE(esc->matches({{"a", "x,y=z\\w"}}));
  EXPECT_TRUE(FieldSelector::parse("").value().empty());
  EXPECT_TRUE(FieldSelector().matches({}));
  auto empty = FieldSelector::parse("a=");
  EXPECT_TRUE(empty->matches({}));
  EXPECT_FALSE(empty->matches({{"a", "x"}}));
}

TEST(FieldSelectorTest, Errors) {
  auto r = FieldSelector::parse("a");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.code(), Code::BadRequest);
  EXPECT_EQ(r.error().message, "invalid selector: 'a'; can't understand 'a'");
  r = FieldSelector::parse("a=b,c");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "invalid selector: 'a=b,c'; can't understand 'c'");
  r = FieldSelector::parse("a=b=c");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "invalid field selector: unescaped character in value: =");
  r = FieldSelector::parse("a=b\\x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "invalid field selector: invalid escape sequence: \\x");
  r = FieldSelector::parse("a=b\\");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "invalid field selector: invalid escape sequence: \\");
  EXPECT_FALSE(FieldSelector::parse("a!b").ok());
  EXPECT_FALSE(FieldSelector::parse("a==b=c").ok());
}

TEST(FieldSelectorTest, EscapeRoundTrip) {
  for (std::string v : {"", "plain", "a,b", "a=b", "a\\b", "\\,=\\\\", "x\xff"}) {
    std::string e = escapeFieldValue(v);
    auto back = unescapeFieldValue(e);
    ASSERT_TRUE(back.ok()) << e;
    EXPECT_EQ(back.value(), v);
    auto sel = FieldSelector::parse("f=" + e);
    ASSERT_TRUE(sel.ok()) << e;
    EXPECT_TRUE(sel->matches({{"f", v}}));
    EXPECT_EQ(sel->toString(), "f=" + e);
  }
}

}  // namespace
}  // namespace strait::kube
