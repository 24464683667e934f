#include "seal/sealing_key.hpp"

#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

#include "base/durable_file.hpp"
#include "base/hex.hpp"
#include "seal/signed_bytes.hpp"
#include "store/store_privacy.hpp"

namespace eventd::seal {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kKeyMagic = "eventd-sealing-key v1";
constexpr std::string_view kCertsMagic = "eventd-sealing-certs v1";
constexpr std::string_view kEvolveDomain = "eventd seal evolve v1";
constexpr std::string_view kCertDomain = "eventd-epoch-v1";
constexpr size_t kCertRecord = 32 + 64;  // pk ‖ certificate


base::Status init_sodium() {
    if (sodium_init() < 0) return base::Error{EIO, "libsodium could not be initialised"};
    return {};
}

std::string schedule_fields(const EpochSchedule& s) {
    return "start " + std::to_string(s.start_s) + "\nepoch_seconds " + std::to_string(s.epoch_seconds) + "\nepochs " +
           std::to_string(s.epochs) + "\n";
}

std::string key_file_text(const EpochSchedule& s, uint64_t epoch, const std::array<uint8_t, 32>& seed) {
    return std::string(kKeyMagic) + "\n" + schedule_fields(s) + "epoch " + std::to_string(epoch) + "\nseed " +
           base::hex_text(seed) + "\n";
}

std::string certs_header(const EpochSchedule& s) {
    return std::string(kCertsMagic) + " start=" + std::to_string(s.start_s) +
           " epoch_seconds=" + std::to_string(s.epoch_seconds) + " epochs=" + std::to_string(s.epochs) + "\n";
}

template <class T>
bool number(const std::string& text, T& out) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc() && end == text.data() + text.size();
}

base::Error bad_file(const fs::path& file, const std::string& what) {
    return {EPROTO, file.string() + ": " + what + " (make new keys with `eventctl seal --setup` after moving it away)"};
}

base::Result<std::string> read_all(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return base::errno_error(errno, "open " + file.string());
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return base::errno_error(EIO, "read " + file.string());
    return text.str();
}

void keypair_of(const std::array<uint8_t, 32>& seed, PublicKey& pk, std::array<uint8_t, 64>& sk) {
    crypto_sign_seed_keypair(pk.data(), sk.data(), seed.data());
}

}  // namespace

uint64_t EpochSchedule::epoch_at(uint64_t time_ns) const {
    const uint64_t s = time_ns / 1'000'000'000u;
    return s <= start_s ? 0 : (s - start_s) / epoch_seconds;
}

uint64_t EpochSchedule::epoch_start_ns(uint64_t epoch) const {
    return (start_s + epoch * epoch_seconds) * 1'000'000'000u;
}

std::vector<uint8_t> certificate_message(const EpochSchedule& schedule, uint64_t epoch, const PublicKey& pk) {
    std::vector<uint8_t> out(kCertDomain.begin(), kCertDomain.end());
    put_u64(out, schedule.start_s);
    put_u32(out, schedule.epoch_seconds);
    put_u64(out, epoch);
    out.insert(out.end(), pk.begin(), pk.end());
    return out;
}

std::array<uint8_t, 32> evolve_seed(const std::array<uint8_t, 32>& seed) {
    std::array<uint8_t, 32> next;
    crypto_generichash_blake2b_state state;
    crypto_generichash_blake2b_init(&state, nullptr, 0, next.size());
    crypto_generichash_blake2b_update(&state, reinterpret_cast<const uint8_t*>(kEvolveDomain.data()),
                                      kEvolveDomain.size());
    crypto_generichash_blake2b_update(&state, seed.data(), seed.size());
    crypto_generichash_blake2b_final(&state, next.data(), next.size());
    return next;
}

