// strait: one binary, subcommands (docs/architecture.md lists them). Each subcommand's composition
// root lives in its own cmd/*_cmd.cpp.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>

#include "cmd/cli_util.h"
#include "cmd/commands.h"
#include "kube/client.h"

namespace {

constexpr const char* kVersion = "strait 0.1.0";

constexpr const char* kFooter =
    "Run `strait COMMAND --help` for a command's flags.\n"
    "Exit codes: 0 ok; 1 the command failed; 2 bad usage (unknown command or flag, bad or\n"
    "missing value); 130 interrupted (Ctrl-C).";

std::vector<std::string> subcommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

// The first argument when it is meant as a command name (not a flag); "" otherwise.
std::string commandWord(int argc, char** argv) {
  if (argc < 2) return {};
  std::string first = argv[1];
  return (first.empty() || first[0] == '-') ? std::string() : first;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace strait::cmd;
  // One thread runs the HTTP clients' I/O: handlers run one after the other instead of
  // waking an idle thread each (kube/client.h).
  (void)strait::kube::setHttpIoThreads(1);
  CLI::App app{"strait: borrow another Kubernetes cluster's capacity through a virtual node"};
  app.name("strait");
  app.require_subcommand(1);
  app.set_version_flag("--version", kVersion);
  app.footer(kFooter);
  addMiniclusterCommand(app);
  addAgentCommand(app);
  addPeeringCommands(app);
  addGatewayCommand(app);
  addFabricCommand(app);
  addOffloadCommands(app);
  addExposeCommand(app);
  addDemoCommand(app);
  addAgnhostCommand(app);
  app.add_subcommand("version", "print the version")->callback([] {
    std::cout << kVersion << "\n";
  });
  app.add_subcommand("help", "print this list of commands")->callback([&app] {
    // app.help() would describe the selected subcommand (help itself): format the top level.
    std::cout << app.get_formatter()->make_help(&app, app.get_name(), CLI::AppFormatMode::Normal);
  });

  if (argc < 2) {  // bare `strait`: the list of commands, as bad usage
    std::cerr << app.help();
    return kExitUsage;
  }
  std::string word = commandWord(argc, argv);
  std::vector<std::string> names = subcommandNames(app);
  if (!word.empty() && std::find(names.begin(), names.end(), word) == names.end()) {
    std::cerr << "error: unknown subcommand \"" << word << "\"";
    std::string near = closestName(word, names);
    if (!near.empty()) std::cerr << "; did you mean \"" << near << "\"?";
    std::cerr << "\nRun `strait help` for the list of commands.\n";
    return kExitUsage;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help/version (code 0) or the error
    return code == 0 ? kExitOk : kExitUsage;
  }
  return exitCode();
}
