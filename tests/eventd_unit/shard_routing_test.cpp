// CPU → shard assignment (PSD-008 §2.3.2, DESIGN.md §8).
#include <catch2/catch.hpp>

#include "eventd/ingest/shard_routing.hpp"

using eventd::shards_of_cpus;
using Routes = std::vector<std::vector<uint32_t>>;

TEST_CASE("as many shards as CPUs: one shard each", "[routing]") { CHECK(shards_of_cpus(2, 2) == Routes{{0}, {1}}); }

TEST_CASE("fewer shards than CPUs: CPU i writes to shard i % shards", "[routing]") {
    CHECK(shards_of_cpus(4, 2) == Routes{{0}, {1}, {0}, {1}});
    CHECK(shards_of_cpus(3, 1) == Routes{{0}, {0}, {0}});
}

TEST_CASE("more shards than CPUs: shard j belongs to CPU j % cpus", "[routing]") {
    CHECK(shards_of_cpus(2, 5) == Routes{{0, 2, 4}, {1, 3}});
}
