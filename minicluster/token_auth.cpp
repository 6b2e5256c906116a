#include "minicluster/token_auth.h"

#include <spdlog/spdlog.h>

#include <fstream>

#include "minicluster/api_handler.h"

namespace strait::minicluster {
namespace {

using kube::HttpRequest;
using kube::HttpResponse;
using kube::Responder;

// Splits one CSV line (RFC 4180 quotes, "" inside quotes). False on an unterminated quote.
bool splitCsv(const std::string& line, std::vector<std::string>& out) {
  out.clear();
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (quoted) return false;
  out.push_back(std::move(cur));
  return true;
}

}  // namespace

kube::Result<std::map<std::string, StaticToken>> loadTokenAuthFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return kube::makeError(kube::Code::Invalid, path + ": cannot read token auth file");
  }
  std::map<std::string, StaticToken> tokens;
  std::string line;
  std::vector<std::string> f;
  for (int lineNo = 1; std::getline(in, line); ++lineNo) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    std::string where = path + ":" + std::to_string(lineNo);
    if (!splitCsv(line, f)) {
      return kube::makeError(kube::Code::Invalid, where + ": unterminated quote");
    }
    if (f.size() < 3 || f[0].empty() || f[1].empty()) {
      return kube::makeError(kube::Code::Invalid,
                             where + ": expected token,user,uid[,\"group1,group2\"]");
    }
    StaticToken t{f[1], f[2], {}};
    if (f.size() > 3) {
      std::vector<std::string> groups;
      splitCsv(f[3], groups);
      for (auto& g : groups) {
        if (!g.empty()) t.groups.push_back(g);
      }
    }
    if (!tokens.emplace(f[0], std::move(t)).second) {
      return kube::makeError(kube::Code::Invalid, where + ": duplicate token");
    }
  }
  return tokens;
}

void TokenAuthHandler::handle(const HttpRequest& req, Responder& out) {
  std::string auth = req.header("authorization");
  if (!req.user.empty() || auth.empty()) {
    inner_.handle(req, out);
    return;
  }
  static const std::string kBearer = "Bearer ";
  auto it = auth.rfind(kBearer, 0) == 0 ? tokens_.find(auth.substr(kBearer.size()))
                                        : tokens_.end();
  if (it == tokens_.end()) {
    spdlog::info("event=token_rejected path={} remote={}", req.path, req.remoteAddr);
    HttpResponse r;
    r.status = 401;
    r.headers["Content-Type"] = "application/json";
    r.body = statusBody(kube::makeError(kube::Code::Unauthorized, "Unauthorized"));
    out.respond(std::move(r));
    return;
  }
  HttpRequest authed = req;
  authed.user = it->second.user;
  authed.groups = it->second.groups;
  authed.groups.push_back("system:authenticated");
  inner_.handle(authed, out);
}

}  // namespace strait::minicluster
