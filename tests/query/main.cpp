// Catch2 v2 runner of the query tests (tests/query/meson.build registers one meson test per tag).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
