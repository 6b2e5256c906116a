// libFuzzer target over the API server's request handling: the input is split into method,
// path+query, content type and body, and handed to the real ApiHandler (store, registry,
// REST layer behind it). Any crash, hang or sanitizer report is a bug; every answer must be
// a complete HTTP response.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "minicluster/api_handler.h"
#include "minicluster/registry.h"
#include "minicluster/rest.h"
#include "minicluster/store.h"

namespace {

using namespace strait::minicluster;
using strait::kube::HttpRequest;
using strait::kube::HttpResponse;
using strait::kube::Responder;

class CollectingResponder : public Responder {
 public:
  bool respond(HttpResponse r) override {
    answered = true;
    return r.status >= 100;
  }
  bool startStream(int, std::map<std::string, std::string>) override {
    answered = true;
    return true;
  }
  bool writeChunk(std::string_view) override { return false; }  // hang up after one chunk
  bool clientGone() override { return true; }
  bool answered = false;
};

struct Server {
  Server() {
    StoreOptions so;
    so.historyLimit = 64;
    store = newStore(so);
    (void)store->open();
    registry = std::make_unique<Registry>();
    rest = std::make_unique<Rest>(*store, *registry);
    handler = std::make_unique<ApiHandler>(*store, *registry, *rest);
    HttpRequest ns;
    ns.method = "POST";
    ns.path = ns.target = "/api/v1/namespaces";
    ns.headers["content-type"] = "application/json";
    ns.body = R"({"metadata":{"name":"default"}})";
    ns.user = "fuzz";
    CollectingResponder out;
    handler->handle(ns, out);
  }
  std::unique_ptr<Store> store;
  std::unique_ptr<Registry> registry;
  std::unique_ptr<Rest> rest;
  std::unique_ptr<ApiHandler> handler;
};

// Splits at the first '\n' and returns the head; `rest` keeps the remainder.
std::string takeLine(std::string& rest) {
  auto nl = rest.find('\n');
  std::string head = rest.substr(0, nl);
  rest = nl == std::string::npos ? "" : rest.substr(nl + 1);
  return head;
}

std::string percentDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && isxdigit(s[i + 1]) && isxdigit(s[i + 2])) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Server server;
  static const char* methods[] = {"GET", "POST", "PUT", "PATCH", "DELETE"};
  static const char* types[] = {"application/json", "application/yaml",
                                "application/merge-patch+json", "application/json-patch+json",
                                "application/strategic-merge-patch+json",
                                "application/apply-patch+yaml"};
  if (size < 2) return 0;
  std::string input(reinterpret_cast<const char*>(data) + 2, size - 2);
  HttpRequest req;
  req.method = methods[data[0] % 5];
  req.headers["content-type"] = types[data[1] % 6];
  req.user = "fuzz";
  req.target = takeLine(input);
  auto q = req.target.find('?');
  req.path = percentDecode(req.target.substr(0, q));
  if (q != std::string::npos) {
    std::string qs = req.target.substr(q + 1);
    size_t i = 0;
    while (i <= qs.size()) {
      size_t j = qs.find('&', i);
      if (j == std::string::npos) j = qs.size();
      std::string kv = qs.substr(i, j - i);
      auto eq = kv.find('=');
      std::string key = percentDecode(kv.substr(0, eq));
      // A fuzzed watch would block for its timeout: keep watches short.
      if (key != "timeoutSeconds") {
        req.query.emplace_back(key, eq == std::string::npos ? "" : percentDecode(kv.substr(eq + 1)));
      }
      i = j + 1;
    }
  }
  req.query.emplace_back("timeoutSeconds", "0");
  req.body = input;
  CollectingResponder out;
  server.handler->handle(req, out);
  if (!out.answered) __builtin_trap();  // every request gets an answer
  return 0;
}
