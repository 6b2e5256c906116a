#pragma once
// Static bearer-token authentication (kube-apiserver's --token-auth-file): a CSV file of
// token,user,uid,"group1,group2" lines. A request without a client certificate that carries
// `Authorization: Bearer <token>` of a listed token is handled as that user; an unknown
// token gets 401. Requests with a client certificate are passed through unchanged.
//
// Thread-safe after construction (the token table is read-only).

#include <map>
#include <string>
#include <vector>

#include "kube/http_server.h"
#include "kube/status.h"

namespace strait::minicluster {

struct StaticToken {
  std::string user;
  std::string uid;
  std::vector<std::string> groups;
};

// Parses the CSV file. Invalid naming the file and line for a malformed line (fewer than 3
// fields, empty token or user, unterminated quote) or a duplicate token.
kube::Result<std::map<std::string, StaticToken>> loadTokenAuthFile(const std::string& path);

class TokenAuthHandler : public kube::Handler {
 public:
  // `inner` must outlive this handler.
  TokenAuthHandler(std::map<std::string, StaticToken> tokens, kube::Handler& inner)
      : tokens_(std::move(tokens)), inner_(inner) {}
  void handle(const kube::HttpRequest& req, kube::Responder& out) override;

 private:
  const std::map<std::string, StaticToken> tokens_;
  kube::Handler& inner_;
};

}  // namespace strait::minicluster
