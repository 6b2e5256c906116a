#pragma once
#include <CLI/CLI.hpp>

namespace strait::cmd {

// Each adds one subcommand whose callback runs it and records the exit code.
void addMiniclusterCommand(CLI::App& app);
void addAgentCommand(CLI::App& app);
void addPeeringCommands(CLI::App& app);  // token, peer, unpeer, status
void addPoolCommands(CLI::App& app);  // pool add|resize|remove|list (from addPeeringCommands)
void addGatewayCommand(CLI::App& app);
void addFabricCommand(CLI::App& app);  // strait fabric: the per-node routes of the network fabric
void addOffloadCommands(CLI::App& app);  // offload, unoffload
void addExposeCommand(CLI::App& app);  // expose service
void addDemoCommand(CLI::App& app);  // strait demo
void addAgnhostCommand(CLI::App& app);  // agnhost netexec, agnhost serve-hostname

// Exit code recorded by the subcommand that ran.
int exitCode();
void setExitCode(int code);

}  // namespace strait::cmd
