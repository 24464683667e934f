// The Catch2 main of every test executable, compiled once: this one file costs about 45 s of
// compilation (Catch2 v2's implementation), which the suites used to pay once per executable
// (docs/DEVELOPING.md, build time).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
