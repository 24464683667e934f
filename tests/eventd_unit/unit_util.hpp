// Helpers shared by eventd's unit tests: a temporary directory, a KMES-like event row.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

#include <catch2/catch.hpp>

#include "store/event_row.hpp"

namespace eventd_unit {

// A temporary directory for one test, removed with everything in it.
class TempDir {
public:
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "eventd-unit-XXXXXX").string();
        REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
        path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// A KMES event row of CPU 0: sequence and timestamp `n`, origin class 1, no payload.
inline eventd::store::EventRow kmes_row(uint64_t n, std::string type) {
    eventd::store::EventRow row;
    row.timestamp = n;
    row.cpu_id = 0;
    row.sequence = n;
    row.origin_class = 1;
    row.event_type = std::move(type);
    return row;
}

}  // namespace eventd_unit
