// `strait agnhost`: the e2e test image's netexec and serve-hostname, for process-runtime Pods
// that have no command. Flags it does not know are ignored, as the image's own args may
// carry more.
#include "cmd/commands.h"
#include "minicluster/agnhost.h"

namespace strait::cmd {

void addAgnhostCommand(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "agnhost", "the behaviour of Kubernetes' e2e test image (netexec, serve-hostname)");
  sub->require_subcommand(1);
  auto netexec = std::make_shared<int>(8080);
  auto* ne = sub->add_subcommand("netexec", "HTTP: /hostname, /echo?msg=, /clientip, /healthz");
  ne->add_option("--http-port", *netexec, "port to serve HTTP on")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
  ne->allow_extras();
  ne->callback([netexec] {
    minicluster::AgnhostServer s;
    s.mode = minicluster::AgnhostServer::Mode::Netexec;
    s.port = static_cast<uint16_t>(*netexec);
    setExitCode(minicluster::runAgnhost(s));
  });
  auto serveHostname = std::make_shared<int>(9376);
  auto* sh = sub->add_subcommand("serve-hostname", "HTTP: every request answers the hostname");
  sh->add_option("--port", *serveHostname, "port to serve on")
      ->capture_default_str()
      ->check(CLI::Range(1, 65535));
  sh->allow_extras();
  sh->callback([serveHostname] {
    minicluster::AgnhostServer s;
    s.mode = minicluster::AgnhostServer::Mode::ServeHostname;
    s.port = static_cast<uint16_t>(*serveHostname);
    setExitCode(minicluster::runAgnhost(s));
  });
}

}  // namespace strait::cmd
