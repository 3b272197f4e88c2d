// The inspection CA: key and certificate files, and minting leaves (certificate_authority.hpp).
#include "proxy/inspect/certificate_authority.hpp"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace sandgate::inspect {
namespace {

namespace fs = std::filesystem;
using clock = std::chrono::system_clock;

constexpr long kCaDays = 365;
constexpr auto kLeafBefore = std::chrono::hours(1);  // clocks a little behind still accept it
constexpr auto kLeafLife = std::chrono::hours(24);
constexpr auto kLeafRenewal = std::chrono::hours(1);  // re-minted when less is left

std::string openssl_error(std::string_view what) {
  const unsigned long code = ERR_get_error();
  char text[256] = "unknown error";
  if (code != 0) {
    ERR_error_string_n(code, text, sizeof text);
  }
  ERR_clear_error();
  return std::string(what) + ": " + text;
}

std::shared_ptr<EVP_PKEY> new_p256_key() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  return key == nullptr ? nullptr : std::shared_ptr<EVP_PKEY>(key, EVP_PKEY_free);
}

// A random positive 127-bit serial (RFC 5280: at most 20 octets, positive).
bool set_random_serial(X509* certificate) {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    return false;
  }
  bytes[0] &= 0x7f;
  BIGNUM* number = BN_bin2bn(bytes, sizeof bytes, nullptr);
  if (number == nullptr) {
    return false;
  }
  ASN1_INTEGER* serial = BN_to_ASN1_INTEGER(number, X509_get_serialNumber(certificate));
  BN_free(number);
  return serial != nullptr;
}

bool add_extension(X509* certificate, X509* issuer, int nid, const char* value) {
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer, certificate, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
  if (extension == nullptr) {
    return false;
  }
  const int added = X509_add_ext(certificate, extension, -1);
  X509_EXTENSION_free(extension);
  return added == 1;
}

std::string pem_of(X509* certificate) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, certificate);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string text(data, static_cast<std::size_t>(size));
  BIO_free(bio);
  return text;
}

std::string pem_of(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string text(data, static_cast<std::size_t>(size));
  BIO_free(bio);
  return text;
}

// Writes `text` to `path` with `mode`, atomically (a temporary file in the same folder, synced,
// renamed over it).
std::optional<std::string> write_private(const std::string& path, const std::string& text,
                                         mode_t mode) {
  std::string temporary = path + ".XXXXXX";
  const int fd = ::mkostemp(temporary.data(), O_CLOEXEC);
  if (fd < 0) {
    return path + ": cannot create a file beside it: " + std::strerror(errno);
  }
  bool ok = ::fchmod(fd, mode) == 0;
  std::size_t written = 0;
  while (ok && written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    ok = n > 0;
    written += n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  ok = ok && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!ok || ::rename(temporary.c_str(), path.c_str()) != 0) {
    const int error = ok ? errno : saved;
    ::unlink(temporary.c_str());
    return path + ": cannot write: " + std::strerror(error);
  }
  return std::nullopt;
}

std::string host_label() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  const char* user = std::getenv("USER");
  return std::string(user != nullptr ? user : "user") + "@" + name;
}

