// `eventctl seal --setup` and `eventctl verify` (issue 28; docs/EVENTCTL.md "Sealing and
// verifying"): the commands that work on a store directory rather than through eventd's socket.
// Each takes the arguments after its word (argv[0] is the word) and returns the exit code.
#pragma once

namespace eventctl {

int run_seal_command(int argc, const char* const* argv);
int run_verify_command(int argc, const char* const* argv);

}  // namespace eventctl