base::Result<std::string> setup_keys(const fs::path& dir, const SetupOptions& options) {
    if (auto s = init_sodium(); !s) return s.error();
    struct stat dir_stat;
    if (::stat(dir.c_str(), &dir_stat) != 0) return base::errno_error(errno, "store directory " + dir.string());
    if (!S_ISDIR(dir_stat.st_mode)) return base::Error{ENOTDIR, dir.string() + " is not a directory"};
    if (auto s = store::refuse_shared_store_directory(dir); !s) return s.error();
    const fs::path key_path = dir / kKeyFile;
    std::error_code ec;
    if (fs::exists(key_path, ec)) {
        return base::Error{EEXIST, key_path.string() +
                                       " exists already: the store is set up for sealing (its verification key was "
                                       "printed then). To start over, move that file and " + kCertsFile + " away first"};
    }
    if (options.epoch_seconds < 1) return base::Error{EINVAL, "the epoch must be at least 1 second"};
    const double epochs = std::ceil(options.years * 365.25 * 86400 / options.epoch_seconds);
    if (!(epochs >= 1) || epochs > 50'000'000) {
        return base::Error{EINVAL, "the horizon must hold between 1 and 50 000 000 epochs (years × epoch length)"};
    }

    EpochSchedule schedule;
    schedule.start_s = uint64_t(std::time(nullptr));
    schedule.epoch_seconds = options.epoch_seconds;
    schedule.epochs = uint64_t(epochs);

    PublicKey master_pk;
    std::array<uint8_t, 64> master_sk;
    crypto_sign_keypair(master_pk.data(), master_sk.data());
    std::array<uint8_t, 32> first_seed, seed;
    randombytes_buf(first_seed.data(), first_seed.size());
    seed = first_seed;

    std::string certs = certs_header(schedule);
    certs.reserve(certs.size() + schedule.epochs * kCertRecord);
    PublicKey pk;
    std::array<uint8_t, 64> sk;
    Signature cert;
    for (uint64_t e = 0; e < schedule.epochs; ++e) {
        keypair_of(seed, pk, sk);
        const auto message = certificate_message(schedule, e, pk);
        crypto_sign_detached(cert.data(), nullptr, message.data(), message.size(), master_sk.data());
        certs.append(reinterpret_cast<const char*>(pk.data()), pk.size());
        certs.append(reinterpret_cast<const char*>(cert.data()), cert.size());
        seed = evolve_seed(seed);
        if (options.progress && (e + 1 == schedule.epochs || (e + 1) % 4096 == 0)) options.progress(e + 1, schedule.epochs);
    }
    // The master secret and every later seed exist only here: gone before anything is written.
    sodium_memzero(master_sk.data(), master_sk.size());
    sodium_memzero(sk.data(), sk.size());
    sodium_memzero(seed.data(), seed.size());

    const std::string key_text = key_file_text(schedule, 0, first_seed);
    sodium_memzero(first_seed.data(), first_seed.size());
    // 0600 like the whole store (store_privacy.hpp), although nothing in it is secret. eventd's
    // user (the store directory's owner) reads and rewrites the key as epochs pass: root gives
    // both files to it on their descriptors before they get their names (durable_file.hpp), so
    // nothing that user planted in its directory is followed, opened or chowned.
    base::NewFile file{0600, std::nullopt};
    if (::geteuid() == 0) file.owner = base::FileOwner{dir_stat.st_uid, dir_stat.st_gid};
    if (auto s = base::write_file_atomically(dir / kCertsFile, certs, file); !s) return s.error();
    if (auto s = base::write_file_atomically(key_path, key_text, file); !s) return s.error();
    return base::hex_text(master_pk);
}

base::Result<PublicKey> parse_verification_key(const std::string& text) {
    PublicKey key;
    std::string trimmed = text;
    while (!trimmed.empty() && (trimmed.back() == '\n' || trimmed.back() == ' ' || trimmed.back() == '\r'))
        trimmed.pop_back();
    if (!base::hex_bytes(trimmed, key)) {
        return base::Error{EINVAL, "a verification key is 64 hex digits (the last line `eventctl seal --setup` printed)"};
    }
    return key;
}

