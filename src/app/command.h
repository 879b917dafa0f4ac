// Sub-commands of the `shale` executable (serve, perf, admin, ...). Each lives in its own file
// under src/app/ and registers itself with a static Registrar, so adding a command never touches
// main.cc. A command's main() receives argv with argv[0] = "shale <name>" and parses its own
// options (CLI11 for most; `perf` keeps AutoMQ's exact option syntax).
#pragma once

namespace shale::app {

struct Command {
  const char* name;
  const char* summary;
  int (*main)(int argc, char** argv);
};

void register_command(const Command& c);

struct Registrar {
  explicit Registrar(const Command& c) { register_command(c); }
};

}  // namespace shale::app
