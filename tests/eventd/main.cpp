// Catch2 v2 runner of the eventd integration tests (tests/eventd/meson.build registers one
// meson test per tag; each TEST_CASE starts its own kmes-shimd and eventd).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
