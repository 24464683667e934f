// A temporary directory for one test: made under /tmp, removed with everything in it when the
// object goes. The one such type of every suite.
#pragma once

#include <filesystem>
#include <string>

namespace test_support {

// mkdtemp("/tmp/eventd-test-XXXXXX"), then mode 0755 (mkdtemp makes 0700): the integration and
// query tests run programs as other users (kmes-probe and eventctl as `nobody` or the test
// users, through setpriv), and those must reach the sockets and files inside. Always /tmp, not
// $TMPDIR: a socket path inside must stay within sun_path's 108 bytes, and every user can walk
// into /tmp. Throws std::runtime_error when the directory cannot be made.
class TempDir {
public:
    TempDir();
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    const std::filesystem::path& path() const { return path_; }
    const std::string& str() const { return path_.native(); }
    std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

}  // namespace test_support
