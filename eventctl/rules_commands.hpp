// `eventctl rules check FILE|DIR…` (issue 41; docs/DETECTION.md): compiles Sigma rule files as
// eventd would (detection/), offline, and says per rule whether it compiles or why not. Takes
// the arguments after its word (argv[0] is "rules") and returns the exit code: 0 every rule
// compiles, 1 one or more is refused, 2 usage or a file that cannot be read.
#pragma once

namespace eventctl {

int run_rules_command(int argc, const char* const* argv);

}  // namespace eventctl
