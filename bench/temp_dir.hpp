// A directory of a benchmark's own under a given parent (a real disk for stores: synchronous=FULL
// on tmpfs would measure nothing), removed with everything in it when the owner goes away.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace bench {

class TempDir {
public:
    // `parent`/`prefix`XXXXXX, created with mkdtemp (mode 0700).
    TempDir(const std::filesystem::path& parent, const std::string& prefix) {
        std::string templ = (parent / (prefix + "XXXXXX")).string();
        if (!mkdtemp(templ.data())) throw std::runtime_error("cannot create a directory " + templ + " (mkdtemp)");
        path_ = templ;
    }
    ~TempDir() {
        std::error_code ec;  // best effort: a destructor does not throw
        std::filesystem::remove_all(path_, ec);
    }
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

}  // namespace bench
