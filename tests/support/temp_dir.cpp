#include "support/temp_dir.hpp"

#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <system_error>

namespace test_support {

TempDir::TempDir() {
    char pattern[] = "/tmp/eventd-test-XXXXXX";
    if (!mkdtemp(pattern)) throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
    path_ = pattern;
    if (chmod(pattern, 0755) != 0) {
        const std::string why = std::strerror(errno);
        std::error_code ec;
        std::filesystem::remove(path_, ec);
        throw std::runtime_error("chmod 0755 " + path_.native() + ": " + why);
    }
}

TempDir::~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

}  // namespace test_support
