#include "store/cursor_key.hpp"

#include <sodium.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "base/base64url.hpp"
#include "base/durable_file.hpp"

namespace eventd::store {
namespace {

constexpr std::string_view kVersion2 = "2.";
constexpr std::string_view kAdditionalData = "eventd-cursor-2";
constexpr size_t kStoreIdBytes = 16;
constexpr size_t kNonceBytes = crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
constexpr size_t kTagBytes = crypto_aead_xchacha20poly1305_ietf_ABYTES;
static_assert(crypto_aead_xchacha20poly1305_ietf_KEYBYTES == 32);

base::Error not_a_cursor(const std::string& why) {
    return {EINVAL, "not a cursor eventd wrote (" + why + "); use the `cursor` of an ok frame unchanged"};
}

// sodium_init is idempotent and thread-safe; it fails only without a usable random source.
void ensure_sodium() {
    if (sodium_init() < 0) std::abort();
}

// The associated data: the version string and the store id, bound to the ciphertext.
std::vector<unsigned char> associated_data(const unsigned char* store_id) {
    std::vector<unsigned char> ad(kAdditionalData.begin(), kAdditionalData.end());
    ad.insert(ad.end(), store_id, store_id + kStoreIdBytes);
    return ad;
}

}  // namespace

CursorKey CursorKey::random() {
    ensure_sodium();
    CursorKey k;
    crypto_aead_xchacha20poly1305_ietf_keygen(k.key_.data());
    return k;
}

base::Result<CursorKey> CursorKey::load_or_create(const std::filesystem::path& dir) {
    const std::filesystem::path path = dir / kCursorKeyFileName;
    std::ifstream in(path, std::ios::binary);
    if (in) {
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const auto bytes = base::base64url_decode(text.substr(0, text.find('\n')));
        if (!bytes || bytes->size() != 32)
            return base::Error{EIO, path.string() +
                                        " does not hold a cursor key (32 bytes, base64url); remove it "
                                        "to make a new one (issued cursors then become invalid)"};
        CursorKey k;
        std::memcpy(k.key_.data(), bytes->data(), 32);
        return k;
    }
    if (errno != ENOENT) return base::errno_error("cannot read " + path.string());
    CursorKey k = random();
    const std::string text = base::base64url_encode(std::span<const uint8_t>(k.key_.data(), k.key_.size())) + "\n";
    if (auto s = base::write_file_atomically(path, text, 0600); !s) return s.error();
    return k;
}

std::string CursorKey::seal(const StorePosition& position) const {
    const std::vector<uint8_t> plain = position_bytes(position);
    std::vector<unsigned char> out(kStoreIdBytes + kNonceBytes + plain.size() + kTagBytes);
    std::memcpy(out.data(), position.store.data(), kStoreIdBytes);
    unsigned char* nonce = out.data() + kStoreIdBytes;
    randombytes_buf(nonce, kNonceBytes);
    const auto ad = associated_data(out.data());
    unsigned long long sealed = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(out.data() + kStoreIdBytes + kNonceBytes, &sealed, plain.data(),
                                               plain.size(), ad.data(), ad.size(), nullptr, nonce, key_.data());
    return std::string(kVersion2) + base::base64url_encode(out);
}

base::Result<StorePosition> CursorKey::open(std::string_view text, const StoreId& here) const {
    const size_t dot = text.find('.');
    if (dot == std::string_view::npos || dot == 0) return not_a_cursor("no version prefix");
    const std::string_view version = text.substr(0, dot + 1);
    if (version == "1.")
        return base::Error{EINVAL,
                           "this cursor is of an older eventd (version 1, unsealed), which is no longer "
                           "accepted: resume from a cursor this eventd issued, or start again"};
    if (version != kVersion2)
        return base::Error{EINVAL, "cursor version '" + std::string(text.substr(0, dot)) +
                                       "' is not one this eventd reads (a cursor of a newer eventd?)"};
    // A bound before decoding: position_from_bytes refuses more than 65536 files anyway.
    if (text.size() > 2 * 1024 * 1024) return not_a_cursor("too long");
    const auto bytes = base::base64url_decode(text.substr(kVersion2.size()));
    if (!bytes) return not_a_cursor("not base64url");
    if (bytes->size() < kStoreIdBytes + kNonceBytes + kTagBytes) return not_a_cursor("wrong length");
    const unsigned char* store_id = bytes->data();
    StorePosition foreign;
    std::memcpy(foreign.store.data(), store_id, kStoreIdBytes);
    // Another store's cursor is said to be one (it cannot open under this key anyway).
    if (foreign.store != here) return foreign;
    const auto ad = associated_data(store_id);
    const unsigned char* nonce = store_id + kStoreIdBytes;
    const unsigned char* sealed = nonce + kNonceBytes;
    const size_t sealed_size = bytes->size() - kStoreIdBytes - kNonceBytes;
    std::vector<unsigned char> plain(sealed_size - kTagBytes);
    unsigned long long plain_size = 0;
    if (crypto_aead_xchacha20poly1305_ietf_decrypt(plain.data(), &plain_size, nullptr, sealed, sealed_size, ad.data(),
                                                   ad.size(), nonce, key_.data()) != 0) {
        return not_a_cursor("it does not authenticate: altered, forged, or sealed under another key");
    }
    auto position = position_from_bytes(std::span<const uint8_t>(plain.data(), plain_size));
    if (!position) return position.error();
    if (position->store != foreign.store) return not_a_cursor("store ids disagree");
    return position;
}

}  // namespace eventd::store
