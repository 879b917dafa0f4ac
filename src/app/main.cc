// The `shale` executable: dispatches to a registered sub-command.
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "app/command.h"

namespace shale::app {
namespace {
std::map<std::string, Command>& registry() {
  static std::map<std::string, Command> r;
  return r;
}
}  // namespace

void register_command(const Command& c) { registry()[c.name] = c; }

}  // namespace shale::app

namespace {

void usage(FILE* out) {
  std::fprintf(out, "Shale %s: a Kafka-compatible broker on shared storage\n\n", SHALE_VERSION);
  std::fprintf(out, "Usage: shale <command> [options]\n\nCommands:\n");
  for (const auto& [name, c] : shale::app::registry()) {
    std::fprintf(out, "  %-10s %s\n", name.c_str(), c.summary);
  }
  std::fprintf(out, "\nRun 'shale <command> --help' for a command's options.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "-h" || cmd == "--help" || cmd == "help") {
    usage(stdout);
    return 0;
  }
  if (cmd == "--version" || cmd == "version") {
    std::printf("shale %s\n", SHALE_VERSION);
    return 0;
  }
  auto& reg = shale::app::registry();
  auto it = reg.find(cmd);
  if (it == reg.end()) {
    std::fprintf(stderr, "shale: unknown command '%s'\n\n", cmd.c_str());
    usage(stderr);
    return 2;
  }
  std::string prog = "shale " + cmd;
  std::vector<char*> args;
  args.push_back(prog.data());
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  return it->second.main(static_cast<int>(args.size() - 1), args.data());
}