Expected<CaPaths, std::string> create_ca(const CaPaths& paths) {
  auto key = new_p256_key();
  std::shared_ptr<X509> certificate(X509_new(), X509_free);
  if (!key || !certificate) {
    return Unexpected{openssl_error("cannot make the CA key")};
  }
  X509* cert = certificate.get();
  X509_set_version(cert, 2);
  X509_NAME* name = X509_get_subject_name(cert);
  const std::string common_name = "sandgate inspection CA (" + host_label() + ")";
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>("sandgate"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert, name);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_time_adj_ex(X509_getm_notAfter(cert), kCaDays, 0, nullptr);
  X509_set_pubkey(cert, key.get());
  if (!set_random_serial(cert) ||
      !add_extension(cert, cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      !add_extension(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign") ||
      !add_extension(cert, cert, NID_subject_key_identifier, "hash") ||
      X509_sign(cert, key.get(), EVP_sha256()) == 0) {
    return Unexpected{openssl_error("cannot make the CA certificate")};
  }
  // The key first: a certificate without its key would be a CA nobody can use.
  if (auto error = write_private(paths.key, pem_of(key.get()), 0600)) {
    return Unexpected{*error};
  }
  if (auto error = write_private(paths.certificate, pem_of(cert), 0644)) {
    return Unexpected{*error};
  }
  return paths;
}

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

std::optional<std::string> prepare_folder(const std::string& folder) {
  std::error_code ec;
  const bool created = fs::create_directories(folder, ec);
  if (ec) {
    return folder + ": cannot create the CA folder: " + ec.message();
  }
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0) {
    return folder + ": " + std::strerror(errno);
  }
  if (st.st_uid != ::geteuid()) {
    return folder + ": the CA folder belongs to another user";
  }
  if (!created && (st.st_mode & 022) != 0) {
    // Others could have replaced what it holds: nothing in it is trusted, nor made private now.
    return folder + ": the CA folder can be written by others (mode " + octal_mode(st.st_mode) +
           "); its key and certificate cannot be trusted: make it private (chmod 700 " + folder +
           ") and make a new CA (sandgate ca --rotate)";
  }
  if ((st.st_mode & 077) != 0 && ::chmod(folder.c_str(), 0700) != 0) {
    return folder + ": cannot make the CA folder private (mode 0700): " + std::strerror(errno);
  }
  return std::nullopt;
}

template <typename T, typename Read>
std::shared_ptr<T> read_pem(const std::string& path, Read read, void (*free)(T*)) {
  BIO* bio = BIO_new_file(path.c_str(), "r");
  if (bio == nullptr) {
    return nullptr;
  }
  T* value = read(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  return value == nullptr ? nullptr : std::shared_ptr<T>(value, free);
}

}  // namespace

CaPaths ca_paths(const std::string& folder) {
  return {folder, (fs::path(folder) / "ca.pem").string(),
          (fs::path(folder) / "ca-key.pem").string()};
}

Expected<std::string, std::string> write_trust_bundle(const CertificateAuthority& ca) {
  std::string roots_file;
  if (const char* given = std::getenv("SSL_CERT_FILE"); given != nullptr && given[0] != '\0') {
    roots_file = given;
  } else {
    roots_file = X509_get_default_cert_file();
  }
  std::string text;
  if (FILE* roots = std::fopen(roots_file.c_str(), "r")) {
    char chunk[65536];
    std::size_t n = 0;
    while ((n = std::fread(chunk, 1, sizeof chunk, roots)) > 0) {
      text.append(chunk, n);
    }
    std::fclose(roots);
  }
  if (!text.empty() && text.back() != '\n') {
    text += '\n';
  }
  text += pem_of(ca.certificate());
  std::string folder = ca.paths().folder;
  while (folder.size() > 1 && folder.back() == '/') {
    folder.pop_back();
  }
  const std::string path = folder + "-bundle.pem";
  if (auto error = write_private(path, text, 0644)) {
    return Unexpected{*error};
  }
  return path;
}

Expected<std::string, std::string> write_java_trust_store(const std::string& bundle) {
  std::unique_ptr<BIO, decltype(&BIO_free)> in(BIO_new_file(bundle.c_str(), "r"), BIO_free);
  if (!in) {
    return Unexpected{openssl_error(bundle)};
  }
  // Oracle's trusted-key-usage attribute (2.16.840.1.113894.746875.1.1) valued
  // anyExtendedKeyUsage: "trusted for every purpose", as keytool writes it.
  ASN1_OBJECT* any_usage = OBJ_txt2obj("2.5.29.37.0", 1);
  int trusted_usage = OBJ_txt2nid("2.16.840.1.113894.746875.1.1");
  if (trusted_usage == NID_undef) {
    trusted_usage = OBJ_create("2.16.840.1.113894.746875.1.1", "oracle-jdk-trustedkeyusage",
                               "Trusted key usage (Oracle)");
  }
  STACK_OF(PKCS12_SAFEBAG)* bags = nullptr;
  std::size_t count = 0;
  bool failed = any_usage == nullptr || trusted_usage == NID_undef;
  while (!failed) {
    X509* certificate = PEM_read_bio_X509(in.get(), nullptr, nullptr, nullptr);
    if (certificate == nullptr) {
      ERR_clear_error();  // the end of the file
      break;
    }
    PKCS12_SAFEBAG* bag = PKCS12_add_cert(&bags, certificate);
    const std::string alias = "sandgate-" + std::to_string(++count);
    failed = bag == nullptr || PKCS12_add_friendlyname_asc(bag, alias.c_str(), -1) != 1 ||
             PKCS12_add1_attr_by_NID(bag, trusted_usage, V_ASN1_OBJECT,
                                     reinterpret_cast<const unsigned char*>(any_usage), -1) != 1;
    X509_free(certificate);
  }
  ASN1_OBJECT_free(any_usage);
  PKCS12* store = nullptr;
  if (!failed && count > 0) {
    STACK_OF(PKCS7)* safes = nullptr;
    // The certificates unencrypted (they are public), the whole under a MAC as Java expects.
    if (PKCS12_add_safe(&safes, bags, -1, 0, nullptr) == 1) {
      store = PKCS12_add_safes(safes, 0);
    }
    sk_PKCS7_pop_free(safes, PKCS7_free);
    if (store != nullptr &&
        PKCS12_set_mac(store, kJavaTrustStorePassword, -1, nullptr, 0, 2048, nullptr) != 1) {
      PKCS12_free(store);
      store = nullptr;
    }
  }
  sk_PKCS12_SAFEBAG_pop_free(bags, PKCS12_SAFEBAG_free);
  if (store == nullptr) {
    return Unexpected{count == 0 ? bundle + ": no certificate to trust"
                                 : openssl_error(bundle + ": the Java trust store")};
  }
  unsigned char* der = nullptr;
  const int size = i2d_PKCS12(store, &der);
  PKCS12_free(store);
  if (size <= 0) {
    return Unexpected{openssl_error(bundle + ": the Java trust store")};
  }
  const std::string text(reinterpret_cast<const char*>(der), static_cast<std::size_t>(size));
  OPENSSL_free(der);
  std::string path = bundle;
  if (path.ends_with(".pem")) {
    path.resize(path.size() - 4);
  }
  path += ".p12";
  if (auto error = write_private(path, text, 0644)) {
    return Unexpected{*error};
  }
  return path;
}

std::string default_ca_folder(const std::string& home) {
  const char* data = std::getenv("XDG_DATA_HOME");
  const fs::path base =
      data != nullptr && data[0] == '/' ? fs::path(data) : fs::path(home) / ".local" / "share";
  return (base / "sandgate" / "ca").string();
}

Expected<CaPaths, std::string> CertificateAuthority::rotate(const std::string& folder) {
  if (auto error = prepare_folder(folder)) {
    return Unexpected{*error};
  }
  return create_ca(ca_paths(folder));
}

Expected<std::unique_ptr<CertificateAuthority>, std::string> CertificateAuthority::open(
    const std::string& folder, std::size_t cache_size) {
  if (auto error = prepare_folder(folder)) {
    return Unexpected{*error};
  }
  const CaPaths paths = ca_paths(folder);
  struct stat st {};
  if (::stat(paths.key.c_str(), &st) != 0) {
    if (errno != ENOENT) {
      return Unexpected{paths.key + ": " + std::strerror(errno)};
    }
    auto created = create_ca(paths);
    if (!created) {
      return Unexpected{created.error()};
    }
  } else if ((st.st_mode & 077) != 0 || st.st_uid != ::geteuid()) {
    return Unexpected{paths.key +
                      ": the CA key can be read by others or belongs to another user; fix it "
                      "(chmod 600) or rotate it (sandgate ca --rotate)"};
  }
  auto key = read_pem<EVP_PKEY>(paths.key, PEM_read_bio_PrivateKey, EVP_PKEY_free);
  if (!key) {
    return Unexpected{openssl_error(paths.key + ": not a PEM private key")};
  }
  auto certificate = read_pem<X509>(paths.certificate, PEM_read_bio_X509, X509_free);
  if (!certificate) {
    return Unexpected{openssl_error(paths.certificate + ": not a PEM certificate")};
  }
  if (X509_check_private_key(certificate.get(), key.get()) != 1) {
    return Unexpected{paths.certificate + " does not go with " + paths.key +
                      "; rotate the CA (sandgate ca --rotate)"};
  }
  if (X509_cmp_current_time(X509_get0_notAfter(certificate.get())) <= 0) {
    return Unexpected{paths.certificate + " has expired; rotate the CA (sandgate ca --rotate)"};
  }
  auto leaf_key = new_p256_key();
  if (!leaf_key) {
    return Unexpected{openssl_error("cannot make the leaf key")};
  }
  return std::unique_ptr<CertificateAuthority>(new CertificateAuthority(
      paths, std::move(certificate), std::move(key), std::move(leaf_key), cache_size));
}

CertificateAuthority::CertificateAuthority(CaPaths paths, std::shared_ptr<X509> certificate,
                                           std::shared_ptr<EVP_PKEY> key,
                                           std::shared_ptr<EVP_PKEY> leaf_key,
                                           std::size_t cache_size)
    : paths_(std::move(paths)),
      certificate_(std::move(certificate)),
      key_(std::move(key)),
      leaf_key_(std::move(leaf_key)),
      cache_size_(cache_size == 0 ? 1 : cache_size) {}

CertificateAuthority::~CertificateAuthority() = default;

std::string CertificateAuthority::subject() const {
  char text[512];
  X509_NAME_oneline(X509_get_subject_name(certificate_.get()), text, sizeof text);
  return text;
}

std::size_t CertificateAuthority::cached() const {
  std::lock_guard lock(mutex_);
  return recent_.size();
}

Expected<std::shared_ptr<const Leaf>, std::string> CertificateAuthority::leaf_for(
    const rules::Host& host) {
  const std::string key = host.display();
  {
    std::lock_guard lock(mutex_);
    if (auto found = index_.find(key); found != index_.end()) {
      if (found->second->second->not_after - clock::now() > kLeafRenewal) {
        recent_.splice(recent_.begin(), recent_, found->second);
        return found->second->second;
      }
      recent_.erase(found->second);
      index_.erase(found);
    }
  }
  auto minted = mint(host);
  if (!minted) {
    return minted;
  }
  std::lock_guard lock(mutex_);
  if (auto found = index_.find(key); found != index_.end()) {
    recent_.erase(found->second);  // another worker minted it meanwhile
    index_.erase(found);
  }
  recent_.emplace_front(key, *minted);
  index_[key] = recent_.begin();
  while (recent_.size() > cache_size_) {
    index_.erase(recent_.back().first);
    recent_.pop_back();
  }
  return minted;
}

Expected<std::shared_ptr<const Leaf>, std::string> CertificateAuthority::mint(
    const rules::Host& host) {
  std::shared_ptr<X509> certificate(X509_new(), X509_free);
  if (!certificate) {
    return Unexpected{openssl_error("cannot make a certificate")};
  }
  X509* cert = certificate.get();
  X509_set_version(cert, 2);
  // The subject names the host for people; clients check the subject alternative name.
  const std::string common_name = host.is_ip() ? host.name : host.name.substr(0, 64);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert, X509_get_subject_name(certificate_.get()));
  const auto now = clock::now();
  const auto not_after = now + kLeafLife;
  X509_time_adj_ex(X509_getm_notBefore(cert), 0,
                   -std::chrono::duration_cast<std::chrono::seconds>(kLeafBefore).count(), nullptr);
  X509_time_adj_ex(X509_getm_notAfter(cert), 0,
                   std::chrono::duration_cast<std::chrono::seconds>(kLeafLife).count(), nullptr);
  X509_set_pubkey(cert, leaf_key_.get());
  const std::string san = (host.is_ip() ? "IP:" : "DNS:") + host.name;
  if (!set_random_serial(cert) ||
      !add_extension(cert, certificate_.get(), NID_basic_constraints, "critical,CA:FALSE") ||
      !add_extension(cert, certificate_.get(), NID_key_usage, "critical,digitalSignature") ||
      !add_extension(cert, certificate_.get(), NID_ext_key_usage, "serverAuth") ||
      !add_extension(cert, certificate_.get(), NID_subject_alt_name, san.c_str()) ||
      !add_extension(cert, certificate_.get(), NID_authority_key_identifier, "keyid:always") ||
      X509_sign(cert, key_.get(), EVP_sha256()) == 0) {
    return Unexpected{openssl_error("cannot mint a certificate for " + host.display())};
  }
  auto leaf = std::make_shared<Leaf>();
  leaf->certificate = std::move(certificate);
  leaf->key = leaf_key_;
  leaf->not_after = not_after;
  return std::shared_ptr<const Leaf>(std::move(leaf));
}

}  // namespace sandgate::inspect
