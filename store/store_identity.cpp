#include "store_identity.hpp"

#include <sys/random.h>

#include <cerrno>
#include <fstream>
#include <string>

#include "base/guid_text.hpp"
#include "base/durable_file.hpp"

namespace eventd::store {

base::Result<StoreId> read_store_id(const std::filesystem::path& dir) {
    const std::filesystem::path path = dir / kStoreIdFileName;
    std::ifstream in(path);
    if (!in) return base::errno_error("cannot read " + path.string());
    std::string line;
    std::getline(in, line);
    const auto id = base::parse_guid(line);
    if (!id) {
        return base::Error{EIO, path.string() + " does not hold a store id (a GUID): remove it to have eventd "
                                                "write a new one, which invalidates every cursor of this store"};
    }
    return *id;
}

base::Result<StoreId> load_or_create_store_id(const std::filesystem::path& dir) {
    auto existing = read_store_id(dir);
    if (existing || existing.error().code != base::ErrorCode::not_found) return existing;
    StoreId id{};
    if (::getrandom(id.data(), id.size(), 0) != ssize_t(id.size()))
        return base::errno_error("getrandom for the store id");
    if (auto s = base::write_file_atomically(dir / kStoreIdFileName, base::guid_text(id) + "\n"); !s) return s.error();
    return id;
}

}  // namespace eventd::store