base::Result<std::unique_ptr<Sealer>> Sealer::load(const fs::path& dir) {
    const fs::path key_path = dir / kKeyFile;
    std::error_code ec;
    if (!fs::exists(key_path, ec)) return std::unique_ptr<Sealer>();
    if (auto s = init_sodium(); !s) return s.error();
    auto text = read_all(key_path);
    if (!text) return text.error();
    std::istringstream lines(*text);
    std::string line;
    std::getline(lines, line);
    if (line != kKeyMagic) return bad_file(key_path, "not an eventd sealing key");
    std::map<std::string, std::string> fields;
    while (std::getline(lines, line)) {
        const size_t space = line.find(' ');
        if (space != std::string::npos) fields[line.substr(0, space)] = line.substr(space + 1);
    }
    std::unique_ptr<Sealer> sealer(new Sealer());
    sealer->dir_ = dir;
    EpochSchedule& s = sealer->schedule_;
    if (!number(fields["start"], s.start_s) || !number(fields["epoch_seconds"], s.epoch_seconds) ||
        s.epoch_seconds == 0 || !number(fields["epochs"], s.epochs) || !number(fields["epoch"], sealer->epoch_) ||
        !base::hex_bytes(fields["seed"], sealer->seed_)) {
        return bad_file(key_path, "a field is missing or malformed");
    }
    // The header names the schedule, and the size is the horizon's: anything else is another
    // store's file, or a damaged one.
    const fs::path certs_path = dir / kCertsFile;
    std::ifstream certs(certs_path, std::ios::binary);
    std::string header;
    if (!certs || !std::getline(certs, header)) return bad_file(certs_path, "is missing or unreadable");
    header += "\n";
    std::error_code size_ec;
    const uint64_t size = fs::file_size(certs_path, size_ec);
    if (header != certs_header(s) || size_ec || size != header.size() + s.epochs * kCertRecord) {
        return bad_file(certs_path, "does not belong to " + key_path.string() + " or is truncated");
    }
    sealer->certs_offset_ = header.size();
    if (sealer->epoch_ >= s.epochs) return bad_file(key_path, "its epoch is past the horizon");
    if (auto st = sealer->read_certificate(); !st) return st.error();
    return sealer;
}

Sealer::~Sealer() { sodium_memzero(seed_.data(), seed_.size()); }

base::Status Sealer::read_certificate() {
    const fs::path certs_path = dir_ / kCertsFile;
    std::ifstream certs(certs_path, std::ios::binary);
    std::array<char, kCertRecord> record;
    certs.seekg(std::streamoff(certs_offset_ + epoch_ * kCertRecord));
    if (!certs.read(record.data(), record.size())) return bad_file(certs_path, "cannot be read");
    std::memcpy(epoch_key_.data(), record.data(), 32);
    std::memcpy(certificate_.data(), record.data() + 32, 64);
    PublicKey pk;
    std::array<uint8_t, 64> sk;
    keypair_of(seed_, pk, sk);
    sodium_memzero(sk.data(), sk.size());
    if (pk != epoch_key_) {
        return bad_file(dir_ / kKeyFile, "its seed does not make the key certified for epoch " + std::to_string(epoch_));
    }
    return {};
}

uint64_t Sealer::current_epoch() const {
    std::lock_guard lock(mutex_);
    return epoch_;
}

base::Status Sealer::advance_to(uint64_t epoch) {
    std::array<uint8_t, 32> seed = seed_;
    for (uint64_t e = epoch_; e < epoch; ++e) seed = evolve_seed(seed);
    // Durable before use: a crash must never leave the file on an epoch whose key already signed
    // something later (a verifier would see the same epoch signed by a re-derived key anyway,
    // but the older seed must not survive on disk longer than needed).
    const std::string text = key_file_text(schedule_, epoch, seed);
    if (auto s = base::write_file_atomically(dir_ / kKeyFile, text, 0600); !s) {
        sodium_memzero(seed.data(), seed.size());
        return s;
    }
    sodium_memzero(seed_.data(), seed_.size());
    seed_ = seed;
    sodium_memzero(seed.data(), seed.size());
    epoch_ = epoch;
    return read_certificate();
}

base::Result<EpochSignature> Sealer::sign(uint64_t time_ns,
                                          const std::function<std::vector<uint8_t>(uint64_t epoch)>& message_for) {
    std::lock_guard lock(mutex_);
    const uint64_t wanted = schedule_.epoch_at(time_ns);
    if (wanted >= schedule_.epochs) {
        return base::Error{EKEYEXPIRED, "the sealing keys end with epoch " + std::to_string(schedule_.epochs - 1) +
                                            ": set up new ones (`eventctl seal --setup`, docs/OPERATIONS.md)"};
    }
    if (wanted > epoch_) {
        if (auto s = advance_to(wanted); !s) return s.error();
    }
    EpochSignature out;
    out.epoch = epoch_;
    std::array<uint8_t, 64> sk;
    keypair_of(seed_, out.epoch_key, sk);
    const std::vector<uint8_t> message = message_for(epoch_);
    crypto_sign_detached(out.signature.data(), nullptr, message.data(), message.size(), sk.data());
    sodium_memzero(sk.data(), sk.size());
    out.certificate = certificate_;
    return out;
}

}  // namespace eventd::seal
