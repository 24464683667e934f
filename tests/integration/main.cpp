// Catch2 v2 runner of the kmes-shimd integration tests (tests/integration/meson.build
// registers one meson test per tag; each TEST_CASE starts its own kmes-shimd).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
