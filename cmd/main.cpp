// strait: one binary, subcommands (see ARCHITECTURE.md). Each subcommand's composition
// root lives in its own cmd/*_cmd.cpp.
#include <CLI/CLI.hpp>

#include "cmd/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"strait: borrow another Kubernetes cluster's capacity through a virtual node"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "strait 0.1.0");
  strait::cmd::addMiniclusterCommand(app);
  strait::cmd::addAgentCommand(app);
  strait::cmd::addPeeringCommands(app);
  strait::cmd::addGatewayCommand(app);
  strait::cmd::addOffloadCommands(app);
  strait::cmd::addDemoCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return strait::cmd::exitCode();
}
