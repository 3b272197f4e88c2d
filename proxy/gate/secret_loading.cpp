// The masked secrets a gate starts with. See secret_loading.hpp.
#include "proxy/gate/secret_loading.hpp"

#include <openssl/crypto.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>

#include "proxy/inspect/certificate_authority.hpp"
#include "proxy/settings/load.hpp"

namespace sandgate::gate {

std::string sentinel_key_path(const settings::Settings& settings) {
  const std::string folder = settings.ca_dir.empty()
                                 ? inspect::default_ca_folder(settings::home_directory())
                                 : settings.ca_dir;
  return folder + "/sentinel.key";
}

Expected<std::shared_ptr<const secrets::MaskedSecrets>, std::string> load_masked_secrets(
    const settings::Settings& settings) {
  const auto environment = [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    return value == nullptr ? std::nullopt : std::optional<std::string>(value);
  };
  if (!settings.stable_sentinels || settings.secrets.empty()) {
    return secrets::MaskedSecrets::load(settings.secrets, environment);
  }
  const std::string path = sentinel_key_path(settings);
  const std::filesystem::path folder = std::filesystem::path(path).parent_path();
  std::error_code ec;
  if (!std::filesystem::exists(folder, ec)) {
    std::filesystem::create_directories(folder, ec);
    if (ec || ::chmod(folder.c_str(), 0700) != 0) {
      return Unexpected{
          "--stable-sentinels: cannot make the folder " + folder.string() +
          " for the sentinel key: " + (ec ? ec.message() : std::string(std::strerror(errno)))};
    }
  }
  auto key = secrets::load_or_make_sentinel_key(path);
  if (!key) {
    return Unexpected{"--stable-sentinels: " + key.error()};
  }
  auto loaded = secrets::MaskedSecrets::load(settings.secrets, environment, &*key);
  OPENSSL_cleanse(key->data(), key->size());
  return loaded;
}

}  // namespace sandgate::gate
