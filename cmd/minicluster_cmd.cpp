#include "cmd/commands.h"

namespace strait::cmd {
namespace {
int g_exit = 0;
}
int exitCode() { return g_exit; }
void setExitCode(int code) { g_exit = code; }

void addMiniclusterCommand(CLI::App& app) {
  auto* sub = app.add_subcommand("minicluster", "run an embedded Kubernetes API server");
  sub->callback([] { setExitCode(1); });
}

}  // namespace strait::cmd
