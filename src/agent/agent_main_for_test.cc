// A stand-in for the `cohort` binary in tests of this directory and of src/client: it runs
// `agent` (RunAgent with AgentOptionsFromEnv) and `sync PATH...` (RunSync), nothing else.
// Tests point COHORT_BIN at it.
#include <cstring>
#include <string>
#include <vector>

#include "agent/agent.h"

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "agent") == 0) {
    return cohort::agent::RunAgent(cohort::agent::AgentOptionsFromEnv());
  }
  return 2;
}
